"""Rebuilding one conversation of a long graph run: N agent steps joined into one turn, a tool span beside each.

Run: `python -m benchmarks.graph_steps [--steps 3000]`. Prints figures; asserts nothing.

A LangGraph run under OpenInference logs an agent span per step of its "agent" node, with the tool node's spans
beside them (span_tree.SpanForest joins the steps of one tool loop into one turn). A hostile or runaway run has
thousands of steps in one trace (the collector keeps up to `max_spans_per_conversation`, 10,000 by default):
the join must stay linear in them. CPU time of `SpanForest` on one such trace, median of `--rounds`, with a
calibration line beside it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from agentwatch.collector.span_record import SpanRecord
from agentwatch.collector.span_tree import SpanForest
from benchmarks.calibration import calibration_line, calibration_us

_TRACE = "7" * 32


def _messages(kind: str, call: int) -> str:
    part: dict[str, object] = {"type": kind, "id": f"c{call}"}
    part.update({"name": "lookup", "arguments": {}} if kind == "tool_call" else {"response": {"ok": True}})
    return json.dumps([{"role": "assistant" if kind == "tool_call" else "tool", "parts": [part]}])


def graph_run(steps: int) -> list[SpanRecord]:
    """One trace: a CHAIN root, `steps` agent steps (each model call given the result of the tool the previous
    asked for) and a tool span after each, outside the steps."""
    root = SpanRecord(
        _TRACE, "0" * 16, None, "LangGraph", 1, 10**12, None, {"openinference.span.kind": "CHAIN"}, {}, "g"
    )
    spans = [root]
    for i in range(steps):
        start = 10 + i * 100
        agent, model, tool = (f"{kind}{i:015d}" for kind in "amt")
        model_attrs = {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": _messages("tool_call_response", i - 1),
            "gen_ai.output.messages": _messages("tool_call", i),
        }
        spans += [
            SpanRecord(
                _TRACE,
                agent,
                root.span_id,
                "agent",
                start,
                start + 50,
                None,
                {"openinference.span.kind": "AGENT"},
                {},
                "g",
            ),
            SpanRecord(_TRACE, model, agent, "llm", start + 1, start + 40, None, model_attrs, {}, "g"),
            SpanRecord(
                _TRACE,
                tool,
                root.span_id,
                "lookup",
                start + 60,
                start + 70,
                None,
                {"gen_ai.operation.name": "execute_tool"},
                {},
                "g",
            ),
        ]
    return spans


def main() -> None:
    """Print the time to find the turns of one long graph run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000, help="agent steps in the run (3 spans each)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    before = calibration_us()
    spans = graph_run(args.steps)
    times = []
    for _ in range(args.rounds):
        start = time.process_time()
        forest = SpanForest(spans, [])
        times.append(time.process_time() - start)
    (turn,) = forest.turns
    took = statistics.median(times)
    print(
        f"{len(spans):,} spans, {args.steps:,} steps joined into 1 turn of {len(forest.members[turn.span_id]):,} "
        f"spans: {took * 1000:.1f} ms CPU ({took / len(spans) * 1e6:.1f} µs a span; median of {args.rounds})"
    )
    print(calibration_line(before))


if __name__ == "__main__":
    main()
