"""The judge's verdict on one conversation, the `Judge` interface, and the guard that turns failures into reasons.

A judge grades a whole conversation (every turn, the tool calls and results, and the expectations when there
are any) and returns one `JudgeVerdict`: an outcome class, an answer-correctness score in [0, 1] and a short
explanation, or a failure code saying why it could not (`FAILURE_CODES`). Verdicts are obtained outside the
scorer (`JudgeRunner`) and passed to `ConversationScorer.score(conv, verdict)`: the scorer does no I/O.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

from agentwatch.wire.schema import Conversation, Outcome

log = logging.getLogger(__name__)

# The outcome classes a judge may return (every ASR class but `unscored`).
JUDGE_OUTCOMES: tuple[Outcome, ...] = (
    Outcome.COMPLETE,
    Outcome.PARTIAL_CORRECT,
    Outcome.PARTIAL_INCORRECT,
    Outcome.HALLUCINATED,
    Outcome.ABANDONED,
)

# Why a judge gave no verdict; each is the reason code of the unscored conversation.
JUDGE_TIMEOUT = "judge_timeout"  # the request timed out
JUDGE_BAD_OUTPUT = "judge_bad_output"  # not JSON of the verdict schema after one repair attempt; a refusal
JUDGE_UNAVAILABLE = (
    "judge_unavailable"  # 429/5xx after the retries, connection refused, breaker open, HTTP 4xx
)
JUDGE_BUDGET_EXHAUSTED = "judge_budget_exhausted"  # the hourly or daily spend cap is reached
JUDGE_TLS_CERTIFICATE = "judge_tls_certificate"  # the endpoint's certificate does not verify (not retried)
FAILURE_CODES: tuple[str, ...] = (
    JUDGE_TIMEOUT,
    JUDGE_BAD_OUTPUT,
    JUDGE_UNAVAILABLE,
    JUDGE_BUDGET_EXHAUSTED,
    JUDGE_TLS_CERTIFICATE,
)


@dataclass(slots=True, frozen=True)
class JudgeVerdict:
    """A judge's answer for one conversation, or the reason (`failure`, one of `FAILURE_CODES`) it has none."""

    outcome: Outcome | None = None
    score: float | None = None
    explanation: str = ""
    failure: str | None = None
    detail: str = ""  # what went wrong, for the reason text (e.g. "HTTP 503 after 3 retries")
    judge_id: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    latency_s: float = 0.0
    cached: bool = False

    @property
    def ok(self) -> bool:
        """Whether the verdict grades (no failure)."""
        return self.failure is None

    @property
    def reason(self) -> str:
        """`code: detail` of a failed verdict (the reason recorded on the unscored conversation)."""
        if self.failure is None:
            return ""
        return f"{self.failure}: {self.detail}" if self.detail else self.failure

    @classmethod
    def graded(
        cls,
        outcome: Outcome | str,
        score: float,
        explanation: str = "",
        judge_id: str = "",
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cost_usd: float | None = None,
        latency_s: float = 0.0,
    ) -> JudgeVerdict:
        """A verdict that grades."""
        return cls(
            outcome=Outcome(outcome),
            score=float(score),
            explanation=explanation,
            judge_id=judge_id,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=cost_usd,
            latency_s=latency_s,
        )

    @classmethod
    def failed(
        cls,
        failure: str,
        detail: str = "",
        judge_id: str = "",
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cost_usd: float | None = None,
        latency_s: float = 0.0,
    ) -> JudgeVerdict:
        """A verdict saying the judge could not grade; `failure` is one of `FAILURE_CODES`."""
        if failure not in FAILURE_CODES:
            raise ValueError(f"unknown judge failure {failure!r}; expected one of {FAILURE_CODES}")
        return cls(
            failure=failure,
            detail=detail,
            judge_id=judge_id,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=cost_usd,
            latency_s=latency_s,
        )


@runtime_checkable
class Judge(Protocol):
    """Grades one conversation. `judge_id` (name, model, prompt version) is recorded on every score it grades;
    `fingerprint(conv)` is a canonical hash of everything the judge sees (the cache key with `judge_id`)."""

    judge_id: str

    def fingerprint(self, conversation: Conversation) -> str:
        """Hash of what the judge would be sent for `conversation` (same input, same fingerprint)."""
        ...

    def judge(self, conversation: Conversation) -> JudgeVerdict:
        """The verdict; raise or return `JudgeVerdict.failed(...)` when it cannot grade."""
        ...


def validate_verdict(verdict: object, judge_id: str = "") -> JudgeVerdict:
    """`verdict` if it is a well-formed `JudgeVerdict`; else a `judge_bad_output` failure saying why."""
    if not isinstance(verdict, JudgeVerdict):
        return JudgeVerdict.failed(
            JUDGE_BAD_OUTPUT, f"judge returned {type(verdict).__name__}, not a JudgeVerdict", judge_id
        )
    if verdict.failure is not None:
        if verdict.failure not in FAILURE_CODES:
            return replace(verdict, failure=JUDGE_BAD_OUTPUT, detail=f"unknown failure {verdict.failure!r}")
        return verdict
    score = verdict.score
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        return replace(
            verdict,
            failure=JUDGE_BAD_OUTPUT,
            detail=f"judge score {score!r} is not a number",
            outcome=None,
            score=None,
        )
    if not 0.0 <= score <= 1.0:
        return replace(
            verdict,
            failure=JUDGE_BAD_OUTPUT,
            detail=f"judge score {score!r} outside [0, 1]",
            outcome=None,
            score=None,
        )
    if verdict.outcome not in JUDGE_OUTCOMES:
        return replace(
            verdict,
            failure=JUDGE_BAD_OUTPUT,
            detail=f"judge outcome {verdict.outcome!r} is not a class",
            outcome=None,
            score=None,
        )
    return verdict


def run_judge(judge: Judge, conversation: Conversation) -> JudgeVerdict:
    """Call the judge; any exception or malformed verdict becomes a failed verdict (never raises).

    Exceptions map to codes: `TimeoutError` → judge_timeout, `ValueError` → judge_bad_output, anything else →
    judge_unavailable.
    """
    judge_id = str(getattr(judge, "judge_id", "") or type(judge).__name__)
    try:
        verdict = judge.judge(conversation)
    except TimeoutError as exc:
        return JudgeVerdict.failed(JUDGE_TIMEOUT, _describe(exc), judge_id)
    except ValueError as exc:
        return JudgeVerdict.failed(JUDGE_BAD_OUTPUT, _describe(exc), judge_id)
    except Exception as exc:  # noqa: BLE001 — a judge failure must never crash scoring
        log.warning("judge %s failed: %s", judge_id, _describe(exc))
        return JudgeVerdict.failed(JUDGE_UNAVAILABLE, _describe(exc), judge_id)
    checked = validate_verdict(verdict, judge_id)
    if not checked.judge_id:
        checked = replace(checked, judge_id=judge_id)
    return checked


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
