"""Late labels on a real broker: an SDK label after scoring publishes a revised score; unknown ones dead-letter."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agentwatch.collector.deadletter import REASON_HEADER
from agentwatch.collector.labels import ScoreMemory
from agentwatch.config import Settings, TaskPolicy
from agentwatch.scorers import ConversationScorer
from agentwatch.scorers.relabel import relabel
from agentwatch.wire.schema import ConversationScore, Outcome
from tests.support.collector_kafka import ServiceThread, TopicReader, collector_settings, scores_of, unique

CONVERSATIONS = r"""
import sys
from agentwatch.sdk import configure, conversation, shutdown, trace

bootstrap, topic, graded, ungraded = sys.argv[1:5]
configure("kafka", agent="support-bot", version="3.1", bootstrap_servers=bootstrap, topic=topic)


@trace(kind="tool")
def lookup_order(order_id: str) -> dict:
    return {"order_id": order_id, "status": "shipped"}


@trace(kind="agent")
def bot(question: str, order_id: str) -> str:
    order = lookup_order(order_id)
    return f"Order {order_id} is {order['status']}."


for cid, task in ((graded, "order_status"), (ungraded, "smalltalk")):
    with conversation(id=cid, task=task):
        bot("Where is order ORD-12345?", "ORD-12345")
        conversation.end()
shutdown()
"""

LABELS = r"""
import sys
from agentwatch.sdk import configure, conversation, shutdown

