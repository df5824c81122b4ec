"""Scores as OpenTelemetry `gen_ai.evaluation.result` log records, received by a real OTLP/HTTP endpoint."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agentwatch.collector.assembler import FinishedConversation
from agentwatch.collector.decode import SpanRecord
from agentwatch.collector.evaluation_events import (
    EVENT_NAME,
    EvaluationEvents,
    evaluation_attributes,
    last_turn_ids,
)
from agentwatch.config import CollectorConfig, Settings
from agentwatch.judge.verdict import JudgeVerdict
from agentwatch.scorers import score_conversation
from agentwatch.wire.schema import Conversation
from tests.support.otlp_receiver import Receiver, attribute_value, attrs

TRACE = "0af7651916cd43dd8448eb211c80319c"
SPAN = "b7ad6b7169203331"

TURN = {
    "input": "Where is order ORD-1234?",
    "answer": "Order ORD-1234 has shipped.",
    "tool_calls": [{"name": "get_order", "arguments": {"id": "ORD-1234"}, "result": {"status": "shipped"}}],
}


def conversation(cid: str, **turn: Any) -> Conversation:
    return Conversation.model_validate(
        {
            "conversation_id": cid,
            "agent": "shop-agent",
            "version": "2.1.0",
            "task": "orders",
            "turns": [{**TURN, **turn}],
        }
    )


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def send(endpoint: str, *scores_and_ids: tuple[Any, str | None, str | None]) -> EvaluationEvents:
    events = EvaluationEvents.to_endpoint(endpoint, timeout_s=2)
    for score, trace_id, span_id in scores_and_ids:
        events.emit(score, trace_id, span_id)
    assert events.force_flush(10_000)
    return events


def test_graded_score_is_an_evaluation_result_on_the_last_turn(receiver: Receiver) -> None:
    score = score_conversation(conversation("conv-1"), verdict=JudgeVerdict.graded("complete", 0.95, "right"))
    assert score.outcome.value == "complete" and score.graded_by == ["judge"]
    events = send(receiver.endpoint, (score, TRACE, SPAN))
    events.shutdown()
    got = receiver.records()
    assert len(got) == 2  # the outcome, and the judge's answer score
    resource_logs, rec = got[0]
    assert rec.event_name == EVENT_NAME == "gen_ai.evaluation.result"
    assert rec.trace_id == bytes.fromhex(TRACE) and rec.span_id == bytes.fromhex(SPAN)
    assert rec.severity_number == 9 and rec.severity_text == "INFO"
    assert rec.time_unix_nano > 0
    assert attrs(rec) == {
        "gen_ai.evaluation.name": "agentwatch.outcome",
        "gen_ai.evaluation.score.value": 1.0,
        "gen_ai.evaluation.score.label": "complete",
        "gen_ai.evaluation.explanation": "right",
        "gen_ai.conversation.id": "conv-1",
        "gen_ai.agent.name": "shop-agent",
        "gen_ai.agent.version": "2.1.0",
        "agentwatch.task": "orders",
    }
    answer = attrs(got[1][1])
    assert answer["gen_ai.evaluation.name"] == "agentwatch.answer_correctness"
    assert answer["gen_ai.evaluation.score.value"] == pytest.approx(0.95)
    assert (
        answer["gen_ai.evaluation.score.label"] == "pass"
        and answer["gen_ai.evaluation.explanation"] == "right"
    )
    service = {kv.key: attribute_value(kv.value) for kv in resource_logs.resource.attributes}["service.name"]
    assert service == "agentwatch-collector"
    assert events.stats.emitted == events.stats.exported == 2 and events.stats.dropped == 0


def test_judge_score_below_threshold_gives_answer_correctness(receiver: Receiver) -> None:
    verdict = JudgeVerdict.graded("partial_correct", 0.5, "half of the order details", judge_id="openai:m:v1")
    score = score_conversation(conversation("conv-2"), verdict=verdict)
    send(receiver.endpoint, (score, TRACE, SPAN)).shutdown()
    by_name = {attrs(rec)["gen_ai.evaluation.name"]: (rec, attrs(rec)) for _, rec in receiver.records()}
    assert set(by_name) == {"agentwatch.outcome", "agentwatch.answer_correctness"}
    _, outcome = by_name["agentwatch.outcome"]
    assert outcome["gen_ai.evaluation.score.label"] == "partial_correct"
    assert outcome["gen_ai.evaluation.score.value"] == pytest.approx(0.4)
    assert outcome["gen_ai.evaluation.explanation"] == "half of the order details"
    assert outcome["agentwatch.judge"] == "openai:m:v1"
    assert "error.type" not in outcome
    rec, answer = by_name["agentwatch.answer_correctness"]
    assert answer["gen_ai.evaluation.score.value"] == pytest.approx(0.5)
    assert answer["gen_ai.evaluation.score.label"] == "fail"
    assert answer["gen_ai.evaluation.explanation"] == "half of the order details"
    assert answer["gen_ai.conversation.id"] == "conv-2"
    assert rec.event_name == "gen_ai.evaluation.result"
    assert rec.trace_id == bytes.fromhex(TRACE) and rec.span_id == bytes.fromhex(SPAN)


@pytest.mark.parametrize(
    "code", ["judge_timeout", "judge_bad_output", "judge_unavailable", "judge_budget_exhausted"]
)
def test_failed_judge_carries_error_type(receiver: Receiver, code: str) -> None:
    verdict = JudgeVerdict.failed(code, "details here")
    score = score_conversation(conversation(f"conv-{code}"), verdict=verdict)
    assert score.outcome.value == "unscored" and score.reasons[0].startswith(code)
    send(receiver.endpoint, (score, TRACE, SPAN)).shutdown()
    [(_, rec)] = receiver.records()
    a = attrs(rec)
    assert a["error.type"] == code
    assert a["gen_ai.evaluation.score.label"] == "unscored"
    assert "gen_ai.evaluation.score.value" not in a  # unscored: no credit
    assert a["gen_ai.evaluation.explanation"].startswith(f"{code}: details here")
    assert rec.severity_number == 13 and rec.severity_text == "WARN"
    assert rec.event_name == "gen_ai.evaluation.result"


def test_reference_answer_and_rules_reasons(receiver: Receiver) -> None:
    score = score_conversation(
        conversation("conv-3", answer="I could not find it.", expected={"reference_answer": "shipped"})
    )
    assert score.passed is False
    send(receiver.endpoint, (score, TRACE, SPAN)).shutdown()
    by_name = {attrs(rec)["gen_ai.evaluation.name"]: attrs(rec) for _, rec in receiver.records()}
    outcome = by_name["agentwatch.outcome"]
    assert outcome["gen_ai.evaluation.explanation"] == "; ".join(score.reasons[:3])
    assert "error.type" not in outcome
    answer = by_name["agentwatch.answer_correctness"]
    assert answer["gen_ai.evaluation.score.value"] == pytest.approx(score.turn_scores[0].answer_score)
    assert answer["gen_ai.evaluation.score.label"] == "fail"


def test_without_ids_the_record_is_unparented(receiver: Receiver) -> None:
    score = score_conversation(conversation("conv-4"))
    send(receiver.endpoint, (score, None, None), (score, "zz" * 16, "not-hex")).shutdown()
    got = receiver.records()
    assert len(got) == 2
    for _, rec in got:
        assert rec.trace_id == b"" and rec.span_id == b""
        assert attrs(rec)["gen_ai.evaluation.score.label"] == "unscored"


def test_explanation_is_short() -> None:
    verdict = JudgeVerdict.graded("abandoned", 0.1, "x" * 5000)
    score = score_conversation(conversation("conv-5"), verdict=verdict)
    first = evaluation_attributes(score)[0]
    assert len(first["gen_ai.evaluation.explanation"]) <= 500


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_endpoint_never_raises_and_counts_the_drop(caplog: pytest.LogCaptureFixture) -> None:
    endpoint = f"http://127.0.0.1:{_free_port()}/v1/logs"  # nothing listens there
    events = EvaluationEvents.to_endpoint(endpoint, timeout_s=1)
    score = score_conversation(conversation("conv-6"), verdict=JudgeVerdict.failed("judge_timeout", "60 s"))
    with caplog.at_level(logging.WARNING, logger="agentwatch.collector.evaluation_events"):
        events.emit(score, TRACE, SPAN)
        events.force_flush(15_000)
        deadline = time.monotonic() + 15
        while events.stats.dropped < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        events.shutdown()
    assert events.stats.emitted == 1 and events.stats.dropped == 1 and events.stats.exported == 0
    assert any("dropped" in r.getMessage() for r in caplog.records)
    events.emit(score, TRACE, SPAN)  # after shutdown: ignored, still no exception


def test_emit_never_raises_on_a_broken_score(receiver: Receiver) -> None:
    events = EvaluationEvents.to_endpoint(receiver.endpoint, timeout_s=2)
    events.emit(object(), TRACE, SPAN)  # type: ignore[arg-type]
    assert events.stats.errors == 1 and events.stats.emitted == 0
    events.shutdown()


def test_from_settings() -> None:
    assert EvaluationEvents.from_settings(Settings()) is None
    settings = Settings(collector=CollectorConfig(evaluation_events_endpoint="http://127.0.0.1:4318/v1/logs"))
    events = EvaluationEvents.from_settings(settings)
    assert isinstance(events, EvaluationEvents)
    events.shutdown()


# --------------------------------------------------------------------------- the last turn


def span(sid: str, parent: str | None, start: int, op: str | None = None, trace: str = TRACE) -> SpanRecord:
    attrs = {"gen_ai.operation.name": op} if op else {}
    return SpanRecord(
        trace,
        sid * 8,
        parent * 8 if parent else None,
        op or "work",
        start,
        start + 10,
        None,
        attrs,
        conversation_id="c",
    )


def finished(*spans: SpanRecord) -> FinishedConversation:
    return FinishedConversation("c", 0, list(spans), "end", False)


def test_last_turn_is_the_last_invoke_agent_span() -> None:
    other = "1f" * 16
    spans = [
        span("a1", None, 100, "invoke_agent", other),  # turn 1 (its own trace)
        span("b1", "a1", 110, "chat", other),
        span("c1", None, 200, "invoke_agent"),  # turn 2
        span("c2", "c1", 300, "execute_tool"),  # starts last, but inside turn 2
        span("c3", "c2", 310, "invoke_agent"),  # a sub-agent: not a turn
    ]
    assert last_turn_ids(finished(*reversed(spans))) == (TRACE, "c1" * 8)


def test_last_turn_without_agent_spans_is_the_last_trace_root() -> None:
    t2 = "2e" * 16
    spans = [
        span("a1", None, 100, trace=TRACE),
        span("a2", "a1", 500, "chat", trace=TRACE),
        span("b1", None, 200, trace=t2),
        span("b2", "b1", 250, "chat", trace=t2),
    ]
    assert last_turn_ids(finished(*spans)) == (t2, "b1" * 8)


def test_last_turn_of_nothing() -> None:
    assert last_turn_ids(finished()) == (None, None)


def test_decoded_conversation_end_to_end(receiver: Receiver) -> None:
    """As the service wires it: decode OTLP spans, rebuild, score, `emit(score, *last_turn_ids(finished))`."""
    from agentwatch.collector.decode import decode_message
    from agentwatch.collector.reconstruct import build_conversation
    from tests.support.collector_kafka import otlp_bytes, simple_conversation
    from tests.support.spans import start_of

    spans = simple_conversation("conv-e2e", turns=3)
    last = max((s for s in spans if s.name.startswith("invoke_agent")), key=start_of)
    records = decode_message(otlp_bytes(spans), "application/x-protobuf")
    fin = FinishedConversation("conv-e2e", 0, records, "end", False)
    verdict = JudgeVerdict.failed("judge_unavailable", "503")
    score = score_conversation(build_conversation(fin), verdict=verdict)
    events = send(receiver.endpoint, (score, *last_turn_ids(fin)))
    events.shutdown()
    [(_, rec)] = receiver.records()
    assert rec.trace_id == last.context.trace_id.to_bytes(16, "big")
    assert rec.span_id == last.context.span_id.to_bytes(8, "big")
    a = attrs(rec)
    assert a["gen_ai.conversation.id"] == "conv-e2e" and a["error.type"] == "judge_unavailable"
    assert a["gen_ai.agent.name"] == "support-bot" and a["gen_ai.agent.version"] == "1.2.0"
