"""A real Prometheus server scrapes a live agentwatch exporter fed with known scores.

Checked through Prometheus's HTTP API: every expression of the dashboard (variables substituted) returns data;
every recording rule records data; every alert rule's expression holds on data built to trigger it and the
alert is pending or firing in Prometheus; pass^3 equals the exact Beta posterior (bisection on its CDF) for
the fed counts.

The estimate and estimator-health families come from `Estimator` + `Exposition` served by `MetricsServer`
(the exporter's own code). The pipeline-health families come from the collector's `PipelineMetrics`, over a
`PipelineStats` that the test sets instead of a consumer loop (lag, rejections, last commit), so that the
pipeline alerts can be triggered.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from pathlib import Path

import pytest
import yaml
from confluent_kafka import KafkaError
from prometheus_client import CollectorRegistry

from agentwatch.collector.judge_metrics import JudgeMetrics
from agentwatch.collector.metrics import PipelineStats, register
from agentwatch.config import AlertsConfig, AnchorsConfig, Settings
from agentwatch.exporters.estimator import Estimator
from agentwatch.exporters.exposition import Exposition
from agentwatch.exporters.labels import sanitize_label
from agentwatch.exporters.readiness import Readiness
from agentwatch.judge.anchor_service import AnchorJob, AnchorMetrics, serve_metrics
from agentwatch.judge.anchors import Anchor, FrozenVerdict, compare, write_anchors
from agentwatch.judge.budget import SpendCap
from agentwatch.judge.runner import JudgeRunner
from agentwatch.judge.verdict import JudgeVerdict
from agentwatch.kafka.broker import free_port
from agentwatch.kafka.consumer_events import ConsumerEvents
from agentwatch.metrics_http import MetricsServer
from agentwatch.report.build import build_report
from agentwatch.review.metrics import ReviewMetrics, ReviewStats
from agentwatch.review.store import Store
from agentwatch.wire.schema import (
    AutomatedVerdict,
    Conversation,
    ConversationScore,
    Outcome,
    OutcomeSource,
    ToolScore,
    TurnScore,
)
from tests.support.metrics_reference import beta_bounds_by_bisection
from tests.support.quality_alerts import QUALITY_ALERTS  # the alert of each sequential-test rule, named once

pytestmark = pytest.mark.prometheus

ROOT = Path(__file__).resolve().parents[2]
PROM_DIR = ROOT / "deploy" / "prometheus"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
AGENT = "support-bot"
NEW, BASE = "1.4.0", "1.3.0"

# Variable values the dashboard is checked with: the agent-level aggregate, one real task, and a canary beside
# its baseline (`version` is multi-select: "a|b" is how Grafana writes two values into a regex matcher; a panel
# repeated per version gets one value in each copy).
VARIABLE_SETS = [
    {"agent": AGENT, "version": NEW, "task": "*", "window": "24h", "k": "3"},
    {"agent": AGENT, "version": NEW, "task": "refund", "window": "1h", "k": "1"},
    {"agent": AGENT, "version": f"{NEW}|{BASE}", "task": "refund", "window": "24h", "k": "1|3"},
]
# The quality alerts' `for` (2m) shortened in the rules Prometheus loads here, so that they fire within seconds.
QUALITY_FOR = "3s"
RATE_INTERVAL = "1m"


# --------------------------------------------------------------------------- fed data


JUDGE = "openai:gpt-4o-mini:v1"


def _judged(score: ConversationScore, verdict: Outcome, label: bool) -> ConversationScore:
    """`score` graded by the judge (its verdict `verdict`), with a person's label on the blind review sample
    when `label` (the label is the score's outcome: the truth decides passed)."""
    credit = {Outcome.COMPLETE: 1.0, Outcome.PARTIAL_CORRECT: 0.4}.get(verdict, 0.0)
    return score.model_copy(
        update={
            "graded_by": ["judge", "label"] if label else ["judge"],
            "judge": JUDGE,
            "judge_outcome": verdict,
            "judge_sampled": True,
            "judge_rate": 1.0,
            "review_rate": 0.5,
            "review_sampled": label,
            "label": score.outcome if label else None,
            "outcome_source": OutcomeSource.LABEL if label else OutcomeSource.JUDGE,
            "automated": AutomatedVerdict(
                graded_by=["judge"], outcome=verdict, passed=verdict is Outcome.COMPLETE, asr_credit=credit
            ),
        }
    )


def _score(
    cid: str,
    version: str,
    task: str,
    ended: datetime,
    outcome: Outcome,
    passed: bool | None,
    reasons: list[str] | None = None,
    evidence: list[str] | None = None,
) -> ConversationScore:
    credit = {Outcome.COMPLETE: 1.0, Outcome.PARTIAL_CORRECT: 0.4}.get(outcome, 0.0)
    tool_ok = bool(passed)
    tool = ToolScore(
        selection=1.0 if tool_ok else 0.5,
        parameters=1.0 if tool_ok else 0.5,
        sequence=1.0,
        utilization=1.0 if tool_ok else 0.0,
        overall=1.0 if tool_ok else 0.5,
        binary=tool_ok,
        passed=tool_ok,
    )
    scored = passed is not None
    return ConversationScore(
        conversation_id=cid,
        agent=AGENT,
        version=version,
        task=task,
        turns=1,
        passed=passed,
        outcome=outcome,
        outcome_source=OutcomeSource.RULES,
        reasons=reasons or [],
        turn_scores=[TurnScore(index=0, tool=tool if scored else None, passed=passed)],
        cost_usd=0.02 if tool_ok else 0.08,
        budget_usd=0.05,
        asr_credit=credit if scored else None,
        duration_s=4.0 if tool_ok else 40.0,
        ended_at=ended,
        evidence=(
            evidence or [r.split(":")[0] for r in reasons or [] if r.startswith(("loop", "hallucination"))]
        )
        + ([] if tool_ok else ["over_budget"]),
        graded_by=["expectations"] if scored else [],
        judge_sampled=cid.endswith("0"),
        review_sampled=cid.endswith("5"),
        label=Outcome.ABANDONED if outcome == Outcome.ABANDONED else None,
    )


@dataclass(frozen=True, slots=True)
class Counts:
    """Scored (n) and passed (c) conversations of one series and window."""

    n: int
    c: int


def _batches(now: datetime) -> tuple[list[ConversationScore], list[ConversationScore]]:
    """Scores fed before Prometheus starts, and scores fed once it scrapes (so that counters move)."""
    first: list[ConversationScore] = []

    def ago(**kw: float) -> datetime:
        return now - timedelta(**kw)

    # Baseline 1.3.0: 40 conversations 4 days ago and 40 twelve hours ago, 34 of each 40 passing (one in seven
    # fails: a steady version whose sequential tests stay quiet).
    for batch, when in (("a", ago(days=4)), ("b", ago(hours=12))):
        for i in range(40):
            ok = i % 7 != 3
            first.append(
                _score(
                    f"base-{batch}-{i}",
                    BASE,
                    "refund",
                    when + timedelta(seconds=i),
                    Outcome.COMPLETE if ok else Outcome.PARTIAL_INCORRECT,
                    ok,
                    None if ok else ["tool: wrong tool called"],
                )
            )
    # 1.4.0 three days ago: 100 conversations, all passing (the good week).
    for i in range(100):
        first.append(
            _score(f"old-{i}", NEW, "refund", ago(days=3) + timedelta(seconds=i), Outcome.COMPLETE, True)
        )
    # 1.4.0 in the last half hour: 40 scored, 20 passing, and 60 no grader applied to.
    recent = (
        [(Outcome.COMPLETE, True, None)] * 20
        + [(Outcome.ABANDONED, False, ["abandoned: user left"])] * 6
        + [(Outcome.HALLUCINATED, False, ["hallucination: answer not supported by tool results"])] * 6
        + [(Outcome.PARTIAL_INCORRECT, False, ["loop: search called 3 times with identical arguments"])] * 4
        + [(Outcome.PARTIAL_CORRECT, False, ["answer: score 0.5 below threshold 0.7"])] * 4
        + [(Outcome.UNSCORED, None, ["unscored: no grader applies"])] * 60
    )
    # Of the 60 ungraded ones, 50 ended in an error without an answer and 10 of those looped and were flagged
    # as hallucinating: failure evidence over all traffic, far above the week before (no evidence on the 100
    # conversations three days ago). The 40 graded ones are graded by the judge; 36 of them are in the blind
    # review sample with a person's label (the outcome), and the judge agrees with people no better than chance:
    # even ones it passes, odd ones it fails (kappa about 0, below judge.min_kappa; corrected estimates rest on
    # 18 labels on each side).
    for i, (outcome, passed, reasons) in enumerate(recent):
        evidence = (
            (["error", "no_answer"] + (["loop", "hallucination"] if i >= 80 else []))
            if 40 <= i < 90
            else None
        )
        score = _score(
            f"new-{i}",
            NEW,
            "refund",
            ago(minutes=30) + timedelta(seconds=10 * i),
            outcome,
            passed,
            reasons,
            evidence,
        )
        if i < 36:
            score = _judged(score, Outcome.COMPLETE if i % 2 == 0 else Outcome.PARTIAL_INCORRECT, label=True)
        elif i < 40:
            score = _judged(score, outcome, label=False)
        first.append(score)
    # 1.4.0, task billing, in the last 20 minutes: 6 scored, 3 passing.
    for i in range(6):
        first.append(
            _score(
                f"billing-{i}",
                NEW,
                "billing",
                ago(minutes=20) + timedelta(seconds=i),
                Outcome.COMPLETE if i < 3 else Outcome.PARTIAL_INCORRECT,
                i < 3,
                None if i < 3 else ["tool: wrong tool called"],
            )
        )
    # Fed once Prometheus scrapes (existing series, so that rates are positive): 10 scored, 5 passing.
    second = [
        _judged(
            _score(
                f"late-{i}",
                NEW,
                "refund",
                ago(minutes=2) + timedelta(seconds=i),
                Outcome.COMPLETE if i < 5 else Outcome.PARTIAL_INCORRECT,
                i < 5,
                None if i < 5 else ["tool: wrong tool called"],
            ),
            Outcome.COMPLETE if i < 5 else Outcome.PARTIAL_INCORRECT,
            label=False,
        )
        for i in range(10)
    ]
    return first + _replays(now), second


# A second agent replays task instances (instance, attempt): its pass^k is over instances (method tasks).
REPLAY_AGENT = "replay-bot"
REPLAYS = {
    ("lookup", "q1"): [1, 1, 1, 1],
    ("lookup", "q2"): [0, 0, 1, 0],
    ("lookup", "q3"): [1, 1, 0, 1],
    ("lookup", "q4"): [0, 0, 0, 0],
    ("lookup", "q5"): [1, 1, 1],
}


def _replays(now: datetime) -> list[ConversationScore]:
    return [
        _score(
            f"replay-{inst}-{a}",
            NEW,
            task,
            now - timedelta(minutes=10),
            Outcome.COMPLETE if ok else Outcome.PARTIAL_INCORRECT,
            bool(ok),
        ).model_copy(update={"agent": REPLAY_AGENT, "instance": inst, "attempt": a})
        for (task, inst), outcomes in REPLAYS.items()
        for a, ok in enumerate(outcomes)
    ]


# Counts of 1.4.0 after both batches, by (task, window).
EXPECTED = {
    ("*", "1h"): Counts(56, 28),
    ("*", "24h"): Counts(56, 28),
    ("*", "7d"): Counts(156, 128),
    ("refund", "1h"): Counts(50, 25),
    ("refund", "7d"): Counts(150, 125),
    ("billing", "1h"): Counts(6, 3),
}


def _drifted_anchor_job(tmp: Path) -> AnchorJob:
    """An anchor job whose last run (4 hours ago) found the judge drifting: it passes all 12 anchors, of which
    it passed 6 when they were frozen (the metrics are the job's own; no judge is called here)."""
    anchors = [
        Anchor(
            conversation=Conversation(conversation_id=f"anchor-{i}"),
            label=Outcome.COMPLETE if i % 3 else Outcome.ABANDONED,
            frozen=FrozenVerdict(
                judge=JUDGE, score=0.5, outcome=Outcome.COMPLETE if i % 2 else Outcome.ABANDONED
            ),
            frozen_at=datetime.now(UTC),
        )
        for i in range(12)
    ]
    path = tmp / "anchors.jsonl"
    write_anchors(path, anchors)
    job = AnchorJob(Settings(anchors=AnchorsConfig(path=str(path))))
    job.state.latest = compare(anchors, [JudgeVerdict.graded("complete", 0.9, judge_id=JUDGE)] * 12, JUDGE)
    job.state.finished_at = time.time() - 4 * 3600
    job.state.runs["ok"] = 1
    assert job.state.latest.drift
    return job


# --------------------------------------------------------------------------- the judge and the review store


class StandInJudge:
    """A judge in process: every tenth call times out (under AgentwatchJudgeFailing's 20%), the others grade,
    each with a latency and a cost."""

    judge_id = "stand-in:judge-model:v1"

    def __init__(self) -> None:
        self.calls = 0

    def fingerprint(self, conv: Conversation) -> str:
        return conv.conversation_id

    def judge(self, conv: Conversation) -> JudgeVerdict:
        self.calls += 1
        if self.calls % 10 == 0:
            return JudgeVerdict.failed("judge_timeout", "stand-in", self.judge_id, latency_s=30.0)
        return JudgeVerdict.graded(
            "complete",
            0.9,
            "fine",
            self.judge_id,
            input_tokens=900,
            output_tokens=60,
            cost_usd=0.002,
            latency_s=0.4 + 0.1 * (self.calls % 5),
        )


def _judge_metrics(pipeline: PipelineStats) -> tuple[JudgeRunner, JudgeMetrics]:
    """A collector's judge (capped at $1 an hour, $10 a day) whose counters the test moves."""
    runner = JudgeRunner(StandInJudge(), concurrency=1, cap=SpendCap(1.0, 10.0))
    return runner, JudgeMetrics(runner, pipeline, 0.25)


def _judge_call(runner: JudgeRunner, n: int) -> None:
    runner.judge_one(
        Conversation.model_validate(
            {"conversation_id": f"judged-{n}", "turns": [{"input": "q", "answer": "a"}]}
        )
    )


def _review_metrics(tmp: Path) -> ReviewMetrics:
    """A review store where people labelled six judged conversations of the blind sample (`REVIEWED`)."""
    from tests.support.review import conversation, judged, record, scored

    store = Store(f"sqlite:///{tmp / 'review.db'}")  # a file: the scrape reads it from another thread
    now = time.time()
    for i, (judge_says, person_says) in enumerate(REVIEWED):
        conv = conversation(f"reviewed-{i}")
        store.ingest(record(conv, scored(conv, verdict=judged(judge_says, 0.5))), now, 86400)
        store.save_label(i + 1, "alice", Outcome(person_says), "", True, now)
    return ReviewMetrics(store, ReviewStats())


# (the judge's outcome, the person's) of six labelled conversations: four agree
REVIEWED = (
    [("partial_incorrect", "partial_incorrect")] * 2
    + [("partial_incorrect", "complete")]
    + [("complete", "complete")] * 2
    + [("complete", "partial_incorrect")]
)


# --------------------------------------------------------------------------- Prometheus


class PromAPI:
    """A few calls of Prometheus's HTTP API."""

    def __init__(self, base: str) -> None:
        self.base = base

    def get(self, path: str, **params: str) -> dict:
        """GET a JSON API path; returns the decoded body (status success or error)."""
        url = f"{self.base}{path}?{urllib.parse.urlencode(params)}"
        body: dict
        try:
            with urllib.request.urlopen(url, timeout=10) as resp:
                body = json.load(resp)
        except urllib.error.HTTPError as exc:  # 400/422 carry a JSON error body
            body = json.load(exc)
        return body

    def query(self, expr: str) -> dict:
        """Instant query at now."""
        return self.get("/api/v1/query", query=expr)

    def vector(self, expr: str) -> list[dict]:
        """Instant query that must succeed; its result vector."""
        body = self.query(expr)
        assert body["status"] == "success", f"{expr}: {body.get('error')}"
        result: list[dict] = body["data"]["result"]
        return result


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def _quick_quality_alerts(tmp: Path) -> Path:
    """deploy/prometheus/alert_rules.yml with the quality alerts' `for` shortened to QUALITY_FOR."""
    doc = yaml.safe_load((PROM_DIR / "alert_rules.yml").read_text())
    for group in doc["groups"]:
        for rule in group["rules"]:
            if "agentwatch_alert_statistic" in rule.get("expr", ""):
                assert rule["for"] == "2m"
                rule["for"] = QUALITY_FOR
    path = tmp / "alert_rules.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@dataclass
class Live:
    """The running setup shared by the module's tests."""

    api: PromAPI
    estimator: Estimator
    pipeline: PipelineStats


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """Exporter on a loopback port, Prometheus scraping it every second with the deploy rules loaded."""
    if not Path(PROMETHEUS).exists():
        pytest.fail(
            "prometheus not found: install Debian's `prometheus` package (apt-get install -y prometheus)"
        )
    tmp = tmp_path_factory.mktemp("prometheus")
    # References of 50 conversations and a budget of 2 false pages a month over this setup's 16 (series, rule)
    # pairs: thresholds of 3 to 7 nats, which every rule of the degraded 1.4.0 exceeds against 1.3.0 (20 of its 40
    # graded conversations fail, half of all its conversations end in an error, ...) while the steady 1.3.0,
    # tested against its own history, stays at 0.
    estimator = Estimator(Settings(alerts=AlertsConfig(min_reference=50, false_pages_per_month=2)))
    first, second = _batches(datetime.now(UTC))
    for s in first:
        assert estimator.add(s)
    pipeline = PipelineStats(
        spans_consumed=1000,
        open_conversations=12,
        late_spans=3,
        duplicate_spans=2,
        finished_by_reason={"end": 180, "idle": 20},
        scores_produced=200,
        lag={("otlp_spans", 0): 2500, ("otlp_spans", 1): 2500},
        last_commit_timestamp=time.time() - 3600,
    )
    pipeline.reject("undecodable")
    registry = CollectorRegistry()
    register(pipeline, registry)
    # each service's consumer has seen a broker connection fail (the three share this endpoint here)
    consumer_events = [
        ConsumerEvents(f"agentwatch{part}_consumer_errors", "topic") for part in ("", "_exporter", "_review")
    ]
    for events in consumer_events:
        events.record(KafkaError(KafkaError._TRANSPORT), None)
        registry.register(events)
    judge, judge_metrics = _judge_metrics(pipeline)
    registry.register(judge_metrics)
    registry.register(_review_metrics(tmp))
    registry.register(AnchorMetrics(_drifted_anchor_job(tmp), sanitize_label))
    # another anchor job, restarted while its judge fails: no run has succeeded since it started
    never = AnchorJob(Settings(anchors=AnchorsConfig(path=str(tmp / "anchors.jsonl"))))
    never.state.runs["failed"] = 1
    anchor_server = serve_metrics(never, 0, "127.0.0.1", sanitize_label)
    readiness = (
        Readiness()
    )  # the alerts on estimates wait for the exporter's replay: done here (nothing assigned)
    readiness.assigned([])
    registry.register(readiness)
    server = MetricsServer(Exposition(lambda: estimator, registry).render, 0, "127.0.0.1")
    port = server.port

    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(PROM_DIR / "recording_rules.yml"), str(_quick_quality_alerts(tmp))],
        "scrape_configs": [
            {"job_name": "agentwatch", "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]},
            {
                "job_name": "agentwatch-anchors",
                "static_configs": [{"targets": [f"127.0.0.1:{anchor_server.port}"]}],
            },
        ],
    }
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    web_port = free_port()
    log = open(tmp / "prometheus.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={tmp / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp / 'data'}",
            f"--web.listen-address=127.0.0.1:{web_port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    api = PromAPI(f"http://127.0.0.1:{web_port}")
    stop = threading.Event()

    def traffic() -> None:
        # The collector keeps consuming while the lag grows, and its judge keeps judging: counters and lag
        # move between scrapes.
        calls = 0
        while not stop.wait(0.3):
            with pipeline.lock:
                pipeline.spans_consumed += 40
                pipeline.scores_produced += 1
                pipeline.lag = {tp: n + 25 for tp, n in pipeline.lag.items()}
            calls += 1
            _judge_call(judge, calls)
            with never.state.lock:
                never.state.runs["failed"] += 1

    mover = threading.Thread(target=traffic, daemon=True)
    mover.start()
    try:

        def scraped() -> bool:
            try:
                return bool(api.vector('up{job="agentwatch"} == 1'))
            except (OSError, AssertionError):
                return False

        _wait(scraped, 30, "the first scrape")
        for s in second:
            assert estimator.add(s)
        pipeline.reject("undecodable")
        pipeline.reject("invalid")
        for events in consumer_events:
            events.record(KafkaError(KafkaError._TRANSPORT), None)
        # Wait until the second batch has been scraped.
        _wait(
            lambda: bool(
                api.vector(f'agentwatch_window_scored{{version="{NEW}", task="refund", window="1h"}} == 50')
            ),
            15,
            "the second batch",
        )
        yield Live(api, estimator, pipeline)
    finally:
        stop.set()
        mover.join(timeout=5)
        judge.close()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        server.stop()
        anchor_server.stop()


# --------------------------------------------------------------------------- dashboard


def _dashboard() -> dict:
    path = ROOT / "deploy" / "grafana" / "dashboards" / "agentwatch.json"
    dashboard: dict = json.loads(path.read_text())
    return dashboard


def _substitute(expr: str, variables: dict[str, str]) -> str:
    out = expr.replace("$__rate_interval", RATE_INTERVAL)
    for name in sorted(variables, key=len, reverse=True):
        out = out.replace(f"${{{name}}}", variables[name]).replace(f"${name}", variables[name])
    assert "$" not in out, f"unsubstituted variable in {out}"
    return out


def _targets(variables: dict[str, str]) -> list[tuple[str, str]]:
    """(panel/ref, expression with the variables substituted): one per version for a panel repeated per version."""
    out: list[tuple[str, str]] = []
    for panel in _dashboard()["panels"]:
        for target in panel.get("targets", []):
            copies = (
                [{**variables, n: v} for v in variables[n].split("|")]
                if (n := panel.get("repeat"))
                else [variables]
            )
            out.extend(
                (f"{panel['title']}/{target['refId']}/{c['version']}", _substitute(target["expr"], c))
                for c in copies
            )
    return out


@pytest.mark.parametrize(
    "variables", VARIABLE_SETS, ids=lambda v: f"version={v['version']},task={v['task']},window={v['window']}"
)
def test_every_dashboard_expression_returns_data(live: Live, variables: dict[str, str]) -> None:
    targets = _targets(variables)
    assert len(targets) >= 30
    empty = []
    for name, expr in targets:
        result = live.api.vector(expr)
        values = [float(r["value"][1]) for r in result]
        if not result or all(math.isnan(v) for v in values):
            empty.append(name)
    # Regression probability needs a baseline with >= 30 scored conversations in the same window; the
    # baseline has none in the last hour, so that panel is legitimately empty for window=1h only.
    allowed = {f"Regression probability vs baseline/A/{NEW}"} if variables["window"] == "1h" else set()
    # No judge grades the baseline: its copy of the corrected panel (one per version) has nothing to show.
    allowed |= {f"Success rate corrected by people's labels, $version version/{ref}/{BASE}" for ref in "ABCD"}
    assert set(empty) <= allowed, f"panels without data: {sorted(set(empty) - allowed)}"


def test_dashboard_variable_queries_list_the_fed_values(live: Live) -> None:
    variables = {v["name"]: v for v in _dashboard()["templating"]["list"]}
    expected = {"agent": AGENT, "version": NEW, "task": "*", "window": "24h", "k": "3"}
    context = {"agent": AGENT, "version": NEW}
    for name, value in expected.items():
        match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", variables[name]["query"])
        assert match, variables[name]["query"]
        selector = _substitute(match.group(1), context)
        assert match.group(2) == name
        body = live.api.get(f"/api/v1/label/{name}/values", **{"match[]": selector})
        assert body["status"] == "success", body
        assert value in body["data"], f"{name}: {body['data']}"


# --------------------------------------------------------------------------- rules


# The judge's alerts need a judge failing (or capped) over 15 minutes, which this setup's stand-in judge is
# not; deploy/prometheus/tests/judge.yml tests them (firing and quiet) with promtool.
WITHOUT_LIVE_DATA = {"agentwatch-judge"}


def _rules(kind: str) -> list[dict]:
    groups = yaml.safe_load((PROM_DIR / f"{kind}_rules.yml").read_text())["groups"]
    return [rule for group in groups if group["name"] not in WITHOUT_LIVE_DATA for rule in group["rules"]]


def test_every_recording_rule_records_data(live: Live) -> None:
    records = [r["record"] for r in _rules("recording")]

    def all_recorded() -> bool:
        return all(live.api.vector(name) for name in records)

    _wait(all_recorded, 15, "every recording rule to record data")
    for rule in _rules("recording"):
        assert live.api.vector(rule["expr"]), rule["record"]


def test_every_alert_condition_holds_and_the_alert_is_pending_or_firing(live: Live) -> None:
    alerts = _rules("alert")
    names = {a["alert"] for a in alerts}
    for alert in alerts:
        live.api.vector(alert["expr"])  # a valid query

    def all_active() -> bool:
        active = {r["metric"]["alertname"] for r in live.api.vector("ALERTS")}
        return names <= active

    _wait(all_active, 20, "every alert to be pending or firing")
    for alert in alerts:
        assert live.api.vector(alert["expr"]), f"{alert['alert']}: condition does not hold on the fed data"
    active = live.api.vector("ALERTS")
    regression = [r["metric"] for r in active if r["metric"]["alertname"] == "AgentwatchPass3Regression"]
    assert {(m["version"], m["baseline_version"]) for m in regression} == {(NEW, BASE)}


def test_quiet_series_do_not_alert(live: Live) -> None:
    """The baseline version is healthy: no reliability alert names it."""
    active = live.api.vector(f'ALERTS{{version="{BASE}"}}')
    assert active == []


def test_the_degraded_canary_fires_every_quality_alert_and_its_baseline_none(live: Live) -> None:
    """Every rule's sequential test of 1.4.0 against 1.3.0 fires (its `for` shortened to QUALITY_FOR); the
    unchanged 1.3.0, tested against its own history, has every gauge and no alarm."""

    def firing() -> set[tuple[str, str, str]]:
        return {
            (r["metric"]["alertname"], r["metric"]["version"], r["metric"]["reference_version"])
            for r in live.api.vector('ALERTS{alertstate="firing"}')
            if "rule" in r["metric"]
        }

    want = {(name, NEW, BASE) for name in QUALITY_ALERTS}
    _wait(lambda: want <= firing(), 30, "every quality alert of the canary to fire")
    assert firing() == want
    for rule in QUALITY_ALERTS.values():
        selector = f'agent="{AGENT}", task="refund", rule="{rule}"'
        stat = {
            r["metric"]["version"]: float(r["value"][1])
            for r in live.api.vector(f"agentwatch_alert_statistic{{{selector}}}")
        }
        h = {
            r["metric"]["version"]: float(r["value"][1])
            for r in live.api.vector(f"agentwatch_alert_threshold{{{selector}}}")
        }
        alarm = {
            r["metric"]["version"]: float(r["value"][1])
            for r in live.api.vector(f"agentwatch_alert_alarm{{{selector}}}")
        }
        assert stat.keys() == h.keys() == alarm.keys() == {NEW, BASE}, rule
        assert alarm == {NEW: 1.0, BASE: 0.0}, rule
        assert stat[BASE] < h[BASE], rule
    # The values Prometheus holds are the exporter's.
    mine = {a.rule: a for a in live.estimator.alerts()[(AGENT, NEW, "refund")]}
    for r in live.api.vector(
        f'agentwatch_alert_threshold{{agent="{AGENT}", version="{NEW}", task="refund"}}'
    ):
        assert float(r["value"][1]) == pytest.approx(mine[r["metric"]["rule"]].threshold, rel=1e-12)


# --------------------------------------------------------------------------- exact values


def _exact_pass_pow(counts: Counts, k: int, level: float = 0.95) -> dict[str, float]:
    a, b = 1 + counts.c, 1 + counts.n - counts.c
    mean = math.prod((a + i) / (a + b + i) for i in range(k))
    lo, hi = beta_bounds_by_bisection(counts.c, counts.n, level)
    return {"mean": mean, "lower": lo**k, "upper": hi**k}


@pytest.mark.parametrize(("task", "window"), sorted(EXPECTED), ids=lambda x: str(x))
def test_pass_pow_3_equals_the_exact_posterior(live: Live, task: str, window: str) -> None:
    counts = EXPECTED[(task, window)]
    selector = f'agent="{AGENT}", version="{NEW}", task="{task}", window="{window}"'
    n = live.api.vector(f"agentwatch_window_scored{{{selector}}}")
    c = live.api.vector(f"agentwatch_window_passed{{{selector}}}")
    assert (float(n[0]["value"][1]), float(c[0]["value"][1])) == (counts.n, counts.c)
    result = live.api.vector(f'agentwatch_pass_pow_k{{{selector}, k="3"}}')
    got = {r["metric"]["stat"]: float(r["value"][1]) for r in result}
    want = _exact_pass_pow(counts, 3)
    assert set(got) == {"mean", "lower", "upper"}
    for stat in ("mean", "lower", "upper"):
        assert got[stat] == pytest.approx(want[stat], rel=1e-9, abs=1e-12), stat
    assert got["lower"] < got["mean"] < got["upper"]


def test_pass_pow_k_over_task_instances_equals_the_offline_headline(live: Live) -> None:
    """Prometheus stores the roll-up over instances (method tasks) that the offline report computes."""
    offline = build_report(_replays(datetime.now(UTC)), Settings(), [1, 3])
    selector = f'agent="{REPLAY_AGENT}", version="{NEW}", task="*", window="1h"'
    assert float(live.api.vector(f"agentwatch_window_repeated_units{{{selector}}}")[0]["value"][1]) == 5
    for k in ("1", "3"):
        got = {
            r["metric"]["stat"]: float(r["value"][1])
            for r in live.api.vector(f'agentwatch_pass_pow_k{{{selector}, k="{k}", method="tasks"}}')
        }
        head = offline.pass_pow_k[k]
        assert head.method == "tasks"
        assert got == pytest.approx({"mean": head.value, "lower": head.lower, "upper": head.upper}, abs=1e-12)
    assert live.api.vector(f'agentwatch_pass_pow_k{{{selector}, method="exchangeable"}}') == []


def test_regression_probability_is_near_one_for_the_worse_version(live: Live) -> None:
    """1.4.0 passes 28/56 in the last day against 34/40 for 1.3.0: pass^3 0.13 vs 0.61, far beyond the margin."""
    result = live.api.vector(
        f'agentwatch_regression_probability{{agent="{AGENT}", version="{NEW}", task="*", window="24h", k="3"}}'
    )
    assert [r["metric"]["baseline_version"] for r in result] == [BASE]
    # Independent check by simulation from the two posteriors (margin 0.05, the default).
    rng = __import__("numpy").random.default_rng(7)
    new = rng.beta(29, 29, 200_000) ** 3
    base = rng.beta(35, 7, 200_000) ** 3
    simulated = float((new < base - 0.05).mean())
    assert float(result[0]["value"][1]) == pytest.approx(simulated, abs=0.005)
    assert simulated > 0.99


def test_dashboard_module_is_importable_for_the_live_test() -> None:
    """The committed JSON used above is what dashboard.py builds (guards against testing a stale file)."""
    spec = importlib.util.spec_from_file_location(
        "aw_dashboard", ROOT / "deploy" / "grafana" / "dashboard.py"
    )
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    assert json.loads(module.render()) == _dashboard()


def test_judge_agreement_with_people_equals_the_counted_kappa(live: Live) -> None:
    """The dashboard's agreement panel, against the pairs counted by hand (independent of the code)."""
    panel = next(p for p in _dashboard()["panels"] if p["title"].startswith("Judge agreement with people"))
    by_legend = {t["legendFormat"]: t["expr"] for t in panel["targets"]}
    (agreement,) = live.api.vector(by_legend["agreement {{judge}}"])
    (kappa,) = live.api.vector(by_legend["kappa {{judge}}"])
    n = len(REVIEWED)
    po = Fraction(sum(j == p for j, p in REVIEWED), n)
    classes = {c for pair in REVIEWED for c in pair}
    pe = sum(
        Fraction(sum(j == c for j, _ in REVIEWED), n) * Fraction(sum(p == c for _, p in REVIEWED), n)
        for c in classes
    )
    assert agreement["metric"]["judge"] == "stand-in:judge-model:v1"
    assert float(agreement["value"][1]) == pytest.approx(float(po))  # 4 of 6
    assert float(kappa["value"][1]) == pytest.approx(float((po - pe) / (1 - pe)))  # 1/3


def test_judge_spend_against_the_cap(live: Live) -> None:
    caps = {
        r["metric"]["period"]: float(r["value"][1]) for r in live.api.vector("agentwatch_judge_spend_cap_usd")
    }
    assert caps == {"hour": 1.0, "day": 10.0}
    spent = {
        r["metric"]["period"]: float(r["value"][1])
        for r in live.api.vector("agentwatch_judge_spend_window_usd")
    }
    assert spent["hour"] == pytest.approx(spent["day"])  # all of it within the last hour
    assert 0 < spent["hour"] < caps["hour"]


def test_runbook_queries_run_and_return_data(live: Live) -> None:
    """Every PromQL line of the runbook in deploy/README.md, with its placeholders filled in."""
    text = (ROOT / "deploy" / "README.md").read_text()
    blocks = re.findall(r"```promql\n(.*?)```", text, flags=re.DOTALL)
    lines = [line.strip() for block in blocks for line in block.splitlines() if line.strip()]
    assert len(lines) >= 20
    fill = {"AGENT": AGENT, "VERSION": NEW, "BASELINE": BASE, "TASK": "refund"}
    empty = []
    for line in lines:
        expr = re.sub(r"\b(AGENT|VERSION|BASELINE|TASK)\b", lambda m: fill[m.group(1)], line)
        # every query must run; the judge's failure queries return data only while it fails
        if not live.api.vector(expr) and "agentwatch_judge_" not in expr:
            empty.append(expr)
    assert not empty, f"runbook queries without data: {empty}"


@pytest.mark.parametrize(
    ("task", "window", "x", "n"),
    [("refund", "1h", 50, 110), ("refund", "7d", 50, 210), ("*", "1h", 50, 116), ("billing", "1h", 0, 6)],
)
def test_error_evidence_rate_equals_the_exact_posterior_over_all_traffic(
    live: Live, task: str, window: str, x: int, n: int
) -> None:
    """50 of the last half hour's ungraded conversations carry `error`: the rate is over all n, not the graded."""
    selector = f'agent="{AGENT}", version="{NEW}", task="{task}", window="{window}", evidence="error"'
    got = {
        r["metric"]["stat"]: float(r["value"][1])
        for r in live.api.vector(f"agentwatch_failure_evidence_rate{{{selector}}}")
    }
    a, b = 1 + x, 1 + n - x
    lo, hi = beta_bounds_by_bisection(x, n)
    assert got == pytest.approx({"mean": a / (a + b), "lower": lo, "upper": hi}, rel=1e-9)
    codes = {
        r["metric"]["evidence"]
        for r in live.api.vector(
            f'agentwatch_failure_evidence_rate{{agent="{AGENT}", version="{NEW}", task="{task}", window="{window}", '
            f'stat="mean"}}'
        )
    }
    assert codes == {"error", "no_answer", "loop", "hallucination", "over_budget", "forbidden_tool"}
