"""Cost per call of `@trace` next to a bare call, a hand-written OpenTelemetry span, and peers' decorators.

Run: python -m benchmarks.sdk_overhead [--calls N] [--repeats R]

Everything is timed on the caller's thread, in one process (each BatchSpanProcessor's worker thread exports
in the background, as in production). The raw span and `@trace` share one TracerProvider with the same
processors (our conversation processor, then one BatchSpanProcessor into memory); variants take turns in
every repeat and the median is reported, so changing load on a shared machine hits them alike.
Langfuse's `@observe` and Galtea's `@trace` are timed when importable (they are not agentwatch
dependencies; e.g. `pip install --target DIR langfuse galtea` and run with PYTHONPATH=DIR). Galtea traces
through the same global provider; Langfuse gets a provider of its own with its default processor (OTLP/HTTP
export to an unreachable host). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import os
import random
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentwatch import sdk
from agentwatch.sdk import KafkaSpanExporter, configure, conversation, trace

Variant = tuple[Callable[..., Any], bool]  # (function, timed inside a conversation?)


def lookup(city: str, units: str = "metric") -> dict[str, Any]:
    """The function every variant wraps: a small tool returning a small dict."""
    return {"city": city, "temp": 21.5, "units": units}


def time_once(fn: Callable[..., Any], calls: int, in_conv: bool) -> tuple[float, float]:
    """(wall, caller-thread CPU) µs per call over one run of `calls` calls."""
    gc.collect()
    scope = (
        conversation(task="bench", agent="bench-agent", user="u1") if in_conv else contextlib.nullcontext()
    )
    with scope:
        t0, c0 = time.perf_counter(), time.thread_time()
        for _ in range(calls):
            fn("Paris", units="metric")
        return (time.perf_counter() - t0) / calls * 1e6, (time.thread_time() - c0) / calls * 1e6


def measure(
    variants: dict[str, Variant], calls: int, repeats: int, between: Callable[[], None] = lambda: None
) -> dict[str, tuple[float, float]]:
    """Median (wall, caller-thread CPU) µs per call of each variant, the variants taking turns every repeat."""
    for fn, in_conv in variants.values():  # warm-up
        time_once(fn, min(calls, 1000), in_conv)
    between()
    walls: dict[str, list[float]] = {name: [] for name in variants}
    cpus: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeats):
        for name, (fn, in_conv) in variants.items():
            wall, cpu = time_once(fn, calls, in_conv)
            walls[name].append(wall)
            cpus[name].append(cpu)
            between()
    return {name: (statistics.median(walls[name]), statistics.median(cpus[name])) for name in variants}


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


def peers() -> dict[str, Variant]:
    """Peers' decorators on the same function, when installed."""
    out: dict[str, Variant] = {}
    try:
        os.environ.setdefault("LANGFUSE_PUBLIC_KEY", "pk-lf-bench")
        os.environ.setdefault("LANGFUSE_SECRET_KEY", "sk-lf-bench")
        os.environ.setdefault("LANGFUSE_HOST", "http://127.0.0.1:9")
        from langfuse import Langfuse, observe

        # Its own provider, as by default: on the global one its processor would slow every other variant.
        Langfuse(tracer_provider=TracerProvider())
        out["Langfuse @observe"] = (observe(as_type="tool")(lookup), False)
    except Exception as exc:  # noqa: BLE001 - optional peer
        print(f"  (Langfuse not measured: {type(exc).__name__}: {exc})")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from galtea import trace as galtea_trace

            out["Galtea @trace"] = (galtea_trace(type="TOOL")(lookup), False)
    except Exception as exc:  # noqa: BLE001 - optional peer
        print(f"  (Galtea not measured: {type(exc).__name__}: {exc})")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2_000, help="calls per timed run")
    parser.add_argument("--repeats", type=int, default=25, help="timed runs per variant (interleaved)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.CRITICAL)
    print(
        f"agentwatch SDK overhead: {args.calls} calls x {args.repeats} interleaved runs, median µs per call "
        "(wall clock; CPU time of the calling thread)"
    )

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    otel_trace.set_tracer_provider(provider)  # peers that use the global provider share it
    configure(memory, tracer_provider=provider)
    raw = raw_span(provider.get_tracer("bench"))
    traced = trace(kind="tool")(lookup)
    variants: dict[str, Variant] = {
        "bare function": (lookup, False),
        "raw OTel span": (raw, False),
        "@trace": (traced, False),
        "raw OTel span, inside conversation()": (raw, True),
        "@trace, inside conversation()": (traced, True),
    }
    results = measure(variants, args.calls, args.repeats, between=memory.clear)

    try:
        from agentwatch.kafka.broker import EmbeddedBroker

        with EmbeddedBroker() as broker:
            exporter = KafkaSpanExporter(
                broker.bootstrap_servers, topic="bench.spans", max_in_flight_spans=1_000_000
            )
            kafka_provider = TracerProvider()
            # a queue that holds every span of a timed run: the figures time @trace, not the processor's drops
            configure(
                "none",
                tracer_provider=kafka_provider,
                extra_processors=[BatchSpanProcessor(exporter, max_queue_size=1_000_000)],
            )
            kafka = measure(
                {
                    "@trace, Kafka exporter": (traced, False),
                    "@trace, Kafka exporter, inside conversation()": (traced, True),
                },
                args.calls,
                args.repeats,
            )
            results.update(kafka)
            kafka_provider.force_flush()
            exporter.force_flush(60_000)
            stats = exporter.stats()
            print(
                f"  Kafka exporter: sent {stats['sent_spans']} spans in {stats['sent_messages']} messages, "
                f"dropped {stats['dropped_spans']}"
            )
            sdk.shutdown()
            kafka_provider.shutdown()
    except RuntimeError as exc:
        print(f"  (Kafka not measured: {exc})")

    configure(memory, tracer_provider=provider)
    found = peers()
    if found:
        peer_results = measure(
            {
                "raw OTel span (again, beside peers)": (raw, False),
                "@trace (again, beside peers)": (traced, False),
                **found,
            },
            args.calls,
            args.repeats,
            between=memory.clear,
        )
        results.update(peer_results)

    width = max(len(k) for k in results)
    print(f"  {'':<{width}}  {'wall':>8}     {'thread CPU':>10}")
    for name, (wall, cpu) in results.items():
        print(f"  {name:<{width}}  {wall:8.2f} µs  {cpu:8.2f} µs")

    def ratio(a: str, b: str) -> str:
        return f"{results[a][0] / results[b][0]:.2f} wall, {results[a][1] / results[b][1]:.2f} CPU"

    print(f"ratio @trace / raw span: {ratio('@trace', 'raw OTel span')}  (target <= 1.10)")
    print(
        f"ratio @trace / raw span, inside conversation(): "
        f"{ratio('@trace, inside conversation()', 'raw OTel span, inside conversation()')}"
    )
    if "@trace, Kafka exporter" in results:
        print(f"ratio @trace Kafka / raw span (memory): {ratio('@trace, Kafka exporter', 'raw OTel span')}")
    for name in found:
        print(f"ratio {name} / @trace: {ratio(name, '@trace (again, beside peers)')}")


if __name__ == "__main__":
    main()
