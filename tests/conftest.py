"""Shared fixtures: a real Tansu broker over TCP, and helpers to talk to it."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import settings

from agentwatch.kafka.broker import EmbeddedBroker

# Property tests assert properties, not timings: Hypothesis's default 200 ms deadline per example fails them
# on a loaded machine (seen on 2 cores while other work ran), so no deadline.
settings.register_profile("agentwatch", deadline=None)
settings.load_profile("agentwatch")

# Consumer-group settings that make joins fast on Tansu (see PITFALLS.md); test-only values.
FAST_GROUP = {"session_timeout_ms": 2000, "heartbeat_interval_ms": 500}


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    """One Tansu broker for the whole test session (tests use unique topic names)."""
    log = tmp_path_factory.mktemp("tansu") / "tansu.log"
    with EmbeddedBroker(log_path=log) as b:
        yield b


@pytest.fixture
def fresh_broker(tmp_path) -> Iterator[EmbeddedBroker]:
    """A broker of the test's own, for tests that stop and restart it."""
    with EmbeddedBroker(log_path=tmp_path / "tansu.log") as b:
        yield b


@pytest.fixture
def topic() -> str:
    """A unique topic name."""
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def promtool() -> str:
    """Path of promtool; fails (not skips) when missing, since CI installs it."""
    path = shutil.which("promtool")
    if path is None:
        pytest.fail(
            "promtool not found: install Debian's `prometheus` package (apt-get install -y prometheus)"
        )
    return path


@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    """A PostgreSQL server for the session (Debian's `postgresql` package; fails, not skips, when missing)."""
    from tests.support.postgres_server import postgres_server

    with postgres_server() as url:
        yield url


@pytest.fixture
def postgres_db(postgres: str) -> str:
    """A new, empty database on the session's PostgreSQL server; its URL."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres.replace("postgresql://", "postgresql://", 1), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return postgres.rsplit("/", 1)[0] + f"/{name}"
