"""The review service's list of a series' failing conversations (what an alert links to), on a real SQLite
store, its pages served in process; and the smaller points of the conversation page."""

from __future__ import annotations

import re
import sqlite3
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from agentwatch.config import ReviewConfig, load_settings
from agentwatch.review import queries, tables
from agentwatch.review.failing import FailingQuery, failures_of
from agentwatch.review.metrics import ReviewStats
from agentwatch.review.service import ReviewService
from agentwatch.review.store import Store
from agentwatch.review.tables import FAILURES_LENGTH
from agentwatch.review.web import ReviewApp
from agentwatch.wire.review_records import TranscriptRecord, review_sample_of
from tests.support.review import TOKEN, conversation, judged, reviewers, scored

NOW = time.time()


def _record(
    cid: str,
    *,
    task: str = "refunds",
    version: str = "2.0",
    minutes_ago: float = 10,
    fail: str = "judge",
    review_rate: float = 0.0,
) -> TranscriptRecord:
    """A conversation that failed (the judge's verdict, or an error), held as the collector sends it."""
    ended = datetime.fromtimestamp(NOW, UTC) - timedelta(minutes=minutes_ago)
    conv = conversation(cid, task=task, version=version, ended=ended)
    if fail == "error":
        conv.turns[-1].error = "RateLimitError: 429 from the model"
    if fail == "none":
        score = scored(conv, verdict=judged("complete", 0.95), review_rate=review_rate)
    else:
        score = scored(conv, verdict=judged(), review_rate=review_rate)
    sample = review_sample_of(score, failing=True)
    assert sample is not None
    return TranscriptRecord(
        kind="transcript", sample=sample, conversation=conv, score=score, published_at=datetime.now(UTC)
    )


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(f"sqlite:///{tmp_path / 'review.db'}")
    records = [
        _record("a-old", minutes_ago=60 * 30),  # outside a 24h window
        _record("a-1", minutes_ago=50),
        _record("a-2", minutes_ago=20, fail="error"),
        _record("a-3", minutes_ago=5),
        _record("other-task", task="lookup", minutes_ago=5),
        _record("other-version", version="1.9", minutes_ago=5),
        _record("sampled-ok", minutes_ago=5, fail="none", review_rate=1.0),  # in the review sample, passed
    ]
    for r in records:
        assert s.ingest(r, NOW, 30 * 86400) == "stored"
    return s


def _client(store: Store, failing_window: str = "24h", failing_per_minute: int | None = None) -> TestClient:
    app = ReviewApp(
        store,
        ReviewConfig.model_validate({"reviewers": reviewers(), "page_size": 2}),
        ReviewStats(),
        clock=lambda: NOW,
        failing_window=failing_window,
        failing_per_minute=failing_per_minute,
    )
    return TestClient(app.app, headers={"Authorization": f"Bearer {TOKEN}"})


def test_the_words_of_a_failure() -> None:
    rec = _record("x", fail="error")
    assert failures_of(rec.score).split() == ["failed", "error", "abandoned"]  # an error abandons
    assert failures_of(_record("y", fail="none", review_rate=1.0).score) == ""
    assert failures_of(rec.score).startswith(" ") and failures_of(rec.score).endswith(" ")


def test_evidence_of_other_names_is_kept_while_the_column_holds_it() -> None:
    """A newer scorer's evidence is listed with the rest; words that are not plain names, and those past the
    column's length, are left out (PostgreSQL refused the whole conversation for them)."""
    score = _record("x", fail="error").score
    odd = [
        "new_kind",
        "loop",
        "with space",
        "nul\x00",
        "",
        "é",
        *(f"k{i:02d}_" + "x" * 30 for i in range(10)),
    ]
    words = failures_of(score.model_copy(update={"evidence": [*score.evidence, *odd]}))
    assert len(words) <= FAILURES_LENGTH
    assert words.split()[:4] == ["failed", "error", "loop", "abandoned"]
    kept = words.split()[4:]
    # three long words fit, the fourth does not; a shorter one after it still does
    assert kept == ["k00_" + "x" * 30, "k01_" + "x" * 30, "k02_" + "x" * 30, "new_kind"]
    few = failures_of(score.model_copy(update={"evidence": ["error", "new_kind", "with space"]}))
    assert few.split() == ["failed", "error", "abandoned", "new_kind"]


