"""Text rendering of a `Report` with rich, in the layout of the seed lesson's eval report."""

from __future__ import annotations

import io
from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from agentwatch.report.model import (
    Delta,
    Gate,
    GroupStats,
    InputSummary,
    JudgeOnly,
    KEstimate,
    Report,
    UnitsSummary,
)
from agentwatch.safe_text import one_line
from agentwatch.scorers.differences import clip_reason

RULE = "=" * 60
OK, BAD = "✓", "✗"
# Tags shown as their own sections, in this order; other tags follow alphabetically.
PREFERRED_TAGS = ("difficulty", "category")


def fmt(x: float | None, digits: int = 3) -> str:
    """A number with `digits` decimals, or 'n/a'."""
    return "n/a" if x is None else f"{x:.{digits}f}"


def _interval(lo: float | None, hi: float | None) -> str:
    return "" if lo is None or hi is None else f" [{lo:.3f}, {hi:.3f}]"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def plural(n: int, noun: str, many: str | None = None) -> str:
    """`1 conversation`, `2 conversations` (thousands separated)."""
    return f"{n:,} {noun if n == 1 else (many or noun + 's')}"


MAX_IDS_SHOWN = 5


def first_few(items: Sequence[str], total: int | None = None) -> str:
    """The first items, then `and N more` when there are more."""
    total = len(items) if total is None else total
    shown = ", ".join(items[:MAX_IDS_SHOWN])
    return shown + (f" and {total - min(len(items), MAX_IDS_SHOWN):,} more" if total > MAX_IDS_SHOWN else "")


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


def _money(x: float | None) -> str:
    return "n/a" if x is None else f"${x:.4g}"


def _change(d: Delta) -> str:
    """A difference of two probabilities in points, and relative to the baseline where it has one."""
    if d.delta is None:
        return "n/a"
    text = f"{100 * d.delta:+.1f} points"
    if d.base:
        text += f", {100 * d.delta / d.base:+.0f}% relative"
    return text


def repeats(r: GroupStats) -> bool:
    """Whether the group's pass^k is over units with repeated attempts (method tasks)."""
    return any(e.method == "tasks" for e in r.pass_pow_k.values())


def figure_name(kind: str, k: str, e: KEstimate | None) -> str:
    """pass^k / pass@k over units; under exchangeability the name says what the figure is."""
    if e is not None and e.method == "exchangeable":
        return f"p^{k} (exchangeable)" if kind == "pow" else f"1-(1-p)^{k} (exchangeable)"
    return f"pass^{k}" if kind == "pow" else f"pass@{k}"


EXCHANGEABLE_NOTE = (
    "  No task was attempted more than once, so pass^k (k attempts at the same task all succeed) is not",
    "  identified. Shown instead: p^k of one pooled success probability under exchangeability (as if every",
    "  conversation were an independent attempt with the same p), which understates pass^k when tasks",
    "  differ.",
    "  Repeated attempts at the same task identify it: `instance` and `attempt` on transcript lines, or",
    "  conversation(instance=..., attempt=...) in the SDK.",
)


def _units_line(u: UnitsSummary) -> str:
    alone = ""
    if u.without_unit:
        alone = f"; {u.without_unit} graded conversations name no instance or attempt (a unit each)"
    return (
        f"  units (a task, or a task instance): {u.units}, {u.repeated} attempted more than once, at "
        f"most {u.max_attempts} attempts{alone}"
    )


def _k_line(kind: str, k: str, e: KEstimate, u: UnitsSummary | None) -> str:
    name = figure_name(kind, k, e)
    if e.value is None:
        most = u.max_attempts if u is not None else 0
        return f"  {name}: n/a (not identified: at most {most} graded attempts at one unit)"
    if e.method == "exchangeable" and e.corrected:
        return (
            f"  {name}: {fmt(e.value)}{_interval(e.lower, e.upper)} (of the corrected success rate"
            f"{_judge_only(e.judge_only)})"
        )
    if e.method == "exchangeable":
        return (
            f"  {name}: {fmt(e.value)}{_interval(e.lower, e.upper)} (pooled Beta posterior; plug-in "
            f"{fmt(e.pooled_plugin)}, unbiased {fmt(e.pooled_unbiased)})"
        )
    pooled_name = f"p^{k}" if kind == "pow" else f"1-(1-p)^{k}"
    widened = ", widened to include the value" if e.widened else ""
    return (
        f"  {name}: {fmt(e.value)}{_interval(e.lower, e.upper)} (mean over {e.units} units with >= {k} "
        f"attempts; {e.interval} interval{widened}; pooled {pooled_name} under exchangeability "
        f"{fmt(e.pooled_mean)})"
    )


