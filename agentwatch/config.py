"""Configuration: one YAML file and `AGENTWATCH_*` environment variables, validated at start.

Every section rejects unknown keys, so a typo fails at start with the key's dotted path instead of being
silently ignored. Environment variables override the file: `AGENTWATCH_COLLECTOR__IDLE_TIMEOUT_S=2`
(double underscore between nesting levels).
"""

from __future__ import annotations

import logging
import re
from datetime import date
from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

from agentwatch import wire
from agentwatch.task_policy import ArgumentConstraint, PolicyTool, TaskPolicy

__all__ = [
    "ArgumentConstraint",
    "ConfigError",
    "PolicyTool",
    "ScoringConfig",
    "Settings",
    "TaskPolicy",
    "load_settings",
]

log = logging.getLogger(__name__)

_DATA = Path(__file__).parent / "data"


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> float:
    """Seconds in a window name such as `90s`, `15m`, `1h`, `24h`, `7d`, `2w`; ValueError if malformed."""
    m = _DURATION.match(text)
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"window {text!r} is not a positive duration like 15m, 1h, 24h or 7d")
    return float(m.group(1)) * _UNIT_S[m.group(2)]


class ConfigError(ValueError):
    """A configuration file or variable is invalid; the message names the offending key."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


# --------------------------------------------------------------------------- scoring


class ToolWeights(_Section):
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


class NameNormalization(_Section):
    """How tool names are normalised before comparison (Galtea-style binary match and all dimensions)."""

    case_insensitive: bool = True
    unify_separators: bool = True  # '-', ' ', '.' and '_' compare equal
    strip_prefixes: list[str] = Field(default_factory=lambda: ["functions.", "tools.", "tool."])


class OutcomeCredits(_Section):
    """ASR credit of each outcome class."""

    complete: float = Field(default=1.0, ge=0, le=1)
    partial_correct: float = Field(default=0.4, ge=0, le=1)
    partial_incorrect: float = Field(default=0.0, ge=0, le=1)
    hallucinated: float = Field(default=0.0, ge=0, le=1)
    abandoned: float = Field(default=0.0, ge=0, le=1)


READ_ONLY_TOOLS = ("get_*", "list_*", "search_*", "find_*", "calculate", "think")
HANDOFF_TOOLS = ("transfer_to_human*", "handoff_to_human*", "escalate_to_human*")


class ScoringConfig(_Section):
    """Thresholds and rules of the scorers."""

    answer_threshold: float = Field(default=0.7, ge=0, le=1)
    tool_threshold: float = Field(default=1.0, ge=0, le=1)
    tolerance: float = Field(default=1e-9, ge=0)
    tool_weights: ToolWeights = Field(default_factory=ToolWeights)
    names: NameNormalization = Field(default_factory=NameNormalization)
    loop_threshold: int = Field(default=3, ge=2)
    numeric_tolerance: float = Field(default=1e-6, ge=0, description="relative tolerance of numeric answers")
    partial_tool_min: float = Field(default=0.5, ge=0, le=1)
    partial_answer_min: float = Field(default=0.4, ge=0, le=1)
    credits: OutcomeCredits = Field(default_factory=OutcomeCredits)
    hallucination_checks: bool = Field(
        default=True, description="flag unsupported identifiers and claimed actions (heuristic; see docs/scoring.md)"
    )
    read_only_tools: list[str] = Field(
        default_factory=lambda: list(READ_ONLY_TOOLS),
        description="tools that change nothing (names or shell-style globs, normalised like tool names): "
        "calls nobody expected are free, an expected one may be skipped; a span's agentwatch.tool.read_only "
        "wins",
    )
    handoff_tools: list[str] = Field(
        default_factory=lambda: list(HANDOFF_TOOLS),
        description="tools that hand the conversation to a person: a legitimate ending, not a missing answer",
    )


class ModelPrice(_Section):
    """Price of a model in USD per million tokens."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)


class PriceTable(_Section):
    """Model prices; `as_of` says when they were copied from the vendors' pages."""

    as_of: date
    models: dict[str, ModelPrice] = Field(default_factory=dict)


def _default_prices() -> PriceTable:
    with open(_DATA / "prices.yaml", encoding="utf-8") as fh:
        return PriceTable.model_validate(yaml.safe_load(fh))


class CostConfig(_Section):
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


