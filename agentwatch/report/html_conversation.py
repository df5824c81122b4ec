"""One conversation in the HTML report, openable in place: why it failed, the judge's word, the transcript.

`conversation_body` is the HTML shown when a conversation is opened (the page carries it compressed,
`report.cases`); the line that names it in a list is built in the page from its id, task, outcome and first
reason. Everything that comes from a transcript is escaped. Long values are cut (`MAX_CHARS`, the cut is said where it
happens), as are very long conversations (`MAX_TURNS` turns, `MAX_CALLS` tool calls a turn).
"""

from __future__ import annotations

import json

from agentwatch.report.failure_modes import failure_code
from agentwatch.safe_text import html_escape as escape
from agentwatch.wire.schema import Conversation, ConversationScore, ToolCall, Turn, TurnScore

MAX_CHARS = 2_000
MAX_TURNS = 60
MAX_CALLS = 40
# Which grader a reason code comes from (by exact code, then by prefix).
GRADERS = {
    "answer": "answer correctness",
    "judge": "LLM judge",
    "label": "label",
    "loop": "failure evidence: tool loop",
    "error": "failure evidence: error",
    "no_answer": "failure evidence: no answer",
    "hallucination": "failure evidence: hallucination",
    "forbidden_tool": "forbidden tool",
    "over_budget": "cost ceiling",
    "cost_unknown": "cost",
    "incomplete": "collector (conversation cut)",
}
GRADER_PREFIXES = (
    ("tool_", "tool correctness"),
    ("policy_", "task policy"),
    ("expected_", "expectation"),
    ("judge_", "LLM judge (failed)"),
)


def grader_of(code: str) -> str:
    """The grader a reason code comes from, in words."""
    if code in GRADERS:
        return GRADERS[code]
    return next((name for prefix, name in GRADER_PREFIXES if code.startswith(prefix)), code)


def cut(text: str, limit: int = MAX_CHARS) -> str:
    """`text` escaped, cut at `limit` characters with a note saying how much was left out."""
    if len(text) <= limit:
        return escape(text)
    return escape(text[:limit]) + f'<span class="cut"> … {len(text) - limit:,} more characters cut</span>'


_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str)


def _compact(value: object) -> str:
    return _ENCODER.encode(value)


