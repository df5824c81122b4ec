"""Corrected estimates live: SDK agent → broker → collector with a biased stand-in judge → scores → exporter →
/metrics, with people's labels on the blind review sample.

The agent's conversations succeed or fail by a plan; a stand-in judge (an OpenAI-compatible server) passes 95%
of the successes and 45% of the failures, as the plan says; a person's label rides on the spans of every
conversation in the review sample (`sample_point(id) < review_rate`). `/metrics` must show the corrected
success rate, ASR, outcome shares and p^k, the judge-only figures beside them, the labels they rest on and the
judge's agreement (kappa and the confusion matrix), equal to the offline report over the same scores (read
back from the scores topic) and, for kappa and the counts, to an independent computation from the plan.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from agentwatch.config import JudgeConfig, SamplingConfig, ScoringConfig
from agentwatch.pipeline import Pipeline
from agentwatch.report.build import build_report
from agentwatch.scorers.sampling import sample_point
from agentwatch.wire.schema import ConversationScore
from tests.support.collector_kafka import TopicReader, scores_of, unique
from tests.support.fake_openai import FakeOpenAI, verdict_reply
from tests.support.live_agent import metrics_when, one_sample, pipeline_settings, run_agent

pytestmark = pytest.mark.broker

AGENT = r"""
import json, sys
from agentwatch.sdk import configure, conversation, shutdown, trace

bootstrap, topic, plan = sys.argv[1:4]
configure("kafka", agent="helpdesk", version="2.0", bootstrap_servers=bootstrap, topic=topic)


@trace(kind="agent")
def bot(question: str, answer: str) -> str:
    return answer


for item in json.load(open(plan)):
    with conversation(id=item["id"], task="orders"):
        bot("Where is my order?", item["answer"])
        if item["label"]:
            conversation.label(item["label"])
        conversation.end()
