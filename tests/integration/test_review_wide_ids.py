"""Row ids past 32 bits on a real PostgreSQL server: a new store numbers past 2**31 - 1, and a store made with
32-bit ids (INTEGER columns, SERIAL sequences) is widened at start, its rows kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import BigInteger, Integer, MetaData, create_engine, select, text
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from agentwatch.config import ReviewConfig
from agentwatch.review.metrics import ReviewStats
from agentwatch.review.revisions import STORED
from agentwatch.review.store import Store, engine_url
from agentwatch.review.tables import conversations, labels, metadata, outbox
from agentwatch.review.web import ReviewApp
from agentwatch.review.wide_ids import narrow_id_columns
from agentwatch.wire.schema import Outcome
from tests.support.review import TOKEN, conversation, judged, record, reviewers, scored

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
DAY = 86400.0
LAST_32_BIT = 2**31 - 1


def _make_32_bit_store(engine: Engine) -> None:
    """The review tables as a store made before 64-bit ids had them: every id column INTEGER."""
    old = MetaData()
    for table in metadata.sorted_tables:
        copy = table.to_metadata(old)
        for column in copy.columns:
            if isinstance(column.type, BigInteger):
                column.type = Integer()
    old.create_all(engine)


def _near_the_end(engine: Engine) -> None:
    """Number the next rows of the conversations from the last 32-bit id but one, and of the labels and outbox
    from the last."""
    with engine.begin() as c:
        for table, left in ((conversations, 2), (labels, 1), (outbox, 1)):
            c.execute(
                text("SELECT setval(pg_get_serial_sequence(:t, 'id'), :v)"),
                {"t": table.name, "v": LAST_32_BIT - left},
            )


def _store_past_32_bits(url: str) -> tuple[Store, list[int]]:
    """Three conversations stored, a label saved on the last: ids past 2**31 - 1 in every table."""
    store = Store(url, scores_topic="s", labels_topic="l")
    for i in range(3):
        conv = conversation(f"wide-{i}", ended=NOW - timedelta(minutes=10 - i))
        assert store.ingest(record(conv, scored(conv, verdict=judged())), NOW.timestamp(), 30 * DAY) == STORED
    rows = [item.id for item in store.queue(limit=10)[0]]
    saved = store.save_label(rows[-1], "bob", Outcome.ABANDONED, "wide", False, NOW.timestamp() + 60)
    assert saved.revision == 1 and saved.conversation_id == "wide-2"
    return store, rows


def _assert_served(store: Store, rows: list[int]) -> None:
    assert rows == [LAST_32_BIT - 1, LAST_32_BIT, LAST_32_BIT + 1]
    with store.engine.connect() as c:
        label_ids = list(c.execute(select(labels.c.id, labels.c.conversation)))
        outbox_ids = list(c.execute(select(outbox.c.id, outbox.c.conversation)))
    assert [i for i, _ in label_ids] == [LAST_32_BIT]
    assert {conv for _, conv in label_ids} == {LAST_32_BIT + 1}
    assert outbox_ids and {conv for _, conv in outbox_ids} == {LAST_32_BIT + 1}
    assert sorted(i for i, _ in outbox_ids) == [LAST_32_BIT, LAST_32_BIT + 1]  # revised score, label record
    app = ReviewApp(store, ReviewConfig.model_validate({"reviewers": reviewers()}), ReviewStats())
    client = TestClient(app.app, headers={"Authorization": f"Bearer {TOKEN}"})
    page = client.get(f"/c/{LAST_32_BIT + 1}")
    assert page.status_code == 200 and "wide-2" in page.text


def test_a_new_store_numbers_rows_past_32_bits(postgres_db: str) -> None:
    engine = create_engine(engine_url(postgres_db))
    Store(postgres_db).close()
    assert narrow_id_columns(engine) == []
    _near_the_end(engine)
    store, rows = _store_past_32_bits(postgres_db)
    _assert_served(store, rows)


def test_a_store_made_with_32_bit_ids_is_widened_and_keeps_its_rows(postgres_db: str) -> None:
    engine = create_engine(engine_url(postgres_db))
    _make_32_bit_store(engine)
    assert {(t.name, c) for t, c in narrow_id_columns(engine)} == {
        ("review_conversations", "id"),
        ("review_labels", "id"),
        ("review_labels", "conversation"),
        ("review_outbox", "id"),
        ("review_outbox", "conversation"),
    }
    _near_the_end(engine)
    # the 32-bit store fills up: the third conversation finds no id left
    with engine.begin() as c:
        c.execute(text("SELECT nextval(pg_get_serial_sequence('review_conversations', 'id'))"))
        c.execute(text("SELECT nextval(pg_get_serial_sequence('review_conversations', 'id'))"))
        try:
            c.execute(text("SELECT nextval(pg_get_serial_sequence('review_conversations', 'id'))"))
            raise AssertionError("a 32-bit sequence went past 2**31 - 1")
        except Exception as exc:  # noqa: BLE001 - psycopg's error, whatever its class
            assert "maximum value" in str(exc)
    _near_the_end(engine)
    store, rows = _store_past_32_bits(postgres_db)
    assert narrow_id_columns(engine) == []
    _assert_served(store, rows)
    store.close()
    reopened = Store(
        postgres_db, scores_topic="s", labels_topic="l"
    )  # nothing left to widen: rows as they were
    assert [item.id for item in reopened.queue(limit=10)[0]] == rows[:2]
    reopened.close()
