"""Optional OTLP metrics push of the same numbers as /metrics, with OpenTelemetry observable instruments.

Every gauge family of /metrics becomes an observable gauge, every counter an observable counter named like its
Prometheus sample (`..._total`), with the same attributes as the Prometheus labels. The numbers come from the
same sample sources as /metrics (`prometheus.estimate_samples`, `counter_samples`, `health_families`), so both
outputs agree. Histograms are not pushed (OpenTelemetry has
no observable histogram); use /metrics for them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry.metrics import CallbackOptions, Meter, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, MetricReader, PeriodicExportingMetricReader

from agentwatch.config import ExporterConfig
from agentwatch.exporters.counters import EstimatorCounters
from agentwatch.exporters.prometheus import (
    COUNTERS,
    GAUGES,
    SERIES,
    counter_samples,
    estimate_samples,
    health_families,
)

log = logging.getLogger(__name__)

_EMPTY = EstimatorCounters(0, {}, 0, {}, None, {})


class OtlpBridge:
    """Registers one observable instrument per metric; one estimator snapshot serves a whole collection."""

    def __init__(self, source: Callable[[], Any], meter: Meter, max_age_s: float = 1.0) -> None:
        self._source = source  # returns the current Estimator
        self._max_age_s = max_age_s
        self._lock = threading.Lock()
        self._taken = -float("inf")
        self._samples: dict[str, list[Observation]] = {}
        instruments = [(name, doc, "gauge") for name, doc, _ in GAUGES]
        instruments += [(name, doc, "counter") for name, doc, _ in COUNTERS]
        for fam in health_families(_EMPTY):
            name = f"{fam.name}_total" if fam.type == "counter" else fam.name
            instruments.append((name, fam.documentation, fam.type))
        for name, doc, kind in instruments:
            if kind == "gauge":
                meter.create_observable_gauge(name, [self._callback(name)], description=doc)
            else:
                meter.create_observable_counter(name, [self._callback(name)], description=doc)

    def _callback(self, name: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(_options: CallbackOptions) -> Iterable[Observation]:
            return self._current().get(name, [])

        return observe

    def _current(self) -> dict[str, list[Observation]]:
        with self._lock:
            if time.monotonic() - self._taken > self._max_age_s:
                self._samples = _observations(self._source())
                self._taken = time.monotonic()
            return self._samples


def _observations(est: Any) -> dict[str, list[Observation]]:
    """Every sample of the estimator `est` as an OTLP observation, by instrument name."""
    samples: dict[str, list[Observation]] = {}

    def add(name: str, labels: dict[str, str], value: float) -> None:
        samples.setdefault(name, []).append(Observation(value, labels))

    for e in est.snapshot():
        base = dict(zip((*SERIES, "window"), (e.agent, e.version, e.task, e.window), strict=True))
        for i, extra, v in estimate_samples(e):
            name, _doc, extra_names = GAUGES[i]
            add(name, {**base, **dict(zip(extra_names, extra, strict=True))}, v)
    counters = est.counters()
    for key, c in counters.series.items():
        base = dict(zip(SERIES, key, strict=True))
        for i, extra, v in counter_samples(c):
            name, _doc, extra_names = COUNTERS[i]
            add(name, {**base, **dict(zip(extra_names, extra, strict=True))}, v)
    for fam in health_families(counters):
        for s in fam.samples:
            add(s.name, dict(s.labels), s.value)
    return samples


def meter_provider(source: Callable[[], Any], reader: MetricReader) -> MeterProvider:
    """A MeterProvider of its own whose `reader` sees every agentwatch metric of the estimator `source()`."""
    provider = MeterProvider(metric_readers=[reader])
    OtlpBridge(source, provider.get_meter("agentwatch.exporters"))
    return provider


def start_otlp_push(source: Callable[[], Any], cfg: ExporterConfig) -> MeterProvider:
    """Push every `cfg.otlp_interval_s` to `cfg.otlp_endpoint` (`http(s)://…/v1/metrics` → HTTP, else gRPC)."""
    endpoint = cfg.otlp_endpoint or ""
    exporter: MetricExporter
    if endpoint.startswith(("http://", "https://")) and endpoint.rstrip("/").endswith("/v1/metrics"):
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HTTPExporter

        exporter = HTTPExporter(endpoint=endpoint)
    else:
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GRPCExporter

        exporter = GRPCExporter(endpoint=endpoint)
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=int(cfg.otlp_interval_s * 1000))
    log.info("pushing metrics over OTLP to %s every %.0fs", endpoint, cfg.otlp_interval_s)
    return meter_provider(source, reader)
