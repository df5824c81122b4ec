"""The review pages in a real browser (Playwright driving Debian's Chromium, uvicorn on loopback, SQLite) with
markup in everything an agent, a user or a reviewer wrote: ids, agent, version and task names, inputs, answers,
tool names, arguments, results and errors, notes, the judge's explanation, a reviewer's note and an alert's
name. A reviewer signs in, reads the queue, the failing list and the conversation, labels it from the page and
reads the verdicts: every such text shows as text, nothing of it runs or becomes an element, the
Content-Security-Policy has nothing to refuse, and no request leaves the service."""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import uvicorn

from agentwatch.config import ReviewConfig
from agentwatch.judge.verdict import JudgeVerdict
from agentwatch.review.metrics import ReviewStats
from agentwatch.review.store import Store
from agentwatch.review.web import ReviewApp
from agentwatch.wire.review_records import TranscriptRecord, review_sample_of
from tests.support.review import PASSWORD, conversation, reviewers, scored


def hostile(where: str) -> str:
    """Markup that would end an attribute, a script or a comment and run, tagged with where it was put."""
    return (
        f"\"'><img src=x id=pwn-{where} onerror=\"window.__pwned='{where}'\">"
        f"<script>window.__pwned='{where}'</script><!--<style>body{{display:none}}</style>"
    )


def _held(store: Store, cid: str, sample_failing: bool, now: float) -> None:
    """A conversation with markup in every text of its transcript and score, held by the store."""
    conv = conversation(
        hostile(f"id-{cid}"),
        agent=hostile("agent"),
        version=hostile("version"),
        task=hostile("task"),
        ended=datetime.fromtimestamp(now - 60, UTC),
        notes=[hostile("note")],
    )
    turn = conv.turns[0]
    turn.input, turn.answer, turn.error = hostile("input"), hostile("answer"), hostile("turn-error")
    call = turn.tool_calls[0]
    call.name, call.call_id, call.error = hostile("tool"), hostile("call-id"), hostile("tool-error")
    call.arguments, call.result = {hostile("key"): hostile("argument")}, {"r": [hostile("result")]}
    turn.usage[0].model = hostile("model")
    verdict = JudgeVerdict.graded("partial_incorrect", 0.3, hostile("explanation"), hostile("judge"))
    score = scored(conv, verdict=verdict, review_rate=1.0)
    sample = review_sample_of(score, failing=sample_failing)
    assert sample is not None
    held = TranscriptRecord(
        kind="transcript", sample=sample, conversation=conv, score=score, published_at=datetime.now(UTC)
    )
    assert store.ingest(held, now, 86400) == "stored"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[str]:
    """The review pages over a store holding two hostile conversations (one failing), on a loopback port."""
    now = time.time()
    store = Store(f"sqlite:///{tmp_path / 'review.db'}")
    _held(store, "sampled", False, now)
    _held(store, "failing", True, now)
    app = ReviewApp(store, ReviewConfig.model_validate({"reviewers": reviewers()}), ReviewStats())
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app.app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        time.sleep(0.02)
    assert server.started, "the review pages did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("chromium not found: apt-get install -y chromium (scripts/test.sh installs it)")
    return path


def _nothing_ran(page: Any) -> None:
    """No hostile element exists, no hostile script ran, and the page's policy refused nothing."""
    assert page.locator("[id^=pwn-], [onerror], img").count() == 0, page.url
    assert page.locator("script").count() <= 1 and page.locator("style").count() == 1, page.url
    assert page.evaluate("window.__pwned") is None, page.url
    assert page.evaluate("window.__refused") is None, page.url  # nothing was even attempted
    assert page.locator("body").is_visible()


def test_markup_everywhere_is_shown_as_text_and_nothing_of_it_runs(service: str) -> None:
    from playwright.sync_api import sync_playwright

    outside: list[str] = []
    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.set_default_timeout(5_000)
            page.add_init_script(
                "document.addEventListener('securitypolicyviolation', e => "
                "(window.__refused = window.__refused || []).push(e.violatedDirective))"
            )
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("request", lambda r: None if r.url.startswith(service) else outside.append(r.url))
            page.goto(f"{service}/login")
            page.fill("input[name=name]", "alice")
            page.fill("input[name=secret]", PASSWORD)
            with page.expect_navigation():
                page.click("button.primary")
            _nothing_ran(page)
            assert hostile("agent") in page.inner_text("#queue")

            alert = {"alert": hostile("alert"), "agent": hostile("agent"), "window": hostile("window")}
            page.goto(f"{service}/failing?{urlencode(alert)}")
            _nothing_ran(page)
            assert hostile("alert") in page.inner_text("#alert")
            with page.expect_navigation():
                page.locator("#failing a.open").first.click()
            _nothing_ran(page)
            assert hostile("answer") in page.inner_text("pre.answer")

            page.goto(f"{service}/")
            with page.expect_navigation():
                page.locator("#queue a").first.click()
            _nothing_ran(page)
            assert hostile("tool") in page.inner_text(".tool-name")
            assert json.dumps(hostile("argument")) in page.inner_text("pre.arguments")  # as JSON
            page.locator("input[name=outcome][value=complete]").check()
            page.fill("#note", hostile("reviewer-note"))
            with page.expect_navigation():
                page.click("#label-form button.primary")
            _nothing_ran(page)
            assert hostile("explanation") in page.inner_text("#judge-explanation")
            assert hostile("reviewer-note") in page.inner_text("tr.label")
        finally:
            browser.close()
    assert outside == [] and problems == []
