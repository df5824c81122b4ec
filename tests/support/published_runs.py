"""Published agent runs with real outcomes, read where the workplace keeps them (never copied into the repo).

`../shared/data/agent-benchmark/` beside the checkout (CI has it), or the folder `AGENTWATCH_AGENT_BENCHMARK`
names. Tests that need a run call `require(...)`: where the folder is absent they skip and say where the data was
looked for; benchmarks call `locate(...)`, which exits with the same sentence.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDER = Path(
    os.environ.get("AGENTWATCH_AGENT_BENCHMARK", ROOT.parent / "shared" / "data" / "agent-benchmark")
)

# τ-bench's published gpt-4o airline run, tasks 0–24 × 4 trials (Sierra, MIT).
AIRLINE = "airline-gpt-4o-tasks-00-24.json.gz"
# Another team's τ-bench retail run (100 trajectories) and τ²-bench airline run (50 simulations), MIT.
RETAIL = "more/tau-bench-retail-toolcalling.json.gz"
TAU2_AIRLINE = "more/tau2-bench-airline-run1.json.gz"
ALL = (AIRLINE, RETAIL, TAU2_AIRLINE)


def _missing(name: str) -> str:
    return (
        f"published run {name} not found under {FOLDER} (the agent-benchmark data lives beside the checkout "
        "in ../shared/data/agent-benchmark/, or set AGENTWATCH_AGENT_BENCHMARK)"
    )


def locate(name: str) -> Path:
    """The path of a published run; exits with where it was looked for when absent (benchmarks)."""
    path = FOLDER / name
    if not path.is_file():
        raise SystemExit(_missing(name))
    return path


def require(name: str) -> Path:
    """The path of a published run; skips the calling test, saying where it looked, when absent."""
    import pytest

    path = FOLDER / name
    if not path.is_file():
        pytest.skip(_missing(name))
    return path
