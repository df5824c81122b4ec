"""The instruction-count benchmark's stages run as the counted child runs them (valgrind itself is not run here:
a run under it is too slow for the unit tests)."""

from __future__ import annotations

import pytest

from benchmarks.instructions import STAGES, run_stage


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_every_stage_runs_with_and_without_its_units(stage: str) -> None:
    run_stage(stage, 2, 2)
    run_stage(stage, 2, 0)


def test_an_unknown_stage_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown stage"):
        run_stage("compile", 1, 1)
