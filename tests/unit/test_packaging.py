"""The packaging split: `pip install agentwatch` is the SDK alone, the service needs `agentwatch[service]`.

What the guards check and what pyproject.toml declares agree; the built wheel itself is tested in
tests/integration/test_wheel.py.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

import pytest

from agentwatch.service_extra import SERVICE_MODULES

ROOT = Path(__file__).resolve().parents[2]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower()


def test_the_guard_checks_exactly_the_service_extra() -> None:
    """agentwatch/service_extra.py and pyproject.toml list the same packages; the SDK needs none of them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    service = {_name(r) for r in project["optional-dependencies"]["service"]}
    assert service == {d.lower() for d in SERVICE_MODULES.values()}
    base = {_name(r) for r in project["dependencies"]}
    assert base == {
        "opentelemetry-api",
        "opentelemetry-sdk",
        "opentelemetry-exporter-otlp-proto-common",
        "kafka-python",
        "crc32c",
    }
    assert "agentwatch[service]" in project["optional-dependencies"]["test"]


def test_the_review_guard_checks_exactly_the_review_extra() -> None:
    """agentwatch/review/__init__.py and the `review` extra list the same packages, on top of `service`."""
    from agentwatch.review import REVIEW_MODULES

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    review = {_name(r) for r in project["optional-dependencies"]["review"]}
    assert review == {"agentwatch"} | {d.lower() for d in REVIEW_MODULES.values()}
    assert "agentwatch[service]" in project["optional-dependencies"]["review"]
    assert "agentwatch[review]" in project["optional-dependencies"]["test"]
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert setuptools["packages"]["find"]["include"] == ["agentwatch*"]  # found, never listed by hand
    assert setuptools["package-data"]["agentwatch.review"] == ["templates/*.html"]


def test_a_compiled_build_asks_for_mypy_and_what_the_compiled_modules_import(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """build_backend/agentwatch_build.py: with AGENTWATCH_COMPILE=1 the build environment gets the `service` extra
    and the `dev` extra's type checker and stubs (same pins); without it, neither."""
    from build_backend import agentwatch_build

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    dev = declared["project"]["optional-dependencies"]["dev"]
    compile_requires = declared["tool"]["agentwatch"]["compile-requires"]
    assert set(compile_requires) <= set(dev) and any(_name(r) == "mypy" for r in compile_requires)
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("AGENTWATCH_COMPILE", raising=False)
    plain = agentwatch_build.get_requires_for_build_wheel()
    assert not {_name(r) for r in plain} & {"mypy", "pydantic"}
    monkeypatch.setenv("AGENTWATCH_COMPILE", "1")
    compiled = agentwatch_build.get_requires_for_build_wheel()
    assert set(compiled) >= set(compile_requires) | set(
        declared["project"]["optional-dependencies"]["service"]
    )
    assert os.environ["AGENTWATCH_COMPILE"] == "1"  # set back after setup.py ran as for a pure build


def test_a_compiled_editable_install_is_refused_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With AGENTWATCH_COMPILE=1 every editable hook stops with a sentence naming the variable (setup.py would
    otherwise fail on a missing mypyc); without it the editable hooks are setuptools' own."""
    from build_backend import agentwatch_build

    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("AGENTWATCH_COMPILE", "1")
    hooks = (
        agentwatch_build.get_requires_for_build_editable,
        lambda: agentwatch_build.prepare_metadata_for_build_editable(str(tmp_path)),
        lambda: agentwatch_build.build_editable(str(tmp_path)),
    )
    for hook in hooks:
        with pytest.raises(SystemExit) as refused:
            hook()
        assert "AGENTWATCH_COMPILE" in str(refused.value.code) and "pip install -e ." in str(
            refused.value.code
        )
    assert not list(tmp_path.iterdir())  # refused before anything was written
    monkeypatch.delenv("AGENTWATCH_COMPILE")
    requires = agentwatch_build.get_requires_for_build_editable()
    assert isinstance(requires, list) and not {_name(r) for r in requires} & {"mypy", "pydantic"}


def test_every_scorer_module_is_in_the_compiled_build() -> None:
    """pyproject.toml's `[tool.agentwatch] compiled` lists every scorer module, and only files that exist."""
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["agentwatch"][
        "compiled"
    ]
    assert all((ROOT / m).is_file() for m in listed) and len(set(listed)) == len(listed)
    scorers = {str(p.relative_to(ROOT)) for p in (ROOT / "agentwatch" / "scorers").glob("*.py")}
    assert scorers - {"agentwatch/scorers/__init__.py"} <= set(listed)


def test_the_build_is_read_from_the_installed_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """agentwatch/build_info.py: extension modules by dotted name, whatever their platform suffix."""
    from agentwatch import build_info

    assert build_info.compiled_modules() == [] and build_info.build_line() == "pure Python"  # this checkout
    package = tmp_path / "agentwatch"
    (package / "scorers").mkdir(parents=True)
    (package / "scorers" / "turn.py").write_text("")
    (package / "scorers" / f"turn{build_info.EXTENSION_SUFFIXES[0]}").write_bytes(b"")
    (package / "scorers" / f"text{build_info.EXTENSION_SUFFIXES[-1]}").write_bytes(b"")  # ".so" on Linux
    (package / "data").mkdir()
    (package / "data" / "prices.yaml").write_text("")
    monkeypatch.setattr(build_info, "_PACKAGE", package)
    assert build_info.compiled_modules() == ["agentwatch.scorers.text", "agentwatch.scorers.turn"]
    assert build_info.build_line() == "compiled by mypyc: 2 modules"


def test_the_version_says_which_build_runs() -> None:
    from typer.testing import CliRunner

    from agentwatch import __version__
    from agentwatch.cli import app

    said = CliRunner().invoke(app, ["--version"])
    assert said.exit_code == 0 and said.output.strip() == f"agentwatch {__version__} (pure Python)"