# --------------------------------------------------------------------------- statistics and gates


class StatsConfig(_Section):
    """Prior, credible level, k values and bootstrap settings."""

    prior_alpha: float = Field(default=1.0, gt=0)
    prior_beta: float = Field(default=1.0, gt=0)
    level: float = Field(default=0.95, gt=0, lt=1)
    ks: list[int] = Field(default_factory=lambda: [1, 3, 5])
    bootstrap_resamples: int = Field(default=1000, ge=100)
    seed: int = 0

    @field_validator("ks")
    @classmethod
    def _ks(cls, v: list[int]) -> list[int]:
        if not v or any(k < 1 for k in v):
            raise ValueError("ks must be a non-empty list of integers >= 1")
        return sorted(set(v))


class GateConfig(_Section):
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


class ReadinessTier(_Section):
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


# --------------------------------------------------------------------------- production grading


class SamplingRule(_Section):
    """Sample rates of the conversations of matching agents and tasks (shell-style globs)."""

    agent: str = "*"
    task: str = "*"
    judge_rate: float | None = Field(default=None, ge=0, le=1, description="share the judge grades")
    review_rate: float | None = Field(default=None, ge=0, le=1, description="share whose labels are truth")


class SamplingConfig(_Section):
    """Which conversations are in the graded samples, decided by `sample_point(conversation id) < rate`.

    The judge grades the judge sample; a person's label is a conversation's truth on the review sample and
    feeds label metrics only elsewhere (feedback is not a random sample). The first matching rule wins; a rule
    that leaves a rate unset takes the default.
    """

    judge_rate: float = Field(default=1.0, ge=0, le=1)
    review_rate: float = Field(default=0.0, ge=0, le=1)
    rules: list[SamplingRule] = Field(default_factory=list)


class JudgeConfig(_Section):
    """The LLM judge that grades the judge sample (an OpenAI-compatible chat completions endpoint)."""

    enabled: bool = Field(default=False, description="judge the judge sample (offline: also --judge)")
    name: str = Field(default="openai", min_length=1, description="judge name, part of the judge id")
    base_url: str = Field(default="https://api.openai.com/v1", description="OpenAI-compatible API root")
    model: str = Field(default="gpt-4o-mini", min_length=1)
    api_key_env: str = Field(default="OPENAI_API_KEY", description="environment variable holding the API key")
    prompt_version: str = Field(default="v1", description="rubric file agentwatch/data/judge_rubric_<v>.md")
    timeout_s: float = Field(default=60.0, gt=0, description="per HTTP request (connect, read)")
    max_retries: int = Field(default=3, ge=0, description="retries on 429, 5xx and connection errors")
    backoff_s: float = Field(default=1.0, gt=0, description="first retry delay; doubles, with full jitter")
    max_backoff_s: float = Field(default=60.0, gt=0, description="longest wait, Retry-After included")
    structured_outputs: Literal["auto", "json_schema", "json_object", "none"] = "auto"
    breaker_failures: int = Field(default=5, ge=1, description="consecutive failures that open the breaker")
    breaker_reset_s: float = Field(default=30.0, gt=0, description="open breaker lets a trial call after this")
    concurrency: int = Field(default=4, ge=1, description="judge calls in flight")
    max_input_tokens: int = Field(default=12_000, ge=500, description="transcript budget (estimated tokens)")
    max_output_tokens: int = Field(default=400, ge=50)
    hourly_usd: float | None = Field(default=None, gt=0, description="spend cap over any sliding hour")
    daily_usd: float | None = Field(default=None, gt=0, description="spend cap over any sliding 24 hours")
    cache_path: str | None = Field(default=None, description="keep the verdict cache in this JSONL file")
    cache_entries: int = Field(default=100_000, ge=0, description="verdicts kept in memory")
    min_kappa: float = Field(default=0.6, ge=-1, le=1, description="calibrate exits 1 below this Cohen's kappa")


# --------------------------------------------------------------------------- services


