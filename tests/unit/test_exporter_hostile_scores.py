"""Score records a broken or hostile producer could write to the scores topic, fed to the exporter as bytes: each
is counted, and every /metrics body stays whole, finite and valid for Prometheus' own parser and promtool."""

from __future__ import annotations

import math
import shutil
import subprocess
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from agentwatch.config import load_settings
from agentwatch.exporters.service import ExporterService
from agentwatch.stats.inclusion import graded_probability
from tests.support.scores import T0, Clock, judged_record, make_score, score_record

FLOAT_MAX = 1.7976931348623157e308
SAMPLE_POINT_STEP = 2.0**-64  # sample points are 64-bit integers / 2^64


def _service() -> ExporterService:
    return ExporterService(load_settings(), registry=CollectorRegistry(), clock=Clock(T0 + 60))


def _scrape(service: ExporterService) -> dict[str, list[Any]]:
    """The /metrics body parsed by prometheus-client's parser and checked by promtool: samples by name."""
    text = service.exposition.render().decode()
    promtool = shutil.which("promtool") or "/usr/bin/promtool"
    run = subprocess.run(
        [promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60, check=False
    )
    problems = {line for line in (run.stdout + run.stderr).splitlines() if "quantile" not in line}
    assert run.returncode in (0, 3) and not problems, problems  # 3: the documented `quantile` lint only
    out: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append(s)
    return out


def _non_finite(samples: dict[str, list[Any]]) -> list[tuple[str, dict[str, str], float]]:
    """Samples that are NaN or infinite, but for the +Inf bucket bound of histograms (a label, not a value)."""
    return [
        (s.name, s.labels, s.value) for group in samples.values() for s in group if not math.isfinite(s.value)
    ]


@pytest.mark.parametrize("field", ["cost_usd", "duration_s"])
@pytest.mark.parametrize("value", [FLOAT_MAX, 1e308, 1e13, math.inf, math.nan, -0.5, -FLOAT_MAX])
def test_a_cost_or_duration_past_any_real_one_is_counted_and_every_scrape_stays_whole(
    field: str, value: float
) -> None:
    service = _service()
    assert service.feed(score_record("hostile", **{field: value}), "at t[0]@1") is True
    assert service.feed(score_record("hostile-again", **{field: value})) is True
    for i in range(5):
        assert service.feed(score_record(f"ok{i}", agent="fine", cost_usd=0.02, duration_s=3.0)) is True
    samples = _scrape(service)  # raised OverflowError (every scrape a 500) for the largest float
    assert _non_finite(samples) == []
    ignored = {s.labels["field"]: s.value for s in samples["agentwatch_score_values_ignored_total"]}
    assert ignored == {"cost_usd": 0.0, "duration_s": 0.0, field: 2.0}
    both = [s for s in samples["agentwatch_window_conversations"] if s.labels["agent"] == "bot"]
    assert sum(s.value for s in both if s.labels["task"] == "refund" and s.labels["window"] == "1h") == 2
    quantile = "agentwatch_cost_usd" if field == "cost_usd" else "agentwatch_duration_seconds"
    expected = 0.02 if field == "cost_usd" else 3.0
    assert {s.labels["agent"] for s in samples[quantile]} == {"fine"}
    assert all(abs(s.value - expected) <= 0.01 * expected for s in samples[quantile])


def test_a_sample_rate_below_a_sample_points_step_weighs_as_that_step_and_every_scrape_stays_whole() -> None:
    service = _service()
    for i in range(100):  # 75 labels: enough for the corrected figures, which weigh by the rates too
        rate = 1e-300 if i % 4 == 0 else 0.5
        assert service.feed(judged_record(f"j{i}", rate, i % 3 != 0, i % 5 != 0, labelled=i % 4 != 3)) is True
    samples = _scrape(service)  # raised ValueError on NaN effective counts (every scrape a 500)
    assert _non_finite(samples) == []
    rates = [s for s in samples["agentwatch_success_rate"] if s.labels["agent"] == "judged"]
    assert rates and all(0.0 <= s.value <= 1.0 for s in rates)
    corrected = samples["agentwatch_corrected_success_rate"]
    assert any(s.labels["estimate"] == "corrected" and s.labels["agent"] == "judged" for s in corrected)


@pytest.mark.parametrize("rate", [1e-300, 5e-324, 1e-20, SAMPLE_POINT_STEP])
def test_a_positive_rate_is_at_least_the_probability_of_the_sample_point_zero(rate: float) -> None:
    score = make_score("c", judge_rate=rate, graded_by=["judge"], judge_sampled=True)
    assert graded_probability(score) == SAMPLE_POINT_STEP
    assert graded_probability(make_score("d", judge_rate=0.25, graded_by=["judge"])) == 0.25


def test_an_unscored_record_that_claims_a_credit_adds_nothing_to_asr() -> None:
    service = _service()
    for i in range(4):  # a producer's record with no verdict (passed null) but a credit of 1
        assert service.feed(score_record(f"u{i}", passed=None, outcome="unscored", asr_credit=1.0)) is True
    for i in range(4):
        assert service.feed(score_record(f"f{i}", passed=False, outcome="abandoned", asr_credit=0.0)) is True
    samples = _scrape(service)
    asr = {
        s.labels["stat"]: s.value
        for s in samples["agentwatch_asr"]
        if s.labels["window"] == "1h" and s.labels["task"] == "refund"
    }
    assert asr["mean"] == 0.0  # the four scored conversations, all credited 0; was 0.5 with the unscored ones
