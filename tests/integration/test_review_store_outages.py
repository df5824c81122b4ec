"""The review store away or unwritable, on real databases: PostgreSQL stopped and started again under the
running service, a read-only SQLite file at start, and retention deleting a conversation while a reviewer
saves a label on it."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from starlette.testclient import TestClient

from agentwatch.config import ReviewConfig
from agentwatch.review.metrics import ReviewStats
from agentwatch.review.store import Store
from agentwatch.review.web import ReviewApp
from agentwatch.wire.review_records import LabelRecord
from tests.support.collector_kafka import TopicReader, unique
from tests.support.postgres_server import postgres_cluster
from tests.support.review import (
    PASSWORD,
    ServiceThread,
    conversation,
    csrf,
    judged,
    record,
    review_settings,
    reviewers,
    scored,
    sign_in,
)

DAY = 86400.0


def _until(done: Callable[[], object], what: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)


def _committed(bootstrap: str, topic: str, group: str) -> int:
    """The offsets the group committed on `topic`, summed over its partitions."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        partitions = reader.list_topics(topic, timeout=10).topics[topic].partitions
        done = reader.committed([TopicPartition(topic, p) for p in partitions], timeout=10)
        return sum(max(tp.offset, 0) for tp in done)
    finally:
        reader.close()


@pytest.mark.broker
def test_the_service_outlives_a_postgresql_restart_and_stores_every_record_and_label_once(broker, tmp_path):
    """PostgreSQL stops under the running service and starts again: the service stays up; meanwhile a label
    saved gets 503 and is not saved, /healthz is 503, records read wait uncommitted, and each part counts its
    store errors; afterwards it reconnects by itself, stores every record once, and the label saved again is
    stored and published once. (Before, the publisher's first read of the outbox ended the whole service.)"""
    bootstrap = broker.bootstrap_servers
    with postgres_cluster() as pg:
        settings = review_settings(bootstrap, tmp_path, database_url=pg.url, publish_retry_s=0.2)
        topic, group = settings.review.transcripts_topic, settings.review.group_id
        producer = Producer({"bootstrap.servers": bootstrap})

        def send(n: int) -> None:
            for _ in range(n):
                conv = conversation(unique("c"))
                value = record(conv, scored(conv, verdict=judged())).model_dump_json().encode()
                producer.produce(topic, key=conv.conversation_id.encode(), value=value)
            assert producer.flush(10) == 0

        with ServiceThread(settings) as svc, httpx.Client(base_url=svc.url) as alice:
            store, stats = svc.service.store, svc.service.stats
            send(3)
            _until(lambda: store.counts()["conversations"] == 3, "3 conversations stored")
            _until(lambda: _committed(bootstrap, topic, group) == 3, "3 offsets committed")
            assert sign_in(alice).status_code == 303
            row = store.queue()[0][0].id
            form = {"outcome": "complete", "csrf": csrf(alice.get(f"/c/{row}").text), "blind": "1"}

            pg.stop()
            saved = alice.post(f"/c/{row}/label", data=form)
            assert saved.status_code == 503 and "nothing was saved" in saved.text
            assert alice.get("/healthz").status_code == 503
            send(3)
            _until(lambda: {"ingest", "publish"} <= set(stats.store.down()), "the loops met the outage")
            assert _committed(bootstrap, topic, group) == 3  # read, not stored: not committed
            assert svc.thread.is_alive() and svc.error is None
            pg.start()

            _until(lambda: alice.get("/healthz").status_code == 200, "ready again")
            assert alice.post(f"/c/{row}/label", data=form).status_code == 303
            _until(lambda: store.counts()["conversations"] == 6, "6 conversations stored")
            _until(lambda: store.pending() == 0, "the outbox sent")
            _until(lambda: _committed(bootstrap, topic, group) == 6, "6 offsets committed")
            counts, errors = store.counts(), stats.store.counts()
            assert svc.error is None
        assert settings.review.labels_topic is not None
        labels = TopicReader(bootstrap, settings.review.labels_topic)
        try:
            labels.wait(lambda records: len(records) >= 1, 10)
            labels.poll()
        finally:
            labels.close()
    assert counts == {"conversations": 6, "labelled": 1, "labels": 1, "pending": 0}
    assert errors["page"] >= 1 and errors["ingest"] >= 1 and errors["publish"] >= 1, errors
    published = [LabelRecord.model_validate_json(r.value) for r in labels.records]
    assert len(published) == 1 and published[0].blind and published[0].reviewer == "alice"