def _overall_lines(r: GroupStats, level: float) -> list[str]:
    if r.scored == 0:
        return [
            "METRICS: no graded conversations. Success rate, pass@k, pass^k and ASR need a grader chosen blind to",
            "  the outcome: expectations on the transcript, a task policy, a judge sample or labels on the review",
            "  sample (docs/scoring.md). Failure evidence below is measured on every conversation.",
        ]
    lines = [f"METRICS (graded sample, {level:.0%} credible intervals):"]
    sr = r.success_rate
    if sr.method == "corrected":
        lines.append(
            f"  success rate: {fmt(sr.plugin)}{_interval(sr.lower, sr.upper)} corrected by "
            f"{sr.labels} labels of the blind review sample (PPI++){_judge_only(sr.judge_only)}"
        )
    elif sr.method == "tasks":
        lines.append(
            f"  success rate: {fmt(sr.plugin)}{_interval(sr.lower, sr.upper)} over units (pass^1: the "
            f"mean of each unit's share of passing attempts; {r.passed}/{r.scored} graded passed)"
        )
    else:
        weighted = " (Hájek-weighted: sampled at different rates)" if sr.method == "weighted" else ""
        lines.append(
            f"  success rate: {fmt(sr.plugin)} ({r.passed}/{r.scored} graded passed)"
            f"{_interval(sr.lower, sr.upper)}{weighted}"
        )
    if r.correction is not None:
        lines.extend(_correction_lines(r))
    over_units = repeats(r)
    if over_units:
        if r.units is not None:
            lines.append(_units_line(r.units))
        lines.append(
            "  pass^k, pass@k: mean over units of the unbiased C(c,k)/C(n,k) (τ-bench); intervals "
            "are for the population of units"
        )
    else:
        lines.extend(EXCHANGEABLE_NOTE)
    for kind, table in (("pow", r.pass_pow_k), ("at", r.pass_at_k)):
        for k, e in table.items():
            if k == "1" and (kind == "at" or not over_units):
                continue  # pass@1 = pass^1; without repeats it is the success rate
            lines.append(_k_line(kind, k, e, r.units))
    a = r.asr
    if a.method == "corrected":
        lines.append(
            f"  ASR: {fmt(a.value)}{_interval(a.lower, a.upper)} (corrected, PPI++ t interval)"
            f"{_judge_only(a.judge_only)}"
        )
    elif a.method == "units":
        lines.append(
            f"  ASR: {fmt(a.value)}{_interval(a.lower, a.upper)} (mean over {a.units} units of their mean "
            "credit; bootstrap over units, as attempts at one unit are not independent)"
        )
    else:
        lines.append(f"  ASR: {fmt(a.value)}{_interval(a.lower, a.upper)} (bootstrap)")
    return lines


def _judge_only(j: JudgeOnly | None) -> str:
    return "" if j is None else f"; judge only {fmt(j.mean)}{_interval(j.lower, j.upper)}"


def _correction_lines(r: GroupStats) -> list[str]:
    """What the correction by people's labels rests on, and the corrected outcome shares."""
    c = r.correction
    assert c is not None
    lines = [f"  people's labels: {c.note}"]
    if c.enough and c.outcome_share:
        shares = ", ".join(
            f"{o} {fmt(f.value)}{_interval(f.lower, f.upper)} (judge only {fmt(f.judge_only)})"
            for o, f in c.outcome_share.items()
        )
        lines.append(f"  outcome shares, corrected: {shares}")
    elif not c.enough and c.success_rate is not None:
        f = c.success_rate
        lines.append(
            f"  (with so few labels: corrected {fmt(f.value)}{_interval(f.lower, f.upper)}, judge "
            f"only {fmt(f.judge_only)}{_interval(f.judge_only_lower, f.judge_only_upper)})"
        )
    if c.enough and not c.asr_enough:
        lines.append(f"  ASR not corrected: its interval needs {c.min_asr_labels} labels")
    return lines


def _evidence_lines(r: GroupStats, level: float) -> list[str]:
    rates = [
        f"{e} {_pct(x.rate)}{_pct_interval(x.lower, x.upper)}" for e, x in r.failure_rates.items() if x.count
    ]
    head = (
        f"FAILURE EVIDENCE (rates over all {r.conversations} conversations, {level:.0%} credible intervals):"
    )
    if not rates:
        return [head, "  none found"]
    return [head, *(f"  {line}" for line in rates)]


def _pct_interval(lo: float | None, hi: float | None) -> str:
    return "" if lo is None or hi is None else f" [{100 * lo:.1f}%, {100 * hi:.1f}%]"


def _grading_line(r: GroupStats, judge: str | None) -> str:
    by = ", ".join(f"{g} {n}" for g, n in r.graded_by.items()) or "none"
    labels = ", ".join(f"{o} {n}" for o, n in r.labels.items())
    judged = f"judge sample {r.sampled.get('judge', 0)} ({judge})" if judge else "no judge configured"
    line = f"GRADED BY: {by} · {judged} · review sample {r.sampled.get('review', 0)}"
    return line + (f" · labels (all conversations): {labels}" if labels else "")


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
    found = [f"{e} {_pct(x.rate)}" for e, x in g.failure_rates.items() if x.count]
    return f" | evidence: {', '.join(found)}" if found else ""


