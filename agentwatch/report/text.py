"""Text rendering of a `Report` with rich, in the layout of the seed lesson's eval report: a section per set of
conversations (its METRICS lines are in `text_metrics`, its comparisons in `text_comparison`) and the verdict."""

from __future__ import annotations

import io
from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from agentwatch.report.model import COUNTED_GATES, Gate, GroupStats, InputSummary, Report
from agentwatch.report.text_comparison import baseline_lines, versions_lines
from agentwatch.report.text_metrics import figure_name, metrics_lines
from agentwatch.report.wording import (
    BAD,
    OK,
    agreement_words,
    first_few,
    fmt,
    money,
    pct,
    pct_interval,
    plural,
)
from agentwatch.safe_text import one_line
from agentwatch.scorers.differences import clip_reason

RULE = "=" * 60
# Tags shown as their own sections, in this order; other tags follow alphabetically.
PREFERRED_TAGS = ("difficulty", "category")


def input_lines(i: InputSummary) -> list[str]:
    """What was read, merged, skipped and ignored, in words."""
    lines = [f"Files: {', '.join(i.files)} ({plural(i.records, 'conversation record')} read)"]
    if i.malformed:
        lines.append(f"Malformed lines skipped: {i.malformed:,}")
    if i.duplicate_ids:
        lines.append(
            f"Duplicate ids: {plural(i.duplicate_ids, 'conversation id')} read more than once "
            f"({plural(i.duplicate_records, 'extra record')}): "
            f"{first_few(i.duplicate_examples, i.duplicate_ids)}; each counts once, its last record"
        )
    if i.shared_ids:
        lines.append(
            f"Shared ids: {plural(i.shared_ids, 'conversation id')} under several versions of one "
            "agent: one conversation per version"
        )
    if i.unknown_keys:
        keys = ", ".join(f"{k} ({plural(n, 'record')})" for k, n in i.unknown_keys.items())
        lines.append(f"Unknown keys ignored (not transcript fields): {keys}")
    return lines


def _evidence_lines(r: GroupStats, level: float) -> list[str]:
    rates = [
        f"{e} {pct(x.rate)}{pct_interval(x.lower, x.upper)}" for e, x in r.failure_rates.items() if x.count
    ]
    head = (
        f"FAILURE EVIDENCE (rates over all {r.conversations} conversations, {level:.0%} credible intervals):"
    )
    if not rates:
        return [head, "  none found"]
    return [head, *(f"  {line}" for line in rates)]


def _grading_line(r: GroupStats, judge: str | None) -> str:
    by = ", ".join(f"{g} {n}" for g, n in r.graded_by.items()) or "none"
    labels = ", ".join(f"{o} {n}" for o, n in r.labels.items())
    judged = f"judge sample {r.sampled.get('judge', 0)} ({judge})" if judge else "no judge configured"
    line = f"GRADED BY: {by} · {judged} · review sample {r.sampled.get('review', 0)}"
    return line + (f" · labels (all conversations): {labels}" if labels else "")


def _label_agreement_lines(r: Report, level: float) -> list[str]:
    """How the automated verdicts agree with the labels that decided the same conversations (none without)."""
    a = r.label_agreement
    if a is None:
        return []
    lines = [
        f"LABELS vs AUTOMATED VERDICTS ({plural(a.conversations, 'conversation')} a label decided, with an "
        f"automated verdict beside): {agreement_words(a, level)}"
    ]
    for n, ids, what in (
        (a.graders_failed, a.graders_failed_examples, "the graders failed, the label passed"),
        (a.graders_passed, a.graders_passed_examples, "the graders passed, the label failed"),
    ):
        if n:
            lines.append(f"  {what}: {n} (e.g. {first_few(ids, n)})")
    if a.graders_failed or a.graders_passed:
        lines.append(
            "  where a label decided, the figures count the label; where they disagree, one of the two is wrong"
        )
    return lines


def ungraded_line(r: GroupStats) -> str | None:
    """Why conversations are outside the graded sample (coverage), or None when all are graded."""
    if not r.ungraded:
        return None
    why = ", ".join(f"{code} {n}" for code, n in r.ungraded.items())
    return f"NOT GRADED ({plural(r.conversations - r.scored, 'conversation')}; coverage, not failures): {why}"


def _group_line(name: str, g: GroupStats) -> str:
    p1 = g.pass_at_k.get("1")
    at1 = p1.value if p1 is not None and p1.method == "tasks" else g.success_rate.plugin
    p3 = g.pass_pow_k.get("3")
    pow3 = f" {figure_name('pow', '3', p3)}={fmt(p3.value)}" if p3 is not None else ""
    return (
        f"  {name} ({g.scored}/{g.conversations} graded): pass@1={fmt(at1)}{pow3}"
        f" ASR={fmt(g.asr.value)}{_evidence_brief(g)}"
    )


def _evidence_brief(g: GroupStats) -> str:
    found = [f"{e} {pct(x.rate)}" for e, x in g.failure_rates.items() if x.count]
    return f" | evidence: {', '.join(found)}" if found else ""


def _tag_order(keys: Sequence[str]) -> list[str]:
    first = [k for k in PREFERRED_TAGS if k in keys]
    return first + sorted(k for k in keys if k not in PREFERRED_TAGS)


def gate_name(g: Gate) -> str:
    """A gate's name as shown: the pass^3 gate on p^3 under exchangeability says so."""
    return "p^3 (exchangeable)" if g.method == "exchangeable" and g.name == "pass^3" else g.name


