"""Every failing conversation reachable in the HTML report: what the keeper keeps, within its byte budget, and
the lists the page is filled from (by failure mode and by task, labelled failures included)."""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path

from agentwatch.config import Settings
from agentwatch.report.build import build_report
from agentwatch.report.cases import CaseKeeper
from agentwatch.report.failure_modes import failure_modes_of
from agentwatch.report.html import render_html
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import Conversation
from tests.support.score_cli import KINDS, conversation, run

ROOT = Path(__file__).resolve().parents[2]


def _scored(lines: list[dict]) -> tuple[list, CaseKeeper]:
    scorer = ConversationScorer(Settings())
    keeper = CaseKeeper()
    scores = []
    for line in lines:
        conv = Conversation.model_validate(line)
        score = scorer.score(conv)
        keeper.offer(conv, score)
        scores.append(score)
    return scores, keeper


def _index(page: str, section: str = "") -> dict:
    found = re.search(rf'<script type="application/json" id="{section}failing">([^<]*)</script>', page)
    assert found is not None
    index: dict = json.loads(found.group(1))
    return index


def _bodies(page: str) -> list[list[str]]:
    blocks = re.findall(r'<script type="application/octet-stream" id="aw-chunk-\d+">([^<]*)</script>', page)
    return [json.loads(gzip.decompress(base64.b64decode(b))) for b in blocks]


def test_every_failing_conversation_is_listed_by_mode_and_by_task_with_its_transcript() -> None:
    lines = [conversation(k, i) for i, k in enumerate(KINDS * 5)]
    for i, line in enumerate(lines):
        line["conversation_id"] = f"{line['conversation_id']}-{i}"
    scores, keeper = _scored(lines)
    report = build_report(scores, Settings(), examples=3)
    page = render_html(report, Settings(), cases=keeper)
    index = _index(page)
    failing = [s for s in scores if failure_modes_of(s)]
    assert len(index["rows"]) == len(failing) == len(keeper.entries) > 30
    assert [r[0] for r in index["rows"]] == [s.conversation_id for s in failing]  # input order
    # every mode lists all its conversations (the JSON lists 3 of each), in the report's order
    assert [m for m, _ in index["mode"]] == [m.mode for m in report.failure_modes]
    for (mode, members), fm in zip(index["mode"], report.failure_modes, strict=True):
        assert len(members) == fm.count and len(fm.conversations) == 3
        assert all(mode in failure_modes_of(failing[i]) for i in members)
    # per task: each task's failing conversations, tasks in numeric order, linked from the per-task table
    assert [t for t, _ in index["task"]] == ["task0", "task1", "task2"]
    for j, (task, members) in enumerate(index["task"]):
        assert {index["rows"][i][1] for i in members} == {task}
        assert (
            f'href="#task-{j}" title="open the failing conversations of {task}">{len(members)} failing</a>'
            in page
        )
    # every row opens: its chunk and position hold its transcript
    bodies = _bodies(page)
    by_id = {s.conversation_id: s for s in failing}
    for cid, task, outcome, _verdict, _code, chunk, position in index["rows"]:
        assert chunk is not None and position is not None
        body = bodies[chunk][position]
        assert "<h4>Why</h4>" in body and f"task {task}" in body and f"<b>{outcome}</b>" in body
        assert all(r.split(":")[0] in body for r in by_id[cid].reasons)


def test_a_conversation_failed_by_its_label_alone_is_listed(tmp_path: Path) -> None:
    """examples/transcripts.jsonl: 2.4.0-order_lookup-016 failed by its label and nothing else."""
    out = tmp_path / "r.json"
    code, _, _ = run(ROOT / "examples" / "transcripts.jsonl", "--format", "json", "--out", out, "--no-gate")
    assert code == 0
    modes = {m["mode"]: m for m in json.loads(out.read_text())["failure_modes"]}
    assert modes["label"]["conversations"] == ["2.4.0-order_lookup-016"]
    html = tmp_path / "r.html"
    run(ROOT / "examples" / "transcripts.jsonl", "--format", "html", "--out", html, "--no-gate")
    index = _index(html.read_text(encoding="utf-8"))
    label = dict(index["mode"])["label"]
    assert [index["rows"][i][0] for i in label] == ["2.4.0-order_lookup-016"]


