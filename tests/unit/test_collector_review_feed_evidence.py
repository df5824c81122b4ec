"""Conversations with evidence of a configured detector go to the review queue, marked as not random."""

from __future__ import annotations

from agentwatch.collector.review_feed import ReviewFeed
from agentwatch.config import Settings
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.review_records import TranscriptRecord, review_sample_of
from agentwatch.wire.schema import Conversation


class _Producer:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def send(self, topic: str, value: bytes, key: bytes, headers: list) -> None:
        self.sent.append(value)


def _looping() -> Conversation:
    call = {"name": "search_flights", "arguments": {"q": "x"}, "result": {"ok": True}}
    return Conversation.model_validate(
        {
            "conversation_id": "c-loop",
            "turns": [{"input": "find", "answer": "none", "tool_calls": [call] * 3}],
        }
    )


def test_a_detector_in_review_evidence_sends_its_conversations_for_review() -> None:
    settings = Settings.model_validate({"sampling": {"review_evidence": ["loop"]}})
    score = ConversationScorer(settings).score(_looping())
    assert score.evidence == ["loop"] and not score.review_sampled and score.label is None
    assert review_sample_of(score) is None  # not configured: not sent
    assert review_sample_of(score, frozenset({"hallucination"})) is None
    producer = _Producer()
    feed = ReviewFeed(producer, "t", 1_000_000, evidence=frozenset(settings.sampling.review_evidence))
    feed.transcript(score, _looping())
    (sent,) = producer.sent
    record = TranscriptRecord.model_validate_json(sent)
    assert record.sample == "evidence" and feed.published == {"evidence": 1}
