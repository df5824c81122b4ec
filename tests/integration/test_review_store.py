"""The review store on real SQLite files and a real PostgreSQL server: queue, labels, revisions, retention, and
the pages' odd query values on each."""

from __future__ import annotations

import html
import json
import threading
from datetime import UTC, datetime, timedelta

import pytest
from starlette.testclient import TestClient

from agentwatch import wire
from agentwatch.config import OutcomeCredits, ReviewConfig
from agentwatch.review.failing import FailingQuery
from agentwatch.review.metrics import ReviewStats
from agentwatch.review.queries import Filters
from agentwatch.review.revisions import ANSWERED, DUPLICATE, EXPIRED, REVISED, STORED, UNKNOWN
from agentwatch.review.store import Store
from agentwatch.review.web import ReviewApp
from agentwatch.scorers.relabel import relabel
from agentwatch.wire.review_records import LabelRecord, TranscriptRecord
from agentwatch.wire.schema import ConversationScore, Outcome
from tests.support.review import (
    JUDGE_EXPLANATION,
    TOKEN,
    conversation,
    get_stored,
    judged,
    record,
    reviewers,
    scored,
)

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
DAY = 86400.0


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'review.db'}"
    db_url: str = request.getfixturevalue("postgres_db")
    return db_url


def _store(url: str) -> Store:
    return Store(url, scores_topic="s", labels_topic="l")


def _fill(store: Store) -> dict[str, int]:
    """Four conversations of two agents, ended 4, 3, 2 and 1 hours ago; their row ids by conversation id."""
    for i, (agent, task) in enumerate(
        [("a", "refunds"), ("b", "refunds"), ("a", "orders"), ("a", "refunds")]
    ):
        conv = conversation(f"c{i}", agent=agent, task=task, ended=NOW - timedelta(hours=4 - i))
        assert store.ingest(record(conv, scored(conv, verdict=judged())), NOW.timestamp(), 30 * DAY) == STORED
    items, _ = store.queue(limit=10)
    return {get_stored(store, item.id).conversation_id: item.id for item in items}


def test_queue_is_oldest_first_filtered_and_counted(url: str) -> None:
    store = _store(url)
    ids = _fill(store)
    items, total = store.queue()
    assert total == 4 and [ids[c] for c in ("c0", "c1", "c2", "c3")] == [i.id for i in items]
    assert [i.agent for i in items] == ["a", "b", "a", "a"] and items[
        0
    ].preview == "Where is my order ORD-1000?"
    items, total = store.queue(Filters(agent="a", task="refunds"))
    assert (total, [i.id for i in items]) == (2, [ids["c0"], ids["c3"]])
    items, total = store.queue(limit=2, offset=2)
    assert (total, [i.id for i in items]) == (4, [ids["c2"], ids["c3"]])
    assert store.choices() == {"agent": ["a", "b"], "version": ["2.0"], "task": ["orders", "refunds"]}
    assert store.neighbours(ids["c1"]) == (ids["c0"], ids["c2"])
    assert store.neighbours(ids["c0"], Filters(agent="a")) == (None, ids["c2"])
    assert sorted(store.queue_sizes()) == [
        ("a", "2.0", "orders", "review_sample", 1),
        ("a", "2.0", "refunds", "review_sample", 2),
        ("b", "2.0", "refunds", "review_sample", 1),
    ]
    # the same record again (a replay) changes nothing
    conv = conversation("c1", agent="b", ended=NOW - timedelta(hours=3))
    assert store.ingest(record(conv, scored(conv, verdict=judged())), NOW.timestamp(), 30 * DAY) == DUPLICATE
    assert store.queue()[1] == 4


