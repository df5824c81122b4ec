"""The HTML report: one self-contained page to work from (no network, no external file).

A verdict banner, headline figures with their intervals, sortable tables per version, task and tag, the
baseline beside the new run with deltas and the regression probability, the failure modes each listing its
conversations — openable in place with their transcripts, reasons and the judge's explanation — and the
charts.
Tables are built from `figures` (the model's estimates), so a new estimate in the report model gets a column
without a change here. Everything from a transcript is escaped, and a Content-Security-Policy lets only the
page's own script run and loads nothing from anywhere.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence

from agentwatch.config import Settings
from agentwatch.report.cases import CaseKeeper, Entry
from agentwatch.report.charts import charts
from agentwatch.report.figures import figures
from agentwatch.report.html_conversation import MAX_CHARS, MAX_TURNS
from agentwatch.report.html_failures import chunk_blocks, failures_html, task_links
from agentwatch.report.html_script import SCRIPT
from agentwatch.report.html_tables import count_cell, group_table, interval_span, number_text
from agentwatch.report.model import GroupStats, Report
from agentwatch.report.text import final_verdict, gate_name, gate_value, input_lines, report_lines
from agentwatch.report.text_metrics import EXCHANGEABLE_NOTE
from agentwatch.report.wording import agreement_words, first_few, plural
from agentwatch.safe_text import html_escape as escape

STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#222}
h1{font-size:1.5em} h2{margin-top:1.6em;border-bottom:1px solid #ddd} h3{margin-top:1.2em}
.verdict{padding:.8em 1em;border-radius:6px;color:#fff} .verdict h2{border:0;margin:0 0 .3em}
.verdict.ship{background:#1b7f3b} .verdict.noship{background:#b3261e} .verdict ul{margin:.3em 0}
.cards{display:flex;flex-wrap:wrap;gap:.6em} .card{border:1px solid #ddd;border-radius:6px;padding:.5em .8em;
min-width:9em} .card .v{font-size:1.4em;font-weight:600} .ci{color:#666;font-size:.85em}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em} th,td{border:1px solid #ddd;padding:.25em .5em;
text-align:left;vertical-align:top} th{background:#f3f3f3} table.sortable th{cursor:pointer}
th[aria-sort=ascending]::after{content:" ▲"} th[aria-sort=descending]::after{content:" ▼"}
td.num{text-align:right;white-space:nowrap} td.num .ci{display:block} .wide{overflow-x:auto;max-width:100%}
.ok{color:#1b7f3b} .bad{color:#b3261e} .na{color:#777}
.note{background:#fff8e1;border-left:4px solid #f0b400;padding:.5em .8em}
.cut{color:#8a5a00;font-style:italic}
details.conv{border:1px solid #ddd;border-radius:4px;margin:.3em 0;padding:.2em .6em}
details.conv[open]{background:#fcfcfc} summary{cursor:pointer} pre{white-space:pre-wrap;word-break:break-word;
margin:.2em 0;background:#f6f6f6;padding:.3em} .calls pre{max-width:32em} .code{font-family:monospace}
.grader{color:#555} blockquote{margin:.3em 0 .3em 1em;border-left:3px solid #999;padding-left:.6em}
ol.turns>li{margin:.5em 0;border-top:1px dashed #ccc} .who{color:#777;margin:.2em 0} figure{margin:1em 0}
img{max-width:100%} details.list{margin:.2em 0} details.list>summary{padding:.15em 0}
details.list .rows{margin:.3em 0 .3em 1em} .pager button{font:inherit;margin:0 .3em}
td a.failing{color:#b3261e;font-weight:600}
"""


def _banner(report: Report) -> str:
    rd = report.readiness
    ok = final_verdict(report).startswith("SAFE")
    items = []
    for g in rd.gates:
        value = gate_value(g)
        mark = "<span>✓</span>" if g.passed else "<span>✗</span>"
        note = f" — {escape(g.note)}" if g.note else ""
        items.append(f"<li>{escape(gate_name(g))} {escape(g.op)} {g.threshold:g}: {value} {mark}{note}</li>")
    if report.baseline is not None:
        for c in report.baseline.checks:
            prob = "n/a" if c.probability is None else f"{c.probability:.3f}"
            verdict = "regression" if c.regressed else "no regression"
            items.append(
                f"<li>[{escape(c.scope)}] P(pass^{c.k} dropped by more than {c.margin:g}) = {prob} "
                f"(threshold {c.threshold:g}): {verdict}</li>"
            )
    estimate = "the lower bound of each interval" if rd.estimate == "lower" else rd.estimate
    return (
        f'<div class="verdict {"ship" if ok else "noship"}" id="verdict"><h2>{escape(final_verdict(report))}'
        f"</h2><p>Readiness tier <b>{escape(rd.tier)}</b>; {escape(rd.scope_note)}; "
        f"{plural(rd.scope_scored, 'graded conversation')} gated on {escape(estimate)}.</p>"
        f"<ul>{''.join(items)}</ul></div>"
    )


