"""JSON text read from outside: lone surrogate escapes replaced, values nested no deeper than the records holding
them can be written and read back (`wire.json_text`), through the collector and the review feed's records."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from agentwatch.collector.decode import decode_message
from agentwatch.collector.reconstruct import build_conversation
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.json_text import MAX_NESTING, model_from_json, value_of
from agentwatch.wire.review_records import TranscriptRecord
from agentwatch.wire.schema import ConversationScore
from agentwatch.wire.values import read_structured
from tests.support.spans import SpanFactory, sdk_turn


def _nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def _depth(value: object) -> int:
    depth = 0
    while isinstance(value, list):
        value, depth = value[0], depth + 1
    return depth


def test_json_nested_past_the_limit_is_refused_and_stays_text() -> None:
    assert _depth(value_of(json.dumps(_nested(MAX_NESTING - 5)))) == MAX_NESTING - 5
    for depth in (MAX_NESTING + 5, 5000):
        with pytest.raises(ValueError):
            value_of("[" * depth + "]" * depth)
        text = json.dumps(_nested(depth)) if depth < 900 else "[" * depth + "]" * depth
        assert read_structured(text) == (text, "text")
    # the slower path for lone surrogates keeps the same limit
    deep_escaped = "[" * (MAX_NESTING + 5) + '"\\ud800"' + "]" * (MAX_NESTING + 5)
    with pytest.raises(ValueError):
        value_of(deep_escaped)
    assert value_of('{"a": ["\\ud800", "\\ud83d\\ude00"]}') == {"a": ["\ufffd" * 3, "\U0001f600"]}


def test_a_record_nested_past_pydantics_parser_is_read_back() -> None:
    """A score whose difference holds a value nested 199 deep is written (pydantic writes 255 levels) but
    pydantic's parser stops at 200 levels, the record's own included: it is read by the standard library's."""
    score = ConversationScore.model_validate(
        {
            "conversation_id": "c",
            "agent": "a",
            "version": "1",
            "task": "t",
            "turns": 1,
            "passed": False,
            "outcome": "partial_incorrect",
            "outcome_source": "rules",
            "differences": [{"reason": "expected_tools", "tool": "t", "path": "q", "got": _nested(199)}],
        }
    )
    payload = score.model_dump_json()
    with pytest.raises(ValidationError):
        ConversationScore.model_validate_json(payload)
    again = model_from_json(ConversationScore, payload)
    assert _depth(again.differences[0].got) == 199 and again == score
    with pytest.raises(ValidationError):  # any other error is the parser's, as before
        model_from_json(ConversationScore, payload.replace('"turns":1', '"turns":"one"'))
    with pytest.raises(ValidationError):
        model_from_json(ConversationScore, b"[" * 300)


@pytest.mark.parametrize("depth", [10, 199, 201, 600])
def test_a_tool_result_nested_deep_rebuilds_and_its_review_record_is_written_and_read(depth: int) -> None:
    """A tool result and arguments an agent logged nested `depth` deep: past the parser's limit they are kept as
    their text; within it as values. Either way the conversation scores, and the review feed's record of it is
    written and read back (one nested past 255 levels could not be written: the collector stopped on it)."""
    spans = SpanFactory()
    tools = [{"name": "lookup", "arguments": {"q": _nested(depth)}, "result": _nested(depth)}]
    sdk_turn(spans.tracer, "c1", "hi", "answer", tools)
    conv = build_conversation(decode_message(spans.protobuf(), "application/x-protobuf"))
    call = conv.turns[0].tool_calls[0]
    assert isinstance(call.result, str) == (depth > MAX_NESTING)
    score = ConversationScorer().score(conv)
    assert not any(r.startswith("scorer_error") for r in score.reasons)
    record = TranscriptRecord(
        kind="transcript", sample="failing", conversation=conv, score=score, published_at=datetime.now(UTC)
    )
    again = model_from_json(TranscriptRecord, record.model_dump_json())
    assert again.conversation is not None and again.conversation.turns[0].tool_calls[0].result == call.result
