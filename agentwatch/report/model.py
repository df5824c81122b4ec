"""The offline report as pydantic models: the stable JSON of `agentwatch score --format json`.

Every estimate that cannot be computed (no scored conversation, k larger than n for the unbiased estimator,
no cost known) is `null`, never NaN.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentwatch.report.label_agreement import LabelAgreement
from agentwatch.stats.corrected import CorrectedFigure

Method = Literal["tasks", "exchangeable"]
CheckMethod = Literal["paired", "tasks", "exchangeable"]
IntervalKind = Literal["hierarchical", "nonparametric", "beta"]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


SuccessMethod = Literal["beta", "weighted", "corrected", "tasks"]


class JudgeOnly(_Out):
    """What the automated verdicts alone say (judge, policies, expectations), without people's labels."""

    mean: float = Field(description="Posterior mean (Beta prior + Kish effective counts of the verdicts).")
    lower: float = Field(description="Lower bound at stats.level.")
    upper: float = Field(description="Upper bound at stats.level.")


class Estimate(_Out):
    """A success probability: plug-in, posterior mean and equal-tailed credible bounds — corrected by people's
    labels when a blind review sample of automatically graded conversations carries enough of them."""

    plugin: float | None = Field(
        description="beta: c / n over scored conversations; weighted: the Hájek share; corrected: the PPI "
        "estimate."
    )
    mean: float | None = Field(
        description="Posterior mean (Beta prior + counts); corrected: the PPI estimate."
    )
    lower: float | None = Field(description="Lower bound at stats.level.")
    upper: float | None = Field(description="Upper bound at stats.level.")
    method: SuccessMethod = Field(
        default="beta",
        description="beta: Beta posterior of the graded counts; weighted: graded conversations were sampled "
        "at different rates, the Hájek share with Kish's effective counts; corrected: the automated verdicts "
        "corrected by the labels of the blind review sample (PPI++); tasks: with repeated attempts at task "
        "instances, pass^1 over units (the mean of each unit's share of passing attempts, with the interval "
        "over units), as attempts at one unit are not independent.",
    )
    labels: int = Field(
        default=0,
        description="Review-sample labels on automatically graded conversations (what corrections rest on).",
    )
    judge_only: JudgeOnly | None = Field(
        default=None,
        description="With review-sample labels: the automated verdicts alone, beside the figure.",
    )
    note: str | None = Field(default=None, description="Why a figure with labels is not corrected.")


class Correction(_Out):
    """What the correction by people's labels rests on, and the corrected outcome shares."""

    labels: int = Field(
        description="Labelled conversations of the blind review sample with an automated verdict."
    )
    predictions: int = Field(description="Conversations with an automated verdict.")
    labels_judge_passed: int = Field(description="Labelled conversations the automated graders passed.")
    labels_judge_failed: int = Field(description="Labelled conversations the automated graders failed.")
    enough: bool = Field(description="Enough labels for the figures to be called corrected (the headlines).")
    min_labels: int = Field(
        description="Labels needed (and one where the graders passed and one where they failed)."
    )
    asr_enough: bool = Field(description="Enough labels for ASR to be called corrected.")
    min_asr_labels: int = Field(description="Labels ASR's correction needs (its t interval needs more).")
    lam: float = Field(
        description="PPI++'s λ of the success rate (the slope a − b of its post-stratification)."
    )
    note: str = Field(description="The correction in words.")
    success_rate: CorrectedFigure | None = None
    asr: CorrectedFigure | None = None
    outcome_share: dict[str, CorrectedFigure] = Field(
        default_factory=dict,
        description="Share of each outcome class among the conversations with a verdict.",
    )


