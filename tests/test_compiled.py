"""The compiled hot path (Cython, built by `pip install .`) against the pure-Python sources it is built from.

scripts/test.sh builds the compiled package into build/compiled, then runs the suite twice: on the editable
install (pure Python, with `AGENTWATCH_COMPILED_BUILD` naming that build) and with the build first on PYTHONPATH
and `AGENTWATCH_EXPECT_COMPILED=1`. Run without scripts/test.sh, the pure pass builds it (scripts/compile.sh,
about a minute) for the comparison of outputs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from equivalence_corpus import compiled_modules, outputs

from agentwatch.compiled import COMPILED_MODULES, compiled_summary, source_path

EXPECT_COMPILED = os.environ.get("AGENTWATCH_EXPECT_COMPILED", "") == "1"
REPO = Path(__file__).resolve().parents[1]
SEEDS = 1500


def test_hot_path_is_built_as_this_pass_expects() -> None:
    """All hot-path modules compiled in the compiled pass; none in the pure pass (a stray .so would shadow edits)."""
    compiled = compiled_modules()
    if EXPECT_COMPILED:
        assert compiled == list(COMPILED_MODULES), compiled_summary()
    else:
        assert compiled == [], (
            f"{compiled} import from extension modules, not from their sources: delete the stale builds "
            f"beside {[source_path(m) for m in compiled]} (scripts/compile.sh builds into build/compiled)"
        )


class _Spans(list):
    """A list subclass: Cython, reading type hints, would reject it where `list[...]` is annotated."""


def test_type_hints_do_not_change_compiled_behaviour() -> None:
    """An int stays an int where `float` is annotated, and a list subclass passes where `list` is (setup.py
    compiles with annotation_typing off; with it on, `now` would become 7.0 and `_Spans` a TypeError)."""
    from agentwatch.collector.assembler import Assembler
    from agentwatch.collector.decode import SpanRecord

    from agentwatch.config import CollectorConfig

    assembler = Assembler(CollectorConfig())
    span = SpanRecord("ab" * 16, "cd" * 8, None, "invoke_agent bot", 1, 2, None, conversation_id="conv-hints")
    assembler.add_message(_Spans([span]), 0, 0, 7)
    (conv,) = assembler._open.values()
    assert conv.last_seen == 7 and type(conv.last_seen) is int


def test_module_list_names_real_sources() -> None:
    """Every module setup.py compiles exists as a source file, so a rename cannot drop it silently."""
    missing = [source_path(m) for m in COMPILED_MODULES if not (REPO / source_path(m)).is_file()]
    assert missing == []


def _other_build() -> tuple[dict[str, str], list[str]]:
    """Environment of a process that runs the other build than this one, and the compiled modules it must
    report: the editable install (pure Python) from the compiled pass, the compiled build from the pure pass."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AGENTWATCH_EXPECT_COMPILED")}
    if EXPECT_COMPILED:
        return env, []
    build = os.environ.get("AGENTWATCH_COMPILED_BUILD")
    if not build:  # not under scripts/test.sh: build it now, from the sources under test
        subprocess.run([str(REPO / "scripts" / "compile.sh")], env={**env, "PYTHON": sys.executable}, check=True)
        build = str(REPO / "build" / "compiled")
    return {**env, "PYTHONPATH": build}, list(COMPILED_MODULES)


def test_compiled_output_equals_pure_python_output() -> None:
    """Decode → rebuild → score of a random corpus gives identical JSON compiled and as pure Python."""
    env, other_compiled = _other_build()
    child = subprocess.run(
        [sys.executable, "-P", str(REPO / "tests" / "equivalence_corpus.py"), str(SEEDS)],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    other = json.loads(child.stdout)
    assert other["compiled"] == other_compiled, "the reference process should run the other build"
    here = [json.dumps(item) for item in outputs(SEEDS)]
    there = [json.dumps(item) for item in other["outputs"]]
    assert len(here) == len(there) > SEEDS
    differing = [i for i, (a, b) in enumerate(zip(here, there, strict=True)) if a != b]
    assert differing == [], f"{len(differing)} messages differ, first {differing[0]}:\n{here[differing[0]][:2000]}"
    decoded = sum(1 for item in here if not item.startswith('["decode_error"'))
    assert decoded > SEEDS // 2  # most of the corpus reaches the scorers


def test_version_says_which_build_runs() -> None:
    """`agentwatch --version` names the version and whether the hot path is compiled (for bug reports)."""
    from typer.testing import CliRunner

    from agentwatch import __version__
    from agentwatch.cli.app import app

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.startswith(f"agentwatch {__version__}; ")
    assert (f"hot path compiled ({len(COMPILED_MODULES)} modules, Cython)" in result.output) == EXPECT_COMPILED
    assert ("pure Python" in result.output) != EXPECT_COMPILED