def test_the_keeper_keeps_the_latest_record_and_forgets_one_that_passes() -> None:
    scorer = ConversationScorer(Settings())
    keeper = CaseKeeper()
    bad = Conversation.model_validate(conversation("partial", 1))
    good = Conversation.model_validate({**conversation("good", 1), "conversation_id": "partial-1"})
    keeper.offer(bad, scorer.score(bad))
    assert len(keeper.entries) == 1
    keeper.offer(good, scorer.score(good))  # a later record of the same conversation, which passes
    assert keeper.entries == {}
    keeper.offer(bad, scorer.score(bad))
    (entry,) = keeper.entries.values()
    chunks = keeper.finish()
    assert "lookup_order" in json.loads(gzip.decompress(chunks[entry.chunk or 0]))[entry.position or 0]


def test_past_its_byte_budget_the_keeper_lists_without_transcripts() -> None:
    """Memory and page size stay bounded: later failing conversations are listed, not carried."""
    scorer = ConversationScorer(Settings())
    keeper = CaseKeeper(max_bytes=3_000, chunk_bytes=4_000)
    scores = []
    for i in range(60):
        conv = Conversation.model_validate(conversation("partial", i))
        score = scorer.score(conv)
        keeper.offer(conv, score)
        scores.append(score)
    chunks = keeper.finish()
    assert 0 < keeper.not_carried < 60 and len(keeper.entries) == 60
    assert sum(map(len, chunks)) < 3_000 + 4_000  # the budget, overshot by one chunk at most
    carried = [e for e in keeper.entries.values() if e.chunk is not None]
    assert [e.score.conversation_id for e in carried] == [f"partial-{i}" for i in range(len(carried))]
    page = render_html(build_report(scores, Settings()), Settings(), cases=keeper)
    assert len(_index(page)["rows"]) == 60
    assert f"{keeper.not_carried} of them are listed without their transcript" in page


def test_a_reason_that_only_describes_is_no_failure_mode() -> None:
    """A cost the price table cannot tell and a grader the capture left out describe a conversation; a passing
    one has no failure mode, and a failing one only its failing reasons'."""
    turn = {
        "input": "Where is order 5?",
        "answer": "Order 5 has shipped.",
        "usage": [{"model": "a-model-no-table-prices", "input_tokens": 10, "output_tokens": 5}],
        "expected": {"reference_answer": "Order 5 has shipped."},
    }
    passing = {"conversation_id": "p", "turns": [turn]}
    failing = {"conversation_id": "f", "turns": [dict(turn, answer="I cannot tell.")]}
    call = {"name": "refund", "arguments": None}
    blind = {
        "conversation_id": "b",
        "not_captured": ["messages"],
        "turns": [
            {"tool_calls": [call], "expected": {"tools": [{"name": "refund", "arguments": {"id": 1}}]}}
        ],
    }
    scores, _ = _scored([passing, failing, blind])
    reasons = [r.split(":", 1)[0] for s in scores for r in s.reasons]
    assert reasons.count("cost_unknown") == 2 and "not_captured" in reasons  # the reasons are there...
    assert [s.passed for s in scores] == [True, False, None]
    assert [failure_modes_of(s) for s in scores] == [set(), {"answer"}, set()]  # ...and are no failure mode


def test_a_bidirectional_override_in_a_transcript_is_shown_not_obeyed() -> None:
    """The page, its list of failing conversations and each transcript show a bidirectional override or
    isolate as an escape: a tool named `U+202E redro_dnufer` would read as `refund_order`."""
    line = conversation("partial", 1)
    line["conversation_id"] = "\u2067partial"
    line["task"] = "\u202dtask"
    line["turns"][0]["tool_calls"][0]["name"] = "\u202eredro_dnufer"
    scores, keeper = _scored([line])
    page = render_html(build_report(scores, Settings(), examples=3), Settings(), cases=keeper)
    bodies = [body for chunk in _bodies(page) for body in chunk]
    for text in (page, json.dumps(_index(page), ensure_ascii=False), *bodies):
        assert not set(text) & {"\u202d", "\u202e", "\u2067"}
    assert _index(page)["rows"][0][:2] == ["\\u2067partial", "\\u202dtask"]
    assert "\\u202eredro_dnufer" in bodies[0]