bootstrap, topic, graded, ungraded, unknown = sys.argv[1:6]
configure("kafka", agent="support-bot", version="3.1", bootstrap_servers=bootstrap, topic=topic)
conversation.label("abandoned", conversation_id=graded)   # the user said it did not help
conversation.label("complete", conversation_id=ungraded)  # thumbs up outside the review sample
conversation.label("complete", conversation_id=unknown)   # nobody scored this one
shutdown()
"""

POLICY = {"id": "orders", "version": "2", "task": "order_status", "tools": [{"name": "lookup_order"}]}


def _run(script: str, tmp_path, *args: str) -> None:
    path = tmp_path / f"agent-{unique('s')}.py"
    path.write_text(script)
    run = subprocess.run([sys.executable, str(path), *args], check=False, capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr.decode()[-2000:]


@pytest.mark.broker
def test_late_label_revises_the_score_and_unknown_labels_dead_letter(broker, topic, tmp_path) -> None:
    bs = broker.bootstrap_servers
    graded, ungraded, unknown = unique("graded"), unique("free"), unique("nobody")
    _run(CONVERSATIONS, tmp_path, bs, topic, graded, ungraded)
    settings = collector_settings(bs, [topic], unique("labels"))
    settings.policies = Settings(policies=[TaskPolicy.model_validate(POLICY)]).policies
    scores = TopicReader(bs, settings.collector.scores_topic)
    dead = TopicReader(bs, settings.collector.dead_letter_topic)
    with ServiceThread(settings) as svc:
        first = scores.wait(lambda r: len(r) >= 2, 30)
        assert len(first) == 2, "the two conversations were not scored"
        _run(LABELS, tmp_path, bs, topic, graded, ungraded, unknown)
        records = scores.wait(lambda r: len(r) >= 4, 30)
        letters = dead.wait(lambda r: len(r) >= 1, 30)
        assert svc.error is None
        stats = dict(svc.service.stats.late_labels)
    scores.close()
    dead.close()
    by_id: dict[str, list[dict]] = {}
    for s in scores_of(records):
        by_id.setdefault(s["conversation_id"], []).append(s)
    assert set(by_id) == {graded, ungraded}  # nothing is scored for the unknown id
    g0, g1 = sorted(by_id[graded], key=lambda s: s["revision"])
    assert (g0["revision"], g0["passed"], g0["outcome"], g0["graded_by"]) == (0, True, "complete", ["policy"])
    assert (g1["revision"], g1["passed"], g1["outcome"], g1["outcome_source"]) == (
        1,
        False,
        "abandoned",
        "label",
    )
    assert g1["graded_by"] == ["policy", "label"] and g1["label"] == "abandoned" and g1["asr_credit"] == 0.0
    assert (
        g1["policy"] == "orders@2" and g1["ended_at"] == g0["ended_at"]
    )  # same event time: same window bucket
    u0, u1 = sorted(by_id[ungraded], key=lambda s: s["revision"])
    assert (u0["passed"], u0["graded_by"]) == (None, [])
    assert (u1["revision"], u1["passed"], u1["outcome"], u1["label"]) == (1, None, "unscored", "complete")
    assert records[2].key == records[0].key or records[2].key in {
        r.key for r in records[:2]
    }  # same series key
    assert len(letters) == 1
    headers = dict(letters[0].headers)
    assert headers[REASON_HEADER] == b"label_unknown_conversation"
    assert json.loads(letters[0].value) == {
        "conversation_id": unknown,
        "agent": "support-bot",
        "outcome": "complete",
    }
    assert stats == {"revised": 2, "label_unknown_conversation": 1}
    _exported_counts_after_restarts(settings, graded, ungraded)


def _exported_counts_after_restarts(settings: Settings, graded: str, ungraded: str) -> None:
    """The exporter, started twice from scratch on the scores topic (a restart replays it), counts each
    conversation once, at its latest revision."""
    from agentwatch.config import load_settings
    from tests.support.exporter_service import run_service, stop_service
    from tests.support.metrics_reference import scrape

    base = {"agent": "support-bot", "version": "3.1", "window": "1h"}
    for attempt in range(2):
        exporter_settings = load_settings(
            kafka={"bootstrap_servers": settings.kafka.bootstrap_servers},
            exporter={
                "scores_topic": settings.collector.scores_topic,
                "group_id": unique(f"exp{attempt}"),
                "session_timeout_ms": 2000,
                "heartbeat_interval_ms": 500,
            },
        )
        service, stop, thread, port = run_service(exporter_settings)
        try:
            samples = scrape(port)
        finally:
            stop_service(service, stop, thread)

        def value(name: str, samples: dict = samples, /, **labels: str) -> float | None:
            return samples.get((name, tuple(sorted({**base, **labels}.items()))))

        policed = {"task": "order_status"}
        assert value("agentwatch_window_conversations", outcome="abandoned", **policed) == 1
        assert value("agentwatch_window_conversations", outcome="complete", **policed) == 0
        assert (
            value("agentwatch_window_scored", **policed),
            value("agentwatch_window_passed", **policed),
        ) == (1, 0)
        free = {"task": "smalltalk"}
        assert value("agentwatch_window_conversations", outcome="unscored", **free) == 1
        assert value("agentwatch_window_scored", **free) == 0
        assert value("agentwatch_label_ratio", outcome="complete", **free) == 1.0
        assert samples[("agentwatch_score_revisions_total", ())] == 2
        assert samples[("agentwatch_scores_consumed_total", ())] == 4


# --------------------------------------------------------------------------- units


def _score(cid: str, **conv) -> ConversationScore:
    from agentwatch.wire.schema import Conversation

    line = {
        "conversation_id": cid,
        "agent": "a",
        "task": "t",
        "turns": [{"input": "q", "answer": "a", "tool_calls": [{"name": "x"}]}],
        **conv,
    }
    policy = TaskPolicy.model_validate({"id": "p", "task": "t", "tools": [{"name": "x"}]})
    return ConversationScorer(Settings(policies=[policy])).score(Conversation.model_validate(line))


def test_relabel_rules() -> None:
    credits = Settings().scoring.credits
    s = _score("c1")
    assert s.passed is True and s.graded_by == ["policy"]
    r = relabel(s, Outcome.PARTIAL_CORRECT, credits)
    assert r is not None
    assert (r.revision, r.passed, r.outcome, r.graded_by) == (
        1,
        False,
        Outcome.PARTIAL_CORRECT,
        ["policy", "label"],
    )
    assert r.asr_credit == pytest.approx(0.4)
    assert relabel(r, Outcome.PARTIAL_CORRECT, credits) is None  # the same label again changes nothing
    back = relabel(r, Outcome.COMPLETE, credits)
    assert back is not None
    assert (back.revision, back.passed, back.graded_by) == (2, True, ["policy", "label"])
    assert sum(x.startswith("label:") for x in back.reasons) == 1
    # the same label applied at scoring time gives the same verdict as applied late
    at_once = _score("c1", outcome="partial_correct")
    assert (at_once.passed, at_once.outcome, at_once.asr_credit) == (r.passed, r.outcome, r.asr_credit)


def test_score_memory_is_bounded_and_keyed_by_agent() -> None:
    memory = ScoreMemory(capacity=2)
    a = ConversationScore.model_validate(_score("1").model_dump() | {"agent": "a"})
    b = ConversationScore.model_validate(_score("1").model_dump() | {"agent": "b"})
    memory.remember(a, b"A")
    memory.remember(b, b"B")
    assert memory.find("1", "a") == ("found", b"A") and memory.find("1", None) == ("ambiguous", None)
    memory.remember(ConversationScore.model_validate(_score("2").model_dump()), b"C")
    assert (
        len(memory) == 2
        and memory.find("1", "a") == ("unknown", None)
        and memory.find("1", None) == ("found", b"B")
    )


def test_score_memory_is_bounded_in_bytes_too() -> None:
    """1,000 finished conversations with 900 KB of tags each left the collector at 1,064 MB with nothing open:
    the label memory held 50,000 scores whatever their size. It holds at most `max_bytes` of JSON and ids, the
    oldest forgotten first, a replaced score counted once; one score larger than the bound is still kept."""
    scores = [ConversationScore.model_validate(_score(f"c{i}").model_dump()) for i in range(5)]
    memory = ScoreMemory(capacity=100, max_bytes=5_000)
    for s in scores:
        memory.remember(s, b"x" * 900)
    kept = [s.conversation_id for s in scores if memory.find(s.conversation_id, s.agent)[0] == "found"]
    assert kept == ["c2", "c3", "c4"]
    memory.remember(scores[4], b"y" * 900)  # the same conversation again: replaced, not counted twice
    assert len(memory) == 3 and memory.find("c4", scores[4].agent) == ("found", b"y" * 900)
    memory.remember(scores[0], b"z" * 10_000)
    assert len(memory) == 1 and memory.find("c0", scores[0].agent) == ("found", b"z" * 10_000)
