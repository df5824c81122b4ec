"""The Prometheus endpoint: exact pass^3 through a real HTTP scrape, fresh families, vanishing series."""

from __future__ import annotations

import urllib.request
from fractions import Fraction

import pytest
from confluent_kafka import KafkaError
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from agentwatch.config import load_settings
from agentwatch.exporters.service import ExporterService
from agentwatch.wire.schema import AutomatedVerdict, Outcome, ToolScore, TurnScore
from tests.support.metrics_reference import beta_bounds_by_bisection
from tests.support.scores import T0, Clock, make_score

TOOL_TURN = TurnScore(
    index=0,
    tool=ToolScore(
        selection=1.0, parameters=0.5, sequence=1.0, utilization=1.0, overall=0.875, binary=True, passed=False
    ),
)


def scrape(port: int) -> dict[str, list]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    out: dict[str, list] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, []).append(s)
    return out


def value(samples: dict, name: str, **labels: str) -> float:
    hits: list[float] = [
        s.value for s in samples.get(name, []) if all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(hits) == 1, (name, labels, hits)
    return hits[0]


@pytest.fixture
def served():
    clock = Clock(T0 + 60)
    service = ExporterService(load_settings(), registry=CollectorRegistry(), clock=clock)
    port = service.start_http(port=0, host="127.0.0.1")
    yield service, port, clock
    service.stop_http()


def test_pass_pow_3_exact_through_http_scrape(served) -> None:
    service, port, _ = served
    for i in range(30):
        service.estimator.add(make_score(f"c{i}", passed=i < 24))
    m = scrape(port)
    series = {"agent": "bot", "version": "v1", "task": "refund", "window": "1h", "k": "3"}
    mean = value(m, "agentwatch_pass_pow_k", stat="mean", **series)
    lower = value(m, "agentwatch_pass_pow_k", stat="lower", **series)
    upper = value(m, "agentwatch_pass_pow_k", stat="upper", **series)
    exact = Fraction(1)
    for i in range(3):
        exact *= Fraction(25 + i, 32 + i)
    lo, hi = beta_bounds_by_bisection(24, 30)
    assert abs(mean - float(exact)) < 1e-9
    assert abs(lower - lo**3) < 1e-9
    assert abs(upper - hi**3) < 1e-9
    s = {"agent": "bot", "version": "v1", "task": "refund", "window": "1h"}
    assert value(m, "agentwatch_window_scored", **s) == 30
    assert value(m, "agentwatch_window_passed", **s) == 24
    assert value(m, "agentwatch_success_rate", stat="mean", **s) == pytest.approx(25 / 32, abs=1e-12)
    assert (
        value(
            m, "agentwatch_conversations_total", agent="bot", version="v1", task="refund", outcome="complete"
        )
        == 24
    )
    assert value(m, "agentwatch_scores_consumed_total") == 30
    assert value(m, "agentwatch_scores_rejected_total", reason="duplicate") == 0
    assert value(m, "agentwatch_window_scored", agent="bot", version="v1", task="*", window="7d") == 30
    # no identifiers of conversations anywhere
    assert all("c1" not in str(s.labels.values()) for fam in m.values() for s in fam)


def test_every_documented_metric_is_exposed(served) -> None:
    import pathlib
    import re

    service, port, _ = served
    for i in range(40):
        service.estimator.add(
            make_score(
                f"a{i}",
                passed=i % 4 != 0,
                version="v1",
                ended_at=T0,
                cost_usd=0.01 * i,
                budget_usd=0.2,
                duration_s=i,
                reasons=["loop: x"] if i % 4 == 0 else [],
                turn_scores=[TOOL_TURN],
            )
        )
        service.estimator.add(make_score(f"b{i}", passed=i % 2 == 0, version="v2", ended_at=T0 + 30))
    for i in range(2000):  # an alert rule's reference needs alerts.min_reference conversations
        service.estimator.add(make_score(f"d{i}", passed=i % 5 != 0, agent="ref", version="v1", ended_at=T0))
    service.estimator.add(make_score("d-new", passed=False, agent="ref", version="v2", ended_at=T0 + 30))
    for i in range(40):  # judge-graded, 36 in the review sample with a label: corrections and agreement
        verdict = "complete" if i % 2 == 0 else "partial_incorrect"
        labelled = i < 36
        truth = "complete" if i % 3 else "partial_incorrect"
        service.estimator.add(
            make_score(
                f"j{i}",
                passed=truth == "complete",
                agent="judged",
                version="v1",
                ended_at=T0,
                outcome=truth,
                outcome_source="label" if labelled else "judge",
                graded_by=["judge", "label"] if labelled else ["judge"],
                judge="judge:model:1",
                judge_outcome=verdict,
                judge_sampled=True,
                judge_rate=1.0,
                review_rate=0.9,
                review_sampled=labelled,
                label=truth if labelled else None,
                automated=AutomatedVerdict(
                    graded_by=["judge"],
                    outcome=Outcome(verdict),
                    passed=verdict == "complete",
                    asr_credit=1.0 if verdict == "complete" else 0.0,
                ),
            )
        )
    service.estimator.reject_invalid()
    service.consumer_events.record(KafkaError(KafkaError._TRANSPORT))  # a broker connection failed
    m = scrape(port)
    doc = (pathlib.Path(__file__).parents[2] / "docs" / "metrics.md").read_text()
    table = doc.split("## Pipeline health")[0]
    names = set(re.findall(r"^\| `(agentwatch_[a-z_]+)`", table, flags=re.MULTILINE))
    assert len(names) >= 24
    exposed = {n.removesuffix("_bucket").removesuffix("_count").removesuffix("_sum") for n in m}
    assert names <= exposed, names - exposed
    assert (
        value(
            m,
            "agentwatch_regression_probability",
            agent="bot",
            version="v2",
            task="refund",
            window="1h",
            k="3",
            baseline_version="v1",
        )
        > 0.5
    )
    assert value(m, "agentwatch_scores_rejected_total", reason="invalid") == 1
    assert value(m, "agentwatch_exporter_consumer_errors_total", error="_TRANSPORT") == 1
    assert (
        value(
            m,
            "agentwatch_alert_threshold",
            agent="ref",
            version="v2",
            task="refund",
            window="7d",
            rule="pass",
            reference_version="v1",
        )
        > 0
    )
    assert (
        value(
            m,
            "agentwatch_tool_correctness",
            agent="bot",
            version="v1",
            task="refund",
            window="24h",
            dimension="parameters",
        )
        == 0.5
    )
    assert value(
        m, "agentwatch_failure_ratio", agent="bot", version="v1", task="refund", window="1h", mode="loop"
    ) == pytest.approx(0.25)


def test_vanished_series_vanish_from_the_next_scrape(served) -> None:
    service, port, clock = served
    service.estimator.add(make_score("x", version="old", ended_at=T0))
    m = scrape(port)
    assert value(m, "agentwatch_window_scored", agent="bot", version="old", task="refund", window="1h") == 1
    clock.t = T0 + 2 * 3600
    m = scrape(port)
    windows = {s.labels["window"] for s in m["agentwatch_window_scored"]}
    assert windows == {"24h", "7d"}
    clock.t = T0 + 8 * 86400
    m = scrape(port)
    assert "agentwatch_window_scored" not in m
    assert not any("version" in s.labels for fam in m.values() for s in fam)


def _parsed(text: str) -> tuple[dict, dict]:
    types, samples = {}, {}
    for fam in text_string_to_metric_families(text):
        types[fam.name] = fam.type
        for s in fam.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return types, samples


def _feed(est, step: int) -> None:
    if step == 0:
        for i in range(120):
            est.add(
                make_score(
                    f"e{i}",
                    passed=i % 3 != 0,
                    version="v1" if i < 60 else "v2",
                    task=f"t{i % 4}",
                    ended_at=T0 - i * 400,
                    cost_usd=0.003 * i,
                    budget_usd=0.1,
                    duration_s=i / 3,
                    reasons=['loop: "quoted"'] if i % 5 == 0 else [],
                    turn_scores=[TOOL_TURN],
                    evidence=["error", "loop"][: i % 3],
                    judge_sampled=i % 4 == 0,
                    review_sampled=i % 6 == 0,
                    label="abandoned" if i % 7 == 0 else None,
                )
            )
        est.add(make_score("e1", passed=False))
        est.add(
            make_score(
                "e2", passed=True, version="v1", task="t2", ended_at=T0 - 800, revision=1, label="complete"
            )
        )
    if step == 2:
        est.add(make_score("late", passed=False, version="v2", task="t1", ended_at=T0 + 30))


def test_kept_text_follows_every_change_and_is_valid_for_promtool(tmp_path) -> None:
    import shutil
    import subprocess

    from agentwatch.exporters.estimator import Estimator
    from agentwatch.exporters.exposition import Exposition

    clock = Clock(T0 + 60)
    est = Estimator(load_settings(), clock=clock)
    kept = Exposition(lambda: est)
    for step in range(3):  # the second and third renders come partly from the kept text
        _feed(est, step)
        if step == 2:
            clock.t = T0 + 5000
        text = kept.render().decode()
        # The same scores folded into a new estimator, rendered once: nothing kept from earlier scrapes.
        fresh_est = Estimator(load_settings(), clock=clock)
        for earlier in range(step + 1):
            _feed(fresh_est, earlier)

        def fresh_source(fe: Estimator = fresh_est) -> Estimator:
            return fe

        ours, fresh = _parsed(text), _parsed(Exposition(fresh_source).render().decode())
        assert ours == fresh
        assert any(k[0] == "agentwatch_regression_probability" for k in ours[1])
        for family in (
            "agentwatch_failure_evidence_rate",
            "agentwatch_sampled_ratio",
            "agentwatch_label_ratio",
            "agentwatch_score_revisions_total",
            "agentwatch_conversation_cost_usd_bucket",
        ):
            assert any(k[0] == family for k in ours[1]), family
        assert len(ours[1]) > 1000
    promtool = shutil.which("promtool") or "/usr/bin/promtool"
    run = subprocess.run(
        [promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60, check=False
    )
    problems = set((run.stdout + run.stderr).splitlines())
    # Exit 3 is lint only; the one lint is the documented `quantile` label of the cost and duration gauges.
    assert run.returncode in (0, 3), problems
    assert problems <= {
        f'{name} non-summary metrics should not have "quantile" label'
        for name in ("agentwatch_cost_usd", "agentwatch_duration_seconds")
    }, problems


@pytest.mark.parametrize(
    "record",
    [
        None,
        b"",
        b"{not json",
        b"[]",
        b'{"conversation_id": "x"}',
        (
            b'{"conversation_id": "x", "agent": "a", '
            b'"version": "1", "task": "t", "turns": 1, "passed": true, "outcome": "great", "outcome_source": "rules"}'
        ),
        "\udcff".encode("utf-8", "surrogatepass"),
    ],
)
def test_bad_score_records_are_counted_never_raised(record, caplog) -> None:
    service = ExporterService(load_settings(), registry=CollectorRegistry(), clock=Clock(T0))
    assert service.feed(record, "at t[0]@7") is False
    c = service.estimator.counters()
    assert c.rejected["invalid"] == 1 and c.consumed == 1
    assert service.estimator.snapshot(T0) == []
    assert "t[0]@7" in caplog.text
    assert service.feed(make_score("ok").model_dump_json().encode()) is True


def test_failure_evidence_sample_and_label_families_through_http_scrape(served) -> None:
    service, port, _ = served
    for i in range(20):  # 4 errors among 20 conversations, 5 of them graded
        service.estimator.add(
            make_score(
                f"c{i}",
                passed=True if i < 5 else None,
                evidence=["error"] if i % 5 == 1 else [],
                judge_sampled=i < 5,
                review_sampled=i < 2,
                label="abandoned" if i in (3, 12) else None,
            )
        )
    service.estimator.add(
        make_score("c12", passed=None, revision=1, label="abandoned", evidence=["no_answer"])
    )
    m = scrape(port)
    s = {"agent": "bot", "version": "v1", "task": "*", "window": "24h"}
    lo, hi = beta_bounds_by_bisection(4, 20)
    assert value(m, "agentwatch_failure_evidence_rate", evidence="error", stat="mean", **s) == pytest.approx(
        5 / 22
    )
    assert value(m, "agentwatch_failure_evidence_rate", evidence="error", stat="lower", **s) == pytest.approx(
        lo
    )
    assert value(m, "agentwatch_failure_evidence_rate", evidence="error", stat="upper", **s) == pytest.approx(
        hi
    )
    assert value(
        m, "agentwatch_failure_evidence_rate", evidence="no_answer", stat="mean", **s
    ) == pytest.approx(2 / 22)
    assert value(
        m, "agentwatch_failure_evidence_rate", evidence="forbidden_tool", stat="mean", **s
    ) == pytest.approx(1 / 22)
    evidence = {x.labels["evidence"] for x in m["agentwatch_failure_evidence_rate"]}
    assert evidence == {"error", "no_answer", "loop", "hallucination", "over_budget", "forbidden_tool"}
    assert value(m, "agentwatch_sampled_ratio", sample="judge", **s) == 5 / 20
    assert value(m, "agentwatch_sampled_ratio", sample="review", **s) == 2 / 20
    assert value(m, "agentwatch_label_ratio", outcome="abandoned", **s) == 2 / 20
    assert value(m, "agentwatch_label_ratio", outcome="complete", **s) == 0
    assert value(m, "agentwatch_scored_ratio", **s) == 5 / 20
    assert value(m, "agentwatch_score_revisions_total") == 1
    assert (
        value(
            m, "agentwatch_conversations_total", agent="bot", version="v1", task="refund", outcome="unscored"
        )
        == 15
    )


def test_a_new_assignment_is_not_ready_before_its_empty_estimator_is_served() -> None:
    """A scrape reads the estimator, then the readiness gauge. The new, empty estimator was served before the
    readiness heard of the assignment: a scrape between the two read partial windows beside ready 1, which the
    quality alerts trust. Readiness now drops first."""
    from confluent_kafka import TopicPartition

    service = ExporterService(load_settings(), registry=CollectorRegistry(), clock=Clock(T0))
    assert service.feed(make_score("kept").model_dump_json().encode()) is True
    before = service.estimator
    served_when_told: list[bool] = []
    tell = service.readiness.assigned

    def assigned(partitions):
        served_when_told.append(service.estimator is before)
        tell(partitions)

    service.readiness.assigned = assigned  # type: ignore[method-assign]

    class Consumer:
        def offsets_for_times(self, partitions, timeout):
            return partitions

        def assign(self, partitions):
            self.assigned = partitions

    service._on_assigned(Consumer(), [TopicPartition("agentwatch.scores", 0)])  # type: ignore[arg-type]
    assert served_when_told == [True]
    assert service.estimator is not before and not service.readiness.ready
