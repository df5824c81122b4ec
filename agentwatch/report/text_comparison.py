"""The text report's comparisons: a section against its baseline, and each compared version against its own."""

from __future__ import annotations

from agentwatch.report.model import Delta, Report
from agentwatch.report.text_metrics import figure_name
from agentwatch.report.wording import BAD, OK, change, fmt


def baseline_lines(r: Report) -> list[str]:
    """The VS BASELINE lines: each figure against the baseline's, the regression checks and their verdict."""
    b = r.baseline
    if b is None:
        return []
    lines = [f"VS BASELINE ({b.source}):"]

    def row(name: str, d: Delta, higher_is_better: bool = True) -> str:
        mark = ""
        if d.delta is not None:
            mark = OK if (d.delta >= 0) == higher_is_better or d.delta == 0 else BAD
        return f"  {name}: {fmt(d.new)} vs {fmt(d.base)} ({change(d)}) {mark}".rstrip()

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
        what = {
            "paired": f"pass^{c.k} on the units both attempted",
            "tasks": f"pass^{c.k} over units",
            "exchangeable": f"p^{c.k} under exchangeability",
        }[c.method]
        note = f" ({c.note})" if c.note else ""
        lines.append(
            f"  [{c.scope}] P({what} dropped by more than {c.margin:g}) = {prob}"
            f" (threshold {c.threshold:g}): {verdict}{note}"
        )
    lines.append("  REGRESSION DETECTED." if b.regression else "  No regression.")
    return lines


def versions_lines(report: Report) -> list[str]:
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
