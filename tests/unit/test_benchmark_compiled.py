"""The compiled-build benchmark reads what the benchmarks it runs print, and its scoring check runs (the build
itself, a minute of compiling, runs in tests/integration/test_compiled_build.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchmarks.compiled import MODULES, PEERS, ROOT, SCORE_US, SHARE, STAGES, figure, run_python, same_scores
from tests.support import published_runs


def test_every_compiled_module_is_a_source_file_of_the_tree() -> None:
    assert MODULES and all((ROOT / m).is_file() and not m.endswith("__init__.py") for m in MODULES)
    assert any(m.startswith("agentwatch/scorers/") for m in MODULES)
    assert any(m.startswith("agentwatch/collector/") for m in MODULES)


def test_the_figures_it_reads_are_in_the_benchmarks_output() -> None:
    score = run_python(ROOT, ["-m", "benchmarks.score", "--n", "60"])
    assert figure(SCORE_US, score) > 0
    collector = run_python(ROOT, ["-m", "benchmarks.collector", "--conversations", "20"])
    assert 0 < figure(SHARE, collector) < 100
    # benchmarks.peers' line (Fair Forge is not installed with the test extra)
    assert (
        figure(PEERS, "ratio (agentwatch speed / Fair Forge speed): 39× median, 32–40× over the rounds") == 39
    )
    stages = re.search(STAGES, collector)
    assert stages is not None and stages.group(1).startswith("decode ")


def test_the_same_build_scores_alike(tmp_path: Path) -> None:
    for name in published_runs.ALL:
        published_runs.require(name)
    said = same_scores(ROOT, ROOT, tmp_path)
    assert said.startswith("the same scores, every field, on ")
    written = json.loads((tmp_path / "scores-pure.json").read_text())
    assert len(written) > 2000 and all("conversation_id" in s for s in written)
