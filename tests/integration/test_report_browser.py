"""The HTML report in a real browser (Playwright driving Debian's Chromium): open it, sort a table, open a
failing conversation and read why it failed and what the judge said, with hostile transcripts that must not
run, no console error and no request leaving the page. A screenshot is kept in the test's temporary directory
(the path is printed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentwatch.cli import app
from tests.support.fake_openai import FakeOpenAI, verdict_reply

HOSTILE = (
    "<script>window.__pwned = 1</script>"
    '<img src="https://example.invalid/x.png" onerror="window.__pwned = 2">'
)
JUDGE_SAYS = "The refund went to the wrong order </details><script>window.__pwned = 3</script>"
BAD_TASK = "<b>billing</b>"


def _chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("chromium not found: apt-get install -y chromium (scripts/test.sh installs it)")
    return path


def _conversation(cid: str, task: str, version: str, ok: bool, judged: bool = False) -> dict[str, Any]:
    """A graded conversation: expectations (a tool and a reference answer), or none for the judge to grade."""
    answer = "Your refund of $20 is on its way." if ok else f"Refund done. {HOSTILE}"
    if judged and not ok:
        answer = "Your refund of $20 went to order B7."
    call = {
        "name": "refund" if ok else "cancel_order",
        "arguments": {"order": "A1"},
        "result": {"status": "ok", "amount": "$20", "note": HOSTILE},
    }
    turn: dict[str, Any] = {"input": "Please refund order A1", "answer": answer, "tool_calls": [call]}
    if not judged:
        turn["expected"] = {
            "tools": [{"name": "refund", "arguments": {"order": "A1"}}],
            "reference_answer": "Your refund of $20 is on its way.",
        }
    return {"conversation_id": cid, "agent": "support", "version": version, "task": task, "turns": [turn]}


def _write(path: Path, version: str, fail_every: int) -> Path:
    lines = []
    for i in range(40):
        task = ("refund", "lookup", BAD_TASK)[i % 3]
        lines.append(_conversation(f"{version}-{i}", task, version, ok=i % fail_every != 0))
    for i in range(6):  # graded by the judge alone: the odd ones fail
        lines.append(_conversation(f"{version}-judged-{i}", "refund", version, ok=i % 2 == 0, judged=True))
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _judge(body: dict[str, Any]) -> dict[str, Any]:
    wrong = "order B7" in body["messages"][1]["content"]
    return verdict_reply("partial_incorrect", 0.2, JUDGE_SAYS) if wrong else verdict_reply("complete", 0.9)


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report of a worse 2.0 against its 1.0 baseline, judged by the local fake judge."""
    tmp = tmp_path_factory.mktemp("report-browser")
    runner = CliRunner()
    base = tmp / "base.json"
    old = runner.invoke(
        app,
        [
            "score",
            str(_write(tmp / "v1.jsonl", "1.0", 20)),
            "--format",
            "json",
            "--out",
            str(base),
            "--no-gate",
        ],
    )
    assert old.exit_code == 0, old.output
    out = tmp / "report.html"
    with FakeOpenAI(_judge) as server:
        new = runner.invoke(
            app,
            [
                "score",
                str(_write(tmp / "v2.jsonl", "2.0", 3)),
                "--baseline",
                str(base),
                "--judge",
                "gpt-4o-mini",
                "--judge-url",
                server.base_url,
                "--judge-sample",
                "1",
                "--format",
                "html",
                "--out",
                str(out),
            ],
        )
    assert new.exit_code == 1, new.output
    return out


def test_the_page_carries_everything_and_runs_nothing_it_should_not(page_file: Path) -> None:
    page = page_file.read_text(encoding="utf-8")
    assert "<script>window" not in page and 'onerror="window' not in page  # escaped, every one
    assert page.count("<script>") == 1 and "http://" not in page.split("<body>")[1].split("<script>")[0]
    assert "Content-Security-Policy" in page and "default-src 'none'" in page


def _open(details: Any) -> None:
    """Open a `<details>` element by clicking its summary, as a person would (unless it is open already)."""
    if not details.evaluate("d => d.open"):
        details.locator("summary").first.click()
    assert details.evaluate("d => d.open")


