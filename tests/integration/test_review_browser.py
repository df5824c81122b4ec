"""The review page in a real browser (Playwright driving Debian's Chromium) on a real broker: sign in,
label with the keyboard, see the judge's verdict only then, and watch the revised score reach the exporter's
/metrics; the SQLite store survives a restart of the service. Screenshots of the queue and of a labelled
conversation are kept in the test's temporary directory (the path is printed)."""

from __future__ import annotations

import shutil
import time

import pytest
from confluent_kafka import Producer

from agentwatch import wire
from agentwatch.wire.review_records import LabelRecord
from tests.support.collector_kafka import TopicReader, unique
from tests.support.exporter_service import run_service, stop_service
from tests.support.metrics_reference import scrape
from tests.support.review import (
    JUDGE_EXPLANATION,
    PASSWORD,
    ServiceThread,
    conversation,
    get_stored,
    judged,
    record,
    review_settings,
    scored,
)

CAPTURE_OFF = "content capture was off: tool arguments and results were not recorded"


def _chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("chromium not found: apt-get install -y chromium (scripts/test.sh installs it)")
    return path


def _wait(predicate, timeout_s: float, what: str) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if predicate():
            return time.monotonic() - start
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


@pytest.mark.broker
def test_label_with_the_keyboard_revises_the_score_in_metrics(broker, tmp_path) -> None:
    from playwright.sync_api import sync_playwright

    bs = broker.bootstrap_servers
    settings = review_settings(bs, tmp_path, metrics_port=0)
    # what the collector publishes: three conversations' first scores and their transcripts
    wrong = conversation(unique("wrong"), turns=3)
    fine = conversation(unique("fine"), turns=1)
    blind = conversation(unique("blind"), turns=1, notes=[CAPTURE_OFF])
    firsts = [
        scored(wrong, verdict=judged()),
        scored(fine, verdict=judged("complete", 0.95)),
        scored(blind, verdict=judged("complete", 0.9)),
    ]
    producer = Producer({"bootstrap.servers": bs, "partitioner": "murmur2_random"})
    for conv, first in zip((wrong, fine, blind), firsts, strict=True):
        producer.produce(
            settings.review.scores_topic,
            key=wire.score_key(first.agent, first.version, first.task),
            value=first.model_dump_json().encode(),
        )
        producer.produce(
            settings.review.transcripts_topic,
            key=conv.conversation_id.encode(),
            value=record(conv, first).model_dump_json().encode(),
        )
    assert producer.flush(10) == 0
    del producer
    series = {"agent": "support-bot", "version": "2.0", "task": "refunds", "window": "1h"}

    def count(samples: dict, outcome: str) -> float | None:
        return samples.get(
            ("agentwatch_window_conversations", tuple(sorted({**series, "outcome": outcome}.items())))
        )

    exporter, stop, thread, port = run_service(settings)
    shots = tmp_path / "screenshots"
    try:
        _wait(lambda: count(scrape(port), "partial_incorrect") == 1, 30, "the first scores in /metrics")
        assert count(scrape(port), "complete") == 2
        with ServiceThread(settings) as svc:
            _wait(
                lambda: svc.service.store.counts()["conversations"] == 3, 30, "the transcripts in the store"
            )
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1200, "height": 900})
                response = page.goto(svc.url + "/")
                assert response is not None and response.status == 401  # anonymous: the sign-in page
                page.fill("input[name=name]", "alice")
                page.fill("input[name=secret]", PASSWORD)
                page.click("button[type=submit]")
                page.wait_for_selector("#queue")
                assert page.inner_text("#left").startswith("3 conversations left to label")
                page.screenshot(path=str(shots / "queue.png"), full_page=True)
                page.keyboard.press("Enter")  # the oldest first: `wrong`
                page.wait_for_selector("#label-form")
                assert wrong.conversation_id in page.content()
                html = page.content()
                assert (
                    JUDGE_EXPLANATION not in html
                    and "stand-in:judge-model" not in html
                    and 'id="verdict"' not in html
                )
                assert page.locator("section.turn").count() == 3 and page.locator("pre.result").count() == 3
                page.keyboard.press("1")  # complete
                page.keyboard.press("n")
                page.keyboard.type("The refund was done by a person; the answer is right.")
                page.keyboard.press("Escape")
                assert page.locator("input[value=complete]").is_checked()
                started = time.monotonic()
                page.keyboard.press("s")
                page.wait_for_selector("#verdict")
                assert page.inner_text("#judge-explanation") == JUDGE_EXPLANATION
                assert page.inner_text("#judge-outcome") == "partial_incorrect"
                assert "blind" in page.inner_text("table") and "alice" in page.inner_text("table")
                page.screenshot(path=str(shots / "labelled.png"), full_page=True)
                _wait(
                    lambda: (
                        count(scrape(port), "partial_incorrect") == 0 and count(scrape(port), "complete") == 3
                    ),
                    30,
                    "the revised score in /metrics",
                )
                latency = time.monotonic() - started  # from the key press to the scrape that shows it
                assert scrape(port)[("agentwatch_score_revisions_total", ())] == 1
                # j: the next in the queue; the content-capture-off conversation says what was not seen
                page.keyboard.press("j")
                page.wait_for_selector("#label-form")
                page.keyboard.press("j")
                page.wait_for_selector("#label-form")
                assert blind.conversation_id in page.content() and CAPTURE_OFF in page.inner_text("ul.notes")
                page.keyboard.press("k")
                page.wait_for_selector("#label-form")
                assert fine.conversation_id in page.content()
                browser.close()
            assert svc.service.metrics_port is not None
            review_metrics = scrape(svc.service.metrics_port)
        assert svc.error is None
        assert review_metrics[("agentwatch_review_labels_saved_total", (("outcome", "complete"),))] == 1
        assert (
            review_metrics[
                (
                    "agentwatch_review_queue",
                    tuple(
                        sorted(
                            {
                                "agent": "support-bot",
                                "version": "2.0",
                                "task": "refunds",
                                "sample": "review_sample",
                            }.items()
                        )
                    ),
                )
            ]
            == 2
        )
        # a restart of the service on the same SQLite file: the label and the queue are still there
        with ServiceThread(settings) as again:
            stored = again.service.store
            labelled = next(c for c in (get_stored(stored, i) for i in range(1, 4)) if c.labels)
            assert (
                labelled.conversation_id == wrong.conversation_id and labelled.labels[0].outcome == "complete"
            )
            assert stored.queue()[1] == 2 and stored.pending() == 0
        assert settings.review.labels_topic is not None
        labels = TopicReader(bs, settings.review.labels_topic)
        (label,) = [LabelRecord.model_validate_json(r.value) for r in labels.wait(lambda r: len(r) >= 1, 20)]
        labels.close()
        assert (label.conversation_id, label.outcome.value, label.reviewer, label.blind, label.revision) == (
            wrong.conversation_id,
            "complete",
            "alice",
            True,
            1,
        )
        assert label.judge_explanation == JUDGE_EXPLANATION and label.first_passed is False
    finally:
        stop_service(exporter, stop, thread)
    print(f"\nsave → revised score in the exporter's /metrics: {latency:.2f} s; screenshots in {shots}")
