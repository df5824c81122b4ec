"""The quality alerts' section: one sequential test per series and rule, thresholds from one fleet budget."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, field_validator

from agentwatch.config.base import Section, parse_duration


class AlertsConfig(Section):
    """Quality alerts: one sequential test (CUSUM) per series and rule, thresholds from one fleet budget.

    docs/alerts.md says how the budget becomes each series' threshold and what the rules detect.
    """

    RULES: ClassVar[tuple[str, ...]] = (
        "pass",
        "asr",
        "abandoned",
        "error",
        "no_answer",
        "loop",
        "hallucination",
        "over_budget",
    )
    RATE_RULES: ClassVar[tuple[str, ...]] = (
        "abandoned",
        "error",
        "no_answer",
        "loop",
        "hallucination",
        "over_budget",
    )

    false_pages_per_month: float = Field(
        default=1.0,
        gt=0,
        description="expected false pages a month over every series and rule of the fleet (unchanged series)",
    )
    exporter_instances: int = Field(
        default=1,
        ge=1,
        description="exporter processes that split the series (each takes false_pages_per_month / this)",
    )
    rules: list[str] = Field(
        default_factory=lambda: list(AlertsConfig.RULES),
        description="the rules evaluated (a rule left out takes no share of the budget)",
    )
    window: str = Field(default="24h", description="evidence older than this leaves the statistics")
    min_reference: int = Field(
        default=2000,
        ge=1,
        description="conversations of the rule's population the reference (baseline version, else the "
        "series itself, over the longest window) needs before the rule is evaluated",
    )
    pass_pow_drop: float = Field(
        default=0.15, gt=0, lt=1, description="rule pass: the pass^k drop it is tuned to detect fastest"
    )
    pass_k: int = Field(default=3, ge=1, description="rule pass: k of that pass^k")
    asr_drop: float = Field(default=0.1, gt=0, lt=1, description="rule asr: the ASR drop it is tuned for")
    rate_ratio: float = Field(
        default=3.0, gt=1, description="rate rules: the multiple of the reference rate they are tuned for"
    )
    rate_ratios: dict[str, float] = Field(
        default_factory=dict, description="rate_ratio of single rules, e.g. {error: 2}"
    )
    rate_min_increase: float = Field(
        default=0.01, gt=0, lt=1, description="rate rules: tuned for at least this absolute increase"
    )

    @field_validator("rules")
    @classmethod
    def _rules(cls, v: list[str]) -> list[str]:
        unknown = [r for r in v if r not in cls.RULES]
        if unknown:
            raise ValueError(f"unknown rule {unknown[0]!r}; rules are {', '.join(cls.RULES)}")
        return [r for r in cls.RULES if r in v]

    @field_validator("rate_ratios")
    @classmethod
    def _rate_ratios(cls, v: dict[str, float]) -> dict[str, float]:
        for rule, ratio in v.items():
            if rule not in cls.RATE_RULES:
                raise ValueError(f"rate_ratios: {rule!r} is not a rate rule ({', '.join(cls.RATE_RULES)})")
            if ratio <= 1:
                raise ValueError(f"rate_ratios: the ratio of {rule!r} must be > 1, got {ratio}")
        return v

    @field_validator("window")
    @classmethod
    def _window(cls, v: str) -> str:
        if parse_duration(v) < 60:
            raise ValueError("window must be at least 1m")
        return v