def gate_value(g: Gate) -> str:
    """A gate's value as shown: a count as a whole number, an estimate to three places, "n/a" when missing."""
    if g.value is None:
        return "n/a"
    return f"{g.value:.0f}" if g.name in COUNTED_GATES else f"{g.value:.3f}"


def final_verdict(report: Report) -> str:
    """'SAFE TO SHIP.' when every gate passes and no baseline regression was found, else 'DO NOT SHIP (...)'."""
    regression = report.baseline is not None and report.baseline.regression
    why = [gate_name(g) for g in report.readiness.gates if not g.passed] + (
        ["baseline regression"] if regression else []
    )
    return "SAFE TO SHIP." if not why else f"DO NOT SHIP ({', '.join(why)} failed)."


def _section_lines(r: Report, level: float) -> list[str]:
    """Everything the report says about one set of conversations, up to its gates."""
    cov = r.scored / r.conversations if r.conversations else None
    lines = [
        f"Conversations: {r.conversations} | Graded: {r.scored} (coverage {pct(cov)}) | Tasks: {len(r.by_task)}"
    ]
    lines += [RULE, *metrics_lines(r, level), _grading_line(r, r.judge), *_label_agreement_lines(r, level)]
    lines += _evidence_lines(r, level)
    outcomes = ", ".join(f"{k} {v}" for k, v in r.outcomes.items())
    lines.append(f"OUTCOMES: {outcomes}")
    tc = r.tool_correctness
    if any(v is not None for v in tc.values()):
        lines.append("TOOL CORRECTNESS: " + ", ".join(f"{k} {fmt(v)}" for k, v in tc.items()))
    c = r.cost
    lines.append(
        f"COST: P50 {money(c.p50)} · P90 {money(c.p90)} · P99 {money(c.p99)} · "
        f"{pct(c.over_budget_ratio)} over budget"
    )
    for key in _tag_order(list(r.by_tag)):
        lines.append(f"METRICS (by {key}):")
        lines += [_group_line(value, g) for value, g in r.by_tag[key].items()]
    if len(r.by_task) > 1:
        lines.append("METRICS (by task):")
        lines += [_group_line(task, g) for task, g in r.by_task.items()]
    lines.append("TOP FAILURE MODES:")
    if r.failure_modes:
        for i, f in enumerate(r.failure_modes[:5], 1):
            lines.append(f"  {i}. {f.mode} ({plural(f.count, 'conversation')})")
            if f.example:
                lines.append(f"     e.g. {clip_reason(f.example)}")
    else:
        lines.append("  none")
    not_graded = ungraded_line(r)
    if not_graded:
        lines.append(not_graded)
    lines += baseline_lines(r)
    rd = r.readiness
    lines.append(
        f"READINESS: tier {rd.tier} ({rd.scope_note}; {rd.scope_scored} graded; gate on "
        f"{'the lower ' + format(level, '.0%') + ' credible bound' if rd.estimate == 'lower' else rd.estimate})"
    )
    for g in rd.gates:
        value = fmt(g.value) if g.name not in COUNTED_GATES or g.value is None else f"{g.value:.0f}"
        note = f" ({g.note})" if g.note else ""
        lines.append(f"  {gate_name(g)} {g.op} {g.threshold:g}: {value} {OK if g.passed else BAD}{note}")
    return lines


def report_lines(
    report: Report, title: str = "Agent Evaluation Report", header: Sequence[str] = (), level: float = 0.95
) -> list[str]:
    """The report as plain text lines: one section, or a section per version and their comparison. Names from the
    data (agents, versions, tasks, ids) cannot break a line or reach the terminal as control sequences."""
    return [one_line(line) for line in _report_lines(report, title, header, level)]


def _report_lines(report: Report, title: str, header: Sequence[str], level: float) -> list[str]:
    header = [*header, *(input_lines(report.input) if report.input is not None else [])]
    if not report.versions:
        return [RULE, title, *header, *_section_lines(report, level), final_verdict(report), RULE]
    lines = [
        RULE,
        title,
        *header,
        f"Versions: {len(report.versions)}, a section each (first seen first); the last one is gated",
    ]
    for section in report.versions:
        lines += [RULE, f"VERSION {section.agent_version}", *_section_lines(section, level)]
    return [*lines, RULE, *versions_lines(report), final_verdict(report), RULE]


def print_report(
    report: Report,
    console: Console,
    title: str = "Agent Evaluation Report",
    header: Sequence[str] = (),
    level: float = 0.95,
) -> None:
    """Print the report on a rich console, with colour where the console supports it."""
    for line in report_lines(report, title, header, level):
        style = None
        if line.startswith(("SAFE TO SHIP", "No regression")) or line.strip() == "No regression.":
            style = "bold green"
        elif line.startswith("DO NOT SHIP") or "REGRESSION" in line:
            style = "bold red"
        text = Text(line, style=style or "")
        text.highlight_regex(OK, "green")
        text.highlight_regex(BAD, "red")
        console.print(text, highlight=False, soft_wrap=True)


def render_text(
    report: Report, title: str = "Agent Evaluation Report", header: Sequence[str] = (), level: float = 0.95
) -> str:
    """The report as plain text (no colour)."""
    buf = io.StringIO()
    console = Console(file=buf, color_system=None, width=200, force_terminal=False)
    print_report(report, console, title, header, level)
    return buf.getvalue()
