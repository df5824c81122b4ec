"""Build the offline `Report` from a list of `ConversationScore`: estimates overall, per task, per tag, and the gate."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Literal

import numpy as np
from agentwatch.exporters.report_model import (
    BootstrapEstimate,
    CostStats,
    Estimate,
    FailureMode,
    Gate,
    GroupStats,
    KEstimate,
    RateEstimate,
    Readiness,
    Report,
)

from agentwatch.config import Settings
from agentwatch.schema import EVIDENCE, GRADERS, ConversationScore, Outcome
from agentwatch.stats import (
    BetaPosterior,
    bootstrap_mean_interval,
    pass_at_k_plugin,
    pass_at_k_unbiased,
    pass_pow_k_plugin,
    pass_pow_k_unbiased,
    posterior,
    task_mean,
)

_UNSAFE = re.compile(r"[^a-z0-9_]")
TOOL_DIMENSIONS = ("selection", "parameters", "sequence", "utilization", "overall", "binary")
# Reason codes that describe rather than fail (a person's label); not listed as failure modes.
INFORMATIONAL_CODES = frozenset({"label"})
GATE_ESTIMATES = ("plugin", "unbiased", "task_mean", "mean", "lower")


def _num(x: float | None) -> float | None:
    """None for missing or NaN values, else a float."""
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def failure_code(reason: str) -> str:
    """The failure mode of a reason: the short code before the first colon ("loop: ..." -> "loop")."""
    head = reason.split(":", 1)[0].strip().lower().split()
    return _UNSAFE.sub("_", head[0].replace("-", "_"))[:64] if head else "unknown"


def counts(scores: Iterable[ConversationScore]) -> tuple[int, int]:
    """(n, c): scored conversations and passed ones."""
    n = c = 0
    for s in scores:
        if s.passed is not None:
            n += 1
            c += bool(s.passed)
    return n, c


def per_task_counts(scores: Iterable[ConversationScore]) -> dict[str, tuple[int, int]]:
    """task -> (n, c)."""
    groups: dict[str, list[ConversationScore]] = defaultdict(list)
    for s in scores:
        groups[s.task].append(s)
    return {task: counts(group) for task, group in groups.items()}


def has_loop(score: ConversationScore) -> bool:
    """Whether any turn looped or a reason has the code `loop`."""
    return any(t.loop for t in score.turn_scores) or any(failure_code(r) == "loop" for r in score.reasons)


# The four estimates of each kind: unbiased, plug-in, posterior mean, posterior interval.
_K_FORMS = {
    "at": (pass_at_k_unbiased, pass_at_k_plugin, BetaPosterior.pass_at_k_mean,
           BetaPosterior.pass_at_k_interval),
    "pow": (pass_pow_k_unbiased, pass_pow_k_plugin, BetaPosterior.pass_pow_k_mean,
            BetaPosterior.pass_pow_k_interval),
}


def _k_estimate(
    n: int,
    c: int,
    k: int,
    per_task: dict[str, tuple[int, int]],
    settings: Settings,
    kind: Literal["at", "pow"],
) -> KEstimate:
    if n == 0:
        return KEstimate(unbiased=None, plugin=None, mean=None, lower=None, upper=None, task_mean=None)
    st = settings.stats
    post = posterior(n, c, st.prior_alpha, st.prior_beta)
    unbiased, plugin, mean, interval = _K_FORMS[kind]
    lo, hi = interval(post, k, st.level)
    return KEstimate(
        unbiased=_num(unbiased(n, c, k)),
        plugin=plugin(c / n, k),
        mean=mean(post, k),
        lower=lo,
        upper=hi,
        task_mean=task_mean(per_task, k, kind),
    )


def _success_rate(n: int, c: int, settings: Settings) -> Estimate:
    if n == 0:
        return Estimate(plugin=None, mean=None, lower=None, upper=None)
    st = settings.stats
    post = posterior(n, c, st.prior_alpha, st.prior_beta)
    lo, hi = post.interval(st.level)
    return Estimate(plugin=c / n, mean=post.mean(), lower=lo, upper=hi)


def _asr(scores: Sequence[ConversationScore], settings: Settings) -> BootstrapEstimate:
    credits = np.array([s.asr_credit for s in scores if s.scored and s.asr_credit is not None], dtype=float)
    if credits.size == 0:
        return BootstrapEstimate(value=None, lower=None, upper=None)
    st = settings.stats
    value, lo, hi = bootstrap_mean_interval(credits, st.level, st.bootstrap_resamples, st.seed)
    return BootstrapEstimate(value=value, lower=lo, upper=hi)


def _tool_correctness(scores: Sequence[ConversationScore]) -> dict[str, float | None]:
    values: dict[str, list[float]] = {d: [] for d in TOOL_DIMENSIONS}
    for s in scores:
        for t in s.turn_scores:
            if t.tool is None:
                continue
            values["selection"].append(t.tool.selection)
            values["parameters"].append(t.tool.parameters)
            values["sequence"].append(t.tool.sequence)
            if t.tool.utilization is not None:
                values["utilization"].append(t.tool.utilization)
            values["overall"].append(t.tool.overall)
            values["binary"].append(1.0 if t.tool.binary else 0.0)
    return {d: (math.fsum(v) / len(v) if v else None) for d, v in values.items()}


def _cost(scores: Sequence[ConversationScore]) -> CostStats:
    costs = np.array([s.cost_usd for s in scores if s.cost_usd is not None], dtype=float)
    budgeted = [s for s in scores if s.cost_usd is not None and s.budget_usd is not None]
    ratio = sum(1 for s in budgeted if s.cost_usd > s.budget_usd) / len(budgeted) if budgeted else None
    if costs.size == 0:
        return CostStats(p50=None, p90=None, p99=None, over_budget_ratio=ratio)
    p50, p90, p99 = np.percentile(costs, [50, 90, 99])
    return CostStats(p50=float(p50), p90=float(p90), p99=float(p99), over_budget_ratio=ratio)


def _failure_modes(scores: Sequence[ConversationScore]) -> list[FailureMode]:
    counter: Counter[str] = Counter()
    for s in scores:
        counter.update({failure_code(r) for r in s.reasons} - INFORMATIONAL_CODES)
    return [FailureMode(mode=m, count=n) for m, n in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))]


def _rate(x: int, n: int, settings: Settings) -> RateEstimate:
    if n == 0:
        return RateEstimate(count=x, rate=None, mean=None, lower=None, upper=None)
    st = settings.stats
    post = posterior(n, x, st.prior_alpha, st.prior_beta)
    lo, hi = post.interval(st.level)
    return RateEstimate(count=x, rate=x / n, mean=post.mean(), lower=lo, upper=hi)


def failure_rates(scores: Sequence[ConversationScore], settings: Settings) -> dict[str, RateEstimate]:
    """Each kind of failure evidence as a rate over all of `scores`, with a Beta credible interval."""
    found = Counter(e for s in scores for e in set(s.evidence))
    return {e: _rate(found.get(e, 0), len(scores), settings) for e in EVIDENCE}


def latest_revisions(scores: Iterable[ConversationScore]) -> list[ConversationScore]:
    """One score per conversation (agent, id): the highest revision, the later one on a tie; first-seen order."""
    kept: dict[tuple[str, str], ConversationScore] = {}
    for s in scores:
        old = kept.get(s.identity)
        if old is None or s.revision >= old.revision:
            kept[s.identity] = s
    return list(kept.values())


def group_stats(scores: Sequence[ConversationScore], settings: Settings, ks: Sequence[int]) -> GroupStats:
    """Every estimate of the report for one set of conversations."""
    n, c = counts(scores)
    per_task = per_task_counts(s for s in scores if s.scored)
    outcomes = Counter(s.outcome.value for s in scores)
    graded_by = Counter(g for s in scores if s.scored for g in set(s.graded_by))
    labels = Counter(s.label.value for s in scores if s.label is not None)
    return GroupStats(
        conversations=len(scores),
        scored=n,
        passed=c,
        failure_rates=failure_rates(scores, settings),
        graded_by={g: graded_by[g] for g in GRADERS if graded_by.get(g)},
        sampled={
            "judge": sum(1 for s in scores if s.judge_sampled),
            "review": sum(1 for s in scores if s.review_sampled),
        },
        labels={o.value: labels[o.value] for o in Outcome if labels.get(o.value)},
        success_rate=_success_rate(n, c, settings),
        pass_at_k={str(k): _k_estimate(n, c, k, per_task, settings, "at") for k in ks},
        pass_pow_k={str(k): _k_estimate(n, c, k, per_task, settings, "pow") for k in ks},
        asr=_asr(scores, settings),
        outcomes={o.value: outcomes.get(o.value, 0) for o in Outcome},
        tool_correctness=_tool_correctness(scores),
        cost=_cost(scores),
        failure_modes=_failure_modes(scores),
    )


def gate_value(
    scores: Sequence[ConversationScore], settings: Settings, k: int, kind: str, estimate: str
) -> float | None:
    """pass@k (kind 'at') or pass^k ('pow') of `scores` by the named estimate; None without enough data."""
    n, c = counts(scores)
    if n == 0:
        return None
    if estimate == "plugin":
        p = c / n
        return pass_at_k_plugin(p, k) if kind == "at" else pass_pow_k_plugin(p, k)
    if estimate == "unbiased":
        fn = pass_at_k_unbiased if kind == "at" else pass_pow_k_unbiased
        return _num(fn(n, c, k))
    if estimate == "task_mean":
        return task_mean(per_task_counts(s for s in scores if s.scored), k, kind)  # type: ignore[arg-type]
    st = settings.stats
    post = posterior(n, c, st.prior_alpha, st.prior_beta)
    if estimate == "mean":
        return post.pass_at_k_mean(k) if kind == "at" else post.pass_pow_k_mean(k)
    if estimate == "lower":
        return (
            post.pass_at_k_interval(k, st.level) if kind == "at" else post.pass_pow_k_interval(k, st.level)
        )[0]
    raise ValueError(f"unknown gate estimate {estimate!r}; choose one of {GATE_ESTIMATES}")


def gate_scope(
    scores: Sequence[ConversationScore], settings: Settings
) -> tuple[str, list[ConversationScore], str]:
    """The conversations the gate applies to: core-tagged ones, or all of them when none is tagged core."""
    g = settings.gate
    core = [s for s in scores if s.tags.get(g.core_tag) in g.core_values]
    values = "|".join(g.core_values)
    if core:
        return "core", core, f"gated on core tasks ({g.core_tag}={values})"
    return "all", list(scores), f"no conversation tagged {g.core_tag}={values}: gated on all conversations"


def _gate(name: str, value: float | None, threshold: float, op: str) -> Gate:
    """A gate check; a missing value never passes."""
    passed = value is not None and (value >= threshold if op == ">=" else value <= threshold)
    return Gate(name=name, value=value, threshold=threshold, op=op, passed=passed)


def readiness(scores: Sequence[ConversationScore], settings: Settings) -> Readiness:
    """Readiness tier and release gate (pass@1, pass^3 on core tasks, loops) for `scores`."""
    g = settings.gate
    estimate = g.estimate
    scope, chosen, note = gate_scope(scores, settings)
    n, c = counts(chosen)
    at1 = gate_value(chosen, settings, 1, "at", estimate)
    pow3 = gate_value(chosen, settings, 3, "pow", estimate)
    loops = sum(1 for s in scores if has_loop(s))
    gates = [
        _gate("pass@1", at1, g.pass_at_1_min, ">="),
        _gate("pass^3", pow3, g.pass_pow_3_min, ">="),
        _gate("loops", float(loops), float(g.max_loops), "<="),
    ]
    if n < g.min_conversations:  # too little evidence to ship on, whatever the estimates say
        why = f"not enough conversations: {n} graded, at least {g.min_conversations} needed (gate.min_conversations)"
        for gate in gates[:2]:
            gate.passed, gate.note = False, why
    tier = "unknown"
    if n > 0:
        p = c / n
        tier = next(
            (
                t.name
                for t in settings.tiers
                if p >= t.pass_at_1_min and pass_pow_k_plugin(p, 3) >= t.pass_pow_3_min
            ),
            "none",
        )
    safe = all(gate.passed for gate in gates)
    return Readiness(
        tier=tier,
        scope=scope,
        scope_note=note,
        scope_conversations=len(chosen),
        scope_scored=n,
        scope_passed=c,
        estimate=estimate,
        gates=gates,
        safe_to_ship=safe,
        verdict="SAFE TO SHIP" if safe else "DO NOT SHIP",
    )


def build_report(
    scores: Sequence[ConversationScore], settings: Settings, ks: Sequence[int] | None = None
) -> Report:
    """The report of `scores`: overall, by task, by tag, readiness (baseline is added by `compare_baseline`).

    A conversation scored more than once (a later label publishes a revision) counts once, at its latest revision.
    """
    ks = sorted(set(ks if ks is not None else settings.stats.ks))
    scores = latest_revisions(scores)
    overall = group_stats(scores, settings, ks)
    by_task_groups: dict[str, list[ConversationScore]] = defaultdict(list)
    by_tag_groups: dict[str, dict[str, list[ConversationScore]]] = defaultdict(lambda: defaultdict(list))
    for s in scores:
        by_task_groups[s.task].append(s)
        for key, value in s.tags.items():
            by_tag_groups[key][value].append(s)
    return Report(
        **overall.model_dump(),
        by_task={t: group_stats(g, settings, ks) for t, g in sorted(by_task_groups.items())},
        by_tag={
            key: {v: group_stats(g, settings, ks) for v, g in sorted(values.items())}
            for key, values in sorted(by_tag_groups.items())
        },
        readiness=readiness(scores, settings),
    )