def test_a_series_failing_conversations_in_a_window_latest_first(store: Store) -> None:
    series = FailingQuery(agent="support-bot", version="2.0", task="refunds", since=NOW - 86400, until=NOW)
    items, total = store.failing(series, 10)
    assert total == 3 and [i.preview for i in items] == [items[0].preview] * 3
    ids = [store.get(i.id).conversation_id for i in items]  # type: ignore[union-attr]
    assert ids == ["a-3", "a-2", "a-1"]  # not the one outside the window, nor other series, nor a pass
    assert all(i.sample == "failing" and not i.labelled and i.reasons for i in items)
    errors, n = store.failing(FailingQuery(agent="support-bot", why="error", since=NOW - 86400), 10)
    assert n == 1 and store.get(errors[0].id).conversation_id == "a-2"  # type: ignore[union-attr]
    _, every = store.failing(FailingQuery(), 10)
    assert every == 6
    # failing conversations are not queued for labelling: only the review sample and flagged ones are
    queued, left = store.queue()
    assert left == 1 and store.get(queued[0].id).conversation_id == "sampled-ok"  # type: ignore[union-attr]
    assert store.choices()["task"] == ["refunds"] and store.failing_choices()["task"] == ["lookup", "refunds"]
    assert [q[3] for q in store.queue_sizes()] == ["review_sample"]


def test_a_label_that_passes_it_takes_it_off_the_list(store: Store) -> None:
    items, _ = store.failing(FailingQuery(task="refunds", version="2.0", since=NOW - 86400), 10)
    from agentwatch.wire.schema import Outcome

    store.save_label(items[0].id, "alice", Outcome.COMPLETE, "fine after all", False, NOW)
    _, total = store.failing(FailingQuery(task="refunds", version="2.0", since=NOW - 86400), 10)
    assert total == 2


def test_failing_rows_expire_sooner_unless_labelled(store: Store) -> None:
    later = NOW + 8 * 86400  # past the 7 days of failing_retention_days, within the 30 of retention_days
    gone = store.expire(later, 30 * 86400, 7 * 86400)
    assert gone == 6 and store.counts()["conversations"] == 1  # the review-sample one stays
    assert store.ingest(_record("late", minutes_ago=60 * 24 * 8), NOW, 30 * 86400, 7 * 86400) == "expired"


