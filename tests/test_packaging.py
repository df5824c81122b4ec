"""The packaging split: `pip install agentwatch` is the SDK alone, the service needs `agentwatch[service]`.

The broker test builds a fresh virtualenv, installs the project from a copy of the working tree without extras
(pure Python, so no compiler run), and checks there that the SDK imports and exports spans to a real broker
while the service packages and the `agentwatch` command say which extra to install.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from sdk_support import attrs_of, consume, decode

from agentwatch.service_extra import SERVICE_MODULES

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from sdk_install import clean_env, sdk_only_venv

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

AGENT = """
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
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert "agentwatch.review" in packages["packages"] and packages["package-data"]["agentwatch.review"] == [
        "templates/*.html"
    ]
    assert (ROOT / "agentwatch" / "review").resolve() == ROOT / "review"


@pytest.mark.broker
def test_sdk_only_install_imports_exports_and_refuses_the_service(broker, topic, tmp_path: Path) -> None:
    python = sdk_only_venv(tmp_path)
    venv = python.parents[1]
    env = clean_env()
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=freeze"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.lower()
    installed = {line.split("==")[0] for line in listed.split()}
    assert "agentwatch" in installed and "kafka-python" in installed and "crc32c" in installed
    # protobuf and opentelemetry-proto come with the SDK's OTLP encoder; the rest of the service must not
    assert not installed & (
        {d.lower() for d in SERVICE_MODULES.values()} - {"protobuf", "opentelemetry-proto"}
    )

    cid = f"pkg-{topic}"
    run = subprocess.run(
        [str(python), "-c", AGENT.format(heavy=HEAVY), broker.bootstrap_servers, topic, cid],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0 and run.stdout.strip() == "sdk ok", run.stderr
    records = consume(broker.bootstrap_servers, topic, lambda rs: sum(len(decode(r)) for r in rs) >= 2)
    spans = [span for r in records for _, span in decode(r)]
    assert sorted(s.name for s in spans) == ["execute_tool lookup", "invoke_agent packaged-agent"]
    assert all(attrs_of(s)["gen_ai.conversation.id"] == cid for s in spans)
    assert {r.key for r in records} == {cid.encode()}

    for module in (
        "agentwatch.collector",
        "agentwatch.scorers",
        "agentwatch.exporters",
        "agentwatch.judge",
        "agentwatch.cli",
    ):
        refused = subprocess.run(
            [str(python), "-c", f"import {module}"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert refused.returncode == 1
        assert f"{module} needs " in refused.stderr and 'pip install "agentwatch[service]"' in refused.stderr
    command = subprocess.run(
        [str(venv / "bin" / "agentwatch"), "--help"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert command.returncode == 1 and command.stdout == ""
    assert "Traceback" not in command.stderr and len(command.stderr.strip().splitlines()) == 1
    assert command.stderr.startswith("agentwatch: agentwatch.cli needs ")
    assert command.stderr.strip().endswith('which is not installed: pip install "agentwatch[service]"')