class KEstimate(_Out):
    """pass@k or pass^k for one k: the headline (value, lower, upper, method) and the pooled detail."""

    value: float | None = Field(
        description="The figure to read. method tasks: mean over the units with >= k graded attempts of the "
        "per-unit unbiased estimate (τ-bench's estimator); exchangeable: posterior mean of p^k (or "
        "1-(1-p)^k) of one pooled success probability. Null when no unit has k attempts."
    )
    lower: float | None = Field(description="Lower bound of the headline interval at stats.level.")
    upper: float | None = Field(description="Upper bound of the headline interval at stats.level.")
    method: Method = Field(
        description="tasks: some unit has repeated attempts, the figure is over units; exchangeable: no "
        "repeats, the figure is p^k of one pooled success probability (pass^k of the same task is not "
        "identified)."
    )
    interval: IntervalKind | None = Field(
        description="hierarchical (Beta-binomial posterior over the units' population, < 50 units with k "
        "attempts; widened to hold the pooled rate's interval where the units look alike, the nonparametric one "
        "where 20 or more differ), "
        "nonparametric (design-effect Jeffreys interval, Clopper-Pearson's bounds at up to two successes or "
        "failures, >= 50 units), or beta (pooled Beta posterior)."
    )
    units: int | None = Field(description="method tasks: the units with k or more graded attempts")
    widened: bool = Field(
        default=False, description="The interval was widened to include the value (e.g. every unit passed)."
    )
    holds: Literal["alike", "nonparametric"] | None = Field(
        default=None,
        description="interval hierarchical: the interval it was widened to hold, where that widened it: alike (the "
        "units' passes look alike, a dispersion test at 5%: the interval every unit at the pooled rate would give) "
        "or nonparametric (20 or more units that differ: the design-effect interval, which needs no model of how "
        "they differ). Null where neither widened it.",
    )
    pooled_unbiased: float | None = Field(
        description="Hypergeometric estimate from the pooled n, c (unbiased only under exchangeability); "
        "null when k > n."
    )
    pooled_plugin: float | None = Field(description="1-(1-c/n)^k or (c/n)^k of the pooled c/n.")
    pooled_mean: float | None = Field(description="Posterior mean of the pooled Beta posterior (closed form)")
    pooled_lower: float | None = Field(description="Lower bound of the pooled Beta posterior (quantile^k)")
    pooled_upper: float | None = Field(description="Upper bound of the pooled Beta posterior (quantile^k)")
    task_mean: float | None = Field(
        description="Mean over task families (`task`) with n >= k of the per-task unbiased estimate."
    )
    corrected: bool = Field(
        default=False,
        description="exchangeable: value and bounds transform the success rate corrected by "
        "people's labels (the pooled fields stay the graded counts').",
    )
    judge_only: JudgeOnly | None = Field(
        default=None, description="When corrected: the automated verdicts' figure."
    )

    @model_validator(mode="before")
    @classmethod
    def _earlier_format(cls, data: Any) -> Any:
        """A report written before the headline fields: its pooled Beta posterior was the figure."""
        if isinstance(data, dict) and "method" not in data and "unbiased" in data:
            old = dict(data)
            return {
                "value": old.get("mean"),
                "lower": old.get("lower"),
                "upper": old.get("upper"),
                "method": "exchangeable",
                "interval": "beta",
                "units": None,
                "pooled_unbiased": old.get("unbiased"),
                "pooled_plugin": old.get("plugin"),
                "pooled_mean": old.get("mean"),
                "pooled_lower": old.get("lower"),
                "pooled_upper": old.get("upper"),
                "task_mean": old.get("task_mean"),
            }
        return data


class UnitsSummary(_Out):
    """The units of a group: what repeated attempts are attempts at, and how many each got."""

    units: int = Field(description="Units with at least one graded conversation.")
    repeated: int = Field(description="Units with two or more graded conversations.")
    max_attempts: int = Field(description="The most graded conversations of one unit.")
    without_unit: int = Field(
        description="Graded conversations naming neither instance nor attempt: each is a unit of its own"
    )
    pairs: list[tuple[int, int, int]] = Field(
        default_factory=list, description="[n, c, units]: how many units had n graded attempts with c passes."
    )
    by_unit: list[tuple[str, str, str | None, int, int]] = Field(
        default_factory=list,
        description="[agent, task, instance, n, c] of each unit a conversation named (instance null when only "
        "attempts were named): what a later report pairs its units with (`--baseline`). Listed for the report "
        "and its gated scope, not for each task or tag.",
    )


class BootstrapEstimate(_Out):
    """A mean with a percentile-bootstrap interval, or corrected by people's labels."""

    value: float | None
    lower: float | None
    upper: float | None
    method: Literal["bootstrap", "units", "corrected"] = Field(
        default="bootstrap",
        description="bootstrap: over the graded credits; units: with repeated attempts at task instances, the "
        "mean over units of each unit's mean credit, with a bootstrap over units (expanded percentile "
        "interval); where the credits (units: their means) do not vary, either interval is the Beta "
        "posterior's of the credits taken as successes and failures; corrected: PPI++ with a t interval.",
    )
    units: int | None = Field(
        default=None,
        description="method units: the units resampled (a graded conversation naming none is one).",
    )
    judge_only: JudgeOnly | None = Field(
        default=None, description="When corrected: the automated credits' mean."
    )


