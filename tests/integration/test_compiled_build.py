"""The compiled build (`AGENTWATCH_COMPILE=1`, setup.py), made in a copy of the checkout as a compiled wheel is
made: every module pyproject.toml lists runs as a mypyc extension, the build scores 2,250 conversations exactly as
the Python source does, and the unit tests of the compiled modules pass against it.

The Python source, which runs wherever no compiled wheel fits, is what every other test runs.
"""

from __future__ import annotations

import importlib.machinery
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.compiled import MODULES, ROOT, build, run_python, same_scores
from tests.support import published_runs

# Copied beside the built package so that the unit tests run from the copy (their conftest, support and data).
_TEST_TREES = ("tests", "benchmarks", "scripts", "docs", "examples")
# A test the copy alone holds: the tests that run there run against the compiled modules, not the checkout's.
_HERE_CHECK = """
from agentwatch.build_info import compiled_modules
from agentwatch.scorers import turn


def test_the_scorers_run_compiled_here() -> None:
    assert not turn.__file__.endswith(".py")
    assert "agentwatch.scorers.turn" in compiled_modules()
"""


def _dotted(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def compiled_unit_tests() -> list[str]:
    """The unit test files that import a compiled module (or the scorers' package), by path from the root."""
    compiled = {_dotted(m) for m in MODULES} | {"agentwatch.scorers"}
    found = []
    for path in sorted((ROOT / "tests" / "unit").glob("test_*.py")):
        imported = set(re.findall(r"^\s*(?:from|import) (agentwatch[\w.]*)", path.read_text(), re.M))
        if imported & compiled:
            found.append(str(path.relative_to(ROOT)))
    return found


@pytest.fixture(scope="module")
def compiled_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the checkout with MODULES compiled in place (a minute of mypyc and the C compiler)."""
    if shutil.which("cc") is None:
        pytest.fail("the compiled build needs a C compiler (cc) where it is built")
    tree = tmp_path_factory.mktemp("compiled")
    build(tree)
    for name in _TEST_TREES:
        shutil.copytree(ROOT / name, tree / name, ignore=shutil.ignore_patterns("__pycache__"))
    return tree


def test_every_listed_module_is_installed_compiled(compiled_tree: Path) -> None:
    said = run_python(
        compiled_tree,
        [
            "-c",
            "from agentwatch.build_info import build_line, compiled_modules; print(build_line()); print(*compiled_modules(), sep='\\n')",
        ],
    ).splitlines()
    assert said[0] == f"compiled by mypyc: {len(MODULES)} modules"
    assert said[1:] == sorted(_dotted(m) for m in MODULES)
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    for module in MODULES:
        assert (compiled_tree / module).is_file()  # the source stays beside its extension
        assert any((compiled_tree / module).with_name(Path(module).stem + s).is_file() for s in suffixes)


def test_the_compiled_build_scores_as_the_source_does(
    compiled_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in published_runs.ALL:
        published_runs.require(name)
    # The copy's tests.support looks for the published runs beside the copy unless told where they are.
    monkeypatch.setenv("AGENTWATCH_AGENT_BENCHMARK", str(published_runs.FOLDER))
    said = same_scores(ROOT, compiled_tree, tmp_path)
    assert said.startswith("the same scores, every field, on 2250 conversations"), said


def test_the_compiled_modules_unit_tests_pass_against_the_compiled_build(compiled_tree: Path) -> None:
    files = compiled_unit_tests()
    assert len(files) >= 40 and "tests/unit/test_scorers_tools.py" in files
    (compiled_tree / "tests" / "unit" / "test_compiled_here.py").write_text(_HERE_CHECK)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    env["AGENTWATCH_AGENT_BENCHMARK"] = str(published_runs.FOLDER)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "2",
            "tests/unit/test_compiled_here.py",
            *files,
        ],
        cwd=compiled_tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    tail = (run.stdout + run.stderr)[-4000:]
    assert run.returncode == 0, tail
    passed = re.search(r"(\d+) passed", run.stdout)
    assert passed is not None and int(passed.group(1)) > 500, tail
    assert " failed" not in run.stdout and " error" not in run.stdout, tail
