"""The METRICS lines of the text report: success rate (corrected, over units or pooled), pass^k and pass@k
(over units or under exchangeability), ASR, and what a correction by people's labels rests on."""

from __future__ import annotations

from agentwatch.report.model import GroupStats, JudgeOnly, KEstimate, UnitsSummary
from agentwatch.report.wording import fmt, interval


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
            f"  {name}: {fmt(e.value)}{interval(e.lower, e.upper)} (of the corrected success rate"
            f"{_judge_only(e.judge_only)})"
        )
    if e.method == "exchangeable":
        return (
            f"  {name}: {fmt(e.value)}{interval(e.lower, e.upper)} (pooled Beta posterior; plug-in "
            f"{fmt(e.pooled_plugin)}, unbiased {fmt(e.pooled_unbiased)})"
        )
    pooled_name = f"p^{k}" if kind == "pow" else f"1-(1-p)^{k}"
    holds = _HOLDS[e.holds] if e.holds is not None else ""
    widened = holds + (", widened to include the value" if e.widened else "")
    return (
        f"  {name}: {fmt(e.value)}{interval(e.lower, e.upper)} (mean over {e.units} units with >= {k} "
        f"attempts; {e.interval} interval{widened}; pooled {pooled_name} under exchangeability "
        f"{fmt(e.pooled_mean)})"
    )


# what a hierarchical interval was widened to hold, as the line says it
_HOLDS = {
    "alike": ", widened to hold one rate's (the units look alike)",
    "nonparametric": ", widened to hold the nonparametric one (the units differ)",
}


def metrics_lines(r: GroupStats, level: float) -> list[str]:
    """The METRICS lines of a group at credible level `level`, or why there are none (nothing graded)."""
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
            f"  success rate: {fmt(sr.plugin)}{interval(sr.lower, sr.upper)} corrected by "
            f"{sr.labels} labels of the blind review sample (PPI++){_judge_only(sr.judge_only)}"
        )
    elif sr.method == "tasks":
        lines.append(
            f"  success rate: {fmt(sr.plugin)}{interval(sr.lower, sr.upper)} over units (pass^1: the "
            f"mean of each unit's share of passing attempts; {r.passed}/{r.scored} graded passed)"
        )
    else:
        weighted = " (Hájek-weighted: sampled at different rates)" if sr.method == "weighted" else ""
        edge = ""
        lo, hi, share, mean = sr.lower, sr.upper, sr.plugin, sr.mean
        if (
            lo is not None
            and hi is not None
            and share is not None
            and mean is not None
            and not lo <= share <= hi
        ):
            # all passed (or none): the equal-tailed interval of the posterior leaves the observed share out
            edge = f"; posterior mean {fmt(mean)}, the interval of a share at 0 or 1 leaves it out"
        lines.append(
            f"  success rate: {fmt(sr.plugin)} ({r.passed}/{r.scored} graded passed)"
            f"{interval(sr.lower, sr.upper)}{weighted}{edge}"
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
            f"  ASR: {fmt(a.value)}{interval(a.lower, a.upper)} (corrected, PPI++ t interval)"
            f"{_judge_only(a.judge_only)}"
        )
    elif a.method == "units":
        lines.append(
            f"  ASR: {fmt(a.value)}{interval(a.lower, a.upper)} (mean over {a.units} units of their mean "
            "credit; bootstrap over units, as attempts at one unit are not independent)"
        )
    else:
        lines.append(f"  ASR: {fmt(a.value)}{interval(a.lower, a.upper)} (bootstrap)")
    return lines


def _judge_only(j: JudgeOnly | None) -> str:
    return "" if j is None else f"; judge only {fmt(j.mean)}{interval(j.lower, j.upper)}"


def _correction_lines(r: GroupStats) -> list[str]:
    """What the correction by people's labels rests on, and the corrected outcome shares."""
    c = r.correction
    assert c is not None
    lines = [f"  people's labels: {c.note}"]
    if c.enough and c.outcome_share:
        shares = ", ".join(
            f"{o} {fmt(f.value)}{interval(f.lower, f.upper)} (judge only {fmt(f.judge_only)})"
            for o, f in c.outcome_share.items()
        )
        lines.append(f"  outcome shares, corrected: {shares}")
    elif not c.enough and c.success_rate is not None:
        f = c.success_rate
        lines.append(
            f"  (with so few labels: corrected {fmt(f.value)}{interval(f.lower, f.upper)}, judge "
            f"only {fmt(f.judge_only)}{interval(f.judge_only_lower, f.judge_only_upper)})"
        )
    if c.enough and not c.asr_enough:
        lines.append(f"  ASR not corrected: its interval needs {c.min_asr_labels} labels")
    return lines