def test_a_label_publishes_revision_plus_one_and_a_label_record(url: str) -> None:
    store = _store(url)
    ids = _fill(store)
    first = get_stored(store, ids["c0"]).first_score
    assert (first.outcome, first.outcome_source.value, first.passed) == (
        Outcome.PARTIAL_INCORRECT,
        "judge",
        False,
    )
    saved = store.save_label(
        ids["c0"], "alice", Outcome.COMPLETE, "the refund tool is not needed here", True, NOW.timestamp() + 60
    )
    assert saved.revision == 1
    stored = get_stored(store, ids["c0"])
    assert (stored.latest_score.revision, stored.latest_score.outcome, stored.latest_score.passed) == (
        1,
        Outcome.COMPLETE,
        True,
    )
    assert (
        stored.latest_score.graded_by == ["judge", "label"] and stored.latest_score.label is Outcome.COMPLETE
    )
    assert [(lb.reviewer, lb.outcome, lb.blind, lb.revision) for lb in stored.labels] == [
        ("alice", "complete", True, 1)
    ]
    assert store.queue()[1] == 3 and ids["c0"] not in [i.id for i in store.queue()[0]]
    # the outbox: the revised score keyed by series (scores topic), then the label record by conversation id
    out = store.unsent()
    assert [(r.topic, r.key) for r in out] == [("s", wire.score_key("a", "2.0", "refunds")), ("l", b"c0")]
    revised = ConversationScore.model_validate_json(out[0].value)
    assert revised == relabel(first, Outcome.COMPLETE, OutcomeCredits())  # the collector's rule, revision + 1
    label = LabelRecord.model_validate_json(out[1].value)
    assert (label.outcome, label.reviewer, label.sample, label.blind, label.revision) == (
        Outcome.COMPLETE,
        "alice",
        "review_sample",
        True,
        1,
    )
    assert (label.judge, label.judge_outcome, label.judge_score, label.judge_explanation) == (
        "stand-in:judge-model:v1",
        Outcome.PARTIAL_INCORRECT,
        0.35,
        JUDGE_EXPLANATION,
    )
    assert (label.first_outcome, label.first_passed, label.note) == (
        Outcome.PARTIAL_INCORRECT,
        False,
        "the refund tool is not needed here",
    )
    store.mark_sent([out[0].id], NOW.timestamp())
    assert [r.id for r in store.unsent()] == [out[1].id] and store.pending() == 1
    # a second label revises the latest revision again; the same label sent once more (its answer lost, a
    # double click) saves nothing and answers with the first, while another reviewer's same label is saved
    second = store.save_label(ids["c0"], "bob", Outcome.ABANDONED, "", False, NOW.timestamp() + 120)
    assert second.revision == 2
    assert store.save_label(ids["c0"], "bob", Outcome.ABANDONED, "", True, NOW.timestamp() + 180) == second
    assert [r.topic for r in store.unsent()] == ["l", "s", "l"]
    assert [row["reviewer"] for row in store.labels_of()] == ["alice", "bob"]
    third = store.save_label(ids["c0"], "carol", Outcome.ABANDONED, "", False, NOW.timestamp() + 240)
    assert third.revision is None and third.label_id != second.label_id
    assert [row["reviewer"] for row in store.labels_of()] == ["alice", "bob", "carol"]