def _json(value: object) -> str:
    """A value as JSON: an object one key a line (each value compact), anything else compact. Made by the C
    encoder (an indented dump is pure Python, ten times slower: the HTML report renders every failing
    conversation); a long value is cut anyway, and the compact form shows more of it."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and value and all(isinstance(k, str) for k in value):
        lines = (f" {_compact(k)}: {_compact(v)}" for k, v in sorted(value.items()))
        return "{\n" + ",\n".join(lines) + "\n}"
    return _compact(value)


def _reason(text: str) -> str:
    code = failure_code(text)
    rest = text.split(":", 1)[1].strip() if ":" in text else ""
    return (
        f'<li><b class="code">{escape(code)}</b> <span class="grader">({escape(grader_of(code))})</span>'
        f"{': ' + cut(rest, 600) if rest else ''}</li>"
    )


def reasons_html(reasons: list[str]) -> str:
    """A list of reasons, each with its code and the grader it comes from."""
    if not reasons:
        return ""
    return '<ul class="reasons">' + "".join(_reason(r) for r in reasons) + "</ul>"


def _verdict(score: ConversationScore) -> str:
    if score.passed is None:
        return '<span class="na">not graded</span>'
    return '<span class="ok">passed</span>' if score.passed else '<span class="bad">failed</span>'


def _meta(score: ConversationScore) -> str:
    parts = [f"agent {escape(score.agent)} {escape(score.version)}", f"task {escape(score.task)}"]
    if score.instance is not None:
        parts.append(f"instance {escape(score.instance)}")
    if score.attempt is not None:
        parts.append(f"attempt {score.attempt}")
    parts.append(f"outcome <b>{escape(score.outcome.value)}</b> ({escape(score.outcome_source.value)})")
    parts.append(_verdict(score))
    if score.graded_by:
        parts.append("graded by " + escape(", ".join(score.graded_by)))
    if score.policy:
        parts.append(f"policy {escape(score.policy)}")
    if score.cost_usd is not None:
        budget = f" of ${score.budget_usd:.4g}" if score.budget_usd is not None else ""
        parts.append(f"cost ${score.cost_usd:.4g}{budget}")
    return '<p class="meta">' + " · ".join(parts) + "</p>"


def _judge(score: ConversationScore) -> str:
    if score.judge is None and score.judge_explanation is None:
        return ""
    said = []
    if score.judge_outcome is not None:
        said.append(f"outcome <b>{escape(score.judge_outcome.value)}</b>")
    if score.judge_score is not None:
        said.append(f"score {score.judge_score:.2f}")
    explanation = (
        f"<blockquote>{cut(score.judge_explanation)}</blockquote>" if score.judge_explanation else ""
    )
    return (
        f'<div class="judge"><b>Judge</b> {escape(score.judge or "")}: {", ".join(said) or "no verdict"}'
        f"{explanation}</div>"
    )


def _call(call: ToolCall) -> str:
    result = (
        f'<pre class="err">error: {cut(call.error)}</pre>'
        if call.error is not None
        else f"<pre>{cut(_json(call.result))}</pre>"
    )
    effects = "" if call.read_only is None else (" (read-only)" if call.read_only else " (has effects)")
    return (
        f"<tr><td><code>{escape(call.name)}</code>{effects}</td><td><pre>{cut(_json(call.arguments))}</pre>"
        f"</td><td>{result}</td></tr>"
    )


def _grades(ts: TurnScore | None) -> str:
    if ts is None:
        return ""
    parts = []
    if ts.answer_score is not None:
        parts.append(f"answer {ts.answer_score:.2f} {'✓' if ts.answer_passed else '✗'}")
    if ts.tool is not None:
        t = ts.tool
        util = "n/a" if t.utilization is None else f"{t.utilization:.2f}"
        parts.append(
            f"tools {t.overall:.2f} {'✓' if t.passed else '✗'} (selection {t.selection:.2f}, parameters "
            f"{t.parameters:.2f}, sequence {t.sequence:.2f}, utilization {util})"
        )
    if ts.loop:
        parts.append("tool loop")
    if ts.forbidden_tools:
        parts.append("forbidden: " + escape(", ".join(ts.forbidden_tools)))
    head = f'<p class="grades">{" · ".join(parts)}</p>' if parts else ""
    return head + reasons_html(ts.reasons)


def _turn(i: int, turn: Turn, ts: TurnScore | None) -> str:
    out = [f'<li class="turn"><p class="who">turn {i}</p>']
    if turn.input is not None:
        out.append(f'<div class="user"><b>user</b><pre>{cut(turn.input)}</pre></div>')
    calls = turn.tool_calls[:MAX_CALLS]
    if calls:
        rows = "".join(_call(c) for c in calls)
        more = len(turn.tool_calls) - len(calls)
        note = f'<p class="cut">{more} more tool calls not shown</p>' if more else ""
        out.append(
            f'<table class="calls"><thead><tr><th>tool</th><th>arguments</th><th>result</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>{note}"
        )
    answer = turn.answer if turn.answer else None
    out.append(
        f'<div class="agent"><b>agent</b><pre>{cut(answer)}</pre></div>'
        if answer is not None
        else '<p class="na">no answer</p>'
    )
    if turn.error:
        out.append(f'<p class="bad">turn error: {cut(turn.error)}</p>')
    out.append(_grades(ts))
    return "".join(out) + "</li>"


def conversation_body(conv: Conversation, score: ConversationScore) -> str:
    """What one conversation shows when it is opened: meta, why it failed, the judge, the transcript."""
    body = [
        _meta(score),
        "<h4>Why</h4>",
        reasons_html(score.reasons) or "<p>no failure reason</p>",
        _judge(score),
    ]
    if conv.system:
        body.append(
            f'<details class="system"><summary>agent instructions</summary><pre>{cut(conv.system)}</pre>'
            "</details>"
        )
    by_index = {ts.index: ts for ts in score.turn_scores}
    turns = conv.turns[:MAX_TURNS]
    body.append(
        '<h4>Transcript</h4><ol class="turns" start="0">'
        + "".join(_turn(i, t, by_index.get(i)) for i, t in enumerate(turns))
        + "</ol>"
    )
    if len(conv.turns) > len(turns):
        body.append(f'<p class="cut">{len(conv.turns) - len(turns)} more turns not shown</p>')
    if conv.notes:
        body.append('<p class="notes">' + escape("; ".join(conv.notes)) + "</p>")
    return "".join(body)


def first_reason(score: ConversationScore) -> str:
    """The code of a conversation's first failing reason ('' when none), as its one-line summary names it."""
    return next((failure_code(r) for r in score.reasons if failure_code(r) != "label"), "")


def verdict_word(score: ConversationScore) -> str:
    """passed, failed or not graded."""
    return "not graded" if score.passed is None else ("passed" if score.passed else "failed")
