"""The HTML report's tables of figures: one row per group, a column per estimate, sortable, with intervals."""

from __future__ import annotations

from collections.abc import Sequence

from agentwatch.report.figures import Figure, by_key, columns, figures
from agentwatch.report.model import GroupStats
from agentwatch.safe_text import html_escape as escape


def number_text(x: float | None, percent: bool = False) -> str:
    """A figure as the page shows it: a percentage with one decimal, else three decimals; "n/a" for none."""
    if x is None:
        return "n/a"
    return f"{100 * x:.1f}%" if percent else f"{x:.3f}"


def interval_span(f: Figure) -> str:
    """The interval of `f` as a small grey "[lower, upper]" after its value; empty when it has none."""
    if f.lower is None or f.upper is None:
        return ""
    return (
        f' <span class="ci">[{number_text(f.lower, f.evidence)}, {number_text(f.upper, f.evidence)}]</span>'
    )


def figure_cell(f: Figure | None, header_method: str | None = None) -> str:
    """A table cell of one figure, sortable by its value; † where a task table shows p^k under exchangeability."""
    if f is None:
        return '<td class="num" data-v="">—</td>'
    v = "" if f.value is None else repr(f.value)
    mark = ""
    if f.method == "exchangeable" and header_method == "tasks":
        mark = ' <span title="p^k under exchangeability: no repeated attempts in this group">†</span>'
    return f'<td class="num" data-v="{v}">{number_text(f.value, f.evidence)}{interval_span(f)}{mark}</td>'


def count_cell(n: int) -> str:
    """A table cell of a count, sortable by it."""
    return f'<td class="num" data-v="{n}">{n:,}</td>'


def delta_row(old: GroupStats, new: GroupStats, cols: list[tuple[str, str, str]]) -> str:
    """The change from `old` to `new` of every column, in points."""
    before, after = by_key(old), by_key(new)
    cells = []
    for key, _name, _about in cols:
        a, b = after.get(key), before.get(key)
        d = None if a is None or b is None or a.value is None or b.value is None else a.value - b.value
        text = "n/a" if d is None else f"{100 * d:+.1f}"
        worse = d is not None and a is not None and (d < 0) != a.evidence  # more evidence is worse
        cls = "" if d is None or d == 0 else (" bad" if worse else " ok")
        cells.append(f'<td class="num{cls}" data-v="{"" if d is None else repr(d)}">{text}</td>')
    return f"<tr><td>change (points)</td><td></td><td></td>{''.join(cells)}</tr>"


def group_table(
    rows: Sequence[tuple[str, GroupStats]],
    first: str,
    table_id: str,
    delta: bool = False,
    links: dict[str, tuple[str, int]] | None = None,
) -> str:
    """A sortable table: one row per group, a column per figure of the model (and per evidence seen); with
    `delta`, a last row with the change from the first group to the second; with `links` (group → id of its
    list of failing conversations, how many), a column of links to them."""
    groups = [g for _name, g in rows]
    cols = columns(groups) + columns(groups, evidence=True)
    methods: dict[str, str | None] = {}
    for g in groups:
        for f in figures(g):
            methods.setdefault(f.key, f.method)
    head = "".join(f'<th title="{escape(about)}">{escape(name)}</th>' for _key, name, about in cols)
    body = []
    for name, g in rows:
        found = by_key(g)
        cells = "".join(figure_cell(found.get(key), methods.get(key)) for key, _name, _about in cols)
        failing = ""
        if links is not None:
            target, n = links.get(name, ("", 0))
            failing = (
                f'<td class="num" data-v="{n}"><a class="failing" href="#{escape(target)}" '
                f'title="open the failing conversations of {escape(name)}">{n:,} failing</a></td>'
                if n
                else '<td class="num" data-v="0">0</td>'
            )
        body.append(
            f"<tr><td>{escape(name)}</td>{count_cell(g.conversations)}{count_cell(g.scored)}{failing}{cells}</tr>"
        )
    if delta and len(groups) == 2:
        body.append(delta_row(groups[0], groups[1], cols))
    dagger = any(
        f.method == "exchangeable" and methods.get(f.key) == "tasks" for g in groups for f in figures(g)
    )
    note = (
        '<p class="ci">† p^k under exchangeability: that group has no repeated attempts.</p>'
        if dagger
        else ""
    )
    sortable = "" if delta else ' class="sortable"'
    failing_head = (
        '<th title="conversations with a failure mode; the link opens their list">failing</th>'
        if links is not None
        else ""
    )
    return (
        f'<div class="wide"><table{sortable} id="{escape(table_id)}"><thead><tr><th>{escape(first)}'
        f"</th><th>conversations</th><th>graded</th>{failing_head}{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></div>{note}"
    )
