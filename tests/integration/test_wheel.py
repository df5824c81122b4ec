"""The built wheel, installed with each extra into a fresh virtualenv: every module it ships imports where its
extra is installed, every command answers `--help`, and `import` + `score` run on a published agent run.

The editable install of the other tests reads the source tree, so it cannot see a module the wheel forgot.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import published_runs
from tests.support.sdk import attrs_of, consume, decode
from tests.support.wheel import build_wheel, clean_env, extras, venv_with, wheel_modules

# What runs inside an agent: importable from `pip install agentwatch` alone.
SDK_MODULES = ("agentwatch", "agentwatch.sdk", "agentwatch.wire", "agentwatch.wire.attributes")
# Packages that say which extra to install when it is missing.
GUARDED = {
    "agentwatch.cli": "service",
    "agentwatch.collector": "service",
    "agentwatch.scorers": "service",
    "agentwatch.exporters": "service",
    "agentwatch.judge": "service",
    "agentwatch.stats": "service",
    "agentwatch.review": "review",
}
# Loaded by none of the SDK's modules: the service's dependencies.
HEAVY = (
    "scipy",
    "numpy",
    "pydantic",
    "confluent_kafka",
    "prometheus_client",
    "yaml",
    "typer",
    "rich",
    "httpx",
)

IMPORT_ALL = """
import importlib, json, sys, traceback
result = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
        result[name] = None
    except ImportError as exc:
        result[name] = f"{type(exc).__name__}: {exc}"
    except Exception:
        result[name] = "crash: " + traceback.format_exc(limit=3)
print(json.dumps(result))
"""

COMMANDS = """
import json
import typer
from agentwatch.cli import app

def walk(command, path):
    yield path
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        if not sub.hidden:
            yield from walk(sub, [*path, name])

print(json.dumps(list(walk(typer.main.get_command(app), []))))
"""

SDK_AGENT = """
import sys
import agentwatch
from agentwatch import conversation, trace

heavy = {heavy!r}
loaded = sorted(m for m in sys.modules if m.split(".")[0] in heavy)
assert not loaded, loaded


@trace(kind="tool")
def lookup(city):
    return {{"city": city}}


@trace(kind="agent", name="packaged-agent")
def answer(question):
    return str(lookup("Paris"))


agentwatch.configure("kafka", agent="packaged-agent", bootstrap_servers=sys.argv[1], topic=sys.argv[2])
with conversation(id=sys.argv[3], task="packaging"):
    answer("where?")
agentwatch.shutdown()
print("sdk ok")
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel `pip wheel --no-deps .` builds from this tree."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str | None], Path]:
    """The python of a fresh virtualenv holding the wheel with an extra (None: the SDK alone), made once."""
    made: dict[str | None, Path] = {}

    def get(extra: str | None) -> Path:
        if extra not in made:
            made[extra] = venv_with(wheel, extra, tmp_path_factory.mktemp(f"venv-{extra or 'sdk'}"))
        return made[extra]

    return get