class KafkaConfig(_Section):
    """Connection to the Kafka cluster, with TLS and SASL (docs/collector_service.md, "Connecting to a secured
    Kafka"). Secrets are SecretStr: never shown by `repr`, logs or errors."""

    bootstrap_servers: str = "127.0.0.1:9092"
    client_id: str = "agentwatch"
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    ssl_ca_file: str | None = Field(default=None, description="CA bundle (PEM) that signed the brokers' certificates")
    ssl_cert_file: str | None = Field(default=None, description="client certificate (PEM), for mutual TLS")
    ssl_key_file: str | None = Field(default=None, description="private key (PEM) of ssl_cert_file")
    ssl_key_password: SecretStr | None = Field(default=None, description="password of an encrypted ssl_key_file")
    ssl_check_hostname: bool = Field(default=True, description="verify that the broker certificate names its host")
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = "PLAIN"
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None

    @field_validator("security_protocol", "sasl_mechanism", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.strip().upper() if isinstance(v, str) else v

    @model_validator(mode="after")
    def _security(self) -> KafkaConfig:
        from agentwatch.kafka_security import KafkaSecurity

        KafkaSecurity.from_config(self).check(prefix="kafka.")
        return self


class CollectorConfig(_Section):
    """The span collector."""

    input_topics: list[str] = Field(default_factory=lambda: [wire.SPANS_TOPIC])
    scores_topic: str = wire.SCORES_TOPIC
    dead_letter_topic: str = wire.DEAD_LETTER_TOPIC
    rekey_topic: str = wire.REKEY_TOPIC
    transcripts_topic: str | None = Field(
        default=wire.TRANSCRIPTS_TOPIC,
        description="transcripts of the review sample and of flagged conversations, for `agentwatch review`; "
        "null: none are published",
    )
    max_transcript_bytes: int = Field(
        default=1_000_000, ge=10_000, description="a longer transcript record is cut (texts, then turns)"
    )
    group_id: str = "agentwatch-collector"
    idle_timeout_s: float = Field(default=300.0, gt=0)
    end_grace_s: float = Field(default=2.0, ge=0)
    topic_partitions: int = Field(default=8, ge=1, description="partitions of the topics the collector creates")
    topic_replication_factor: int = Field(default=-1, description="-1: the broker's default")
    max_open_conversations: int = Field(default=100_000, ge=1)
    max_spans_per_conversation: int = Field(default=10_000, ge=1)
    max_attribute_bytes: int = Field(default=65_536, ge=256)
    trace_join_timeout_s: float = Field(
        default=60.0, gt=0, description="how long spans without a conversation key wait for their trace to name one"
    )
    max_held_spans: int = Field(default=100_000, ge=0, description="spans the trace join may hold at once")
    trace_memory: int = Field(
        default=100_000, ge=1, description="traces in the join window, and trace → conversation mappings remembered"
    )
    metrics_port: int | None = Field(default=None, ge=0, le=65535)
    session_timeout_ms: int = Field(default=45_000, ge=1, description="consumer group session timeout")
    heartbeat_interval_ms: int = Field(default=3_000, ge=1, description="consumer group heartbeat interval")
    max_poll_interval_ms: int = Field(default=300_000, ge=1)
    max_poll_records: int = Field(default=2_000, ge=1)
    commit_interval_s: float = Field(default=1.0, gt=0, description="flush scores then commit this often")
    label_memory: int = Field(
        default=50_000, ge=0, description="published scores remembered so that a late label can revise them"
    )
    max_pending_verdicts: int = Field(
        default=64, ge=1, description="conversations waiting for the judge before consumption pauses"
    )
    verdict_wait_on_shutdown_s: float = Field(
        default=10.0, ge=0, description="how long shutdown waits for verdicts in flight (the rest is replayed)"
    )
    drain_on_shutdown: bool = Field(
        default=False, description="score open conversations on shutdown (else keep them uncommitted)"
    )
    evaluation_events_endpoint: str | None = Field(
        default=None,
        description="OTLP endpoint for gen_ai.evaluation.result log records, one per score "
        "(`http(s)://…/v1/logs` → HTTP, else gRPC); unset: none are sent",
    )


class ExporterConfig(_Section):
    """The rolling estimator and its Prometheus endpoint."""

    scores_topic: str = wire.SCORES_TOPIC
    group_id: str = "agentwatch-exporter"
    metrics_port: int = Field(default=9464, ge=0, le=65535)
    windows: list[str] = Field(default_factory=lambda: ["1h", "24h", "7d"])
    tasks: list[str] = Field(default_factory=list, description="known tasks; others fold into 'other'")
    max_tasks: int = Field(default=50, ge=1, description="distinct tasks when `tasks` is empty; rest -> other")
    max_agents: int = Field(default=100, ge=1, description="distinct agent labels; rest -> other")
    max_versions_per_agent: int = Field(default=20, ge=1, description="distinct version labels per agent; rest -> other")
    regression_min_conversations: int = Field(default=30, ge=1)
    regression_ks: list[int] = Field(default_factory=lambda: [3], description="k of the regression gauge")
    buckets_per_window: int = Field(default=60, ge=1, description="time buckets per window (resolution W/n)")
    max_label_length: int = Field(default=64, ge=16, description="longer label values are cut and hash-suffixed")
    max_failure_modes: int = Field(default=32, ge=1, description="distinct failure-mode labels; rest -> other")
    max_units: int = Field(
        default=5_000, ge=1,
        description="task instances with repeated attempts tracked per agent version in the longest window; "
        "a conversation of any other counts as a unit of its own (agentwatch_units_folded_total)",
    )
    metrics_host: str = "0.0.0.0"
    session_timeout_ms: int = Field(default=45_000, ge=1, description="consumer group session timeout")
    heartbeat_interval_ms: int = Field(default=3_000, ge=1, description="consumer group heartbeat interval")
    poll_timeout_ms: int = Field(default=500, ge=1)
    max_poll_records: int = Field(default=2_000, ge=1)
    otlp_endpoint: str | None = Field(default=None, description="push metrics over OTLP to this endpoint")
    otlp_interval_s: float = Field(default=15.0, gt=0)

    @field_validator("windows")
    @classmethod
    def _windows(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("windows must not be empty")
        for w in v:
            parse_duration(w)
        return v

    @field_validator("regression_ks")
    @classmethod
    def _regression_ks(cls, v: list[int]) -> list[int]:
        if any(k < 1 for k in v):
            raise ValueError("regression_ks must hold integers >= 1")
        return sorted(set(v))


class AlertsConfig(_Section):
    """Quality alerts: one sequential test (CUSUM) per series and rule, thresholds from one fleet budget.

    docs/alerts.md says how the budget becomes each series' threshold and what the rules detect.
    """

    RULES: ClassVar[tuple[str, ...]] = (
        "pass", "asr", "abandoned", "error", "no_answer", "loop", "hallucination", "over_budget"
    )
    RATE_RULES: ClassVar[tuple[str, ...]] = ("abandoned", "error", "no_answer", "loop", "hallucination", "over_budget")

    false_pages_per_month: float = Field(
        default=1.0, gt=0,
        description="expected false pages a month over every series and rule of the fleet (unchanged series)",
    )
    exporter_instances: int = Field(
        default=1, ge=1,
        description="exporter processes that split the series (each takes false_pages_per_month / this)",
    )
    rules: list[str] = Field(
        default_factory=lambda: list(AlertsConfig.RULES),
        description="the rules evaluated (a rule left out takes no share of the budget)",
    )
    window: str = Field(default="24h", description="evidence older than this leaves the statistics")
    min_reference: int = Field(
        default=2000, ge=1,
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


class Reviewer(_Section):
    """A person who may sign in to the review service: a name and one hashed secret (never the secret)."""

    name: str = Field(min_length=1, max_length=64, pattern=r"^[^:\s]+$", description="shown beside labels")
    password_hash: SecretStr | None = Field(
        default=None,
        description="scrypt hash of a password, from `agentwatch review-hash` (sign in with name and "
        "password, or HTTP basic auth)",
    )
    token_sha256: SecretStr | None = Field(
        default=None,
        description="SHA-256 (hex) of a random token (sign in with it, or `Authorization: Bearer`)",
    )

    @model_validator(mode="after")
    def _one_secret(self) -> Reviewer:
        if (self.password_hash is None) == (self.token_sha256 is None):
            raise ValueError(f"reviewer {self.name!r}: give exactly one of password_hash and token_sha256")
        if self.password_hash is not None and not self.password_hash.get_secret_value().startswith("scrypt$"):
            raise ValueError(f"reviewer {self.name!r}: password_hash must come from `agentwatch review-hash` "
                             "(scrypt$...)")
        token = self.token_sha256.get_secret_value() if self.token_sha256 is not None else None
        if token is not None and not re.fullmatch(r"[0-9a-f]{64}", token.lower()):
            raise ValueError(f"reviewer {self.name!r}: token_sha256 must be 64 hex digits (its SHA-256)")
        return self


class ReviewConfig(_Section):
    """The review service (`agentwatch review`): the review queue in the browser, the labels it publishes."""

    database_url: str = Field(
        default="sqlite:///agentwatch-review.db",
        description="sqlite:///PATH (embedded, the default) or postgresql://USER:PASSWORD@HOST/DB (shared)",
    )
    transcripts_topic: str = wire.TRANSCRIPTS_TOPIC
    scores_topic: str = Field(default=wire.SCORES_TOPIC, description="revised scores are published here")
    labels_topic: str | None = Field(default=wire.LABELS_TOPIC, description="saved labels; null: none sent")
    group_id: str = "agentwatch-review"
    host: str = Field(default="127.0.0.1", description="address the page is served on")
    port: int = Field(default=8080, ge=0, le=65535, description="port of the page (0: any free port)")
    metrics_host: str = "0.0.0.0"
    metrics_port: int | None = Field(default=9466, ge=0, le=65535, description="/metrics; null: not served")
    reviewers: list[Reviewer] = Field(default_factory=list, description="who may sign in (none: nobody can)")
    session_secret: SecretStr | None = Field(
        default=None,
        description="key that signs session cookies; unset: a random one (sign-ins end at restart)",
    )
    session_max_age_s: int = Field(default=12 * 3600, ge=60, description="a sign-in lasts this long")
    secure_cookies: bool = Field(default=False, description="send the session cookie over HTTPS only")
    retention_days: float = Field(default=30.0, gt=0, description="conversations older than this are deleted")
    retention_interval_s: float = Field(default=3600.0, gt=0, description="how often old rows are deleted")
    publish_retry_s: float = Field(default=5.0, gt=0, description="pause before resending what Kafka refused")
    page_size: int = Field(default=100, ge=1, le=1000, description="conversations listed per queue page")
    session_timeout_ms: int = Field(default=45_000, ge=1, description="consumer group session timeout")
    heartbeat_interval_ms: int = Field(default=3_000, ge=1, description="consumer group heartbeat interval")

    @field_validator("session_secret", mode="before")
    @classmethod
    def _session_secret(cls, v: Any) -> Any:
        text = v.get_secret_value() if isinstance(v, SecretStr) else v
        if text is None or text == "":
            return None  # unset (an empty environment variable counts as unset)
        if len(str(text)) < 16:
            raise ValueError("session_secret must be at least 16 characters (or unset: a random one)")
        return v

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, v: str) -> str:
        scheme = v.partition("://")[0].partition("+")[0]
        if scheme not in ("sqlite", "postgresql", "postgres"):
            raise ValueError(f"database_url must start with sqlite:/// or postgresql://, got {scheme or v!r}")
        return v

    @field_validator("reviewers")
    @classmethod
    def _unique_reviewers(cls, v: list[Reviewer]) -> list[Reviewer]:
        names = [r.name for r in v]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"reviewer {twice[0]!r} is listed twice")
        return v


class _SectionEnvironment(EnvSettingsSource):
    """`AGENTWATCH_<SECTION>__<KEY>` variables; `AGENTWATCH_<SECTION>` itself counts only when it holds JSON.

    The SDK reads `AGENTWATCH_EXPORTER=kafka` (its span exporter); that plain word is not the service's
    `exporter` section, and must not stop `agentwatch score` in the same shell.
    """

    def prepare_field_value(self, field_name: str, field: Any, value: Any, value_is_complex: bool) -> Any:
        if isinstance(value, str) and not value.lstrip().startswith(("{", "[")):
            log.debug("AGENTWATCH_%s=%r is not JSON: not read as the %s section", field_name.upper(), value, field_name)
            value = None
        return super().prepare_field_value(field_name, field, value, value_is_complex)


class Settings(BaseSettings):
    """All of agentwatch's configuration."""

    model_config = SettingsConfigDict(
        env_prefix="AGENTWATCH_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    cost: CostConfig = Field(default_factory=CostConfig)
    stats: StatsConfig = Field(default_factory=StatsConfig)
    gate: GateConfig = Field(default_factory=GateConfig)
    tiers: list[ReadinessTier] = Field(default_factory=_default_tiers)
    kafka: KafkaConfig = Field(default_factory=KafkaConfig)
    collector: CollectorConfig = Field(default_factory=CollectorConfig)
    exporter: ExporterConfig = Field(default_factory=ExporterConfig)
    alerts: AlertsConfig = Field(default_factory=AlertsConfig)
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    review: ReviewConfig = Field(default_factory=ReviewConfig)
    policies: list[TaskPolicy] = Field(default_factory=list, description="task policies; the first match wins")

    @field_validator("policies")
    @classmethod
    def _unique_policy_ids(cls, v: list[TaskPolicy]) -> list[TaskPolicy]:
        seen: set[str] = set()
        for p in v:
            if p.id in seen:
                raise ValueError(f"policy id {p.id!r} is used twice")
            seen.add(p.id)
        return v

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Environment wins over the file (passed as init kwargs).
        return (_SectionEnvironment(settings_cls), init_settings)


def _format_error(err: ValidationError, source: str) -> str:
    lines = [f"invalid configuration in {source}:"]
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "<root>"
        msg = e["msg"].removeprefix("Value error, ")
        lines.append(f"  {msg}" if msg.startswith(f"{key}.") else f"  {key}: {e['msg']}")
    return "\n".join(lines)


MAX_CONFIG_BYTES = 1 << 20  # a configuration file is a few KB; a bigger one is the wrong file (or an attack)
MAX_CONFIG_DEPTH = 32
MAX_CONFIG_NODES = 200_000  # YAML nodes after expanding aliases (a billion-laughs file expands to 10^9)


def _check_yaml_node(node: yaml.Node, path: object) -> None:
    """Refuse documents nested too deeply, referring to themselves, or too large once aliases are expanded."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(n: yaml.Node, depth: int) -> int:
        key = id(n)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise ConfigError(f"configuration file {path}: an alias refers to a node that contains it")
        if depth > MAX_CONFIG_DEPTH:
            raise ConfigError(f"configuration file {path} is nested more than {MAX_CONFIG_DEPTH} levels deep "
                              f"(line {n.start_mark.line + 1})")
        active.add(key)
        total = 1
        if isinstance(n, yaml.SequenceNode):
            children = n.value
        elif isinstance(n, yaml.MappingNode):
            children = [c for pair in n.value for c in pair]
        else:
            children = []
        for child in children:
            total += size(child, depth + 1)
            if total > MAX_CONFIG_NODES:
                raise ConfigError(f"configuration file {path} expands to more than {MAX_CONFIG_NODES:,} values "
                                  "(aliases repeating aliases?)")
        active.discard(key)
        sizes[key] = total
        return total

    size(node, 0)


def _read_yaml(path: str | Path) -> Any:
    """The YAML document of a configuration file, bounded in size, depth and alias expansion; raise ConfigError."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read configuration file {path}: {exc}") from exc
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"configuration file {path} is larger than {MAX_CONFIG_BYTES >> 20} MiB: "
                          "not a configuration file?")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"configuration file {path} is not UTF-8 text (byte {exc.start}): "
                          "not a configuration file?") from None
    try:
        loader = yaml.SafeLoader(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"configuration file {path} is not valid YAML: {exc}") from exc
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_yaml_node(node, path)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise ConfigError(f"configuration file {path} is not valid YAML: {exc}") from exc
    except RecursionError:
        raise ConfigError(f"configuration file {path} is nested too deeply") from None
    finally:
        loader.dispose()


def load_settings(path: str | Path | None = None, **overrides: Any) -> Settings:
    """Load settings from an optional YAML file, `AGENTWATCH_*` variables and overrides; raise ConfigError."""
    data: dict[str, Any] = {}
    source = "defaults/environment"
    if path is not None:
        source = str(path)
        loaded = _read_yaml(path) or {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"configuration file {path} must hold a mapping at the top level")
        bad = [k for k in loaded if not isinstance(k, str)]
        if bad:
            raise ConfigError(f"configuration file {path}: top-level keys must be section names, not {bad[0]!r}")
        data.update(loaded)
    for dotted, value in overrides.items():
        if value is None:
            continue
        section, _, key = dotted.partition("__")
        if key:
            data.setdefault(section, {})[key] = value
        else:
            data[section] = value
    try:
        return Settings(**data)
    except ValidationError as exc:
        raise ConfigError(_format_error(exc, source)) from exc
