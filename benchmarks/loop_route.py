"""What the loop key costs the re-key hop: `Rekeyer.republish` of traces that name no conversation, as the trace
join releases them, with the key (each trace rebuilt to find its loop) and keyed by trace id alone.

Run: `python -m benchmarks.loop_route [--traces 2000] [--rounds 3]`. The traces are the recorded loop of Google's
GenAI SDK (`tests/data/google_genai_trace.json`: two model calls, each a trace of its own), and the official
OpenAI instrumentation's loop under the caller's agent span (`openai_stream_trace.json`, its conversation id
taken off), copied under fresh trace ids; the producer is a stub that keeps nothing, so what is timed is encoding
and keying. CPU time, best of the rounds; prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path
from typing import Any

from agentwatch.collector.decode import SpanRecord, decode_message
from agentwatch.collector.rekey import Rekeyer
from benchmarks.calibration import calibration_line, calibration_us

RECORDING = Path(__file__).resolve().parents[1] / "tests" / "data" / "google_genai_trace.json"
# the official OpenAI instrumentation's loop under the caller's agent span: five spans a trace
AGENT_RECORDING = RECORDING.with_name("openai_stream_trace.json")


class _Nowhere:
    """A producer stub: takes the record, keeps nothing."""

    def send(self, topic: str, value: bytes, key: bytes, headers: Any) -> None:
        return None


class _ById(Rekeyer):
    """The re-key hop as before the loop key: every trace keyed by its id."""

    def _loop_key(self, trace: list[SpanRecord]) -> bytes | None:
        return None


def _traces(count: int, recording: Path) -> list[list[SpanRecord]]:
    """`count` released traces: the recording's traces, again and again under fresh trace ids, naming no
    conversation."""
    spans = decode_message(recording.read_bytes(), "application/json")
    base: dict[str, list[SpanRecord]] = {}
    for span in spans:
        span.attrs.pop("gen_ai.conversation.id", None)
        base.setdefault(span.trace_id, []).append(span)
    groups = list(base.values())
    out = []
    for i in range(count):
        trace = copy.deepcopy(groups[i % len(groups)])
        for span in trace:
            span.trace_id = span.conversation_id = f"{i + 1:032x}"
        out.append(trace)
    return out


def _cpu_s(rekeyer: Rekeyer, traces: list[list[SpanRecord]]) -> float:
    start = time.process_time()
    for trace in traces:
        rekeyer.republish(trace)
    return time.process_time() - start


def main() -> None:
    """Time the hop both ways and print µs per trace."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--traces", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    before = calibration_us()
    for title, recording in (
        ("a loop's one-span traces (bare model calls)", RECORDING),
        ("traces under an agent span (no loop: not rebuilt)", AGENT_RECORDING),
    ):
        traces = _traces(args.traces, recording)
        best = {"by loop": float("inf"), "by trace id": float("inf")}
        for _ in range(args.rounds):
            best["by loop"] = min(best["by loop"], _cpu_s(Rekeyer(_Nowhere(), "rk"), traces))
            best["by trace id"] = min(best["by trace id"], _cpu_s(_ById(_Nowhere(), "rk"), traces))
        per = {k: v / args.traces * 1e6 for k, v in best.items()}
        print(f"re-key hop of {args.traces:,} released traces, {title} (CPU, best of {args.rounds}):")
        print(
            f"  keyed by loop {per['by loop']:.1f} µs, by trace id {per['by trace id']:.1f} µs a trace: "
            f"the loop key costs {per['by loop'] - per['by trace id']:.1f} µs"
        )
    print(calibration_line(before))


if __name__ == "__main__":
    main()
