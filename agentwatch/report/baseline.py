"""Compare a report with a previous one (`--baseline REPORT.json`): deltas and a Bayesian regression verdict."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

from pydantic import ValidationError

from agentwatch.config import Settings
from agentwatch.report.model import (
    BaselineComparison,
    CheckMethod,
    Delta,
    GroupStats,
    RegressionCheck,
    Report,
    UnitsSummary,
)
from agentwatch.stats import units as unit_stats
from agentwatch.stats.beta import posterior, regression_probability
from agentwatch.stats.paired import (
    MIN_SHARED_UNITS,
    PairedDifference,
    paired_difference,
    paired_regression_probability,
)
from agentwatch.wire.schema import Outcome

REGRESSION_K = 3


class BaselineError(ValueError):
    """The baseline report cannot be read or is not a report."""


WRITE_ONE = (
    "a baseline is the JSON report of an earlier run: `agentwatch score FILE --format json --out FILE`"
)


def _what_it_is(raw: bytes, data: object) -> str | None:
    """What a file given as a baseline holds instead of a report (transcripts, another format), if known."""
    if isinstance(data, dict) and ("turns" in data or "conversation_id" in data):
        return "one transcript"
    if isinstance(data, list):
        return "a JSON array (transcripts or a benchmark's results?)"
    if data is not None:
        return None
    first = raw.lstrip().split(b"\n", 1)[0]
    try:
        line = json.loads(first)
    except (ValueError, RecursionError):
        return None
    if isinstance(line, dict):
        kind = "transcripts" if "turns" in line or "conversation_id" in line else "scores or other records"
        return f"JSON Lines ({kind}), one object per line"
    return None


def load_baseline(path: str | Path) -> Report:
    """Read a JSON report written by `agentwatch score --format json`; raise BaselineError."""
    try:
        raw = Path(path).read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise BaselineError(f"cannot read baseline {path}: {getattr(exc, 'strerror', None) or exc}") from exc
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BaselineError(
            f"baseline {path} is not a JSON report (not UTF-8 text at byte {exc.start}); write one with "
            "`agentwatch score ... --format json --out FILE`"
        ) from exc
    except (json.JSONDecodeError, RecursionError) as exc:
        held = _what_it_is(raw, None) if isinstance(exc, json.JSONDecodeError) else None
        if held is not None:
            raise BaselineError(f"baseline {path} holds {held}, not a report: {WRITE_ONE}") from exc
        where = (
            f": {exc.msg} at line {exc.lineno}"
            if isinstance(exc, json.JSONDecodeError)
            else ": nested too deeply"
        )
        raise BaselineError(f"baseline {path} is not JSON{where}; {WRITE_ONE}") from exc
    held = _what_it_is(raw, data)
    if held is not None:
        raise BaselineError(f"baseline {path} holds {held}, not a report: {WRITE_ONE}")
    if isinstance(data, dict):
        data.pop("baseline", None)  # a baseline's own comparison is not needed
        data.pop("versions", None)  # nor the other versions of its input
    try:
        return Report.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"]) or "<root>"
        raise BaselineError(
            f"baseline {path} is not an agentwatch report ({key}: {first['msg']}): {WRITE_ONE}"
        ) from exc


def _delta(new: float | None, base: float | None) -> Delta:
    return Delta(new=new, base=base, delta=None if new is None or base is None else new - base)


def _share(group: GroupStats, outcome: str) -> float | None:
    scored = sum(v for k, v in group.outcomes.items() if k != Outcome.UNSCORED.value)
    return group.outcomes.get(outcome, 0) / scored if scored else None


def _repeated(units: UnitsSummary | None) -> bool:
    return units is not None and units.repeated > 0


def _over_units(new: UnitsSummary, base: UnitsSummary, margin: float) -> tuple[float | None, str | None]:
    """P(pass^k_new < pass^k_base - margin) over the two units' populations, or None and why not."""
    found = []
    for side in (new, base):
        model = unit_stats.UnitsPosterior(unit_stats.UnitCounts.from_pairs(side.pairs))
        found.append(model.distribution(REGRESSION_K, "pow"))
    if found[0] is None or found[1] is None:
        which = "the new report" if found[0] is None else "the baseline"
        k = REGRESSION_K
        return None, f"pass^{k} not identified in {which}: no unit has {k} graded attempts"
    return unit_stats.regression_probability(found[0], found[1], margin), None


def _paired(new: UnitsSummary, base: UnitsSummary) -> PairedDifference | None:
    """pass^k differences on the units both reports name with k attempts (None when they share none)."""

    def by_key(units: UnitsSummary) -> dict[tuple[str, str, str | None], tuple[int, int]]:
        return {(agent, task, instance): (n, c) for agent, task, instance, n, c in units.by_unit}

    return paired_difference(by_key(new), by_key(base), REGRESSION_K)


def _paired_note(diff: PairedDifference) -> str:
    """What a paired check compared: the shared units, the mean difference and its spread, the units left out."""
    note = (
        f"{diff.units} units attempted {REGRESSION_K}+ times by both: mean pass^{REGRESSION_K} difference "
        f"{diff.mean:+.3f} (sd {diff.sd:.3f})"
    )
    if diff.only_new or diff.only_base:
        note += f"; not paired: {diff.only_new} units only in the new report, {diff.only_base} only in the baseline"
    return note