class CostStats(_Out):
    """Cost distribution of the conversations with a known cost."""

    p50: float | None
    p90: float | None
    p99: float | None
    over_budget_ratio: float | None = Field(
        description="Share of conversations with cost and ceiling above it."
    )


class RateEstimate(_Out):
    """A rate over all conversations (graded or not): count, plug-in share, posterior mean and credible bounds."""

    count: int = Field(description="Conversations with this evidence.")
    rate: float | None = Field(description="count / conversations.")
    mean: float | None = Field(description="Posterior mean (Beta prior + counts).")
    lower: float | None = Field(description="Lower credible bound at stats.level.")
    upper: float | None = Field(description="Upper credible bound at stats.level.")


class FailureMode(_Out):
    """A failure mode (reason code), how many conversations have it, and the first of them."""

    mode: str
    count: int
    conversations: list[str] = Field(
        default_factory=list,
        description="Ids of the first conversations with this mode, in input order (at most --examples; "
        "listed in the report and its sections, not in by_task / by_tag groups).",
    )
    example: str | None = Field(
        default=None,
        description="The first conversation with this mode and its reason, `id: code: text` (a failing "
        "comparison names the differing value's path and both values).",
    )


class GroupStats(_Out):
    """All estimates for one set of conversations (everything, one task, or one tag value)."""

    conversations: int = Field(ge=0, description="Conversations read (graded or not; one per agent and id).")
    scored: int = Field(
        ge=0, description="Conversations in the graded sample, with a verdict (n of the pass rates and ASR)."
    )
    passed: int = Field(ge=0, description="Graded conversations that passed (c).")
    failure_rates: dict[str, RateEstimate] = Field(
        default_factory=dict,
        description="Failure evidence (error, no_answer, loop, hallucination, over_budget, forbidden_tool) as "
        "rates over ALL conversations, graded or not.",
    )
    graded_by: dict[str, int] = Field(
        default_factory=dict, description="Graded conversations per grader (one may have several)."
    )
    sampled: dict[str, int] = Field(
        default_factory=dict, description="Conversations in the judge and in the review sample."
    )
    labels: dict[str, int] = Field(
        default_factory=dict,
        description="Conversations per label outcome, graded or not (feedback is not a random sample).",
    )
    success_rate: Estimate
    correction: Correction | None = Field(
        default=None, description="With labels on the blind review sample: what the correction rests on."
    )
    units: UnitsSummary | None = Field(
        default=None, description="Units of the graded conversations, their attempts and passes"
    )
    pass_at_k: dict[str, KEstimate] = Field(description="Keyed by k as a string.")
    pass_pow_k: dict[str, KEstimate] = Field(description="Keyed by k as a string.")
    asr: BootstrapEstimate
    outcomes: dict[str, int] = Field(
        description="Conversations per outcome class (every class, unscored too)."
    )
    tool_correctness: dict[str, float | None] = Field(
        description="Mean per dimension over tool-graded turns."
    )
    cost: CostStats
    failure_modes: list[FailureMode] = Field(
        description="Reason codes by conversation count, most frequent first (why a conversation failed; "
        "why one was not graded is under `ungraded`)."
    )
    ungraded: dict[str, int] = Field(
        default_factory=dict,
        description="Conversations outside the graded sample by why (no_grader, judge_timeout, …): "
        "coverage, not a failure mode.",
    )

    @model_validator(mode="after")
    def _counts(self) -> GroupStats:
        """passed ≤ scored ≤ conversations (a baseline edited by hand may say otherwise)."""
        if not self.passed <= self.scored <= self.conversations:
            raise ValueError(
                f"passed {self.passed}, scored {self.scored} and conversations {self.conversations} "
                "are not passed <= scored <= conversations"
            )
        return self


MALFORMED_GATE = "malformed lines"
# gates whose value is a count, shown as a whole number
COUNTED_GATES = frozenset({"loops", MALFORMED_GATE})


