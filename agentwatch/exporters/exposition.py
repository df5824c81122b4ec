"""The estimator's /metrics text, the text of each unchanged series kept between scrapes.

Formatting every sample on every scrape costs about 100× a scrape that reuses the text of unchanged series
(docs/exporter.md), so the text of each estimate and of each series' counters is kept while they are
unchanged, and a scrape is one string join per unchanged series. Which samples exist comes from
`prometheus.estimate_samples` and `prometheus.counter_samples`; the lines, the estimator-health families and
other registered collectors (the collector's pipeline health in `serve`) are written by
`agentwatch.metrics_http`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.utils import floatToGoString

from agentwatch.exporters.counters import SeriesCounters
from agentwatch.exporters.prometheus import (
    COUNTERS,
    GAUGES,
    HISTOGRAMS,
    agreement_families,
    counter_samples,
    estimate_samples,
    health_families,
    histogram_buckets,
    regression_samples,
)
from agentwatch.exporters.summary import SeriesEstimate
from agentwatch.metrics_http import header, labels_text, render_families


def _series_labels(key: tuple[str, ...]) -> str:
    return labels_text(("agent", "version", "task", "window")[: len(key)], key)


def _estimate_lines(e: SeriesEstimate, regression_only: bool = False) -> tuple[str, ...]:
    base = _series_labels((e.agent, e.version, e.task, e.window))
    per: list[list[str]] = [[] for _ in GAUGES]
    samples = regression_samples(e) if regression_only else estimate_samples(e, with_regression=False)
    for i, extra, v in samples:
        name, _doc, extra_names = GAUGES[i]
        labels = f"{base},{labels_text(extra_names, extra)}" if extra else base
        # written inline: a call to `sample_line` per sample made re-rendering measurably slower (callgrind)
        per[i].append(f"{name}{{{labels}}} {floatToGoString(v)}\n")
    return tuple("".join(p) for p in per)


def _counter_lines(key: tuple[str, str, str], c: SeriesCounters) -> tuple[str, ...]:
    base = _series_labels(key)
    per: list[list[str]] = [[] for _ in COUNTERS]
    for i, extra, v in counter_samples(c):
        name, _doc, extra_names = COUNTERS[i]
        per[i].append(f"{name}{{{base},{labels_text(extra_names, extra)}}} {floatToGoString(v)}\n")
    hists = []
    for (name, _doc), h in zip(HISTOGRAMS, (c.cost, c.duration), strict=True):
        if not h.count:
            hists.append("")
            continue
        lines = [
            f'{name}_bucket{{{base},le="{le}"}} {floatToGoString(n)}\n' for le, n in histogram_buckets(h)
        ]
        lines.append(f"{name}_count{{{base}}} {floatToGoString(h.count)}\n")
        lines.append(f"{name}_sum{{{base}}} {floatToGoString(h.total)}\n")
        hists.append("".join(lines))
    return (*("".join(p) for p in per), *hists)


_COUNTER_HEADERS = (
    *(header(name, "counter", doc) for name, doc, _ in COUNTERS),
    *(header(name, "histogram", doc) for name, doc in HISTOGRAMS),
)


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
                if e.regression or e.alerts:
                    for i, text in enumerate(_estimate_lines(e, regression_only=True)):
                        if text:
                            gauges[i].append(text)
            out: list[str] = []
            for (name, doc, _extra), parts in zip(GAUGES, gauges, strict=True):
                out.append(header(name, "gauge", doc))
                out.extend(parts)
            counters = est.counters()
            cache, fresh = self._counter_cache, {}
            per: list[list[str]] = [[] for _ in _COUNTER_HEADERS]
            for key, c in counters.series.items():
                hit = cache.get(key)
                if hit is None or hit[0] != id(c) or hit[1] != c.revision:
                    hit = (id(c), c.revision, _counter_lines(key, c))
                fresh[key] = hit
                for i, text in enumerate(hit[2]):
                    if text:
                        per[i].append(text)
            self._counter_cache = fresh
            for head, parts in zip(_COUNTER_HEADERS, per, strict=True):
                out.append(head)
                out.extend(parts)
        out.append(render_families(health_families(counters)))
        out.append(render_families(agreement_families(est.agreement(), est.min_kappa, est.min_kappa_labels)))
        if self.registry is not None:
            out.append(render_families(self.registry.collect()))
        return "".join(out).encode()
