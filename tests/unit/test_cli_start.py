"""`agentwatch score` starts without the scipy modules it needs only on rare paths (scipy.stats, scipy.integrate
and scipy.optimize are slow to import; `benchmarks/cli_start.py` times the start)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.score_cli import conversation, write

HEAVY = ("scipy.stats", "scipy.integrate", "scipy.optimize")

_RUN = """
import json, sys
from agentwatch.cli import app
try:
    app(["score", sys.argv[1], "--no-gate", "--format", "json"], standalone_mode=False)
except SystemExit:
    pass
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)), file=sys.stderr)
"""


def test_scoring_a_file_imports_no_heavy_scipy_module(tmp_path: Path) -> None:
    path = write(tmp_path / "one.jsonl", [conversation("good", 0), conversation("hallucinated", 1)])
    done = subprocess.run(
        [sys.executable, "-c", _RUN.format(heavy=HEAVY), str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = json.loads(done.stdout)
    assert report["conversations"] == 2  # the file was scored, not refused
    assert json.loads(done.stderr.strip().splitlines()[-1]) == []
