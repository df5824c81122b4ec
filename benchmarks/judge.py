"""Collector throughput with an LLM judge: conversations/s and the collector's CPU per judged conversation.

Run: `python -m benchmarks.judge [--conversations N] [--latency-ms MS] [--concurrency C ...]`. Prints
figures; asserts nothing about timings. The collector service runs in this process as in production (consumer
group on an embedded Tansu broker, manual commits, scores produced and flushed) with `judge.enabled` and
`sampling.judge_rate: 1.0`, so every conversation waits for one verdict. The judge is a fake OpenAI-compatible
server in a child process that answers every request with a verdict after a fixed latency (200 ms by default).

Throughput is wall time from the first message consumed to the last score produced. CPU is this process's
`time.process_time()` over the same interval divided by the conversations: every thread of the collector
(consume loop: decode, assemble, rebuild, score; the judge pool: prompt building, HTTP, reply parsing;
librdkafka's threads) and this script's polling loop; not the broker nor the judge server, which are other
processes. Poll loops cost CPU while the collector waits for verdicts, so the same process is then measured
idle for a second and the figure above that idle rate is printed beside the total. The default judge
concurrency (`JudgeConfig.concurrency`) is run first, then the others given for comparison (16 by default).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from agentwatch.config import JudgeConfig, SamplingConfig
from benchmarks import collector as collector_workload
from benchmarks.calibration import calibration_line, calibration_us

ROOT = Path(__file__).resolve().parents[1]
KEY_ENV = "AGENTWATCH_BENCH_JUDGE_KEY"
IDLE_S = 1.0  # after the run: the process's CPU with nothing to consume (poll loops), per second


# --------------------------------------------------------------------------- the judge server (child process)


def serve_judge(latency_s: float) -> None:
    """The demo's stand-in OpenAI-compatible judge, answering after `latency_s`; prints its port, serves until
    stdin closes."""
    from agentwatch.demo.judge import DemoJudgeServer

    with DemoJudgeServer(latency_s) as server:
        print(server.base_url.rsplit(":", 1)[1].split("/")[0], flush=True)
        sys.stdin.read()


class JudgeServer:
    """The fake judge in a child process (its CPU is not the collector's)."""

    def __init__(self, latency_s: float) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.judge", "--serve-judge", str(latency_s)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        port = int(self._proc.stdout.readline())  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}/v1"

    def close(self) -> None:
        self._proc.stdin.close()  # type: ignore[union-attr]
        self._proc.wait(10)


# --------------------------------------------------------------------------- one run


def run_collector(
    bootstrap: str, messages: list[bytes], judge_url: str, concurrency: int
) -> dict[str, float]:
    """Produce the messages to a fresh topic, run the collector with the judge until every score is out."""
    from agentwatch.collector.service import CollectorService

    settings, _ = collector_workload.produce_spans(bootstrap, messages, "bench-judge")
    settings.judge = JudgeConfig(
        enabled=True,
        base_url=judge_url,
        model="gpt-4o-mini",
        api_key_env=KEY_ENV,
        concurrency=concurrency,
        hourly_usd=None,
        daily_usd=None,
    )
    settings.sampling = SamplingConfig(judge_rate=1.0)
    service = CollectorService(settings)
    stop = threading.Event()
    thread = threading.Thread(target=service.run, args=(stop,), daemon=True)
    thread.start()
    stats = service.stats
    total = len(messages)
    deadline = time.monotonic() + 300
    while stats.messages_consumed == 0 and time.monotonic() < deadline:
        time.sleep(0.001)
    t0, c0 = time.perf_counter(), time.process_time()
    while stats.scores_produced < total and time.monotonic() < deadline and thread.is_alive():
        time.sleep(0.005)
    seconds, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    judge = service.judge.stats.snapshot() if service.judge is not None else {}
    i0, w0 = time.process_time(), time.perf_counter()  # the same process with nothing to do: polling only
    time.sleep(IDLE_S)
    idle_ms_per_s = (time.process_time() - i0) / (time.perf_counter() - w0) * 1e3
    stop.set()
    thread.join(30)
    done = stats.scores_produced
    failures = sum((judge.get("failures") or {}).values())
    mean_latency = judge.get("latency_sum_s", 0.0) / max(1, judge.get("latency_count", 0))
    cpu_ms = cpu_s / max(1, done) * 1e3
    busy_ms = max(0.0, cpu_s * 1e3 - idle_ms_per_s * seconds) / max(1, done)
    print(
        f"judge concurrency {concurrency:>3}: {done / seconds:>8,.1f} conversations/s (wall)"
        f"  CPU {cpu_ms:6.2f} ms per judged conversation ({busy_ms:.2f} ms above the idle"
        f" {idle_ms_per_s:.1f} ms/s of polling)"
        f"  [{judge.get('calls', 0)} judge calls, {failures} failures, mean judge latency"
        f" {mean_latency * 1e3:.0f} ms, {stats.judge_pauses} pauses]"
        + ("" if done == total else f"  (only {done} of {total} scored before the deadline)")
    )
    return {
        f"c{concurrency}_conversations_per_s": done / seconds,
        f"c{concurrency}_cpu_ms_per_conversation": cpu_ms,
        f"c{concurrency}_cpu_ms_per_conversation_above_idle": busy_ms,
    }


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--serve-judge":
        serve_judge(float(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=400, help="conversations per run")
    parser.add_argument("--latency-ms", type=float, default=200.0, help="the fake judge's latency")
    parser.add_argument(
        "--concurrency",
        type=int,
        nargs="*",
        default=[16],
        help="judge concurrencies to compare with the default",
    )
    parser.add_argument("--bootstrap-servers", default=None, help="use this broker, not an embedded one")
    args = parser.parse_args()
    before = calibration_us()
    os.environ.setdefault(KEY_ENV, "bench")
    w = collector_workload.make_workload(args.conversations)
    default = JudgeConfig().concurrency
    print(
        f"workload: {w.conversations:,} conversations, {w.spans:,} spans, judge latency "
        f"{args.latency_ms:.0f} ms, judge_rate 1.0"
    )
    from agentwatch.kafka.broker import EmbeddedBroker

    broker = None
    bootstrap = args.bootstrap_servers
    if bootstrap is None:
        broker = EmbeddedBroker().start()
        bootstrap = broker.bootstrap_servers
    judge = JudgeServer(args.latency_ms / 1000)
    try:
        for concurrency in [default, *[c for c in args.concurrency if c != default]]:
            run_collector(bootstrap, w.messages, judge.base_url, concurrency)
        print(
            f"(ceiling: concurrency / latency = {default / (args.latency_ms / 1000):,.0f} conversations/s at "
            f"the default {default}; CPU is this process: consume loop, judge threads, librdkafka; not the "
            "broker nor the judge server)"
        )
    finally:
        judge.close()
        if broker is not None:
            broker.stop()
    print(calibration_line(before))


if __name__ == "__main__":
    main()
