"""Production traffic live: SDK agent → broker → collector → scores → exporter → /metrics.

The issue's scenario (85% fine, 10% turn errors, 5% loops, no expectations) is sent twice: once for a task no
policy covers (no success rate may appear; error and loop rates do) and once for a task with a policy (the
success rate's interval covers the true 85%). Figures are checked against Beta bounds found by bisection.
"""

from __future__ import annotations

import pytest

from agentwatch.config import Settings, TaskPolicy
from agentwatch.pipeline import Pipeline
from tests.support.live_agent import metrics_when, one_sample, pipeline_settings, run_agent
from tests.support.metrics_reference import beta_bounds_by_bisection

pytestmark = pytest.mark.broker

AGENT = r"""
import json, sys
from agentwatch.sdk import configure, conversation, shutdown, trace

bootstrap, topic, plan = sys.argv[1:4]
configure("kafka", agent="support-bot", version="2.0", bootstrap_servers=bootstrap, topic=topic)


@trace(kind="tool")
def lookup_order(order_id: str, service_down: bool = False) -> dict:
    if service_down:
        raise TimeoutError("order service timed out")
    return {"order_id": order_id, "status": "shipped", "carrier": "DHL"}


@trace(kind="agent")
def bot(question: str, order_id: str, kind: str) -> str:
    if kind == "loop":  # stuck: the same lookup, refused three times, then an answer without it
        for _ in range(3):
            try:
                lookup_order(order_id, service_down=True)
            except TimeoutError:
                pass
        return f"Order {order_id} is shipped with DHL."
    order = lookup_order(order_id)
    if kind == "error":
        raise TimeoutError("upstream model timed out")
    return f"Order {order_id} is {order['status']} with {order['carrier']}."


for item in json.load(open(plan)):
    with conversation(id=item["id"], task=item["task"]):
        order = f"ORD-{item['n']:05d}"
        try:
            bot(f"Hi, where is my order {order}?", order, item["kind"])
        except TimeoutError:
            pass
        conversation.end()
shutdown()
"""

POLICY = {
    "id": "order-status",
    "version": "3",
    "task": "order_status",
    "tools": [{"name": "lookup_order", "arguments": {"order_id": {"from_input": True}}}],
    "grounding": ["lookup_order"],
}


def _kinds(n: int = 200) -> list[str]:
    from tests.support.production_traffic import scenario

    kinds = []
    for line in scenario(n):
        turn = line["turns"][0]
        kinds.append("error" if turn.get("error") else "loop" if len(turn["tool_calls"]) == 3 else "fine")
    return kinds


def test_scenario_live_metrics(broker, topic, tmp_path) -> None:
    kinds = _kinds()
    plan = [
        {"id": f"{task}-{i:04d}", "task": task, "kind": kind, "n": 10000 + i}
        for task in ("triage", "order_status")
        for i, kind in enumerate(kinds)
    ]
    run_agent(AGENT, broker.bootstrap_servers, topic, plan, tmp_path)
    settings = pipeline_settings(broker.bootstrap_servers, topic, "prodlive")
    settings.policies = Settings(policies=[TaskPolicy.model_validate(POLICY)]).policies

    def all_counted(pipeline: Pipeline) -> bool:
        est = [e for e in pipeline.exporter.estimator.snapshot() if e.window == "1h" and e.task != "*"]
        return sum(e.conversations for e in est) >= 400

    samples = metrics_when(settings, all_counted)

    series = {"agent": "support-bot", "version": "2.0", "window": "1h"}
    free = dict(series, task="triage")
    assert one_sample(samples, "agentwatch_window_conversations", outcome="unscored", **free) == 200
    assert one_sample(samples, "agentwatch_window_scored", **free) == 0
    # no graded conversation: no success rate
    assert one_sample(samples, "agentwatch_success_rate", stat="mean", **free) is None
    assert one_sample(samples, "agentwatch_pass_pow_k", k="3", stat="mean", **free) is None
    rate = "agentwatch_failure_evidence_rate"
    for evidence, x in (("error", 20), ("loop", 10), ("no_answer", 20), ("hallucination", 0)):
        lo, hi = beta_bounds_by_bisection(x, 200)
        mean = one_sample(samples, rate, evidence=evidence, stat="mean", **free)
        assert mean == pytest.approx((1 + x) / 202, abs=1e-9)
        bounds = [one_sample(samples, rate, evidence=evidence, stat=s, **free) for s in ("lower", "upper")]
        assert bounds == [pytest.approx(lo, abs=1e-9), pytest.approx(hi, abs=1e-9)]

    policed = dict(series, task="order_status")
    assert one_sample(samples, "agentwatch_window_scored", **policed) == 200
    assert one_sample(samples, "agentwatch_window_passed", **policed) == 170
    lo, hi = beta_bounds_by_bisection(170, 200)
    lower = one_sample(samples, "agentwatch_success_rate", stat="lower", **policed)
    upper = one_sample(samples, "agentwatch_success_rate", stat="upper", **policed)
    assert lower is not None and upper is not None
    assert lower == pytest.approx(lo, abs=1e-9) and upper == pytest.approx(hi, abs=1e-9)
    assert lower < 0.85 < upper
    error_rate = one_sample(samples, rate, evidence="error", stat="mean", **policed)
    assert error_rate == pytest.approx(21 / 202, abs=1e-9)