def test_a_store_made_before_the_column_gets_it_filled(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = Store(f"sqlite:///{path}")
    for r in (_record("a", fail="error"), _record("b", fail="none", review_rate=1.0)):
        old.ingest(r, NOW, 30 * 86400)
    old.close()
    with sqlite3.connect(path) as db:  # as a store written before the column existed
        db.execute("DROP INDEX ix_review_failing")
        db.execute("ALTER TABLE review_conversations DROP COLUMN failures")
    reopened = Store(f"sqlite:///{path}")
    items, total = reopened.failing(FailingQuery(), 10)
    assert total == 1 and items[0].failures.split() == ["failed", "error", "abandoned"]
    with sqlite3.connect(path) as db:
        assert db.execute(
            "SELECT count(*) FROM sqlite_master WHERE name = 'ix_review_failing'"
        ).fetchone() == (1,)


def test_the_failing_page_lists_pages_and_links_back(store: Store) -> None:
    client = _client(store)
    r = client.get(
        "/failing",
        params={
            "agent": "support-bot",
            "version": "2.0",
            "task": "refunds",
            "window": "24h",
            "alert": "AgentwatchPass3Drift",
        },
    )
    assert r.status_code == 200
    assert "Opened from the alert <strong>AgentwatchPass3Drift</strong>" in r.text
    assert re.search(r"<strong>3</strong> failing conversations", r.text)
    rows = re.findall(r'<a class="open" href="(/c/\d+\?back=[^"]+)"', r.text)
    assert len(rows) == 2 and 'id="more"' in r.text  # page size 2
    more = re.search(r'id="more" href="([^"]+)"', r.text)
    assert more is not None
    second = client.get(more.group(1).replace("&amp;", "&"))
    assert len(re.findall(r'class="open"', second.text)) == 1 and 'id="previous"' in second.text
    assert "judge: " in r.text or "partial_incorrect" in r.text  # why, in the list already
    page = client.get(rows[0].replace("&amp;", "&"))
    assert page.status_code == 200 and 'id="back-link" href="/failing?' in page.text
    assert 'id="why"' in page.text and "Why it failed" in page.text  # said at once: not a blind sample
    assert '<input type="hidden" name="blind" value="0">' in page.text
    errors = client.get("/failing", params={"why": "error", "task": "refunds", "version": "2.0"})
    assert re.search(r"<strong>1</strong> failing conversation with <strong>error</strong>", errors.text)


def test_the_back_link_never_leaves_the_site(store: Store) -> None:
    """A `back` a browser would read as another site — `//`, a backslash, or a tab or line break between the
    slashes (browsers drop those) — is no link; a path of this site is."""
    client = _client(store)
    page = client.get("/failing", params={"task": "refunds", "version": "2.0"})
    row = re.findall(r'<a class="open" href="/c/(\d+)\?back=', page.text)[0]
    for hostile in (
        "//evil.example/x",
        "/\\evil.example",
        "/\t/evil.example/phish",
        "/\n/evil.example",
        "/ /x",
    ):
        r = client.get(f"/c/{row}", params={"back": hostile})
        assert r.status_code == 200 and "evil.example" not in r.text and 'id="back-link"' not in r.text, (
            hostile
        )
    r = client.get(f"/c/{row}", params={"back": "/failing?task=refunds"})
    assert 'id="back-link" href="/failing?task=refunds"' in r.text


def test_wrong_parameters_are_said_and_the_defaults_used(store: Store) -> None:
    r = _client(store).get("/failing", params={"window": "forever", "why": "sadness", "until": "noon"})
    assert r.status_code == 200
    assert "window &#39;forever&#39; is not a positive duration" in r.text
    assert "why &#39;sadness&#39; is not one of failed, abandoned, error" in r.text
    assert "until &#39;noon&#39; is not a time in Unix seconds" in r.text
    assert re.search(r"<strong>\d+</strong> failing conversations", r.text)


def test_a_link_without_a_window_lists_the_services_alert_window(store: Store) -> None:
    """The alerts' links name no window: the list is over the review service's `alerts.window`."""
    total = re.compile(r"<strong>(\d+)</strong> failing conversation")
    day = _client(store).get("/failing", params={"agent": "support-bot", "version": "2.0", "task": "refunds"})
    assert total.search(day.text).group(1) == "3"  # type: ignore[union-attr]  # a-old is 30 hours old
    half_hour = _client(store, failing_window="30m").get(
        "/failing", params={"agent": "support-bot", "version": "2.0", "task": "refunds"}
    )
    assert total.search(half_hour.text).group(1) == "2"  # type: ignore[union-attr]  # a-1 ended 50 minutes ago
    named = _client(store, failing_window="30m").get(
        "/failing", params={"agent": "support-bot", "version": "2.0", "task": "refunds", "window": "2h"}
    )
    assert total.search(named.text).group(1) == "3"  # type: ignore[union-attr]  # a window in the link wins


def test_the_list_says_how_many_failing_conversations_a_minute_the_collector_sends() -> None:
    """With `collector.failing_transcripts_per_minute`, the list of an incident holds the first of each minute:
    the page says so, and that the alerts count every one."""
    said = "up to 60 a minute per series from each collector"
    empty = Store(f"sqlite:///{tempfile.mkdtemp()}/r.db")
    limited = _client(empty, failing_per_minute=60).get("/failing")
    assert said in " ".join(limited.text.split()) and "the alerts count every one" in limited.text
    assert "a minute per series" not in _client(empty).get("/failing").text


def test_the_failing_page_needs_a_reader(store: Store) -> None:
    app = ReviewApp(
        store, ReviewConfig.model_validate({"reviewers": reviewers()}), ReviewStats(), clock=lambda: NOW
    )
    r = TestClient(app.app).get("/failing?agent=support-bot&window=24h")
    assert r.status_code == 401 and 'action="/login"' in r.text
    assert (
        'name="next" value="/failing?agent=support-bot&amp;window=24h"' in r.text
    )  # back here after sign-in
    assert "a-3" not in r.text


def test_the_conversation_page_shows_tool_names_as_written_and_errors_under_their_call(
    tmp_path: Path,
) -> None:
    store = Store(f"sqlite:///{tmp_path / 'r.db'}")
    conv = conversation("tools", ended=datetime.fromtimestamp(NOW, UTC))
    conv.turns[0].tool_calls[0].name = "lookupOrder_V2"
    conv.turns[0].tool_calls[0].result = None
    conv.turns[0].tool_calls[0].error = "OrderServiceTimeout: no answer in 5 s"
    conv.turns[1].usage[0].cache_read_input_tokens = 96
    score = scored(conv, verdict=judged(), review_rate=1.0)
    store.ingest(
        TranscriptRecord(
            kind="transcript",
            sample="review_sample",
            conversation=conv,
            score=score,
            published_at=datetime.now(UTC),
        ),
        NOW,
        86400,
    )
    page = _client(store).get("/c/1").text
    assert '<strong class="tool-name">lookupOrder_V2</strong>' in page
    assert ".role .tool-name" in page and "text-transform: none" in page  # not restyled to upper case
    call = page.split('<div class="tool">')[1].split("</div>\n  {% endfor %}")[0]
    assert "OrderServiceTimeout: no answer in 5 s" in call and "no result captured" not in call
    assert 'id="why"' not in page  # the blind review sample: why it failed only after the label
    tokens = re.findall(r"gpt-4o-mini (\d+)(?: \((\d+) cached\))?→(\d+) tokens", page)
    assert tokens[:2] == [("120", "", "30"), ("120", "96", "30")]  # the prompt cache's share, where it served


def test_a_bidirectional_override_is_shown_not_obeyed(tmp_path: Path) -> None:
    """A tool named `U+202E redro_dnufer` read as `refund_order`, and the page's own text after it ran backwards:
    the page shows the override as an escape, wherever a value is printed."""
    store = Store(f"sqlite:///{tmp_path / 'r.db'}")
    conv = conversation("\u2067bidi", ended=datetime.fromtimestamp(NOW, UTC))
    conv.turns[0].tool_calls[0].name = "\u202eredro_dnufer"
    conv.turns[0].answer = "Done \u202d\u2066."
    store.ingest(
        TranscriptRecord(
            kind="transcript",
            sample="review_sample",
            conversation=conv,
            score=scored(conv, review_rate=1.0),
            published_at=datetime.now(UTC),
        ),
        NOW,
        86400,
    )
    client = _client(store)
    for page in (client.get("/c/1").text, client.get("/").text):
        assert not set(page) & {"\u202d", "\u202e", "\u2066", "\u2067"}
    page = client.get("/c/1").text
    assert '<strong class="tool-name">\\u202eredro_dnufer</strong>' in page
    assert "Done \\u202d\\u2066." in page and "\\u2067bidi" in page


def test_the_filters_list_task_ids_as_numbers(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'r.db'}")
    for task in ("10", "2", "1", "task-10", "task-2"):
        for failing_too in (False, True):
            record = _record(
                f"{task}-{failing_too}",
                task=task,
                fail="judge" if failing_too else "none",
                review_rate=0.0 if failing_too else 1.0,
            )
            store.ingest(record, NOW, 30 * 86400)
    assert store.choices()["task"] == ["1", "2", "10", "task-2", "task-10"]
    assert store.failing_choices()["task"] == ["1", "2", "10", "task-2", "task-10"]


def test_the_failing_list_and_the_page_show_where_an_expected_call_differs(tmp_path: Path) -> None:
    """A long policy reason keeps its end, where the differing value is, in the list; the page shows it whole."""
    from agentwatch.config import Settings
    from agentwatch.scorers import ConversationScorer

    flights = [
        {"flight_number": "HAT169", "date": "2024-05-17"},
        {"flight_number": "HAT033", "date": "2024-05-19"},
    ]
    sent = [flights[0], {"flight_number": "HAT212", "date": "2024-05-20"}]
    policy = {
        "id": "p",
        "agent": "support-bot",
        "tools": [
            {
                "name": "update_reservation_flights",
                "arguments": {"reservation_id": "VA5SGQ" * 20, "flights": flights},
            }
        ],
    }
    conv = conversation("diff-1", ended=datetime.fromtimestamp(NOW, UTC) - timedelta(minutes=5))
    conv = conv.model_validate(
        {
            **conv.model_dump(),
            "turns": [
                {
                    **conv.turns[-1].model_dump(),
                    "tool_calls": [
                        {
                            "name": "update_reservation_flights",
                            "arguments": {"reservation_id": "VA5SGQ" * 20, "flights": sent},
                            "result": {"ok": True},
                        }
                    ],
                }
            ],
        }
    )
    score = ConversationScorer(Settings.model_validate({"policies": [policy]})).score(conv)
    (reason,) = [r for r in score.reasons if r.startswith("policy_tools")]
    assert len(reason) > 330 and reason.endswith("got '2024-05-20'")  # longer than the list shows whole
    s = Store(f"sqlite:///{tmp_path / 'review.db'}")
    record = TranscriptRecord(
        kind="transcript", sample="failing", conversation=conv, score=score, published_at=datetime.now(UTC)
    )
    assert s.ingest(record, NOW, 30 * 86400) == "stored"
    client = _client(s)
    listed = client.get("/failing", params={"agent": "support-bot", "task": conv.task, "window": "24h"})
    assert "flights[1].flight_number: expected &#39;HAT033&#39;, got &#39;HAT212&#39;" in listed.text
    (row,) = re.findall(r'<a class="open" href="(/c/\d+\?back=[^"]+)"', listed.text)
    page = client.get(row.replace("&amp;", "&"))
    assert "flights[1].date: expected &#39;2024-05-19&#39;, got &#39;2024-05-20&#39;" in page.text


def test_the_review_service_lists_the_alerts_window_of_its_configuration(tmp_path: Path) -> None:
    settings = load_settings(
        review={"database_url": f"sqlite:///{tmp_path / 'r.db'}", "reviewers": reviewers()},
        alerts={"window": "6h"},
    )
    assert ReviewService(settings).web.failing_window == "6h"


def test_the_queue_gauge_and_the_filters_name_at_most_their_bounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A producer naming a new task with every conversation (the names come from span attributes): the
    queue-size gauge read a row per series held and every page view listed every name. The gauge names the
    largest series and sums the others under `other`; the filters list the first names and the one chosen."""
    monkeypatch.setattr(queries, "MAX_QUEUE_SERIES", 20, raising=False)
    monkeypatch.setattr(tables, "MAX_CHOICES", 30, raising=False)
    store = Store(f"sqlite:///{tmp_path / 'r.db'}")
    for i in range(60):
        for copy in range(3 if i == 0 else 1):  # t00 the largest series
            sampled = _record(f"s{i}-{copy}", task=f"t{i:02d}", fail="none", review_rate=1.0)
            store.ingest(sampled, NOW, 30 * 86400)
        store.ingest(_record(f"f{i}", task=f"t{i:02d}"), NOW, 30 * 86400)
    sizes = store.queue_sizes()
    assert len(sizes) == 21 and sizes[0][2:] == ("t00", "review_sample", 3)
    assert sizes[-1] == ("other", "other", "other", "review_sample", 40)
    assert sum(s[4] for s in sizes) == 62
    assert store.choices()["task"] == [f"t{i:02d}" for i in range(30)]
    assert store.failing_choices()["task"] == [f"t{i:02d}" for i in range(30)]
    page = _client(store).get("/", params={"task": "t59"}).text
    assert '<option value="t59" selected>t59</option>' in page and page.count("<option") < 40


def test_the_queue_gauge_names_every_series_under_its_bound(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'r.db'}")
    for i in range(30):
        store.ingest(_record(f"s{i}", task=f"t{i:02d}", fail="none", review_rate=1.0), NOW, 30 * 86400)
    sizes = store.queue_sizes()
    assert sizes == [("support-bot", "2.0", f"t{i:02d}", "review_sample", 1) for i in range(30)]
