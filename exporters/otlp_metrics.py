"""Optional OTLP metrics push of the same numbers as /metrics, with OpenTelemetry observable instruments.

Every gauge family of the Prometheus collector becomes an observable gauge, every counter an observable
counter named like its Prometheus sample (`..._total`), with the same attributes as the Prometheus labels. The
numbers come from the same family builders, so both outputs agree. Histograms are not pushed (OpenTelemetry has
no observable histogram); use /metrics for them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from agentwatch.exporters.estimator import EstimatorCounters
from agentwatch.exporters.prometheus import counter_families, estimate_families
from opentelemetry.metrics import CallbackOptions, Meter, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader

from agentwatch.config import ExporterConfig

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
        families = estimate_families([]) + counter_families(_EMPTY)
        for fam in families:
            if fam.type == "gauge":
                meter.create_observable_gauge(fam.name, [self._callback(fam.name)], description=fam.documentation)
            elif fam.type == "counter":
                name = f"{fam.name}_total"
                meter.create_observable_counter(name, [self._callback(name)], description=fam.documentation)

    def _callback(self, name: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(_options: CallbackOptions) -> Iterable[Observation]:
            return self._current().get(name, [])

        return observe

    def _current(self) -> dict[str, list[Observation]]:
        with self._lock:
            if time.monotonic() - self._taken > self._max_age_s:
                est = self._source()
                samples: dict[str, list[Observation]] = {}
                for fam in estimate_families(est.snapshot()) + counter_families(est.counters()):
                    if fam.type not in ("gauge", "counter"):
                        continue
                    for s in fam.samples:
                        if s.name.endswith("_created"):
                            continue
                        samples.setdefault(s.name, []).append(Observation(s.value, dict(s.labels)))
                self._samples = samples
                self._taken = time.monotonic()
            return self._samples


def meter_provider(source: Callable[[], Any], reader: MetricReader) -> MeterProvider:
    """A MeterProvider of its own whose `reader` sees every agentwatch metric of the estimator `source()`."""
    provider = MeterProvider(metric_readers=[reader])
    OtlpBridge(source, provider.get_meter("agentwatch.exporters"))
    return provider


def start_otlp_push(source: Callable[[], Any], cfg: ExporterConfig) -> MeterProvider:
    """Push every `cfg.otlp_interval_s` to `cfg.otlp_endpoint` (`http(s)://…/v1/metrics` → HTTP, else gRPC)."""
    endpoint = cfg.otlp_endpoint or ""
    if endpoint.startswith(("http://", "https://")) and endpoint.rstrip("/").endswith("/v1/metrics"):
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    else:
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter  # type: ignore[no-redef]
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=endpoint), export_interval_millis=int(cfg.otlp_interval_s * 1000)
    )
    log.info("pushing metrics over OTLP to %s every %.0fs", endpoint, cfg.otlp_interval_s)
    return meter_provider(source, reader)