def test_open_sort_and_read_why_a_conversation_failed(page_file: Path, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    problems: list[str] = []
    outside: list[str] = []
    shot = tmp_path / "report.png"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(5_000)
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on(
                "request",
                lambda r: outside.append(r.url) if not r.url.startswith(("file:", "data:")) else None,
            )
            page.goto(page_file.as_uri())
            assert page.inner_text("#verdict").startswith("DO NOT SHIP")
            assert "baseline regression" in page.inner_text("#verdict")
            # baseline and new side by side, with the regression probability
            side = page.locator("#baseline")
            names = side.locator("tbody tr td:first-child").all_inner_texts()
            assert names == ["baseline", "new", "change (points)"]
            column = [h.strip() for h in side.locator("thead th").all_inner_texts()].index("success rate")
            cells = side.locator(f"tbody tr td:nth-child({column + 1})")
            rates = [float(v) for v in cells.evaluate_all("cs => cs.map(c => c.getAttribute('data-v'))")]
            # 38 of 40 graded passed before; now 26 of the 40 with expectations and 3 of the 6 judged alone
            assert rates == pytest.approx([38 / 40, 29 / 46, 29 / 46 - 38 / 40])
            assert (
                "REGRESSION" in page.locator("h3:has-text('Against the baseline') ~ table").first.inner_text()
            )

            # sort the per-task table by success rate, both ways
            table = page.locator("#by-task")
            headers = [h.strip() for h in table.locator("thead th").all_inner_texts()]
            column = headers.index("success rate")

            def values() -> list[float]:
                cells = table.locator(f"tbody tr td:nth-child({column + 1})")
                return [float(v) for v in cells.evaluate_all("cs => cs.map(c => c.getAttribute('data-v'))")]

            table.locator("thead th").nth(column).click()
            assert values() == sorted(values()) and len(values()) == 3
            table.locator("thead th").nth(column).click()
            assert values() == sorted(values(), reverse=True)
            assert BAD_TASK in table.inner_text()  # a hostile task name is text

            # a failing conversation under `answer`: closed, then open in place with its reasons, transcript
            modes = page.locator("details.mode")
            answer_mode = modes.filter(has=page.locator("summary b", has_text="answer")).first
            _open(answer_mode)
            conv = answer_mode.locator("details.conv").first
            reasons = conv.locator("ul.reasons").first
            assert not reasons.is_visible()
            conv.locator("summary").click()
            reasons.wait_for(state="visible")  # its transcript is decompressed when opened
            assert "answer correctness" in reasons.inner_text()
            assert HOSTILE in conv.inner_text()  # shown as text, never run

            # a conversation the judge failed: its explanation, in place
            judge_mode = modes.filter(has=page.locator("summary b", has_text="judge")).first
            _open(judge_mode)
            judged = judge_mode.locator("details.conv").first
            judged.locator("summary").first.click()
            assert JUDGE_SAYS in judged.locator("div.judge").inner_text()

            assert page.evaluate("typeof window.__pwned") == "undefined"
            assert page.locator("script:not([type])").count() == 1  # the rest are data blocks
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert problems == [] and outside == []
    print(f"\nscreenshot of the HTML report: {shot}")


def _browser(p: Any) -> Any:
    return p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])


def test_a_task_row_opens_its_failing_conversations_and_their_reasons(page_file: Path) -> None:
    """From the per-task table to why a conversation failed: two clicks."""
    from playwright.sync_api import sync_playwright

    problems: list[str] = []
    with sync_playwright() as p:
        browser = _browser(p)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(5_000)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto(page_file.as_uri())
            row = page.locator("#by-task tbody tr", has_text="refund")
            link = row.locator("a.failing")
            failing = int(link.inner_text().split()[0])
            assert failing > 0
            href = link.get_attribute("href") or "#"
            link.click()  # click 1: the task's list opens, scrolled to
            target = page.locator(f"[id='{href[1:]}']")
            assert target.evaluate("d => d.open") and "refund" in target.locator("summary").first.inner_text()
            convs = target.locator("details.conv")
            assert convs.count() == failing  # every failing conversation of the task (one page of them)
            assert all(" · task refund · " in t for t in convs.locator("summary").all_inner_texts())
            first = convs.first
            first.locator("summary").click()  # click 2: the conversation, with why it failed
            reasons = first.locator("ul.reasons").first
            reasons.wait_for(state="visible")
            assert first.locator("h4", has_text="Why").is_visible()
            assert any(
                word in reasons.inner_text()
                for word in ("answer correctness", "tool correctness", "LLM judge")
            )
            assert first.locator("ol.turns").is_visible()
        finally:
            browser.close()
    assert problems == []


def test_a_malformed_address_fragment_breaks_nothing(page_file: Path) -> None:
    """`#%` (a link cut short, a hand-typed address) cannot be percent-decoded: the page still opens and sorts."""
    from playwright.sync_api import sync_playwright

    problems: list[str] = []
    with sync_playwright() as p:
        browser = _browser(p)
        try:
            page = browser.new_page()
            page.set_default_timeout(5_000)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto(page_file.as_uri() + "#%")
            assert page.inner_text("#verdict").startswith("DO NOT SHIP")
            page.locator("#by-task thead th").nth(1).click()  # the script still runs: sorting works
        finally:
            browser.close()
    assert problems == []
    assert "base-uri 'none'; form-action 'none'" in page_file.read_text(encoding="utf-8")


