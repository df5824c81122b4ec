"""The README's main job: `agentwatch demo` runs agent → broker → collector → estimator → /metrics end to end."""

import os
import re
import subprocess
import sys


def test_demo_scores_every_conversation_it_sends():
    run = subprocess.run(
        [sys.executable, "-m", "agentwatch", "demo", "--duration", "6", "--rate", "30", "--metrics-port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert run.returncode == 0, run.stderr[-2000:]
    found = re.search(r"(\d+) conversations sent, (\d+) scored and exported", run.stderr)
    assert found, run.stderr[-2000:]
    sent, scored = int(found.group(1)), int(found.group(2))
    assert sent >= 100
    assert scored == sent
    assert "pass^3" in run.stderr and "order_status" in run.stderr  # the live table was drawn