def test_revisions_made_elsewhere_stay_below_the_reviewers_label(url: str) -> None:
    store = _store(url)
    conv = conversation("x", ended=NOW)
    first = scored(conv, verdict=judged("complete", 0.9))
    assert store.ingest(record(conv, first), NOW.timestamp(), DAY) == STORED
    row = store.queue()[0][0].id
    credits = OutcomeCredits()
    # the collector revises it first (a late feedback label): the store follows
    feedback = relabel(first, Outcome.ABANDONED, credits)
    assert feedback is not None
    revision = TranscriptRecord(kind="revision", sample="review_sample", score=feedback, published_at=NOW)
    assert store.ingest(revision, NOW.timestamp(), DAY) == REVISED
    assert store.ingest(revision, NOW.timestamp(), DAY) == DUPLICATE
    # the reviewer's label revises the latest revision (2)
    assert store.save_label(row, "alice", Outcome.PARTIAL_CORRECT, "", True, NOW.timestamp()).revision == 2
    # the collector, which remembers only revision 1, revises again from it: the store answers with the
    # reviewer's label on top, so the person's decision stays the latest revision
    late = relabel(feedback, Outcome.COMPLETE, credits)
    assert late is not None and late.revision == 2
    store.mark_sent([r.id for r in store.unsent()], NOW.timestamp())
    assert (
        store.ingest(
            TranscriptRecord(kind="revision", sample="review_sample", score=late, published_at=NOW),
            NOW.timestamp(),
            DAY,
        )
        == ANSWERED
    )
    (answer,) = store.unsent()
    score = ConversationScore.model_validate_json(answer.value)
    assert (score.revision, score.label, score.outcome, score.passed) == (
        3,
        Outcome.PARTIAL_CORRECT,
        Outcome.PARTIAL_CORRECT,
        False,
    )
    assert get_stored(store, row).latest_score == score
    # a revision of a conversation the store never held is ignored
    other = scored(conversation("never", ended=NOW), verdict=judged())
    assert (
        store.ingest(
            TranscriptRecord(kind="revision", sample="review_sample", score=other, published_at=NOW),
            NOW.timestamp(),
            DAY,
        )
        == UNKNOWN
    )


