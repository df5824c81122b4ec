"""The review service over HTTP on a real broker and SQLite: sign-in, refusals, CSRF, no anchoring."""

from __future__ import annotations

import base64
import re
import time
from collections.abc import Callable
from datetime import UTC

import httpx
import pytest

from tests.support.collector_kafka import unique
from tests.support.review import (
    JUDGE_EXPLANATION,
    PASSWORD,
    TOKEN,
    ServiceThread,
    conversation,
    csrf,
    get_stored,
    judged,
    record,
    review_settings,
    scored,
    sign_in,
)


@pytest.mark.broker
def test_refusals_sign_in_and_no_anchoring(broker, tmp_path) -> None:
    settings = review_settings(broker.bootstrap_servers, tmp_path)
    conv = conversation(unique("c"))
    conv.turns[0].tool_calls[0].error = "lookup timed out after 5 s"
    conv.turns[-1].error = "RateLimitError: 429 from the model"
    first = scored(conv, verdict=judged())
    with ServiceThread(settings) as svc:
        svc.service.store.ingest(record(conv, first), time.time(), 86400)
        row = svc.service.store.queue()[0][0].id
        with httpx.Client(base_url=svc.url) as anon:
            for path in ("/", f"/c/{row}"):
                r = anon.get(path)
                assert (
                    r.status_code == 401
                    and 'action="/login"' in r.text
                    and conv.conversation_id not in r.text
                )
            r = anon.post(f"/c/{row}/label", data={"outcome": "complete"})
            assert r.status_code == 403
            assert anon.get("/healthz").text == "ok\n"
            # a wrong password and an unknown reviewer are refused alike
            assert sign_in(anon, "alice", "wrong password").status_code == 401
            assert sign_in(anon, "mallory", PASSWORD).status_code == 401
            # the sign-in form itself needs the CSRF token of its page
            assert anon.post("/login", data={"name": "alice", "secret": PASSWORD}).status_code == 403
        # reads with an Authorization header: bob's token (Bearer), alice's password (Basic); no writes
        basic = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
        for header in (f"Bearer {TOKEN}", f"Basic {basic}"):
            with httpx.Client(base_url=svc.url, headers={"Authorization": header}) as api:
                assert api.get("/").status_code == 200
                assert api.post(f"/c/{row}/label", data={"outcome": "complete"}).status_code == 403
        with httpx.Client(base_url=svc.url, headers={"Authorization": "Bearer not-a-token"}) as api:
            assert api.get("/").status_code == 401
        with httpx.Client(base_url=svc.url) as client:
            r = sign_in(client)
            assert r.status_code == 303 and r.headers["location"] == "/"
            queue = client.get("/")
            assert queue.status_code == 200 and re.search(r"<strong>1</strong> conversation left", queue.text)
            page = client.get(f"/c/{row}")
            assert page.status_code == 200
            assert "script-src 'nonce-" in page.headers["content-security-policy"]
            # before the decision: the transcript, but nothing of what the judge or the rules said
            assert "Please refund order ORD-1000." in page.text and "lookup_order" in page.text
            assert "lookup timed out after 5 s" in page.text
            assert "Turn error: RateLimitError: 429 from the model" in page.text
            for hidden in (
                JUDGE_EXPLANATION,
                "stand-in:judge-model:v1",
                "0.35",
                'id="verdict"',
                "judge: outcome",
                *first.reasons,
            ):
                assert hidden not in page.text, hidden
            token = csrf(page.text)
            # a write without the CSRF token, or with another one, is refused and saves nothing
            assert client.post(f"/c/{row}/label", data={"outcome": "complete"}).status_code == 403
            assert (
                client.post(f"/c/{row}/label", data={"outcome": "complete", "csrf": "x" * 32}).status_code
                == 403
            )
            bad = client.post(f"/c/{row}/label", data={"outcome": "great", "csrf": token})
            assert bad.status_code == 400 and "Pick one of the five outcome classes" in bad.text
            assert get_stored(svc.service.store, row).labels == []
            saved = client.post(
                f"/c/{row}/label?agent=support-bot",
                data={"outcome": "complete", "note": "fine <b>really</b>", "csrf": token, "blind": "1"},
            )
            assert (
                saved.status_code == 303
                and saved.headers["location"] == f"/c/{row}?agent=support-bot&saved=1"
            )
            after = client.get(saved.headers["location"])
            assert JUDGE_EXPLANATION in after.text and "stand-in:judge-model:v1" in after.text
            assert (
                'id="judge-outcome">partial_incorrect<' in after.text
                and 'id="judge-score">0.35<' in after.text
            )
            assert "fine &lt;b&gt;really&lt;/b&gt;" in after.text  # escaped
            assert re.search(r"<strong>0</strong> conversations left", client.get("/").text)
            (label,) = get_stored(svc.service.store, row).labels
            assert (label.reviewer, label.outcome, label.blind, label.revision) == (
                "alice",
                "complete",
                True,
                1,
            )
            # changing the label after seeing the verdict is recorded as not blind
            relabel = client.get(f"/c/{row}?relabel=1")
            assert 'id="label-form"' in relabel.text and 'name="blind" value="0"' in relabel.text
            client.post(f"/c/{row}/label", data={"outcome": "abandoned", "csrf": token, "blind": "1"})
            assert [lb.blind for lb in get_stored(svc.service.store, row).labels] == [True, False]
            # the same form sent again (its answer lost, a double click) is saved and counted once
            again = client.post(f"/c/{row}/label", data={"outcome": "abandoned", "csrf": token, "blind": "1"})
            assert again.status_code == 303
            assert [lb.blind for lb in get_stored(svc.service.store, row).labels] == [True, False]
            # signing out ends the session
            client.post("/logout", data={"csrf": token})
            assert client.get("/").status_code == 401
        stats = svc.service.stats
    assert svc.error is None
    assert stats.labels_saved == {"complete": 1, "abandoned": 1}
    assert stats.signins == {
        ("form", "failed"): 2,
        ("form", "ok"): 1,
        ("basic", "ok"): 1,
        ("bearer", "ok"): 1,
        ("bearer", "failed"): 1,
    }
    assert stats.refused["write"] >= 6 and stats.refused["read"] >= 3


