"""Fast Prometheus text exposition of the estimator, and the small HTTP server that serves it on /metrics.

prometheus-client's `generate_latest` formats and escapes every sample on every scrape (~15 µs a sample here).
This renderer produces the same samples (the families come from `prometheus.estimate_samples` and the same
counter families; a test parses both outputs and compares them) but keeps the text of each estimate and each
series' counters while they are unchanged, so a scrape costs one string join per unchanged series. Other
collectors (the collector's pipeline health in `serve`) come from a normal `CollectorRegistry`, appended with
`generate_latest`.
"""

from __future__ import annotations

import gzip
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentwatch.exporters.estimator import SeriesCounters
from agentwatch.exporters.prometheus import (
    GAUGES,
    estimate_samples,
    health_families,
    histogram_buckets,
    regression_samples,
)
from agentwatch.exporters.summary import SeriesEstimate
from agentwatch.exporters.windows import OUTCOMES
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
COUNTERS = (
    ("agentwatch_conversations_total", "counter", "Conversations consumed since start."),
    ("agentwatch_failures_total", "counter", "Conversations with that failure mode since start."),
    ("agentwatch_conversation_cost_usd", "histogram", "Cost per conversation (USD)."),
    ("agentwatch_conversation_duration_seconds", "histogram", "Duration per conversation (s)."),
)


def _esc(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _labels(names: tuple[str, ...], values: tuple[str, ...]) -> str:
    return ",".join(f'{n}="{_esc(v)}"' for n, v in zip(names, values, strict=True))


def _estimate_lines(e: SeriesEstimate, regression_only: bool = False) -> tuple[str, ...]:
    base = f'agent="{_esc(e.agent)}",version="{_esc(e.version)}",task="{_esc(e.task)}",window="{_esc(e.window)}"'
    per: list[list[str]] = [[] for _ in GAUGES]
    samples = regression_samples(e) if regression_only else estimate_samples(e, with_regression=False)
    for i, extra, v in samples:
        name, _doc, extra_names = GAUGES[i]
        labels = f"{base},{_labels(extra_names, extra)}" if extra else base
        per[i].append(f"{name}{{{labels}}} {floatToGoString(v)}\n")
    return tuple("".join(p) for p in per)


def _counter_lines(key: tuple[str, str, str], c: SeriesCounters) -> tuple[str, ...]:
    base = f'agent="{_esc(key[0])}",version="{_esc(key[1])}",task="{_esc(key[2])}"'
    conversations = "".join(
        f'agentwatch_conversations_total{{{base},outcome="{o}"}} {floatToGoString(c.outcomes[o])}\n'
        for o in OUTCOMES
        if o in c.outcomes
    )
    failures = "".join(
        f'agentwatch_failures_total{{{base},mode="{_esc(m)}"}} {floatToGoString(n)}\n'
        for m, n in sorted(c.modes.items())
    )
    hists = []
    for name, h in (("agentwatch_conversation_cost_usd", c.cost),
                    ("agentwatch_conversation_duration_seconds", c.duration)):
        if not h.count:
            hists.append("")
            continue
        lines = [f'{name}_bucket{{{base},le="{le}"}} {floatToGoString(n)}\n' for le, n in histogram_buckets(h)]
        lines.append(f"{name}_count{{{base}}} {floatToGoString(h.count)}\n")
        lines.append(f"{name}_sum{{{base}}} {floatToGoString(h.total)}\n")
        hists.append("".join(lines))
    return (conversations, failures, *hists)


class _Fixed(Collector):
    def __init__(self, families: list[Any]) -> None:
        self._families = families

    def collect(self) -> Any:
        return iter(self._families)


class Exposition:
    """Renders an estimator (plus an optional registry of other collectors) as Prometheus text."""

    def __init__(self, source: Callable[[], Any], registry: CollectorRegistry | None = None) -> None:
        self._source = source  # returns the current Estimator
        self.registry = registry
        self._counter_cache: dict[tuple[str, str, str], tuple[int, int, tuple[str, ...]]] = {}
        self._lock = threading.Lock()

    def render(self) -> bytes:
        """The whole /metrics body."""
        with self._lock:
            est = self._source()
            gauges: list[list[str]] = [[] for _ in GAUGES]
            for e in est.snapshot():
                if e.rendered is None:
                    e.rendered = _estimate_lines(e)
                for i, text in enumerate(e.rendered):
                    if text:
                        gauges[i].append(text)
                if e.regression or e.drift is not None:
                    for i, text in enumerate(_estimate_lines(e, regression_only=True)):
                        if text:
                            gauges[i].append(text)
            out: list[str] = []
            for (name, doc, _extra), parts in zip(GAUGES, gauges, strict=True):
                out.append(f"# HELP {name} {doc}\n# TYPE {name} gauge\n")
                out.extend(parts)
            counters = est.counters()
            cache, fresh = self._counter_cache, {}
            per: list[list[str]] = [[] for _ in COUNTERS]
            for key, c in counters.series.items():
                hit = cache.get(key)
                if hit is None or hit[0] != id(c) or hit[1] != c.revision:
                    hit = (id(c), c.revision, _counter_lines(key, c))
                fresh[key] = hit
                for i, text in enumerate(hit[2]):
                    if text:
                        per[i].append(text)
            self._counter_cache = fresh
            for (name, kind, doc), parts in zip(COUNTERS, per, strict=True):
                out.append(f"# HELP {name} {doc}\n# TYPE {name} {kind}\n")
                out.extend(parts)
            body = "".join(out).encode()
        tail = generate_latest(_Fixed(health_families(counters)))
        if self.registry is not None:
            tail += generate_latest(self.registry)
        return body + tail


def serve_http(exposition: Exposition, port: int, host: str = "0.0.0.0") -> ThreadingHTTPServer:
    """Serve `exposition` on http://host:port/metrics from a daemon thread; returns the server."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] != "/metrics":
                body, status, ctype = b"agentwatch exporter: see /metrics\n", 200 if self.path == "/" else 404, \
                    "text/plain"
            else:
                try:
                    body, status, ctype = exposition.render(), 200, CONTENT_TYPE
                except Exception:  # a failing scrape must not kill the server; the error is logged
                    log.exception("rendering /metrics failed")
                    body, status, ctype = b"internal error\n", 500, "text/plain"
            headers = {"Content-Type": ctype}
            if "gzip" in self.headers.get("Accept-Encoding", "") and len(body) > 4096:
                body = gzip.compress(body, compresslevel=1)
                headers["Content-Encoding"] = "gzip"
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("http: " + format, *args)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True).start()
    return server
