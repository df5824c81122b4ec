"""A throw-away PostgreSQL server for tests, from Debian's `postgresql` package (initdb + pg_ctl).

As root, the server runs as the `postgres` system user (PostgreSQL refuses to run as root) in a directory of
its own under /tmp; it listens on 127.0.0.1 on a free port with trust authentication, and is stopped and
deleted after the tests.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def postgres_bin(name: str) -> str | None:
    """Path of a PostgreSQL server program (on PATH, else Debian's /usr/lib/postgresql/<major>/bin)."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """A running test server: its `url`, and `stop()` / `start()` to take it away and bring it back (same data,
    same port)."""

    def __init__(self, url: str, start: list[str], stop: list[str], env: dict[str, str]) -> None:
        self.url = url
        self._start, self._stop, self._env = start, stop, env

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (`fast`: connections cut, like a restart; `immediate`: like a crash)."""
        subprocess.run([*self._stop, "-m", mode], check=True, capture_output=True, env=self._env, timeout=60)

    def start(self) -> None:
        """Start it again on its data directory and port; returns once it accepts connections."""
        subprocess.run(self._start, check=True, capture_output=True, env=self._env, timeout=90)


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a server; yield its URL (`postgresql://agentwatch@127.0.0.1:PORT/agentwatch`)."""
    with postgres_cluster() as server:
        yield server.url


@contextmanager
def postgres_cluster() -> Iterator[PostgresServer]:
    """Start a server of its own; yield it (to stop and start again)."""
    initdb, pg_ctl = postgres_bin("initdb"), postgres_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        raise RuntimeError("PostgreSQL server programs not found: apt-get install -y postgresql")
    root = Path(tempfile.mkdtemp(prefix="agentwatch-pg-", dir="/tmp"))
    data = root / "data"
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = _free_port()
    env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
    try:
        subprocess.run(
            [
                *as_user,
                initdb,
                "-D",
                str(data),
                "-U",
                "agentwatch",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            check=True,
            capture_output=True,
            env=env,
            timeout=120,
        )
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
        start = [*as_user, pg_ctl, "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "-t", "60"]
        start.append("start")
        subprocess.run(start, check=True, capture_output=True, env=env, timeout=90)
        subprocess.run(
            [
                *as_user,
                postgres_bin("createdb") or "createdb",
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
                "-U",
                "agentwatch",
                "agentwatch",
            ],
            check=True,
            capture_output=True,
            env=env,
            timeout=60,
        )
        url = f"postgresql://agentwatch@127.0.0.1:{port}/agentwatch"
        yield PostgresServer(url, start, [*as_user, pg_ctl, "-D", str(data), "-w", "stop"], env)
    finally:
        subprocess.run(
            [*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"],
            check=False,
            capture_output=True,
            env=env,
            timeout=60,
        )
        shutil.rmtree(root, ignore_errors=True)