def test_a_read_only_store_file_is_refused_at_start_naming_it(tmp_path: Path) -> None:
    """A SQLite file the service may read but not write: `agentwatch review` stops at start naming the file
    and why (before, it started, said ready on /healthz, and failed every record and label)."""
    folder = tmp_path / "store"
    folder.mkdir()
    path = folder / "review.db"
    conv = conversation("kept")
    store = Store(f"sqlite:///{path}")
    store.ingest(record(conv, scored(conv)), time.time(), DAY)
    store.close()  # the last connection closed: the write-ahead log is in the file, and gone
    assert sorted(p.name for p in folder.iterdir()) == ["review.db"]
    path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)  # the file only: its folder stays writable
    command = [sys.executable, "-m", "agentwatch", "review", "--database-url", f"sqlite:///{path}"]
    command += ["--bootstrap-servers", "127.0.0.1:9", "--port", "0", "--metrics-port", "0"]
    if os.geteuid() == 0:  # root writes any file: drop the capability that lets it
        setpriv = shutil.which("setpriv")
        assert setpriv is not None, "setpriv (util-linux) not found"
        command = [setpriv, "--inh-caps=-all", "--bounding-set=-all", *command]
    env = {**os.environ, "AGENTWATCH_REVIEW__REVIEWERS": json.dumps(reviewers())}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=25, cwd=tmp_path)
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    assert f"error: review store sqlite:///{path}" in done.stderr
    assert "readonly database" in done.stderr and "Traceback" not in done.stderr


def test_a_label_on_a_conversation_deleted_meanwhile_gets_404_and_saves_nothing(postgres_db: str) -> None:
    """Retention deletes a conversation while a reviewer's save waits for it (the reviewer opened the page
    before): the save answers 404 and writes no label and no outbox record (before: a server error)."""
    store = Store(postgres_db, scores_topic="s", labels_topic="l")
    now = datetime.now(UTC)
    conv = conversation("going", ended=now - timedelta(days=10))
    store.ingest(record(conv, scored(conv, verdict=judged())), now.timestamp(), 30 * DAY)
    row = store.queue()[0][0].id
    app = ReviewApp(store, ReviewConfig.model_validate({"reviewers": reviewers()}), ReviewStats())
    client = TestClient(app.app, raise_server_exceptions=False)
    signin = {"csrf": csrf(client.get("/login").text), "name": "alice", "secret": PASSWORD, "next": "/"}
    assert client.post("/login", data=signin).status_code == 200  # to the queue
    form = {"outcome": "complete", "csrf": csrf(client.get(f"/c/{row}").text)}
    answers: list[Any] = []  # the test client's responses
    with psycopg.connect(postgres_db) as retention:
        # retention's transaction: the conversation deleted, not yet committed (its row locked)
        retention.execute("DELETE FROM review_labels WHERE conversation = %s", (row,))
        retention.execute("DELETE FROM review_conversations WHERE id = %s", (row,))
        saver = threading.Thread(target=lambda: answers.append(client.post(f"/c/{row}/label", data=form)))
        saver.start()
        with psycopg.connect(postgres_db, autocommit=True) as watch:
            waiting = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = %s"
            name = postgres_db.rsplit("/", 1)[1]
            _until(lambda: watch.execute(waiting, (name,)).fetchone() == (1,), "the save waits for the row")
        retention.commit()
        saver.join(30)
    assert [a.status_code for a in answers] == [404] and "deleted by retention" in answers[0].text
    assert store.counts() == {"conversations": 0, "labelled": 0, "labels": 0, "pending": 0}
    store.close()
