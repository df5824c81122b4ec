"""What a newcomer meets in the first hour: clear one-line errors instead of tracebacks or half-alive services."""

from __future__ import annotations

import socket
import subprocess
import sys


def _agentwatch(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentwatch", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens once the socket is closed


def test_serve_without_a_broker_fails_fast_with_one_line() -> None:
    run = _agentwatch("serve", "--bootstrap-servers", f"127.0.0.1:{_closed_port()}", "--metrics-port", "0")
    assert run.returncode == 1
    assert "Traceback" not in run.stderr
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert (
        len(lines) == 1 and lines[0].startswith("error: Kafka at 127.0.0.1:") and "not reachable" in lines[0]
    )


def test_demo_with_its_metrics_port_taken_says_what_to_do() -> None:
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        port = busy.getsockname()[1]
        run = _agentwatch("demo", "--duration", "1", "--metrics-port", str(port))
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert f"cannot serve /metrics on port {port}" in run.stderr and "--metrics-port" in run.stderr


def test_serve_with_an_embedded_broker_prints_where_agents_connect() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentwatch", "serve", "--embedded-broker", "--metrics-port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = ""
        for line in proc.stderr:  # type: ignore[union-attr]
            if "embedded broker on" in line:
                break
        assert "AGENTWATCH_BOOTSTRAP_SERVERS=127.0.0.1:" in line
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_serve_stops_its_embedded_broker_when_it_cannot_serve_metrics() -> None:
    """A busy metrics port ends `serve` with exit 2 after the broker started: the broker is stopped too."""
    import re
    import time

    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        port = busy.getsockname()[1]
        run = _agentwatch("serve", "--embedded-broker", "--metrics-port", str(port))
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert f"cannot serve /metrics on port {port}" in run.stderr
    found = re.search(r"embedded broker on 127\.0\.0\.1:(\d+)", run.stderr)
    assert found, run.stderr[-2000:]
    broker_port = int(found.group(1))
    deadline = time.monotonic() + 10
    while _listening(broker_port) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _listening(broker_port), "the embedded broker outlived the command"
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    assert f"tcp://127.0.0.1:{broker_port}" not in ps
