"""Sections `scoring`, `cost`, `stats`, `gate` and `tiers`: how conversations are graded and figures computed."""

from __future__ import annotations

from datetime import date
from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, field_validator, model_validator

from agentwatch.config.base import Detectors, Section

_DATA = Path(__file__).resolve().parent.parent / "data"


class ToolWeights(Section):
    """Weights of the four tool-correctness dimensions; normalised over the graded dimensions."""

    selection: float = Field(default=0.25, ge=0)
    parameters: float = Field(default=0.25, ge=0)
    sequence: float = Field(default=0.25, ge=0)
    utilization: float = Field(default=0.25, ge=0)

    @model_validator(mode="after")
    def _not_all_zero(self) -> ToolWeights:
        if self.selection + self.parameters + self.sequence + self.utilization <= 0:
            raise ValueError("at least one tool weight must be positive")
        return self


class NameNormalization(Section):
    """How tool names are normalised before comparison (Galtea-style binary match and all dimensions)."""

    case_insensitive: bool = True
    unify_separators: bool = True  # '-', ' ', '.', '_' and camelCase word boundaries compare equal
    strip_prefixes: list[str] = Field(default_factory=lambda: ["functions.", "tools.", "tool."])


class OutcomeCredits(Section):
    """ASR credit of each outcome class."""

    complete: float = Field(default=1.0, ge=0, le=1)
    partial_correct: float = Field(default=0.4, ge=0, le=1)
    partial_incorrect: float = Field(default=0.0, ge=0, le=1)
    hallucinated: float = Field(default=0.0, ge=0, le=1)
    abandoned: float = Field(default=0.0, ge=0, le=1)


# Detectors that fail a conversation by default: each measured at a false-fail rate of 1% or less on the real
# successes of every run in `benchmarks/validity.py` and of other teams' runs (docs/scoring.md, Precision first);
# hallucination is not one (1.5% on other teams' real successes).
FAILING_DETECTORS = ("error", "no_answer", "loop")
# The simulated users of τ-bench and τ²-bench end a conversation with these tokens in their last message
# (`###STOP###`, sometimes cut to `###STOP`; `###TRANSFER###`, `###OUT-OF-SCOPE###`).
END_MARKERS = {"###STOP": "stop", "###TRANSFER": "transfer", "###OUT-OF-SCOPE": "out_of_scope"}
# Lookup verbs that begin tool names, in English and in Spanish, Portuguese and French.
_LOOKUP_VERBS = """
    get list search find lookup look_up query fetch retrieve read view show display describe check verify validate
    track consult count compare compute estimate identify
    buscar consultar obtener obter listar mostrar ver verificar validar revisar identificar rechercher consulter obtenir
    afficher identifier
""".split()
# `final_answer`: smolagents' agents answer by calling it; `finish`: DSPy's ReAct ends its loop by calling it.
# "!" keeps a name out: checking a guest in or out books a room.
READ_ONLY_TOOLS = (
    *(f"{verb}_*" for verb in _LOOKUP_VERBS),
    *("calculate*", "calcular*", "think", "final_answer", "finish", "!check_in*", "!check_out*"),
)
HANDOFF_TOOLS = ("transfer_to_human*", "handoff_to_human*", "escalate_to_human*")
# Tools an autonomous agent ends its run with, its deliverable their arguments or result: smolagents'
# `final_answer`, DSPy's and OpenHands' `finish`, SWE-agent's `submit` (its result is the patch), Cline's
# `attempt_completion`, AutoGPT's `task_complete`.
ANSWER_TOOLS = ("final_answer", "finish", "submit", "attempt_completion", "task_complete", "complete_task")