def _run(
    python: Path, *args: str, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(python), *args],
        env=clean_env(),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _imports(python: Path, modules: list[str], cwd: Path) -> dict[str, str | None]:
    run = _run(python, "-c", IMPORT_ALL, *modules, cwd=cwd, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    result: dict[str, str | None] = json.loads(run.stdout)
    return result


def _guard(module: str) -> str | None:
    for package, extra in GUARDED.items():
        if module == package or module.startswith(package + "."):
            return extra
    return None


def test_the_wheel_ships_every_package_of_the_tree(wheel: Path) -> None:
    """Every module under agentwatch/ is in the wheel, with the data files and the review templates."""
    root = Path(__file__).resolve().parents[2]
    tree = set()
    for path in (root / "agentwatch").rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        tree.add(".".join(parts))
    assert set(wheel_modules(wheel)) == tree
    import zipfile

    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    assert {
        "agentwatch/data/prices.yaml",
        "agentwatch/data/judge_rubric_v1.md",
        "agentwatch/py.typed",
    } <= names
    assert {
        f"agentwatch/review/templates/{t}.html" for t in ("base", "conversation", "failing", "login", "queue")
    } <= names


@pytest.mark.parametrize("extra", [None, *extras()])
def test_every_module_imports_where_its_extra_is_installed(
    extra: str | None, wheel: Path, venv: Callable[[str | None], Path], tmp_path: Path
) -> None:
    """With the SDK alone the SDK imports and every guarded package names its extra; with `service` all but the
    review service import; with `review` everything does; the other extras add to the SDK and break nothing."""
    modules = [m for m in wheel_modules(wheel) if not m.endswith("__main__")]
    result = _imports(venv(extra), modules, tmp_path)
    crashes = {m: e for m, e in result.items() if e is not None and e.startswith("crash")}
    assert not crashes
    have = {"service", "review"} if extra == "review" else {extra} if extra else set()
    for module, error in result.items():
        needs = _guard(module)
        if needs in have or (needs is None and have & {"service", "review"}):
            assert error is None, (module, error)
        elif needs is not None and error is not None:  # the review service names `service` first if both miss
            named = {f'pip install "agentwatch[{extra}]"' for extra in (needs, "service")}
            assert any(n in error for n in named), (module, error)
    for module in SDK_MODULES:
        assert result[module] is None, (module, result[module])


def test_every_command_answers_help(venv: Callable[[str | None], Path], tmp_path: Path) -> None:
    """`agentwatch --help` and each subcommand's, through the console script the wheel installs."""
    python = venv("service")
    listed = _run(python, "-c", COMMANDS, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr[-3000:]
    paths = json.loads(listed.stdout)
    assert ["score"] in paths and ["import", "tau-bench"] in paths and ["judge", "anchors", "freeze"] in paths
    script = python.parent / "agentwatch"
    for path in paths:
        run = subprocess.run(
            [str(script), *path, "--help"],
            env=clean_env(),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 0 and "Usage" in run.stdout, (path, run.stderr[-2000:])


def test_import_and_score_a_published_run(venv: Callable[[str | None], Path], tmp_path: Path) -> None:
    """`agentwatch import tau-bench` then `agentwatch score` on τ-bench's airline run, from the installed wheel."""
    source = published_runs.require(published_runs.AIRLINE)
    script = venv("service").parent / "agentwatch"
    transcripts, policies = tmp_path / "transcripts.jsonl", tmp_path / "policies.yaml"
    imported = subprocess.run(
        [str(script), "import", "tau-bench", str(source), "--out", str(tmp_path)],
        env=clean_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert imported.returncode == 0, imported.stderr[-3000:]
    assert len(transcripts.read_text().splitlines()) == 100 and policies.is_file()
    scored = subprocess.run(
        [str(script), "score", str(transcripts), "--config", str(policies), "--format", "json", "--no-gate"],
        env=clean_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert scored.returncode == 0, scored.stderr[-3000:]
    report = json.loads(scored.stdout)
    assert report["conversations"] == 100 and report["pass_pow_k"]["1"]["method"] == "tasks"


@pytest.mark.broker
def test_sdk_alone_exports_to_a_broker_and_refuses_the_service(
    broker, topic: str, venv: Callable[[str | None], Path], tmp_path: Path
) -> None:
    """`pip install agentwatch`: the SDK loads none of the service's dependencies and exports spans to a real
    broker; the `agentwatch` command says, in one line, which extra to install."""
    python = venv(None)
    installed = _run(
        python,
        "-c",
        "import importlib.metadata as m, json; print(json.dumps([d.name.lower() for d in m.distributions()]))",
    )
    names = set(json.loads(installed.stdout))
    assert {"agentwatch", "kafka-python", "crc32c"} <= names, names
    assert not names & {"numpy", "scipy", "pydantic", "confluent-kafka", "prometheus-client", "typer", "rich"}

    cid = f"pkg-{topic}"
    run = _run(
        python, "-c", SDK_AGENT.format(heavy=HEAVY), broker.bootstrap_servers, topic, cid, cwd=tmp_path
    )
    assert run.returncode == 0 and run.stdout.strip() == "sdk ok", run.stderr
    records = consume(broker.bootstrap_servers, topic, lambda rs: sum(len(decode(r)) for r in rs) >= 2)
    spans = [span for r in records for _, span in decode(r)]
    assert sorted(s.name for s in spans) == ["execute_tool lookup", "invoke_agent packaged-agent"]
    assert all(attrs_of(s)["gen_ai.conversation.id"] == cid for s in spans)
    assert {r.key for r in records} == {cid.encode()}

    command = subprocess.run(
        [str(python.parent / "agentwatch"), "--help"],
        env=clean_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert command.returncode == 1 and command.stdout == ""
    assert "Traceback" not in command.stderr and len(command.stderr.strip().splitlines()) == 1
    assert command.stderr.startswith("agentwatch: agentwatch.cli needs ")
    assert command.stderr.strip().endswith('which is not installed: pip install "agentwatch[service]"')