def _tag_order(keys: Sequence[str]) -> list[str]:
    first = [k for k in PREFERRED_TAGS if k in keys]
    return first + sorted(k for k in keys if k not in PREFERRED_TAGS)


def _baseline_lines(r: Report) -> list[str]:
    b = r.baseline
    if b is None:
        return []
    lines = [f"VS BASELINE ({b.source}):"]

    def row(name: str, d: Delta, higher_is_better: bool = True) -> str:
        mark = ""
        if d.delta is not None:
            mark = OK if (d.delta >= 0) == higher_is_better or d.delta == 0 else BAD
        return f"  {name}: {fmt(d.new)} vs {fmt(d.base)} ({_change(d)}) {mark}".rstrip()

    lines.append(row("success rate", b.success_rate))
    for k, d in b.pass_pow_k.items():
        if k != "1":
            lines.append(row(figure_name("pow", k, r.pass_pow_k.get(k)), d))
    lines.append(row("ASR", b.asr))
    if b.asr_intervals_overlap is not None:
        lines.append(f"  ASR intervals {'overlap' if b.asr_intervals_overlap else 'do not overlap'}")
    shifts = [
        f"{o} {100 * d.delta:+.1f} points"
        for o, d in b.outcome_share.items()
        if d.delta and abs(d.delta) > 0.02
    ]
    if shifts:
        lines.append("  outcome shifts above 2 points: " + ", ".join(shifts))
    worse = [
        name
        for name, ds in b.by_group.items()
        if any(d.delta is not None and d.delta < 0 for d in ds.values())
    ]
    if worse:
        lines.append("  lower than baseline in: " + ", ".join(worse[:8]) + (" …" if len(worse) > 8 else ""))
    for c in b.checks:
        prob = "n/a" if c.probability is None else f"{c.probability:.3f}"
        verdict = "REGRESSION" if c.regressed else "no regression"
        what = f"pass^{c.k} over units" if c.method == "tasks" else f"p^{c.k} under exchangeability"
        note = f" ({c.note})" if c.note else ""
        lines.append(
            f"  [{c.scope}] P({what} dropped by more than {c.margin:g}) = {prob}"
            f" (threshold {c.threshold:g}): {verdict}{note}"
        )
    lines.append("  REGRESSION DETECTED." if b.regression else "  No regression.")
    return lines


def gate_name(g: Gate) -> str:
    """A gate's name as shown: the pass^3 gate on p^3 under exchangeability says so."""
    return "p^3 (exchangeable)" if g.method == "exchangeable" and g.name == "pass^3" else g.name


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
        f"Conversations: {r.conversations} | Graded: {r.scored} (coverage {_pct(cov)}) | Tasks: {len(r.by_task)}"
    ]
    lines += [RULE, *_overall_lines(r, level), _grading_line(r, r.judge), *_evidence_lines(r, level)]
    outcomes = ", ".join(f"{k} {v}" for k, v in r.outcomes.items())
    lines.append(f"OUTCOMES: {outcomes}")
    tc = r.tool_correctness
    if any(v is not None for v in tc.values()):
        lines.append("TOOL CORRECTNESS: " + ", ".join(f"{k} {fmt(v)}" for k, v in tc.items()))
    c = r.cost
    lines.append(
        f"COST: P50 {_money(c.p50)} · P90 {_money(c.p90)} · P99 {_money(c.p99)} · "
        f"{_pct(c.over_budget_ratio)} over budget"
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
    lines += _baseline_lines(r)
    rd = r.readiness
    lines.append(
        f"READINESS: tier {rd.tier} ({rd.scope_note}; {rd.scope_scored} graded; gate on "
        f"{'the lower ' + format(level, '.0%') + ' credible bound' if rd.estimate == 'lower' else rd.estimate})"
    )
    for g in rd.gates:
        value = fmt(g.value) if g.name != "loops" or g.value is None else f"{g.value:.0f}"
        note = f" ({g.note})" if g.note else ""
        lines.append(f"  {gate_name(g)} {g.op} {g.threshold:g}: {value} {OK if g.passed else BAD}{note}")
    return lines


def _versions_lines(report: Report) -> list[str]:
    """One line per compared version: its regression check against its baseline."""
    lines = ["VERSIONS COMPARED:"]
    for section in report.versions:
        b = section.baseline
        if b is None:
            lines.append(f"  {section.agent_version}: baseline")
            continue
        checks = "; ".join(
            f"[{c.scope}] P(pass^{c.k} dropped by > {c.margin:g}) = "
            f"{'n/a' if c.probability is None else format(c.probability, '.3f')} ({c.method})"
            for c in b.checks
        )
        verdict = "REGRESSION" if b.regression else "no regression"
        lines.append(f"  {section.agent_version} vs {b.source}: {checks}: {verdict}")
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
    return [*lines, RULE, *_versions_lines(report), final_verdict(report), RULE]


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