class ScoringConfig(Section):
    """Thresholds and rules of the scorers."""

    answer_threshold: float = Field(default=0.7, ge=0, le=1)
    tool_threshold: float = Field(default=1.0, ge=0, le=1)
    tolerance: float = Field(default=1e-9, ge=0)
    tool_weights: ToolWeights = Field(default_factory=ToolWeights)
    names: NameNormalization = Field(default_factory=NameNormalization)
    loop_threshold: int = Field(default=3, ge=2)
    lookup_loops_fail: bool = Field(
        default=False,
        description="whether a lookup called loop_threshold times with identical arguments, none refused, fails "
        "where a loop does; by default it is evidence: on every real run graded it was the only failure of real "
        "successes alone (docs/scoring.md, Precision first)",
    )
    handoff_loops_fail: bool = Field(
        default=False,
        description="whether a handoff called loop_threshold times with identical arguments, none refused, fails "
        "where a loop does; by default it is evidence: the conversation was handed to a person, and on the real "
        "runs graded such a loop was the only failure of real successes alone (docs/scoring.md, Precision first)",
    )
    numeric_tolerance: float = Field(default=1e-6, ge=0, description="relative tolerance of numeric answers")
    partial_tool_min: float = Field(default=0.5, ge=0, le=1)
    partial_answer_min: float = Field(default=0.4, ge=0, le=1)
    credits: OutcomeCredits = Field(default_factory=OutcomeCredits)
    hallucination_checks: bool = Field(
        default=True,
        description="flag unsupported identifiers and claimed actions (heuristic; see docs/scoring.md)",
    )
    read_only_tools: list[str] = Field(
        default_factory=lambda: list(READ_ONLY_TOOLS),
        description="tools that change nothing (names or shell-style globs, normalised like tool names; a "
        "pattern starting with ! keeps the names it matches out): calls nobody expected are free, an expected "
        "one may be skipped; a span's agentwatch.tool.read_only wins",
    )
    handoff_tools: list[str] = Field(
        default_factory=lambda: list(HANDOFF_TOOLS),
        description="tools that hand the conversation to a person: a legitimate ending, not a missing answer",
    )
    answer_tools: list[str] = Field(
        default_factory=lambda: list(ANSWER_TOOLS),
        description="tools an agent ends its run with (names or shell-style globs, normalised like tool names): a "
        "turn with a successful call of one is answered by it, not a missing answer",
    )
    failing_evidence: Detectors = Field(
        default_factory=lambda: list(FAILING_DETECTORS),
        description="detectors whose finding fails a graded conversation (of error, no_answer, loop, "
        "hallucination); the others' findings are evidence: shown, counted and exported, never a verdict. "
        "The default holds the detectors whose false-fail rate on real successes is measured at 1% or less "
        "(error, no_answer, loop; docs/scoring.md, Precision first)",
    )
    end_markers: dict[str, str] = Field(
        default_factory=lambda: dict(END_MARKERS),
        description="marker -> kind (stop, transfer, out_of_scope, ...): a trailing user message holding one "
        "(case-insensitive) ends the conversation; no answer is missing after it",
    )


class LongContextPrice(Section):
    """Prices of a call whose input (cache included) is past a length: the whole call, at these rates."""

    above_input_tokens: int = Field(gt=0, description="the input tokens past which the call is long-context")
    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cache_read_per_mtok: float | None = Field(default=None, ge=0, description="else the model's own")
    cache_write_per_mtok: float | None = Field(default=None, ge=0, description="else the model's own")


class ModelPrice(Section):
    """Price of a model in USD per million tokens."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cache_read_per_mtok: float | None = Field(
        default=None,
        ge=0,
        description="input tokens read from the provider's prompt cache; without it a call that read any is "
        "cost_unknown",
    )
    cache_write_per_mtok: float | None = Field(
        default=None,
        ge=0,
        description="input tokens written to the provider's prompt cache; without it a call that wrote any is "
        "cost_unknown",
    )
    long_context: LongContextPrice | None = Field(
        default=None, description="the prices of calls past a length of input, where the vendor charges more"
    )


class PriceTable(Section):
    """Model prices; `as_of` says when they were taken from their source."""

    as_of: date
    models: dict[str, ModelPrice] = Field(default_factory=dict)
    with_shipped: bool = Field(
        default=True,
        description="the shipped table's entries too (agentwatch/data/prices.yaml), these replacing those of the "
        "same name; false: these alone",
    )


@cache
def _shipped() -> PriceTable:
    with open(_DATA / "prices.yaml", encoding="utf-8") as fh:
        return PriceTable.model_validate(yaml.safe_load(fh))


def _default_prices() -> PriceTable:
    return _shipped().model_copy(deep=True)


class CostConfig(Section):
    """Price table and per-task budget ceilings (USD per conversation)."""

    prices: PriceTable = Field(default_factory=_default_prices)
    budgets: dict[str, float] = Field(default_factory=dict, description="task -> ceiling in USD")
    default_budget_usd: float | None = Field(default=None, ge=0)

    @field_validator("budgets")
    @classmethod
    def _positive(cls, v: dict[str, float]) -> dict[str, float]:
        for task, ceiling in v.items():
            if ceiling <= 0:
                raise ValueError(f"budget of task {task!r} must be > 0, got {ceiling}")
        return v

    @model_validator(mode="after")
    def _add_shipped_prices(self) -> CostConfig:
        """A price table given in the configuration adds to the shipped one unless it says otherwise: a team
        pricing its fine-tuned model keeps every vendor's price."""
        if "prices" in self.model_fields_set and self.prices.with_shipped:
            self.prices.models = {**_shipped().model_copy(deep=True).models, **self.prices.models}
        return self