def _check(
    scope: str,
    new: tuple[int, int, UnitsSummary | None],
    base: tuple[int, int, UnitsSummary | None],
    settings: Settings,
) -> RegressionCheck:
    """The regression check of one scope: paired on shared units, else over units when both sides repeat
    attempts, else pooled Beta."""
    g, st = settings.gate, settings.stats
    (n_new, c_new, units_new), (n_base, c_base, units_base) = new, base
    prob, note = None, None
    method: CheckMethod = "tasks" if _repeated(units_new) and _repeated(units_base) else "exchangeable"
    if method == "tasks":
        assert units_new is not None and units_base is not None
        diff = _paired(units_new, units_base)
        if diff is not None and diff.units >= MIN_SHARED_UNITS:
            method = "paired"
            prob, note = paired_regression_probability(diff, g.regression_margin), _paired_note(diff)
        else:
            prob, note = _over_units(units_new, units_base, g.regression_margin)
            if diff is not None and note is None:
                note = (
                    f"{diff.units} shared units with {REGRESSION_K}+ attempts on both sides, fewer than the "
                    f"{MIN_SHARED_UNITS} a paired comparison needs: compared as independent populations"
                )
    elif n_new > 0 and n_base > 0:
        post_new = posterior(n_new, c_new, st.prior_alpha, st.prior_beta)
        post_base = posterior(n_base, c_base, st.prior_alpha, st.prior_beta)
        prob = regression_probability(post_new, post_base, REGRESSION_K, g.regression_margin)
        if _repeated(units_new) or _repeated(units_base):
            note = (
                f"only one side has repeated attempts: p^{REGRESSION_K} of pooled success probabilities "
                "under exchangeability compared"
            )
    return RegressionCheck(
        scope=scope,
        k=REGRESSION_K,
        margin=g.regression_margin,
        method=method,
        probability=prob,
        threshold=g.regression_probability,
        regressed=prob is not None and prob >= g.regression_probability,
        note=note,
    )


def _group_deltas(new: GroupStats, base: GroupStats) -> dict[str, Delta]:
    out = {}
    if "1" in new.pass_at_k and "1" in base.pass_at_k:
        out["pass@1"] = _delta(new.pass_at_k["1"].value, base.pass_at_k["1"].value)
    else:
        out["pass@1"] = _delta(new.success_rate.plugin, base.success_rate.plugin)
    if "3" in new.pass_pow_k and "3" in base.pass_pow_k:
        out["pass^3"] = _delta(new.pass_pow_k["3"].value, base.pass_pow_k["3"].value)
    return out


def compare_baseline(report: Report, base: Report, settings: Settings, source: str) -> BaselineComparison:
    """Deltas of `report` against `base` and the regression checks (overall, and the gate's core scope)."""
    ks = [k for k in report.pass_at_k if k in base.pass_at_k]
    checks = [
        _check(
            "all",
            (report.scored, report.passed, report.units),
            (base.scored, base.passed, base.units),
            settings,
        )
    ]
    r, b = report.readiness, base.readiness
    if r.scope == "core" and b.scope == "core":
        checks.append(
            _check(
                "core",
                (r.scope_scored, r.scope_passed, r.scope_units),
                (b.scope_scored, b.scope_passed, b.scope_units),
                settings,
            )
        )
    by_group: dict[str, dict[str, Delta]] = {}
    for task, group in report.by_task.items():
        if task in base.by_task:
            by_group[f"task:{task}"] = _group_deltas(group, base.by_task[task])
    for key, values in report.by_tag.items():
        for value, group in values.items():
            if value in base.by_tag.get(key, {}):
                by_group[f"tag:{key}={value}"] = _group_deltas(group, base.by_tag[key][value])
    overlap = None
    a, z = report.asr, base.asr
    if a.lower is not None and a.upper is not None and z.lower is not None and z.upper is not None:
        overlap = not (a.upper < z.lower or z.upper < a.lower)
    g = settings.gate
    rule = (
        f"regression when P(pass^{REGRESSION_K}_new < pass^{REGRESSION_K}_base - {g.regression_margin:g}) "
        f">= {g.regression_probability:g}, overall and on core tasks when both reports have them; when both "
        f"sides repeat attempts, pass^{REGRESSION_K} is the mean over each version's population of units: "
        f"the units both attempted {REGRESSION_K}+ times are paired when there are {MIN_SHARED_UNITS} or more "
        f"(Student's t posterior of the mean per-unit difference), else the two populations' posteriors are "
        f"independent; without repeats p^{REGRESSION_K} of pooled "
        f"Beta posteriors (prior Beta({settings.stats.prior_alpha:g}, {settings.stats.prior_beta:g})) under "
        "exchangeability"
    )
    return BaselineComparison(
        source=source,
        success_rate=_delta(report.success_rate.plugin, base.success_rate.plugin),
        pass_at_k={k: _delta(report.pass_at_k[k].value, base.pass_at_k[k].value) for k in ks},
        pass_pow_k={
            k: _delta(report.pass_pow_k[k].value, base.pass_pow_k[k].value)
            for k in ks
            if k in report.pass_pow_k and k in base.pass_pow_k
        },
        asr=_delta(report.asr.value, base.asr.value),
        asr_intervals_overlap=overlap,
        outcome_share={
            o.value: _delta(_share(report, o.value), _share(base, o.value))
            for o in Outcome
            if o is not Outcome.UNSCORED
        },
        by_group=by_group,
        checks=checks,
        rule=rule,
        regression=any(c.regressed for c in checks),
    )