def _cards(group: GroupStats) -> str:
    cov = group.scored / group.conversations if group.conversations else None
    cards = [
        (
            f'<div class="card"><div>graded</div><div class="v">{group.scored:,} / {group.conversations:,}'
            f'</div><div class="ci">coverage {number_text(cov, True)}</div></div>'
        )
    ]
    for f in figures(group):
        if f.evidence:
            continue
        cards.append(
            f'<div class="card" title="{escape(f.about)}"><div>{escape(f.name)}</div>'
            f'<div class="v">{number_text(f.value)}</div><div class="ci">{interval_span(f).strip() or "&nbsp;"}'
            "</div></div>"
        )
    return f'<div class="cards">{"".join(cards)}</div>'


def _exchangeable(group: GroupStats) -> str:
    if group.scored == 0 or not any(e.method == "exchangeable" for e in group.pass_pow_k.values()):
        return ""
    text = " ".join(line.strip() for line in EXCHANGEABLE_NOTE)
    return f'<p class="note">{escape(text)}</p>'


def _evidence(group: GroupStats) -> str:
    rows = "".join(
        f'<tr><td>{escape(kind)}</td>{count_cell(r.count)}<td class="num" data-v="{r.rate or 0!r}">'
        f'{number_text(r.rate, True)} <span class="ci">[{number_text(r.lower, True)}, {number_text(r.upper, True)}]</span>'
        "</td></tr>"
        for kind, r in group.failure_rates.items()
    )
    return (
        f"<h3>Failure evidence (rates over all {group.conversations:,} conversations, graded or not)</h3>"
        '<table class="sortable"><thead><tr><th>evidence</th><th>conversations</th><th>rate</th></tr>'
        "</thead>"
        f"<tbody>{rows}</tbody></table>"
    )


def _baseline(section: Report, base: Report | None, sid: str) -> str:
    b = section.baseline
    if b is None:
        return ""
    out = [f"<h3>Against the baseline ({escape(b.source)})</h3>"]
    if base is not None:
        side = [
            (f"baseline {base.agent_version or ''}".strip(), base),
            (f"new {section.agent_version or ''}".strip(), section),
        ]
        out.append(group_table(side, "", f"{sid}baseline", delta=True))
    checks = "".join(
        f"<tr><td>{escape(c.scope)}</td><td>pass^{c.k} ({escape(c.method)})</td>"
        f'<td class="num">{c.margin:g}</td>'
        f'<td class="num">{"n/a" if c.probability is None else format(c.probability, ".3f")}</td>'
        f'<td class="num">{c.threshold:g}</td><td class="{"bad" if c.regressed else "ok"}">'
        f"{'REGRESSION' if c.regressed else 'no regression'}</td><td>{escape(c.note or '')}</td></tr>"
        for c in b.checks
    )
    out.append(
        "<table><thead><tr><th>scope</th><th>figure</th><th>margin</th><th>P(dropped by more than the "
        f"margin)</th><th>threshold</th><th>verdict</th><th>note</th></tr></thead><tbody>{checks}</tbody>"
        f'</table><p class="ci">{escape(b.rule)}</p>'
    )
    if b.by_group:
        rows = "".join(
            f"<tr><td>{escape(name)}</td>"
            + "".join(
                f'<td class="num" data-v="{"" if d.delta is None else repr(d.delta)}">'
                f"{'n/a' if d.delta is None else format(100 * d.delta, '+.1f')}</td>"
                for d in (ds.get("pass@1"), ds.get("pass^3"))
                if d is not None
            )
            + "</tr>"
            for name, ds in b.by_group.items()
        )
        out.append(
            "<details><summary>Per task and tag: change in points (informational, not part of the "
            'verdict)</summary><table class="sortable"><thead><tr><th>group</th><th>Δ pass@1</th>'
            f"<th>Δ pass^3</th></tr></thead><tbody>{rows}</tbody></table></details>"
        )
    return "".join(out)


def _label_note(section: Report, level: float) -> str:
    """The automated verdicts against the labels that decided the same conversations, as a note (or nothing)."""
    a = section.label_agreement
    if a is None:
        return ""
    return (
        f'<p class="note">Labels vs automated verdicts ({plural(a.conversations, "conversation")} a label '
        f"decided): {escape(agreement_words(a, level))}; the graders failed {a.graders_failed} the labels "
        f"passed and passed {a.graders_passed} the labels failed. Where a label decided, the figures count it.</p>"
    )


