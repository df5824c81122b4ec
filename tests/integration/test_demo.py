"""The README's main job: `agentwatch demo` runs agent → broker → collector → estimator → /metrics end to end."""

import os
import re
import subprocess
import sys


def test_demo_scores_every_conversation_it_sends():
    # the demo's own broker and the port it is given win over AGENTWATCH_* variables set for another deployment
    elsewhere = {
        "AGENTWATCH_KAFKA__BOOTSTRAP_SERVERS": "127.0.0.1:1",
        "AGENTWATCH_EXPORTER__METRICS_PORT": "1",
    }
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentwatch",
            "demo",
            "--duration",
            "6",
            "--rate",
            "30",
            "--metrics-port",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "COLUMNS": "200", **elsewhere},
    )
    assert run.returncode == 0, run.stderr[-2000:]
    found = re.search(r"(\d+) conversations sent, (\d+) scored and exported", run.stderr)
    assert found, run.stderr[-2000:]
    sent, scored = int(found.group(1)), int(found.group(2))
    assert sent >= 100
    port = re.search(r"/metrics on http://127\.0\.0\.1:(\d+)/metrics", run.stderr)
    assert port and int(port.group(1)) > 1  # --metrics-port 0: any free port, not the variable's
    assert "Traceback" not in run.stderr
    assert scored == sent
    assert "p^3 (exch.)" in run.stderr and "order_status" in run.stderr  # the estimates were shown, named
    # not a terminal: readable lines instead of a table cut to 80 columns, and the canary's start is named
    assert "canary: version 1.1 now takes half the traffic" in run.stderr
    lines = [line for line in run.stderr.splitlines() if " order_status " in line]
    assert any(line.split()[0] == "1.1" for line in lines) and any(line.split()[0] == "1.0" for line in lines)
    assert "judge:" in run.stderr and "verdicts" in run.stderr  # the stand-in judge graded its sample