shutdown()
"""

N, REVIEW_RATE = 320, 0.4


def _plan(run_id: str) -> list[dict]:
    rng = np.random.default_rng(17)
    plan = []
    for i in range(N):
        cid = f"{run_id}-{i}"
        right = bool(rng.random() < 0.7)
        judge_passes = bool(rng.random() < (0.95 if right else 0.45))
        label = None
        if sample_point(cid) < REVIEW_RATE:
            label = "complete" if right else "partial_incorrect"
        answer = ("Your order ships on Monday." if right else "I do not know.") + (
            " [J1]" if judge_passes else " [J0]"
        )
        plan.append({"id": cid, "right": right, "judge": judge_passes, "label": label, "answer": answer})
    return plan


def _judge(body: dict) -> dict:
    """The stand-in judge: passes the conversations the plan marked [J1]."""
    text = json.dumps(body.get("messages") or [])
    if "[J1]" in text:
        return verdict_reply("complete", 0.9, "answers the question")
    return verdict_reply("partial_incorrect", 0.2, "does not answer")


def test_corrected_estimates_on_metrics_equal_the_offline_report(broker, topic, tmp_path) -> None:
    bs = broker.bootstrap_servers
    plan = _plan(unique("corr"))
    run_agent(AGENT, bs, topic, plan, tmp_path)
    with FakeOpenAI(_judge) as server:
        settings = pipeline_settings(bs, topic, "corrlive")
        settings.judge = JudgeConfig(
            enabled=True,
            base_url=server.base_url,
            model="gpt-4o-mini",
            timeout_s=10,
            concurrency=4,
            api_key_env="AGENTWATCH_TEST_JUDGE_KEY",
        )
        settings.sampling = SamplingConfig(judge_rate=1.0, review_rate=REVIEW_RATE)
        settings.scoring = ScoringConfig(hallucination_checks=False)

        def all_counted(pipeline: Pipeline) -> bool:
            found = [
                e for e in pipeline.exporter.estimator.snapshot() if e.window == "1h" and e.task == "orders"
            ]
            return bool(found) and found[0].scored >= N

        samples = metrics_when(settings, all_counted, timeout_s=120)
    reader = TopicReader(bs, settings.collector.scores_topic)
    try:
        records = reader.wait(lambda rs: len(rs) >= N, 30)
    finally:
        reader.close()
    scores = [ConversationScore.model_validate(s) for s in scores_of(records)]
    assert len({s.conversation_id for s in scores}) == N
    labelled = [p for p in plan if p["label"]]
    assert all(s.automated is not None and s.judge_rate == 1.0 for s in scores)

    offline = build_report(scores, settings, [1, 3])
    c = offline.correction
    assert c is not None and c.enough and c.asr_enough and c.labels == len(labelled) >= 100
    series = {"agent": "helpdesk", "version": "2.0", "task": "orders", "window": "1h"}
    judge_passed = sum(p["judge"] for p in labelled)
    assert one_sample(samples, "agentwatch_correction_labels", verdict="passed", **series) == judge_passed
    assert (
        one_sample(samples, "agentwatch_correction_labels", verdict="failed", **series)
        == len(labelled) - judge_passed
    )
    assert one_sample(samples, "agentwatch_correction_predictions", **series) == N
    assert one_sample(samples, "agentwatch_correction_enough", figure="success", **series) == 1.0

    def both(name: str, figure, **extra: str) -> None:
        for estimate, values in (
            ("corrected", (figure.value, figure.lower, figure.upper)),
            ("judge_only", (figure.judge_only, figure.judge_only_lower, figure.judge_only_upper)),
        ):
            for stat, want in zip(("mean", "lower", "upper"), values, strict=True):
                got = one_sample(samples, name, estimate=estimate, stat=stat, **extra, **series)
                assert got == pytest.approx(want, abs=1e-12), (name, extra, estimate, stat)

    both("agentwatch_corrected_success_rate", c.success_rate)
    both("agentwatch_corrected_asr", c.asr)
    for outcome, figure in c.outcome_share.items():
        both("agentwatch_corrected_outcome_ratio", figure, outcome=outcome)
    pow3 = offline.pass_pow_k["3"]
    assert pow3.corrected
    assert one_sample(
        samples, "agentwatch_corrected_pass_pow_k", k="3", estimate="corrected", stat="mean", **series
    ) == pytest.approx(pow3.value, abs=1e-12)
    # the judge alone is biased upwards; the correction moves the figure towards the plan's truth
    truth = np.mean([p["right"] for p in plan])
    assert c.success_rate is not None
    assert c.success_rate.judge_only - truth > 0.05
    assert abs(c.success_rate.value - truth) < abs(c.success_rate.judge_only - truth)

    judge = "openai:gpt-4o-mini:v1"
    labels = [p["label"] for p in labelled]
    verdicts = ["complete" if p["judge"] else "partial_incorrect" for p in labelled]
    kappa = cohen_kappa_score(labels, verdicts)
    agreement = {"judge": judge, "window": "1h"}
    assert one_sample(samples, "agentwatch_judge_agreement_kappa", stat="mean", **agreement) == pytest.approx(
        kappa
    )
    lo = one_sample(samples, "agentwatch_judge_agreement_kappa", stat="lower", **agreement)
    hi = one_sample(samples, "agentwatch_judge_agreement_kappa", stat="upper", **agreement)
    assert lo < kappa < hi
    assert one_sample(samples, "agentwatch_judge_agreement_labels", **agreement) == len(labelled)
    cell = sum(
        1 for lab, v in zip(labels, verdicts, strict=True) if lab == "partial_incorrect" and v == "complete"
    )
    assert (
        one_sample(
            samples, "agentwatch_judge_confusion", label="partial_incorrect", verdict="complete", **agreement
        )
        == cell
    )
    assert one_sample(samples, "agentwatch_judged_conversations", judge=judge, **series) == N
    assert one_sample(samples, "agentwatch_judge_min_kappa") == 0.6