def test_a_bad_review_key_fails_at_start_naming_it(tmp_path) -> None:
    import subprocess
    import sys

    config = tmp_path / "agentwatch.yaml"
    for text, expected in (
        ("databse_url: sqlite:///x.db", ["review.databse_url"]),
        ("reviewers: []", ["review.reviewers is empty"]),
        ("reviewers: [{name: eve, password_hash: plain}]", ["review.reviewers.0", "agentwatch review-hash"]),
        ("session_secret: short", ["review.session_secret", "at least 16 characters"]),
    ):
        config.write_text(f"review:\n  {text}\n")
        run = subprocess.run(
            [sys.executable, "-m", "agentwatch", "review", "--config", str(config)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert run.returncode == 2 and all(e in run.stderr for e in expected), run.stderr


def test_review_hash_prints_entries_that_sign_in() -> None:
    import json
    import subprocess
    import sys

    from agentwatch.config import Reviewer
    from agentwatch.review.auth import Reviewers

    run = subprocess.run(
        [sys.executable, "-m", "agentwatch", "review-hash", "--name", "carol"],
        input="a long passphrase\na long passphrase\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    carol = Reviewer.model_validate(json.loads(run.stdout))
    run = subprocess.run(
        [sys.executable, "-m", "agentwatch", "review-hash", "--token", "--name", "dave"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    dave = Reviewer.model_validate(json.loads(run.stdout))
    token = run.stderr.strip().rsplit(" ", 1)[-1]
    known = Reviewers([carol, dave])
    assert (
        known.check("carol", "a long passphrase") == "carol"
        and known.check("carol", "a long passphrasE") is None
    )
    assert (
        known.bearer(token) == "dave"
        and known.check("dave", token) == "dave"
        and known.bearer(token[:-1]) is None
    )


@pytest.mark.broker
def test_retention_runs_on_its_schedule(broker, tmp_path) -> None:
    from datetime import datetime, timedelta

    from agentwatch.review.store import Store

    settings = review_settings(broker.bootstrap_servers, tmp_path, retention_days=1, retention_interval_s=0.2)
    store = Store(settings.review.database_url)
    now = datetime.now(UTC)
    for cid, ended in (("kept", now - timedelta(hours=2)), ("expired", now - timedelta(days=3))):
        conv = conversation(cid, ended=ended)
        rec = record(conv, scored(conv, verdict=judged()))
        assert store.ingest(rec, now.timestamp(), 30 * 86400) == "stored"
    store.close()
    with ServiceThread(settings) as svc:
        deadline = time.monotonic() + 10
        while svc.service.store.counts()["conversations"] != 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        items, total = svc.service.store.queue()
        expired = svc.service.stats.expired
    assert (total, len(items), expired) == (1, 1, 1)
    again = Store(settings.review.database_url)
    assert [get_stored(again, i.id).conversation_id for i in again.queue()[0]] == ["kept"]


def test_the_publisher_keeps_what_kafka_did_not_acknowledge(tmp_path, monkeypatch) -> None:
    """Records Kafka refuses stay in the outbox and are sent again; acknowledged ones are marked once."""
    import threading

    from agentwatch.review.service import ReviewService
    from agentwatch.wire.schema import Outcome

    settings = review_settings("127.0.0.1:1", tmp_path, publish_retry_s=0.05)
    service = ReviewService(settings)
    conv = conversation(unique("c"))
    service.store.ingest(record(conv, scored(conv, verdict=judged())), time.time(), 86400)
    service.store.save_label(service.store.queue()[0][0].id, "alice", Outcome.COMPLETE, "", True, time.time())
    sent: list[tuple[str, bytes]] = []
    refuse = {"left": 3}  # the first three deliveries fail, as with a broker away

    class Producer:
        """librdkafka's producer as the publisher uses it: produce with a delivery callback, then flush."""

        def __init__(self) -> None:
            self.waiting: list[tuple[str, bytes, Callable[[str | None, object], None]]] = []

        def produce(
            self, topic: str, value: bytes, key: bytes, on_delivery: Callable[[str | None, object], None]
        ) -> None:
            self.waiting.append((topic, key, on_delivery))

        def flush(self, timeout: float = 0) -> int:
            for topic, key, report in self.waiting:
                failed = refuse["left"] > 0
                refuse["left"] -= failed
                message = type("Message", (), {"topic": lambda self, t=topic: t})()
                report("broker away" if failed else None, message)
                if not failed:
                    sent.append((topic, key))
            self.waiting = []
            return 0

    monkeypatch.setattr(service, "_producer", Producer)
    stop = threading.Event()
    thread = threading.Thread(target=service._publish, args=(stop,), daemon=True)
    thread.start()
    service._wake.set()
    deadline = time.monotonic() + 10
    while service.store.pending() and time.monotonic() < deadline:
        time.sleep(0.02)
    stop.set()
    thread.join(10)
    assert service.store.pending() == 0
    review = settings.review
    assert review.labels_topic is not None
    assert sorted(topic for topic, _ in sent) == sorted([review.scores_topic, review.labels_topic])
    assert service.stats.publish_failures >= 2 and service.stats.published == {"scores": 1, "labels": 1}


@pytest.mark.broker
def test_a_store_error_replays_the_record_instead_of_losing_it(broker, tmp_path, monkeypatch) -> None:
    """The database fails once while records arrive: the consumer seeks back and stores every record once."""
    from confluent_kafka import Producer

    settings = review_settings(broker.bootstrap_servers, tmp_path, publish_retry_s=0.1)
    convs = [conversation(unique(f"c{i}")) for i in range(3)]
    with ServiceThread(settings) as svc:
        store = svc.service.store
        real, calls = store.ingest, []

        def flaky(record, now, retention_s, failing_retention_s=None):  # noqa: ANN001, ANN202 - the store's
            calls.append(record.score.conversation_id)
            if len(calls) == 2:
                raise ConnectionError("database went away")
            return real(record, now, retention_s, failing_retention_s)

        monkeypatch.setattr(store, "ingest", flaky)
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
        for conv in convs:  # one key: one partition, in this order
            producer.produce(
                settings.review.transcripts_topic,
                key=b"same",
                value=record(conv, scored(conv, verdict=judged())).model_dump_json().encode(),
            )
        assert producer.flush(10) == 0
        del producer
        deadline = time.monotonic() + 20
        while store.counts()["conversations"] < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        counts, ingested = store.counts(), dict(svc.service.stats.ingested)
    ids = [c.conversation_id for c in convs]
    assert counts["conversations"] == 3 and ingested == {"stored": 3}
    assert calls == [ids[0], ids[1], ids[1], ids[2]]  # the failed record, and only it, was read again