# --------------------------------------------------------------------------- statistics and gates


MAX_K = 1000  # attempts at one task no benchmark reaches; past it, memory (k × series) is the only effect
MAX_PRIOR = 1000.0  # pseudo-observations: a prior this strong is a typo
MAX_RESAMPLES = 1_000_000


class StatsConfig(Section):
    """Prior, credible level, k values and bootstrap settings; each bounded, so that a typo fails at start
    rather than as an allocation of 745 GiB at the first report."""

    prior_alpha: float = Field(default=1.0, gt=0, le=MAX_PRIOR)
    prior_beta: float = Field(default=1.0, gt=0, le=MAX_PRIOR)
    level: float = Field(default=0.95, gt=0, lt=1)
    ks: list[int] = Field(default_factory=lambda: [1, 3, 5])
    bootstrap_resamples: int = Field(default=1000, ge=100, le=MAX_RESAMPLES)
    seed: int = Field(default=0, ge=0, description="seeds the bootstraps (numpy takes 0 and up)")

    @field_validator("ks")
    @classmethod
    def _ks(cls, v: list[int]) -> list[int]:
        if not v or any(k < 1 or k > MAX_K for k in v):
            raise ValueError(f"ks must be a non-empty list of integers from 1 to {MAX_K:,}")
        return sorted(set(v))


class GateConfig(Section):
    """Release gate (SAFE TO SHIP / DO NOT SHIP). Default: the seed lesson's checklist."""

    pass_at_1_min: float = Field(default=0.80, ge=0, le=1)
    pass_pow_3_min: float = Field(default=0.50, ge=0, le=1)
    core_tag: str = Field(default="category", description="tag whose value marks core tasks")
    core_values: list[str] = Field(default_factory=lambda: ["core"])
    max_loops: int = Field(default=0, ge=0)
    regression_margin: float = Field(default=0.05, ge=0, le=1)
    regression_probability: float = Field(default=0.95, gt=0, lt=1)
    estimate: Literal["lower", "value", "plugin", "unbiased", "task_mean", "mean"] = Field(
        default="lower",
        description="which estimate of pass@1 / pass^3 the gate compares to its minimums; `lower` (the lower "
        "bound of the headline interval at stats.level) passes only when the evidence supports the minimum; "
        "`value` is the headline figure; `plugin`, `unbiased`, `mean` are the pooled details",
    )
    min_conversations: int = Field(
        default=30, ge=1, description="graded conversations in the gate's scope below which the gate fails"
    )
    max_malformed: int = Field(
        default=0,
        ge=0,
        description="transcript lines that could not be read (`agentwatch score`) above which the gate fails: the "
        "figures then rest on part of the input",
    )


class ReadinessTier(Section):
    """A readiness tier: reached when every listed minimum holds (pass^k estimates, plug-in)."""

    name: str
    pass_at_1_min: float = Field(default=0.0, ge=0, le=1)
    pass_pow_3_min: float = Field(default=0.0, ge=0, le=1)


def _default_tiers() -> list[ReadinessTier]:
    return [
        ReadinessTier(name="production", pass_at_1_min=0.90, pass_pow_3_min=0.70),
        ReadinessTier(name="beta", pass_at_1_min=0.80, pass_pow_3_min=0.50),
        ReadinessTier(name="prototype", pass_at_1_min=0.50, pass_pow_3_min=0.0),
        ReadinessTier(name="not_ready"),
    ]
