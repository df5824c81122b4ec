"""Cost per call of `@trace` next to a bare call, a hand-written OpenTelemetry span, and peers' decorators.

Run: python benchmarks/sdk_overhead.py [--calls N] [--repeats R]

Everything runs in one process on the caller's thread (the BatchSpanProcessor's worker thread exports in the
background, as in production). The raw span and `@trace` share one TracerProvider with the same processors
(our conversation processor, then one BatchSpanProcessor). Langfuse's `@observe` and Galtea's `@trace` are
measured when importable (they are not dependencies of agentwatch). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentwatch import sdk
from agentwatch.sdk import KafkaSpanExporter, configure, conversation, trace


def lookup(city: str, units: str = "metric") -> dict[str, Any]:
    """The function every variant wraps: a small tool returning a small dict."""
    return {"city": city, "temp": 21.5, "units": units}


def measure(fn: Callable[..., Any], calls: int, repeats: int) -> float:
    """Median over repeats of the mean µs per call."""
    for _ in range(min(calls, 1000)):  # warm-up
        fn("Paris", units="metric")
    samples = []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn("Paris", units="metric")
        samples.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(samples)


def raw_span(tracer: Any) -> Callable[..., Any]:
    """A hand-written OTel span with the attributes `@trace(kind="tool")` sets."""

    def raw_lookup(city: str, units: str = "metric") -> dict[str, Any]:
        attrs = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup",
            "gen_ai.tool.call.id": f"call_{random.getrandbits(64):016x}",
            "gen_ai.tool.call.arguments": json.dumps({"city": city, "units": units}),
        }
        with tracer.start_as_current_span("execute_tool lookup", attributes=attrs) as span:
            result = lookup(city, units)
            span.set_attribute("gen_ai.tool.call.result", json.dumps(result))
            return result

    return raw_lookup


def peers() -> dict[str, Callable[..., Any]]:
    """Peers' decorators on the same function, when installed (tracing to nowhere reachable)."""
    out: dict[str, Callable[..., Any]] = {}
    try:
        os.environ.setdefault("LANGFUSE_PUBLIC_KEY", "pk-lf-bench")
        os.environ.setdefault("LANGFUSE_SECRET_KEY", "sk-lf-bench")
        os.environ.setdefault("LANGFUSE_HOST", "http://127.0.0.1:9")
        from langfuse import observe

        out["Langfuse @observe"] = observe()(lookup)
    except Exception as exc:  # noqa: BLE001 - optional peer
        print(f"  (Langfuse not measured: {type(exc).__name__}: {exc})")
    try:
        from galtea import trace as galtea_trace

        out["Galtea @trace"] = galtea_trace()(lookup)
    except Exception as exc:  # noqa: BLE001 - optional peer
        print(f"  (Galtea not measured: {type(exc).__name__}: {exc})")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    results: dict[str, float] = {}

    print(f"agentwatch SDK overhead: {args.calls} calls x {args.repeats} repeats, median of repeats (µs/call)")
    results["bare function"] = measure(lookup, args.calls, args.repeats)

    # In-memory exporter: raw span and @trace through the very same provider and processors.
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    configure(memory, tracer_provider=provider)
    raw = raw_span(provider.get_tracer("bench"))
    traced = trace(kind="tool")(lookup)
    results["raw OTel span (BatchSpanProcessor, memory)"] = measure(raw, args.calls, args.repeats)
    memory.clear()
    results["@trace (BatchSpanProcessor, memory)"] = measure(traced, args.calls, args.repeats)
    memory.clear()
    with conversation(task="bench", agent="bench-agent", user="u1"):
        results["raw OTel span inside conversation()"] = measure(raw, args.calls, args.repeats)
        memory.clear()
        results["@trace inside conversation()"] = measure(traced, args.calls, args.repeats)
    memory.clear()

    # Kafka exporter to a real (embedded Tansu) broker.
    try:
        from agentwatch.broker import EmbeddedBroker

        with EmbeddedBroker() as broker:
            exporter = KafkaSpanExporter(broker.bootstrap_servers, topic="bench.spans", queue_size=1_000_000)
            kafka_provider = TracerProvider()
            configure(exporter, tracer_provider=kafka_provider)
            results["@trace (BatchSpanProcessor, Kafka)"] = measure(traced, args.calls, args.repeats)
            kafka_provider.force_flush()
            exporter.force_flush(30_000)
            stats = exporter.stats()
            print(f"  Kafka exporter: sent {stats['sent_spans']} spans in {stats['sent_messages']} messages, "
                  f"dropped {stats['dropped_spans']}")
            sdk.shutdown()
            kafka_provider.shutdown()
    except RuntimeError as exc:
        print(f"  (Kafka not measured: {exc})")

    for name, fn in peers().items():
        results[name] = measure(fn, args.calls, args.repeats)

    width = max(len(k) for k in results)
    for name, us in results.items():
        print(f"  {name:<{width}}  {us:8.2f} µs")
    raw_us = results["raw OTel span (BatchSpanProcessor, memory)"]
    ratio = results["@trace (BatchSpanProcessor, memory)"] / raw_us
    print(f"ratio @trace / raw span (memory): {ratio:.2f}  (target <= 1.25)")
    if "@trace inside conversation()" in results:
        r2 = results["@trace inside conversation()"] / results["raw OTel span inside conversation()"]
        print(f"ratio @trace / raw span inside conversation(): {r2:.2f}")
    if "@trace (BatchSpanProcessor, Kafka)" in results:
        print(f"ratio @trace Kafka / raw span (memory): {results['@trace (BatchSpanProcessor, Kafka)'] / raw_us:.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
