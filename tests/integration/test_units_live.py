"""Repeated attempts live: SDK agent (instance, attempt) → broker → collector → scores → exporter → /metrics.

An agent process replays task instances several times each, some always right, some always wrong, some in
between; every conversation carries an expectation (a reference answer), so each is graded. `/metrics` must
show
the `task="*"` roll-up over units (method `tasks`) equal to the offline report's headline over the same scores
(read back from the scores topic), and to τ-bench's formula computed here from the plan.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from agentwatch.config import Settings
from agentwatch.pipeline import Pipeline
from agentwatch.report.build import build_report
from agentwatch.wire.schema import ConversationScore
from tests.support.collector_kafka import TopicReader, scores_of, unique
from tests.support.live_agent import metrics_when, one_sample, pipeline_settings, run_agent

pytestmark = pytest.mark.broker

AGENT = r"""
import json, sys
from agentwatch.sdk import configure, conversation, shutdown, trace

bootstrap, topic, plan = sys.argv[1:4]
configure("kafka", agent="replayer", version="3.1", bootstrap_servers=bootstrap, topic=topic)


@trace(kind="agent")
def bot(question: str, right: bool) -> str:
    return "Your refund of 42 dollars is approved." if right else "I cannot help with that."


for item in json.load(open(plan)):
    with conversation(id=item["id"], task=item["task"], instance=item["instance"], attempt=item["attempt"]):
        conversation.expect(reference_answer="Your refund of 42 dollars is approved.")
        bot("Can I get my refund?", item["right"])
        conversation.end()
shutdown()
"""

# (task, instance) -> right answer on each attempt
PLAN = {
    ("refund", "r-1"): [1, 1, 1, 1],
    ("refund", "r-2"): [0, 0, 0, 0],
    ("refund", "r-3"): [1, 1, 0, 1],
    ("refund", "r-4"): [0, 1, 0, 0],
    ("billing", "b-1"): [1, 1, 1, 1],
    ("billing", "b-2"): [1, 1, 1, 0],
    ("billing", "b-3"): [0, 0, 1],
}
ATTEMPTS = sum(len(v) for v in PLAN.values())


def test_rollup_over_units_equals_the_offline_headline(broker, topic, tmp_path) -> None:
    bs = broker.bootstrap_servers
    run_id = unique("u")
    plan = [
        {"id": f"{run_id}-{task}-{inst}-{a}", "task": task, "instance": inst, "attempt": a, "right": bool(ok)}
        for (task, inst), outcomes in PLAN.items()
        for a, ok in enumerate(outcomes)
    ]
    run_agent(AGENT, bs, topic, plan, tmp_path)
    settings = pipeline_settings(bs, topic, "unitslive")

    def all_counted(pipeline: Pipeline) -> bool:
        rollup = [e for e in pipeline.exporter.estimator.snapshot() if e.window == "1h" and e.task == "*"]
        return bool(rollup) and rollup[0].scored >= ATTEMPTS

    samples = metrics_when(settings, all_counted)
    reader = TopicReader(bs, settings.collector.scores_topic)
    try:
        records = reader.wait(lambda rs: len(rs) >= ATTEMPTS, 30)
    finally:
        reader.close()
    scores = [ConversationScore.model_validate(s) for s in scores_of(records)]
    assert len({s.conversation_id for s in scores}) == ATTEMPTS
    assert {(s.task, s.instance, s.attempt) for s in scores} == {
        (p["task"], p["instance"], p["attempt"]) for p in plan
    }
    assert all(s.passed is not None for s in scores)

    offline = build_report(scores, Settings(), [1, 2, 3, 4])
    series = {"agent": "replayer", "version": "3.1", "task": "*", "window": "1h"}
    assert one_sample(samples, "agentwatch_window_units", **series) == len(PLAN)
    assert one_sample(samples, "agentwatch_window_repeated_units", **series) == len(PLAN)
    for k in (1, 3):  # the exporter's default stats.ks (1, 3, 5); 5 > 4 attempts: no sample
        head = offline.pass_pow_k[str(k)]
        assert head.method == "tasks"
        for stat, want in (("mean", head.value), ("lower", head.lower), ("upper", head.upper)):
            got = one_sample(samples, "agentwatch_pass_pow_k", k=str(k), method="tasks", stat=stat, **series)
            assert got == pytest.approx(want, abs=1e-12), (k, stat)
        # τ-bench's formula, from the plan
        tau = sum(Fraction(math.comb(sum(o), k), math.comb(len(o), k)) for o in PLAN.values()) / len(PLAN)
        assert head.value == pytest.approx(float(tau), abs=1e-15)
    assert one_sample(samples, "agentwatch_pass_pow_k", k="5", stat="mean", **series) is None
    assert (
        one_sample(samples, "agentwatch_pass_pow_k", k="3", method="exchangeable", stat="mean", **series)
        is None
    )