class Gate(_Out):
    """One check of the release gate."""

    name: str
    value: float | None
    threshold: float
    op: str = Field(description="'>=' or '<='.")
    method: Method | None = Field(
        default=None, description="pass@1 / pass^3 gates: whether the figure is over units or exchangeable."
    )
    passed: bool
    note: str | None = Field(default=None, description="Why the check could not pass, when not by its value.")


class Readiness(_Out):
    """Readiness tier and release gate verdict."""

    tier: str = Field(
        description="First configured tier whose minimums hold (plug-in estimates, gate scope)."
    )
    scope: str = Field(description="'core' (conversations tagged core) or 'all' when none is tagged core.")
    scope_note: str
    scope_conversations: int
    scope_scored: int
    scope_passed: int
    scope_units: UnitsSummary | None = Field(default=None, description="Units of the gated conversations.")
    estimate: str = Field(description="Which estimate the pass@1 / pass^3 gates compare (gate.estimate).")
    gates: list[Gate]
    safe_to_ship: bool
    verdict: str = Field(description="'SAFE TO SHIP' or 'DO NOT SHIP'.")


class Delta(_Out):
    """New value, baseline value and their difference."""

    new: float | None
    base: float | None
    delta: float | None


class RegressionCheck(_Out):
    """Regression probability of the headline pass^k for one scope."""

    scope: str
    k: int
    margin: float
    method: CheckMethod = Field(
        default="exchangeable",
        description="paired: both sides attempted enough of the same units k times, P from the per-unit "
        "differences; tasks: both sides have repeats, P over the two units' populations as independent; "
        "exchangeable: pooled Beta posteriors of p (one side or both without repeats).",
    )
    probability: float | None = Field(description="P(pass^k_new < pass^k_base - margin).")
    threshold: float
    regressed: bool
    note: str | None = Field(default=None, description="Why the probability is missing, or how it was got")


class BaselineComparison(_Out):
    """Deltas against a previous report and the regression verdict."""

    source: str = Field(description="Path of the baseline report.")
    success_rate: Delta
    pass_at_k: dict[str, Delta]
    pass_pow_k: dict[str, Delta]
    asr: Delta
    asr_intervals_overlap: bool | None
    outcome_share: dict[str, Delta] = Field(description="Share of scored conversations per outcome class.")
    by_group: dict[str, dict[str, Delta]] = Field(
        description="'task:x' / 'tag:key=value' -> pass@1, pass^3 deltas."
    )
    checks: list[RegressionCheck]
    rule: str = Field(description="The regression rule in words.")
    regression: bool


class InputSummary(_Out):
    """What was read: files, records, and what was merged, skipped or ignored on the way."""

    files: list[str]
    records: int = Field(description="Conversations read from the files (before duplicates were merged).")
    malformed: int = Field(description="Lines (or array items) that could not be read; skipped.")
    duplicate_ids: int = Field(
        default=0, description="Conversation ids that occur more than once for one agent version."
    )
    duplicate_records: int = Field(
        default=0, description="Records beyond the first of those ids: each id counts once, its last record."
    )
    duplicate_examples: list[str] = Field(default_factory=list, description="The first duplicated ids.")
    shared_ids: int = Field(
        default=0, description="Conversation ids that occur under several versions of one agent (one each)."
    )
    unknown_keys: dict[str, int] = Field(
        default_factory=dict,
        description="Keys no transcript field reads (list indices as *) -> records carrying them; ignored.",
    )


class Report(GroupStats):
    """The offline report: overall estimates, per task, per tag, readiness, and an optional baseline."""

    agent_version: str | None = Field(
        default=None, description="'agent version' the report describes when the input held several versions."
    )
    judge: str | None = Field(
        default=None,
        description="Id of the judge that graded the judge sample; null when none was configured (the judge "
        "sample is then not judged).",
    )
    input: InputSummary | None = Field(default=None, description="What was read (top level only).")
    by_task: dict[str, GroupStats]
    by_tag: dict[str, dict[str, GroupStats]] = Field(description="tag key -> tag value -> estimates.")
    readiness: Readiness
    baseline: BaselineComparison | None = None
    label_agreement: LabelAgreement | None = Field(
        default=None,
        description="Where labels decided conversations that also have an automated verdict: how the two agree "
        "(top level and per version; null where none has both).",
    )
    versions: list[Report] = Field(
        default_factory=list,
        description="With several agent versions in the input: one report per version, first seen first, "
        "each later one with `baseline` against its agent's first-seen version (or --baseline). The "
        "top-level fields are those of the last one.",
    )
