"""The review service as its own process (`agentwatch review`), and a flood of sign-in attempts against it.

Shared by `tests/integration/test_review_hardening.py` (which bounds RSS growth) and `benchmarks/review_flood.py`
(which prints RSS, `/healthz` latency and the rate of password guesses that reach a check).
"""

from __future__ import annotations

import asyncio
import base64
import json
import multiprocessing
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from agentwatch.kafka.broker import free_port
from agentwatch.review.auth import hash_password
from tests.support.review import PASSWORD


@dataclass
class ReviewProcess:
    """A running `agentwatch review` and where it serves."""

    proc: subprocess.Popen[bytes]
    port: int
    metrics_port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def rss_mib(self) -> float:
        """Resident memory of the process now, MiB."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

    def metrics(self) -> str:
        return httpx.get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10).text

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


def start_review(bootstrap: str, workdir: Path, **review: Any) -> ReviewProcess:
    """`agentwatch review` on loopback with a SQLite store in `workdir`, alice's password hashed at the
    production cost (scrypt N=2^15: 32 MiB and ~0.1 s a check), unique topics; returns once /healthz answers.
    The flood comes from one address, 64 requests at a time: it may hold that many connections (the per-client
    cap has a test of its own), so that what is measured is the sign-in throttle."""
    prefix = f"flood-{uuid.uuid4().hex[:8]}"
    port, metrics_port = free_port(), free_port()
    config = {
        "kafka": {"bootstrap_servers": bootstrap},
        "review": {
            "database_url": f"sqlite:///{workdir / 'review.db'}",
            "port": port,
            "metrics_port": metrics_port,
            "transcripts_topic": f"{prefix}-transcripts",
            "scores_topic": f"{prefix}-scores",
            "labels_topic": f"{prefix}-labels",
            "group_id": f"{prefix}-group",
            "session_timeout_ms": 2000,
            "heartbeat_interval_ms": 500,
            "reviewers": [{"name": "alice", "password_hash": hash_password(PASSWORD)}],
            "max_connections_per_client": 128,
            **review,
        },
    }
    path = workdir / f"{prefix}.json"  # JSON is YAML
    path.write_text(json.dumps(config))
    log = workdir / f"{prefix}.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentwatch", "review", "--config", str(path)],
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )
    service = ReviewProcess(proc, port, metrics_port, log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"agentwatch review exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{service.url}/healthz", timeout=2).status_code == 200:
                return service
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    service.stop()
    raise RuntimeError("agentwatch review did not answer /healthz within 60 s")


@dataclass
class FloodResult:
    """What a flood did: statuses, the highest RSS seen, the /healthz latencies measured meanwhile (ms)."""

    statuses: Counter[int] = field(default_factory=Counter)
    seconds: float = 0.0
    rss_before: float = 0.0
    rss_peak: float = 0.0
    rss_after: float = 0.0
    health_ms: list[float] = field(default_factory=list)

    def health_summary(self) -> str:
        if not self.health_ms:
            return "no /healthz probe answered"
        ms = sorted(self.health_ms)
        p99 = ms[min(len(ms) - 1, int(0.99 * len(ms)))]
        return (
            f"median {statistics.median(ms):.1f} ms, p99 {p99:.1f} ms, max {ms[-1]:.1f} ms ({len(ms)} probes)"
        )


def probe_health(url: str, stop: Any, out: Any) -> None:
    """In a process of its own (so that the flood's client does not delay it): GET /healthz every 50 ms until
    `stop` is set; each latency in ms (inf: no answer) goes to `out`."""
    with httpx.Client(base_url=url, timeout=30) as probe:
        probe.get("/healthz")  # the connection and the client's first-call costs, not the service's
        while not stop.is_set():
            t = time.perf_counter()
            try:
                ok = probe.get("/healthz").status_code == 200
            except httpx.HTTPError:
                ok = False
            out.put((time.perf_counter() - t) * 1000 if ok else float("inf"))
            stop.wait(0.05)


def flood(service: ReviewProcess, requests: int = 200, concurrency: int = 64) -> FloodResult:
    """`requests` GET / with a wrong HTTP Basic password, `concurrency` at a time, while a probe in another
    process reads /healthz every 50 ms and the service's RSS is sampled every 20 ms."""
    result = FloodResult(rss_before=service.rss_mib())
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            result.rss_peak = max(result.rss_peak, service.rss_mib())
            done.wait(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    spawn = multiprocessing.get_context("spawn")
    probe_stop, latencies = spawn.Event(), spawn.Queue()
    prober = spawn.Process(target=probe_health, args=(service.url, probe_stop, latencies), daemon=True)
    prober.start()
    time.sleep(1.0)  # the probe's interpreter starts
    wrong = base64.b64encode(b"alice:not the password").decode()

    async def attack() -> None:
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(base_url=service.url, limits=limits, timeout=120) as client:
            gate = asyncio.Semaphore(concurrency)

            async def one() -> None:
                async with gate:
                    try:
                        r = await client.get("/", headers={"Authorization": f"Basic {wrong}"})
                        result.statuses[r.status_code] += 1
                    except httpx.HTTPError:
                        result.statuses[0] += 1

            await asyncio.gather(*(one() for _ in range(requests)))

    start = time.perf_counter()
    asyncio.run(attack())
    result.seconds = time.perf_counter() - start
    time.sleep(0.5)
    done.set()
    probe_stop.set()
    prober.join(10)
    watcher.join(10)
    while not latencies.empty():
        result.health_ms.append(latencies.get())
    result.rss_peak = max(result.rss_peak, service.rss_mib())
    result.rss_after = service.rss_mib()
    return result


def guesses(service: ReviewProcess, seconds: float = 10.0) -> Counter[int]:
    """Wrong passwords through the sign-in form, one after another for `seconds`: statuses (401: a check ran;
    429: refused before any hashing)."""
    statuses: Counter[int] = Counter()
    deadline = time.monotonic() + seconds
    with httpx.Client(base_url=service.url, timeout=30) as client:
        while time.monotonic() < deadline:
            page = client.get("/login")
            csrf = page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
            r = client.post("/login", data={"csrf": csrf, "name": "alice", "secret": f"guess {uuid.uuid4()}"})
            statuses[r.status_code] += 1
    return statuses
