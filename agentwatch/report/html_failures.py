"""Every failing conversation of the HTML report, by failure mode and by task, listed a page at a time.

A section (the report, or one version) gets a data block with one row per failing conversation — id, task,
outcome, verdict, first failing reason, where its transcript is — and the lists, one `<details>` per failure
mode and per task, which the page's script fills a page of `PAGE_ROWS` rows at a time when they are opened.
Opening a conversation decompresses the chunk that holds its transcript (`report.cases`). Only data blocks
are written here (JSON, base64): the page's one script reads them, and nothing in them can run.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from agentwatch.report.cases import Entry
from agentwatch.report.failure_modes import failure_modes_of
from agentwatch.report.html_conversation import first_reason, verdict_word
from agentwatch.report.model import Report
from agentwatch.report.ordering import natural_key
from agentwatch.report.wording import plural
from agentwatch.safe_text import html_escape as escape
from agentwatch.safe_text import no_reordering

PAGE_ROWS = 25  # rows a list shows at a time (the page's script reads it from the data block)


def _json_block(block_id: str, value: Any) -> str:
    """A JSON data block; `<`, `>` and `&` escaped so that no text in it can end the element, and its texts'
    bidirectional overrides shown as escapes (the page's script shows them as text)."""
    text = json.dumps(_shown(value), ensure_ascii=False, separators=(",", ":"))
    text = text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    return f'<script type="application/json" id="{escape(block_id)}">{text}</script>'


def _shown(value: Any) -> Any:
    if isinstance(value, str):
        return no_reordering(value)
    if isinstance(value, list | tuple):
        return [_shown(v) for v in value]
    if isinstance(value, dict):
        return {_shown(k): _shown(v) for k, v in value.items()}
    return value


def chunk_blocks(chunks: Sequence[bytes]) -> str:
    """The compressed transcripts, one base64 data block per chunk (`aw-chunk-N`)."""
    return "".join(
        f'<script type="application/octet-stream" id="aw-chunk-{i}">{base64.b64encode(c).decode("ascii")}'
        "</script>"
        for i, c in enumerate(chunks)
    )


def _row(e: Entry) -> list[Any]:
    s = e.score
    return [s.conversation_id, s.task, s.outcome.value, verdict_word(s), first_reason(s), e.chunk, e.position]


def _lists(
    section: Report, entries: Sequence[Entry]
) -> tuple[list[list[Any]], list[list[Any]], list[list[Any]]]:
    """Rows, failure-mode lists and task lists (name, row indices) of a section's failing conversations."""
    rows = [_row(e) for e in entries]
    by_mode: dict[str, list[int]] = {}
    by_task: dict[str, list[int]] = {}
    for i, e in enumerate(entries):
        for mode in failure_modes_of(e.score):
            by_mode.setdefault(mode, []).append(i)
        by_task.setdefault(e.score.task, []).append(i)
    order = [m.mode for m in section.failure_modes]
    modes = [[m, by_mode[m]] for m in order if m in by_mode]
    modes += [[m, ids] for m, ids in sorted(by_mode.items()) if m not in order]
    tasks = [[t, by_task[t]] for t in sorted(by_task, key=natural_key)]
    return rows, modes, tasks


def _fallback(section: Report) -> tuple[list[list[Any]], list[list[Any]], list[list[Any]]]:
    """Without the transcripts: the ids the report lists per failure mode, nothing else known."""
    rows: list[list[Any]] = []
    modes: list[list[Any]] = []
    for m in section.failure_modes:
        modes.append([m.mode, list(range(len(rows), len(rows) + len(m.conversations)))])
        rows += [[cid, "", "", "", m.mode, None, None] for cid in m.conversations]
    return rows, modes, []


def task_links(section: Report, entries: Sequence[Entry] | None, sid: str) -> dict[str, tuple[str, int]]:
    """task → (id of its list of failing conversations, how many), for the per-task table."""
    if entries is None:
        return {}
    counts = Counter(e.score.task for e in entries)
    return {t: (f"{sid}task-{j}", counts[t]) for j, t in enumerate(sorted(counts, key=natural_key))}


def failures_html(section: Report, entries: Sequence[Entry] | None, sid: str) -> str:
    """The section's failing conversations: a list per failure mode (the most frequent open), a list per task,
    and the data block the page fills them from."""
    rows, modes, tasks = _lists(section, entries) if entries is not None else _fallback(section)
    out = [_json_block(f"{sid}failing", {"rows": rows, "mode": modes, "task": tasks, "page": PAGE_ROWS})]
    total = len(rows) if entries is not None else sum(m.count for m in section.failure_modes)
    out.append(
        f"<h3>Failing conversations</h3><p>{plural(total, 'conversation')} with a failure mode (a failing "
        "reason, or a failed verdict), every one listed by failure mode and by task; open one to read why "
        "it failed and its transcript.</p>"
    )
    counts = {m.mode: m.count for m in section.failure_modes}
    out.append('<h4>By failure mode</h4><div class="lists">')
    if not modes:
        out.append("<p>none</p>")
    for i, (mode, members) in enumerate(modes):
        n = counts.get(mode, len(members))
        shown = "" if entries is not None or len(members) >= n else f" (the first {len(members)} listed)"
        out.append(
            _list(f"{sid}mode-{i}", sid, "mode", i, f"{plural(n, 'conversation')}{shown}", mode, i == 0)
        )
    out.append("</div>")
    if tasks:
        out.append('<h4>By task</h4><div class="lists">')
        for j, (task, members) in enumerate(tasks):
            of = section.by_task.get(task)
            total_task = f" of {of.conversations:,}" if of is not None else ""
            out.append(
                _list(f"{sid}task-{j}", sid, "task", j, f"{len(members):,} failing{total_task}", task, False)
            )
        out.append("</div>")
    if section.ungraded:
        why = ", ".join(f"{escape(code)} {n:,}" for code, n in section.ungraded.items())
        out.append(
            f"<p>Not graded ({plural(section.conversations - section.scored, 'conversation')}; coverage, "
            f"not failures): {why}</p>"
        )
    return "".join(out)


def _list(element_id: str, sid: str, kind: str, at: int, count: str, name: str, is_open: bool) -> str:
    return (
        f'<details class="list {kind}" id="{escape(element_id)}" data-section="{escape(sid)}" '
        f'data-kind="{kind}" data-at="{at}"{" open" if is_open else ""}><summary><b>{escape(name)}</b> — '
        f'{escape(count)}</summary><div class="rows"></div><p class="pager"></p></details>'
    )
