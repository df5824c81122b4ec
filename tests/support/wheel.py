"""The built wheel in fresh virtual environments: what a user's `pip install "agentwatch[...]"` gets.

The wheel is built as a user builds it (`pip wheel --no-deps .`); each environment is new and holds the wheel with
one extra and what that extra pulls from the package index. `uv` makes the environments (2–3 s each where pip
takes 30–40 s); it installs the same wheel and the same requirements.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from uv import find_uv_bin

ROOT = Path(__file__).resolve().parents[2]


def extras() -> list[str]:
    """The extras `pyproject.toml` declares that a user installs (the test and dev tool sets excluded)."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [name for name in declared["optional-dependencies"] if name not in ("test", "dev")]


def clean_env() -> dict[str, str]:
    """The environment for a venv's processes: no PYTHONPATH or virtualenv of the outer one."""
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for name in ("PYTHONPATH", "VIRTUAL_ENV"):
        env.pop(name, None)
    return env


def build_wheel(out: Path) -> Path:
    """`pip wheel --no-deps` of the working tree into `out`; the wheel's path."""
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
        env=clean_env(),
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = out.glob("agentwatch-*.whl")
    return wheel


def venv_with(wheel: Path, extra: str | None, where: Path) -> Path:
    """A new virtualenv at `where` holding `wheel` with `extra` (None: no extra); the venv's python."""
    uv = find_uv_bin()
    env = clean_env()
    subprocess.run(
        [uv, "venv", "-q", "--python", sys.executable, str(where)],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    python = where / "bin" / "python"
    requirement = f"{wheel}[{extra}]" if extra else str(wheel)
    run = subprocess.run(
        [uv, "pip", "install", "-q", "--python", str(python), requirement],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if run.returncode != 0:
        raise RuntimeError(f"installing {requirement} failed:\n{run.stderr}")
    return python


def wheel_modules(wheel: Path) -> list[str]:
    """Every module the wheel ships, by dotted name (from its file list, not from the source tree)."""
    import zipfile

    names = []
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.startswith("agentwatch/") and name.endswith(".py"):
                parts = name[: -len(".py")].split("/")
                if parts[-1] == "__init__":
                    parts.pop()
                names.append(".".join(parts))
    return sorted(names)