def test_concurrent_labels_get_distinct_increasing_revisions(url: str) -> None:
    store = _store(url)
    conv = conversation("busy", ended=NOW)
    store.ingest(record(conv, scored(conv, verdict=judged())), NOW.timestamp(), DAY)
    row = store.queue()[0][0].id
    outcomes = [Outcome.COMPLETE, Outcome.ABANDONED] * 4
    results: list[int | None] = []
    errors: list[Exception] = []
    lock = threading.Lock()

    def save(reviewer: str, outcome: Outcome) -> None:
        try:
            rev = store.save_label(row, reviewer, outcome, "", False, NOW.timestamp()).revision
        except Exception as exc:  # a label lost: the assertion below names it
            with lock:
                errors.append(exc)
            return
        with lock:
            results.append(rev)

    # one reviewer each: the same reviewer's same label twice in a row is saved once
    threads = [threading.Thread(target=save, args=(f"r{i}", o)) for i, o in enumerate(outcomes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == len(outcomes), errors  # every label saved
    published = sorted(r for r in results if r is not None)
    assert published == list(range(1, len(published) + 1))  # no revision published twice, none skipped
    assert get_stored(store, row).latest_score.revision == published[-1]
    scores = [ConversationScore.model_validate_json(r.value) for r in store.unsent() if r.topic == "s"]
    assert sorted(s.revision for s in scores) == published


def test_a_label_is_blind_once_and_never_on_a_failing_conversation(url: str) -> None:
    """The page says whether its reader saw why a conversation failed; the store decides the rest in the save's
    transaction: four labels posted at once as blind make one blind label, a conversation held for its failure
    gets none whatever the form says, and the judge's agreement counts each conversation once, by its first
    (on the review sample its first blind) label."""
    store = _store(url)
    conv = conversation("busy", ended=NOW)
    store.ingest(record(conv, scored(conv, verdict=judged())), NOW.timestamp(), DAY)
    row = store.queue()[0][0].id
    threads = [
        threading.Thread(target=store.save_label, args=(row, who, o, "", True, NOW.timestamp()))
        for who, o in (
            ("alice", Outcome.COMPLETE),
            ("bob", Outcome.ABANDONED),
            ("carol", Outcome.COMPLETE),
            ("dave", Outcome.ABANDONED),
        )
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    saved = get_stored(store, row).labels
    assert len(saved) == 4 and sum(lb.blind for lb in saved) == 1
    first_blind = next(lb for lb in saved if lb.blind)
    failing = conversation("failing-only", ended=NOW)
    held = TranscriptRecord(
        kind="transcript",
        sample="failing",
        conversation=failing,
        score=scored(failing, verdict=judged(), review_rate=0.0),
        published_at=NOW,
    )
    assert store.ingest(held, NOW.timestamp(), DAY) == STORED
    (item,) = [i for i in store.failing(FailingQuery())[0] if i.id != row]
    assert store.save_label(item.id, "bob", Outcome.COMPLETE, "", True, NOW.timestamp()).blind is False
    store.save_label(item.id, "bob", Outcome.ABANDONED, "", True, NOW.timestamp())
    pairs = {(sample, outcome): n for _judge, sample, outcome, _j, n in store.judge_pairs()}
    assert pairs == {("review_sample", first_blind.outcome): 1, (wire.FAILING, "complete"): 1}


def test_retention_deletes_what_is_old_and_refuses_old_records(url: str) -> None:
    store = _store(url)
    old = conversation("old", ended=NOW - timedelta(days=10))
    new = conversation("new", ended=NOW - timedelta(days=1))
    for conv in (old, new):
        assert store.ingest(record(conv, scored(conv, verdict=judged())), NOW.timestamp(), 30 * DAY) == STORED
    old_row = next(i.id for i in store.queue()[0] if i.at < (NOW - timedelta(days=5)).timestamp())
    store.save_label(old_row, "alice", Outcome.COMPLETE, "", True, NOW.timestamp())
    store.mark_sent([r.id for r in store.unsent()], NOW.timestamp() - 8 * DAY)
    assert store.counts() == {"conversations": 2, "labelled": 1, "labels": 1, "pending": 0}
    assert store.expire(NOW.timestamp(), 7 * DAY) == 1
    assert store.get(old_row) is None and store.counts() == {
        "conversations": 1,
        "labelled": 0,
        "labels": 0,
        "pending": 0,
    }
    assert [get_stored(store, i.id).conversation_id for i in store.queue()[0]] == ["new"]
    assert store.ingest(record(old, scored(old, verdict=judged())), NOW.timestamp(), 7 * DAY) == EXPIRED
    assert store.counts()["conversations"] == 1


def test_the_store_survives_a_restart(url: str) -> None:
    store = _store(url)
    ids = _fill(store)
    store.save_label(
        ids["c2"], "bob", Outcome.HALLUCINATED, "made up a tracking number", True, NOW.timestamp()
    )
    store.close()
    again = _store(url)
    stored = get_stored(again, ids["c2"])
    assert [(lb.reviewer, lb.outcome, lb.note) for lb in stored.labels] == [
        ("bob", "hallucinated", "made up a tracking number")
    ]
    assert stored.transcript is not None
    assert json.loads(stored.transcript)["conversation_id"] == "c2" and again.queue()[1] == 3
    assert len(again.unsent()) == 2  # what was not yet sent is still to send


def test_the_failing_list_and_the_column_added_to_an_older_store(url: str) -> None:
    """Both databases: failing conversations held (not queued) and listed by series, window and why; a store
    made before the `failures` column gets it, filled from each row's latest score."""
    from sqlalchemy import text

    from agentwatch.review.failing import FailingQuery
    from agentwatch.wire.review_records import review_sample_of

    store = _store(url)
    for i, task in enumerate(["refunds", "refunds", "orders"]):
        conv = conversation(f"f{i}", task=task, ended=NOW - timedelta(hours=i + 1))
        if i == 1:
            conv.turns[-1].error = "RateLimitError: 429"
        first = scored(conv, verdict=judged(), review_rate=0.0)
        sample = review_sample_of(first, failing=True)
        assert sample == "failing"
        held = TranscriptRecord(
            kind="transcript", sample=sample, conversation=conv, score=first, published_at=NOW
        )
        assert store.ingest(held, NOW.timestamp(), 30 * DAY, 7 * DAY) == STORED
    assert store.queue()[1] == 0  # held, not queued
    series = FailingQuery(agent="support-bot", task="refunds", since=NOW.timestamp() - DAY)
    items, total = store.failing(series, 10)
    assert total == 2 and [get_stored(store, i.id).conversation_id for i in items] == ["f0", "f1"]
    only_errors, n = store.failing(FailingQuery(task="refunds", why="error"), 10)
    assert n == 1 and get_stored(store, only_errors[0].id).conversation_id == "f1"
    with store.engine.begin() as c:  # as a store written before the column existed
        c.execute(text("DROP INDEX ix_review_failing"))
        c.execute(text("ALTER TABLE review_conversations DROP COLUMN failures"))
    store.close()
    reopened = _store(url)
    assert reopened.failing(series, 10)[1] == 2
    assert reopened.failing(FailingQuery(why="error"), 10)[1] == 1
    reopened.close()


def test_odd_agents_ids_and_inputs_are_stored_and_found_again(url: str) -> None:
    """Values PostgreSQL once refused (the review service took each refusal for an outage and retried the record
    forever, stopping its partition): an agent name longer than its column, NUL in the agent, the task or the
    first input, conversation ids longer than theirs. Each is stored, two long ids that differ only at the end
    stay two conversations, and the same record again is a duplicate (the stored key is found)."""
    store = _store(url)
    long_id = "c" * 600
    changes = [
        {"agent": "a" * 300},
        {"agent": "bot\x00"},
        {"task": "refunds\x00"},
        {"conversation_id": long_id + "1"},
        {"conversation_id": long_id + "2"},
    ]
    for i, change in enumerate(changes):
        base = conversation(f"odd{i}", ended=NOW - timedelta(minutes=5))
        conv = base.model_copy(update=change)
        if i == 2:
            conv.turns[0] = conv.turns[0].model_copy(update={"input": "Where is\x00 my order?"})
        rec = TranscriptRecord.model_validate_json(record(conv, scored(conv)).model_dump_json())
        assert store.ingest(rec, NOW.timestamp(), 30 * DAY) == STORED, change
        assert store.ingest(rec, NOW.timestamp(), 30 * DAY) == DUPLICATE, change
    items, total = store.queue(limit=20)
    assert total == len(changes)
    stored = [get_stored(store, item.id) for item in items]
    assert all("\x00" not in s.agent and 0 < len(s.agent) <= 256 for s in stored)
    assert len({s.conversation_id for s in stored}) == len(changes)
    # a filter holding the value as the agent sent it finds what was stored from it (NUL, too long)
    for change in changes[:3]:
        filters = Filters(agent=change.get("agent"), task=change.get("task"))
        assert store.queue(filters, limit=20)[1] == 1, change
        # none of them failed (no grader decided): the failing list, asked the same, finds none and no error
        failing = FailingQuery(agent=change.get("agent"), task=change.get("task"))
        assert store.failing(failing, 20)[1] == 0, change


def test_pages_answer_odd_query_values_without_an_error(url: str) -> None:
    """Query and path values each database once answered with a server error: NUL in a filter (PostgreSQL
    refuses it in text), a row id past 32 bits (PostgreSQL's INTEGER), and on the failing list an end time or
    window past the calendar's years, or an offset past 64 bits. Each page answers: 404 for no such row, and the
    failing list says what was wrong and lists with the default."""
    store = _store(url)
    conv = conversation("odd-pages", ended=NOW - timedelta(minutes=5))
    assert store.ingest(record(conv, scored(conv, verdict=judged())), NOW.timestamp(), 30 * DAY) == STORED
    app = ReviewApp(store, ReviewConfig.model_validate({"reviewers": reviewers()}), ReviewStats())
    client = TestClient(app.app, headers={"Authorization": f"Bearer {TOKEN}"})
    for row in (2**31, 2**63 - 1, 2**63):
        assert client.get(f"/c/{row}").status_code == 404, row
    row = store.queue(limit=1)[0][0].id
    for params in ({"agent": "a\x00b"}, {"task": "\x00"}, {"version": "v" * 5000}):
        assert client.get("/", params=params).status_code == 200, params
        assert client.get(f"/c/{row}", params=params).status_code == 200, params
        assert client.get("/failing", params=params).status_code == 200, params
    said = {
        "until": "is not a time in Unix seconds from 1970 to 9999",
        "offset": "is not an integer from 0 to 1,000,000,000",
    }
    for key, value in [
        ("until", "1e400"),
        ("until", "nan"),
        ("until", "9" * 19),
        ("until", "-62135596801"),
        ("offset", str(2**64)),
        ("offset", "-5"),
    ]:
        r = client.get("/failing", params={key: value})
        assert r.status_code == 200 and said[key] in html.unescape(r.text), (key, value)
    r = client.get("/failing", params={"window": "999999999999d"})  # reaches before 1970: starts there
    assert r.status_code == 200 and "1970-01-01 00:00 UTC" in r.text
    listed = client.get("/failing", params={"window": "999999999999d", "agent": conv.agent})
    assert listed.status_code == 200 and f"/c/{row}?" in listed.text  # the failed conversation is listed


def test_a_score_with_evidence_of_other_names_is_stored_and_listed(url: str) -> None:
    """Evidence named by a newer scorer, or by anyone writing the topic, made words PostgreSQL's `failures`
    column refused (longer than it, NUL): the conversation was counted invalid and dropped."""
    store = _store(url)
    conv = conversation("odd-evidence", ended=NOW - timedelta(minutes=5))
    score = scored(conv, verdict=judged())
    odd = ["error", "nul\x00word", *(f"kind_{i}_" + "x" * 40 for i in range(6))]
    score = score.model_copy(update={"evidence": odd})
    assert store.ingest(record(conv, score), NOW.timestamp(), 30 * DAY) == STORED
    items, total = store.failing(FailingQuery(why="error"), 10)
    assert total == 1 and items[0].failures.split()[:2] == ["failed", "error"]
    assert "kind_0_" + "x" * 40 in items[0].failures.split()


def test_a_label_is_saved_whatever_the_judge_id_and_texts_hold(url: str) -> None:
    """A judge id longer than its column, NUL in the judge's explanation or in the reviewer's note: PostgreSQL
    refused the label row, so the conversation could never be labelled. The row holds them fitted; the label
    record published keeps every value."""
    store = _store(url)
    for i, change in enumerate(
        [{"judge": "j" * 300}, {"judge_explanation": "because\x00so"}, {"judge": "judge\x00id"}]
    ):
        conv = conversation(f"odd-label-{i}", ended=NOW - timedelta(minutes=5))
        score = scored(conv, verdict=judged()).model_copy(update=change)
        assert store.ingest(record(conv, score), NOW.timestamp(), 30 * DAY) == STORED
        row = store.queue(limit=1)[0][0].id  # the others are labelled
        saved = store.save_label(row, "bob", Outcome.COMPLETE, "a note\x00", True, NOW.timestamp() + 60)
        assert saved.conversation_id == conv.conversation_id and saved.note == "a note\x00"
        published = [LabelRecord.model_validate_json(r.value) for r in store.unsent() if r.topic == "l"]
        mine = [p for p in published if p.label_id == saved.label_id]
        assert len(mine) == 1 and mine[0].note == "a note\x00", change
        assert all(getattr(mine[0], key) == value for key, value in change.items()), change
    long_id, nul_id, plain_id = sorted(judge for judge, *_ in store.judge_pairs())
    assert (nul_id, plain_id) == ("judge\ufffdid", "stand-in:judge-model:v1")
    assert long_id.startswith("j" * 200) and len(long_id) == 256 and long_id != "j" * 256