def _section(
    section: Report, settings: Settings, failing: list[Entry] | None, base: Report | None, sid: str = ""
) -> str:
    """Everything about one set of conversations (the report, or one version); `sid` prefixes element ids;
    `failing`: its failing conversations (None: only the ids the report lists are known)."""
    out = [_cards(section), _exchangeable(section), _label_note(section, settings.stats.level)]
    out += [
        f'<figure><img alt="{escape(alt)}" src="data:image/png;base64,{img}"></figure>'
        for alt, img in charts(section, settings)
    ]
    out.append(_baseline(section, base, sid))
    out.append(failures_html(section, failing, sid))
    out.append(_evidence(section))
    if len(section.by_task) > 1 or failing:
        links = task_links(section, failing, sid)
        out.append(
            "<h3>By task</h3>"
            + group_table(list(section.by_task.items()), "task", f"{sid}by-task", links=links)
        )
    for key, values in section.by_tag.items():
        out.append(
            f"<h3>By tag {escape(key)}</h3>" + group_table(list(values.items()), key, f"{sid}by-tag-{key}")
        )
    return "".join(out)


def _versions(report: Report) -> str:
    rows = [(s.agent_version or "?", s) for s in report.versions]
    table = group_table(rows, "version", "versions")
    checks = []
    for s in report.versions:
        b = s.baseline
        if b is None:
            continue
        probs = "; ".join(
            f"[{c.scope}] {'n/a' if c.probability is None else format(c.probability, '.3f')}"
            for c in b.checks
        )
        verdict = '<b class="bad">REGRESSION</b>' if b.regression else '<span class="ok">no regression</span>'
        checks.append(
            f"<li>{escape(s.agent_version or '')} vs {escape(b.source)}: P(pass^3 dropped) {probs}: "
            f"{verdict}</li>"
        )
    return f"<h2>Versions</h2>{table}<ul>{''.join(checks)}</ul>"


def _base_of(section: Report, report: Report, base: Report | None) -> Report | None:
    """The report a section was compared with: the --baseline report, or the version it names."""
    if section.baseline is None:
        return None
    if base is not None:
        return base
    source = section.baseline.source.removeprefix("version ")
    return next((s for s in report.versions if s.agent_version == source), None)


def _script_hash() -> str:
    return base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode("ascii")


def render_html(
    report: Report,
    settings: Settings,
    title: str = "Agent Evaluation Report",
    header: Sequence[str] = (),
    cases: CaseKeeper | None = None,
    base: Report | None = None,
) -> str:
    """The report as one self-contained HTML page; `cases`: every failing conversation and the transcripts
    carried (else only the ids the report lists), `base` the --baseline report (its intervals beside the new
    ones)."""
    # base-uri and form-action are not covered by default-src: an injected <base> or <form> stays inert too
    csp = (
        f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{_script_hash()}'; "
        "base-uri 'none'; form-action 'none'"
    )
    notes = [*header, *(input_lines(report.input) if report.input is not None else [])]
    chunks = cases.finish() if cases is not None else []

    def failing(section: Report) -> list[Entry] | None:
        if cases is None:
            return None
        return cases.failing(section.agent_version if report.versions else None)

    parts = [_banner(report)]
    if notes:
        parts.append('<ul class="input">' + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>")
    if report.input is not None and report.input.duplicate_ids:
        parts.append(
            f'<p class="note">Duplicate conversation ids: '
            f"{escape(first_few(report.input.duplicate_examples, report.input.duplicate_ids))}.</p>"
        )
    if report.versions:
        parts.append(_versions(report))
        for i, s in enumerate(report.versions):
            is_last = s is report.versions[-1]
            parts.append(
                f'<details class="version"{" open" if is_last else ""}><summary><h2 style="display:inline">'
                f"Version {escape(s.agent_version or '')}</h2></summary>"
                f"{_section(s, settings, failing(s), _base_of(s, report, base), f'v{i}-')}</details>"
            )
    else:
        parts.append(
            f"<h2>Results</h2>{_section(report, settings, failing(report), _base_of(report, report, base))}"
        )
    text = "\n".join(report_lines(report, title=title, header=header, level=settings.stats.level))
    parts.append(f"<details><summary>The text report</summary><pre>{escape(text)}</pre></details>")
    parts.append(
        f'<p class="ci">{escape(_carried_note(cases))} Values longer than {MAX_CHARS:,} characters '
        f"and conversations longer than {MAX_TURNS} turns are cut where shown. Intervals are "
        f"{settings.stats.level:.0%} credible intervals (bootstrap for ASR). Click a column header to sort.</p>"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>"
        f"<body><h1>{escape(title)}</h1>\n"
        + "\n".join(p for p in parts if p)
        + f"\n{chunk_blocks(chunks)}\n<script>{SCRIPT}</script>\n</body></html>\n"
    )


def _carried_note(cases: CaseKeeper | None) -> str:
    """What the page carries of the failing conversations, in words."""
    if cases is None:
        return "This page lists the first conversations of each failure mode, without their transcripts."
    n = len(cases.entries)
    note = (
        f"This page lists every failing conversation ({n:,}), by failure mode and by task, and carries "
        "their transcripts compressed (a conversation is decompressed when it is opened)."
    )
    if cases.not_carried:
        note += (
            f" {cases.not_carried:,} of them are listed without their transcript: the page carries at most "
            f"{cases.max_bytes >> 20} MiB of compressed transcripts."
        )
    return note
