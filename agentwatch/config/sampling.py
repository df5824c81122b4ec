"""Sections `sampling` and `judge`: which conversations the judge and people grade, and the judge itself."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agentwatch.config.base import Detectors, Section


class SamplingRule(Section):
    """Sample rates of the conversations of matching agents and tasks (shell-style globs)."""

    agent: str = "*"
    task: str = "*"
    judge_rate: float | None = Field(default=None, ge=0, le=1, description="share the judge grades")
    review_rate: float | None = Field(default=None, ge=0, le=1, description="share whose labels are truth")
    target_judged_per_hour: float | None = Field(
        default=None,
        gt=0,
        description="judged conversations per series-hour to aim at (the judge rate adapts)",
    )


class SamplingConfig(Section):
    """Which conversations are in the graded samples, decided by `sample_point(conversation id) < rate`.

    The judge grades the judge sample; a person's label is a conversation's truth on the review sample and
    feeds label metrics only elsewhere (feedback is not a random sample). The first matching rule wins; a rule
    that leaves a rate or a target unset takes the default. With a target, the judge rate of each series
    adapts to reach it (the rate decided for each conversation is on its score).
    """

    judge_rate: float = Field(default=1.0, ge=0, le=1)
    review_rate: float = Field(default=0.0, ge=0, le=1)
    target_judged_per_hour: float | None = Field(
        default=None,
        gt=0,
        description="aim at this many judged conversations per series (agent, version, task) and hour: the "
        "judge rate of each series adapts to its traffic, at most judge_rate, at least the review rate and "
        "min_judge_rate (agentwatch/scorers/target_rate.py); null: the judge rate is fixed",
    )
    target_interval_s: float = Field(
        default=60.0, gt=0, description="how often a series' adaptive judge rate is decided again"
    )
    min_judge_rate: float = Field(default=0.0, ge=0, le=1, description="the adaptive judge rate's floor")
    rules: list[SamplingRule] = Field(default_factory=list)
    review_evidence: Detectors = Field(
        default_factory=list,
        description="detectors whose finding sends a conversation to the review queue as `evidence` (not a "
        "random sample: its labels feed label metrics, never the estimates); e.g. a detector kept as evidence "
        "only, to have people look at what it finds",
    )


class JudgeConfig(Section):
    """The LLM judge that grades the judge sample (an OpenAI-compatible chat completions endpoint)."""

    enabled: bool = Field(default=False, description="judge the judge sample (offline: also --judge)")
    name: str = Field(default="openai", min_length=1, description="judge name, part of the judge id")
    base_url: str = Field(default="https://api.openai.com/v1", description="OpenAI-compatible API root")
    allow_insecure_http: bool = Field(
        default=False,
        description="allow an http:// base_url off loopback with an API key (sent in clear text); only behind "
        "something that encrypts the hop, e.g. a service-mesh sidecar",
    )
    model: str = Field(default="gpt-4o-mini", min_length=1)
    api_key_env: str = Field(default="OPENAI_API_KEY", description="environment variable holding the API key")
    prompt_version: str = Field(default="v1", description="rubric file agentwatch/data/judge_rubric_<v>.md")
    timeout_s: float = Field(
        default=60.0,
        gt=0,
        description="per HTTP request: connecting, and the reply read whole, headers and body (a reply still "
        "arriving after it is a timeout)",
    )
    max_response_bytes: int = Field(
        default=1 << 20, ge=4096, description="a reply's body larger than this is bad output, read no further"
    )
    max_retries: int = Field(default=3, ge=0, description="retries on 429, 5xx and connection errors")
    backoff_s: float = Field(default=1.0, gt=0, description="first retry delay; doubles, with full jitter")
    max_backoff_s: float = Field(default=60.0, gt=0, description="longest wait, Retry-After included")
    structured_outputs: Literal["auto", "json_schema", "json_object", "none"] = "auto"
    breaker_failures: int = Field(default=5, ge=1, description="consecutive failures that open the breaker")
    breaker_reset_s: float = Field(
        default=30.0, gt=0, description="open breaker lets a trial call after this"
    )
    concurrency: int = Field(default=4, ge=1, description="judge calls in flight")
    max_input_tokens: int = Field(default=12_000, ge=500, description="transcript budget (estimated tokens)")
    max_output_tokens: int = Field(default=400, ge=50)
    hourly_usd: float | None = Field(default=None, gt=0, description="spend cap over any sliding hour")
    daily_usd: float | None = Field(default=None, gt=0, description="spend cap over any sliding 24 hours")
    cache_path: str | None = Field(default=None, description="keep the verdict cache in this JSONL file")
    cache_entries: int = Field(default=100_000, ge=0, description="verdicts kept in memory")
    min_kappa: float = Field(
        default=0.6,
        ge=-1,
        le=1,
        description="calibrate exits 1 below this Cohen's kappa; live, the agreement alert fires when the "
        "upper "
        "bound of kappa on the review sample is below it",
    )
    min_kappa_labels: int = Field(
        default=30, ge=2, description="review-sample labels the live agreement alert needs in its window"
    )


class AnchorsConfig(Section):
    """The anchor set that tells judge drift from agent drift (`agentwatch judge anchors`, docs/judge.md)."""

    path: str | None = Field(
        default=None, description="the frozen anchor set (JSONL, `judge anchors freeze`)"
    )
    interval_s: float = Field(default=3600.0, gt=0, description="re-judge the anchors this often")
    check_interval_s: float = Field(
        default=30.0, gt=0, description="how often the configuration file is checked for a new judge id"
    )
    min_agreement: float = Field(
        default=0.9,
        ge=0,
        le=1,
        description="judge drift when fewer anchors than this share keep their frozen verdict's class",
    )
    metrics_port: int | None = Field(default=9467, ge=0, le=65535, description="/metrics of the anchor job")
    host: str = Field(default="0.0.0.0", description="address of the anchor job's /metrics")