def test_long_lists_page_through_every_failing_conversation(tmp_path: Path) -> None:
    """60 failing conversations of one task: 25 a page, every one reachable; a labelled failure is listed."""
    from playwright.sync_api import expect, sync_playwright

    lines = [_conversation(f"c-{i:02d}", "lookup", "1.0", ok=False) for i in range(60)]
    labelled = _conversation("labelled-bad", "lookup", "1.0", ok=True)
    labelled["outcome"] = "partial_correct"  # a person's label: failed, with no other reason
    lines.append(labelled)
    source = tmp_path / "many.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    out = tmp_path / "many.html"
    run = CliRunner().invoke(app, ["score", str(source), "--format", "html", "--out", str(out)])
    assert run.exit_code == 1, run.output
    with sync_playwright() as p:
        browser = _browser(p)
        try:
            page = browser.new_page()
            page.set_default_timeout(5_000)
            page.goto(out.as_uri())
            task = page.locator("details.task", has=page.locator("summary b", has_text="lookup"))
            task.locator("summary").first.click()
            seen: list[str] = []
            for expected in ("rows 1–25 of 61", "rows 26–50 of 61", "rows 51–61 of 61"):
                # the page fills the pager when the task opens: wait for it (reading at once raced it in CI)
                expect(task.locator(".pager")).to_contain_text(expected)
                seen += [s.split(" · ")[0] for s in task.locator("details.conv > summary").all_inner_texts()]
                if "51–61" not in expected:
                    task.locator(".pager button.next").click()
            assert sorted(seen) == sorted([f"c-{i:02d}" for i in range(60)] + ["labelled-bad"])
            assert task.locator(".pager button.next").is_disabled()
            label = page.locator("details.mode", has=page.locator("summary b", has_text="label"))
            label.locator("summary").first.click()
            row = label.locator("details.conv").first
            assert row.locator("summary").inner_text().startswith("labelled-bad")
            row.locator("summary").click()
            row.locator("ul.reasons").wait_for(state="visible")
            assert "outcome partial_correct set by a label" in row.locator("ul.reasons").inner_text()
        finally:
            browser.close()


def test_a_red_task_row_leads_to_the_differing_value_in_two_clicks(tmp_path: Path) -> None:
    """The τ-bench task-19 case: the expected flights and the call differ in the second flight only; the page
    shows that flight's number and date, expected and got, two clicks from the per-task table."""
    from playwright.sync_api import sync_playwright

    flights = [
        {"flight_number": "HAT169", "date": "2024-05-17"},
        {"flight_number": "HAT033", "date": "2024-05-19"},
    ]
    sent = [flights[0], {"flight_number": "HAT212", "date": "2024-05-20"}]
    lines = []
    for i in range(4):
        call = {
            "name": "update_reservation_flights",
            "arguments": {"reservation_id": "VA5SGQ", "flights": sent if i else flights},
            "result": {"ok": True},
        }
        lines.append(
            {
                "conversation_id": f"c{i}",
                "agent": "airline",
                "task": "19",
                "expected": {
                    "tools": [
                        {
                            "name": "update_reservation_flights",
                            "arguments": {"reservation_id": "VA5SGQ", "flights": flights},
                        }
                    ]
                },
                "turns": [
                    {
                        "input": "Change my flights",
                        "answer": "Your flights are changed.",
                        "tool_calls": [call],
                    }
                ],
            }
        )
    source = tmp_path / "t.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    out = tmp_path / "report.html"
    done = CliRunner().invoke(app, ["score", str(source), "--format", "html", "--out", str(out), "--no-gate"])
    assert done.exit_code == 0, done.output
    with sync_playwright() as p:
        browser = _browser(p)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(5_000)
            page.goto(out.as_uri())
            link = page.locator("#by-task tbody tr", has_text="19").locator("a.failing")
            assert link.inner_text().split()[0] == "3"
            href = link.get_attribute("href") or "#"
            link.click()  # click 1: the task's failing conversations
            first = page.locator(f"[id='{href[1:]}']").locator("details.conv").first
            first.locator("summary").click()  # click 2: why it failed
            reasons = first.locator("ul.reasons").first
            reasons.wait_for(state="visible")
            text = reasons.inner_text()
            assert "flights[1].flight_number: expected 'HAT033', got 'HAT212'" in text, text
            assert "flights[1].date: expected '2024-05-19', got '2024-05-20'" in text, text
        finally:
            browser.close()
