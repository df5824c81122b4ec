"""What the collector sends for review: conversations with evidence of a configured detector (queued, marked as
not random), transcripts no writer takes, and failing conversations up to their series' limit a minute."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agentwatch.collector.review_feed import ReviewFeed
from agentwatch.config import Settings
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.review_records import TranscriptRecord, review_sample_of
from agentwatch.wire.schema import Conversation, ConversationScore


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


def test_a_transcript_no_json_writer_takes_is_sent_without_its_turns_and_says_why() -> None:
    """A value no JSON writer takes in a transcript (a lone surrogate that reached a tool result past the readers)
    raised out of the feed and stopped the collector, on the same message at every restart; the record is sent
    without the turns, with a note saying why, and the score is intact."""
    conv = _looping()
    score = ConversationScorer(Settings.model_validate({"sampling": {"review_evidence": ["loop"]}})).score(
        conv
    )
    conv.turns[0].tool_calls[0].result = {"note": "half \ud800 of a pair"}
    producer = _Producer()
    feed = ReviewFeed(producer, "t", 1_000_000, evidence=frozenset({"loop"}))
    feed.transcript(score, conv)
    (sent,) = producer.sent
    record = TranscriptRecord.model_validate_json(sent)
    assert record.conversation is not None and record.conversation.turns == []
    assert record.conversation.notes[-1].startswith("review: the transcript could not be written")
    assert record.score == score and feed.published == {"evidence": 1}


def _failing(cid: str, task: str, ended: datetime) -> tuple[Conversation, ConversationScore]:
    conv = Conversation.model_validate(
        {
            "conversation_id": cid,
            "agent": "shop",
            "version": "1.0",
            "task": task,
            "ended_at": ended.isoformat(),
            "turns": [{"input": "help", "answer": None, "error": "TimeoutError"}],
        }
    )
    return conv, ConversationScorer(Settings()).score(conv)


def test_the_feed_sends_the_first_failing_transcripts_of_a_series_and_counts_the_rest() -> None:
    ended = datetime.now(UTC) - timedelta(seconds=5)
    producer = _Producer()
    feed = ReviewFeed(producer, "t", 1_000_000, failing=True, failing_per_minute=2)
    for i in range(5):
        conv, score = _failing(f"r{i}", "refunds", ended)
        feed.transcript(score, conv)
    conv, score = _failing("o0", "orders", ended)
    feed.transcript(score, conv)
    sent = [TranscriptRecord.model_validate_json(v) for v in producer.sent]
    assert [r.score.conversation_id for r in sent] == ["r0", "r1", "o0"]
    assert all(r.sample == "failing" for r in sent)
    assert feed.published == {"failing": 3} and feed.failing_skipped == 3
    unlimited = ReviewFeed(_Producer(), "t", 1_000_000, failing=True)
    for i in range(5):
        conv, score = _failing(f"r{i}", "refunds", ended)
        unlimited.transcript(score, conv)
    assert unlimited.published == {"failing": 5} and unlimited.failing_skipped == 0


def test_conversations_queued_for_evidence_are_limited_like_failing_ones() -> None:
    """A detector's evidence in every conversation of a broken agent queued each one for labelling."""
    settings = Settings.model_validate({"sampling": {"review_evidence": ["loop"]}})
    ended = datetime.now(UTC) - timedelta(seconds=5)
    producer = _Producer()
    feed = ReviewFeed(producer, "t", 1_000_000, evidence=frozenset({"loop"}), failing_per_minute=2)
    for i in range(4):
        conv = _looping().model_copy(update={"conversation_id": f"loop-{i}", "ended_at": ended})
        feed.transcript(ConversationScorer(settings).score(conv), conv)
    sent = [TranscriptRecord.model_validate_json(v) for v in producer.sent]
    assert [r.score.conversation_id for r in sent] == ["loop-0", "loop-1"]
    assert feed.published == {"evidence": 2} and feed.failing_skipped == 2
