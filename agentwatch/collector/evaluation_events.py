"""Verdicts as OpenTelemetry GenAI evaluation events: a score becomes `gen_ai.evaluation.result` log records.

One record per evaluation, parented to the conversation's last turn (its trace id and span id), so a verdict
shows beside the traces in any OpenTelemetry backend:

- `agentwatch.outcome`, always: `gen_ai.evaluation.score.label` the outcome class (`complete`, ...,
  `unscored`), `gen_ai.evaluation.score.value` the ASR credit (absent when unscored), the explanation (the
  judge's, else the first reasons) and `error.type` when the judge failed (`judge_timeout`, ...);
- `agentwatch.answer_correctness`, when the score carries an answer-correctness number: the judge's score
  (recorded in the reasons when it did not pass the conversation) or the mean of the reference-answer scores
  of the turns; label `pass` or `fail` against `scoring.answer_threshold`.

Records go through the OpenTelemetry SDK (a `LoggerProvider` of its own, `BatchLogRecordProcessor`, OTLP log
exporter over HTTP for `http(s)://…/v1/logs`, else gRPC). `emit` never raises nor blocks on the network:
records are queued and exported on the processor's thread; a failed export is logged and counted (`stats`).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from agentwatch.collector.assembler import FinishedConversation
from agentwatch.collector.span_tree import SpanForest
from agentwatch.judge.verdict import FAILURE_CODES
from agentwatch.wire import attributes as A
from agentwatch.wire.contract import INFORMATIONAL_REASONS
from agentwatch.wire.schema import ConversationScore, Outcome

log = logging.getLogger(__name__)

EVENT_NAME = A.EVALUATION_EVENT
OUTCOME_EVALUATION = A.OUTCOME
ANSWER_EVALUATION = A.ANSWER_EVALUATION

# GenAI semantic conventions (gen_ai.evaluation.result event) and the attributes we add beside them
EVALUATION_NAME = A.EVALUATION_NAME
SCORE_VALUE = A.EVALUATION_SCORE_VALUE
SCORE_LABEL = A.EVALUATION_SCORE_LABEL
EXPLANATION = A.EVALUATION_EXPLANATION
ERROR_TYPE = A.ERROR_TYPE
CONVERSATION_ID = A.CONVERSATION_ID
AGENT_NAME = A.AGENT_NAME
AGENT_VERSION = A.AGENT_VERSION
TASK = A.TASK
JUDGE_ID = A.JUDGE_ID

MAX_EXPLANATION = 500  # characters
FIRST_REASONS = 3  # reasons joined into the explanation when the judge gave none

# "judge: score 0.5 below threshold 0.7: why" / "judge: outcome partial_correct, score 0.6: why"
_JUDGE_REASON = re.compile(
    r"^judge: (?:outcome [a-z_]+, )?score (?P<score>[0-9.eE+-]+)"
    r"(?: below threshold [0-9.eE+-]+)?(?:: (?P<why>.*))?$",
    re.DOTALL,
)
_HEX = re.compile(r"^[0-9a-fA-F]+$")


# --------------------------------------------------------------------------- which span a verdict belongs to


def last_turn_ids(finished: FinishedConversation) -> tuple[str | None, str | None]:
    """(trace id, span id), hex, of the conversation's last turn: the outermost `invoke_agent` span starting
    last, or the last trace root where a trace has no agent span (turns as the transcript rebuild finds them).
    (None, None) for a conversation without spans."""
    spans = finished.spans
    if not spans:
        return None, None
    try:
        turns = SpanForest(spans, []).turns
    except Exception:  # never fail the caller over an event's parent
        log.exception("could not find the last turn of conversation %s", finished.conversation_id)
        turns = []
    last = turns[-1] if turns else max(spans, key=lambda s: (s.start_ns, s.span_id))
    return last.trace_id, last.span_id


def _parent_context(trace_id: str | None, span_id: str | None) -> Any:
    """A context whose current span is the (remote) evaluated span, or None when the ids are not valid."""
    if not trace_id or not span_id or len(trace_id) != 32 or len(span_id) != 16:
        return None
    if not _HEX.match(trace_id) or not _HEX.match(span_id):
        return None
    tid, sid = int(trace_id, 16), int(span_id, 16)
    if not tid or not sid:
        return None
    ctx = SpanContext(tid, sid, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    return set_span_in_context(NonRecordingSpan(ctx))


# --------------------------------------------------------------------------- what a score says


def _clip(text: str) -> str:
    return text if len(text) <= MAX_EXPLANATION else text[: MAX_EXPLANATION - 1] + "…"


def judge_failure(score: ConversationScore) -> str | None:
    """The judge's failure code (`judge_timeout`, ...) when a failed verdict left the score unscored."""
    if score.passed is not None:
        return None
    for reason in score.reasons:
        code = reason.split(":", 1)[0].strip()
        if code in FAILURE_CODES:
            return code
    return None


def _judge_reason(score: ConversationScore) -> tuple[float | None, str]:
    """(judge's answer score, judge's explanation) found in the reasons; (None, "") when none is there."""
    for reason in score.reasons:
        m = _JUDGE_REASON.match(reason)
        if m is not None:
            try:
                value: float | None = float(m.group("score"))
            except ValueError:
                value = None
            return value, (m.group("why") or "").strip()
    return None, ""


def evaluation_attributes(score: ConversationScore, answer_threshold: float = 0.7) -> list[dict[str, Any]]:
    """The attributes of each `gen_ai.evaluation.result` record for `score` (outcome first)."""
    common: dict[str, Any] = {
        CONVERSATION_ID: score.conversation_id,
        AGENT_NAME: score.agent,
        AGENT_VERSION: score.version,
        TASK: score.task,
    }
    if score.judge:
        common[JUDGE_ID] = score.judge
    judge_score, judge_why = score.judge_score, score.judge_explanation or ""
    if judge_score is None:
        judge_score, judge_why = _judge_reason(score)
    failure = judge_failure(score)

    outcome = score.outcome.value if isinstance(score.outcome, Outcome) else str(score.outcome)
    first = {EVALUATION_NAME: OUTCOME_EVALUATION, SCORE_LABEL: outcome, **common}
    if score.asr_credit is not None:
        first[SCORE_VALUE] = float(score.asr_credit)
    if failure is not None:
        first[ERROR_TYPE] = failure
    failing = [r for r in score.reasons if r.split(":", 1)[0].strip() not in INFORMATIONAL_REASONS]
    why = failing or score.reasons  # what failed first; what describes only when nothing failed
    explanation = judge_why if judge_why and failure is None else "; ".join(why[:FIRST_REASONS])
    if explanation:
        first[EXPLANATION] = _clip(explanation)
    records = [first]

    answer: float | None = judge_score
    if answer is None:
        answers = [t.answer_score for t in score.turn_scores if t.answer_score is not None]
        answer = sum(answers) / len(answers) if answers else None
    if answer is not None:
        second = {
            EVALUATION_NAME: ANSWER_EVALUATION,
            SCORE_VALUE: float(answer),
            SCORE_LABEL: "pass" if answer >= answer_threshold - 1e-9 else "fail",
            **common,
        }
        if judge_why and judge_score is not None:
            second[EXPLANATION] = _clip(judge_why)
        records.append(second)
    return records


# --------------------------------------------------------------------------- the OTLP side


@dataclass(slots=True)
class EvaluationEventStats:
    """Counters of the evaluation events (cumulative)."""

    emitted: int = 0  # records handed to the processor
    exported: int = 0  # records the endpoint accepted
    dropped: int = 0  # records whose export failed
    errors: int = 0  # emit calls that failed before a record was queued


def _sdk() -> Any:
    """The OpenTelemetry SDK logs module, or a clear error when it predates log-based events."""
    try:
        from opentelemetry import _logs as api
        from opentelemetry.sdk import _logs as sdk_logs
        from opentelemetry.sdk._logs import export as sdk_export
        from opentelemetry.sdk._logs.export import LogRecordExportResult  # noqa: F401  (newer SDKs only)
    except ImportError as exc:  # pragma: no cover - depends on the installed SDK
        raise RuntimeError(
            "evaluation events need an OpenTelemetry SDK with log-based events (LogRecord event_name and "
            f"context, LogRecordExporter): upgrade opentelemetry-sdk ({exc})"
        ) from exc
    return api, sdk_logs, sdk_export


class _CountingExporter:
    """Wraps the OTLP exporter: counts what was exported and dropped, and never lets an exception out (a
    LogRecordExporter by duck typing, so that this module imports with any SDK)."""

    def __init__(self, inner: Any, stats: EvaluationEventStats, endpoint: str) -> None:
        self._inner = inner
        self._stats = stats
        self._endpoint = endpoint
        self._lock = threading.Lock()

    def export(self, batch: Sequence[Any]) -> Any:
        from opentelemetry.sdk._logs.export import LogRecordExportResult

        try:
            result = self._inner.export(batch)
        except Exception as exc:  # noqa: BLE001 - the processor's thread must keep going
            result = LogRecordExportResult.FAILURE
            log.warning("evaluation events: export to %s raised %s", self._endpoint, exc)
        ok = getattr(result, "name", None) == "SUCCESS"
        with self._lock:
            if ok:
                self._stats.exported += len(batch)
            else:
                self._stats.dropped += len(batch)
        if not ok:
            log.warning(
                "evaluation events: %d record(s) dropped, export to %s failed (%d dropped so far)",
                len(batch),
                self._endpoint,
                self._stats.dropped,
            )
        return result

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return bool(self._inner.force_flush(timeout_millis))  # duck-typed: any SDK version's exporter

    def shutdown(self) -> None:
        self._inner.shutdown()


def otlp_log_exporter(endpoint: str, timeout_s: float = 10.0) -> Any:
    """The OTLP log exporter for `endpoint`: HTTP for `http(s)://…/v1/logs`, else gRPC."""
    if endpoint.startswith(("http://", "https://")) and endpoint.rstrip("/").endswith("/v1/logs"):
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

        return OTLPLogExporter(endpoint=endpoint, timeout=timeout_s)
    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcExporter

    return GrpcExporter(endpoint=endpoint, timeout=timeout_s)


class EvaluationEvents:
    """Sends one `gen_ai.evaluation.result` log record per evaluation of every score it is given."""

    def __init__(
        self,
        exporter: Any,
        *,
        endpoint: str = "",
        answer_threshold: float = 0.7,
        service_name: str = "agentwatch-collector",
        schedule_delay_millis: float = 1000,
        max_queue_size: int = 10_000,
    ) -> None:
        api, sdk_logs, sdk_export = _sdk()
        from opentelemetry.sdk.resources import Resource

        self._api = api
        self.stats = EvaluationEventStats()
        self.answer_threshold = answer_threshold
        self._exporter = _CountingExporter(exporter, self.stats, endpoint or type(exporter).__name__)
        self._provider = sdk_logs.LoggerProvider(resource=Resource.create({"service.name": service_name}))
        self._provider.add_log_record_processor(
            sdk_export.BatchLogRecordProcessor(
                self._exporter, schedule_delay_millis=schedule_delay_millis, max_queue_size=max_queue_size
            )
        )
        self._logger = self._provider.get_logger("agentwatch.collector.evaluation_events")
        self._closed = False

    @classmethod
    def to_endpoint(cls, endpoint: str, *, timeout_s: float = 10.0, **kwargs: Any) -> EvaluationEvents:
        """Events exported over OTLP to `endpoint`."""
        return cls(otlp_log_exporter(endpoint, timeout_s), endpoint=endpoint, **kwargs)

    @classmethod
    def from_settings(cls, settings: Any) -> EvaluationEvents | None:
        """Events to `collector.evaluation_events_endpoint`; None when it is not set."""
        endpoint = getattr(settings.collector, "evaluation_events_endpoint", None)
        if not endpoint:
            return None
        log.info("sending evaluation results as OTLP log records to %s", endpoint)
        return cls.to_endpoint(endpoint, answer_threshold=settings.scoring.answer_threshold)

    def emit(self, score: ConversationScore, trace_id: str | None, span_id: str | None) -> None:
        """Queue the records of `score`, parented to span (`trace_id`, `span_id`) (hex); never raises."""
        if self._closed:
            return
        try:
            LogRecord, SeverityNumber = self._api.LogRecord, self._api.SeverityNumber
            context = _parent_context(trace_id, span_id)
            now = time.time_ns()
            for attributes in evaluation_attributes(score, self.answer_threshold):
                failed = ERROR_TYPE in attributes
                self._logger.emit(
                    LogRecord(
                        timestamp=now,
                        observed_timestamp=now,
                        context=context,
                        severity_number=SeverityNumber.WARN if failed else SeverityNumber.INFO,
                        severity_text="WARN" if failed else "INFO",
                        attributes=attributes,
                        event_name=EVENT_NAME,
                    )
                )
                self.stats.emitted += 1
        except Exception:
            self.stats.errors += 1
            log.exception(
                "evaluation events: could not emit the records of %s", getattr(score, "conversation_id", "?")
            )

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Export what is queued; whether it finished in time."""
        try:
            return bool(self._provider.force_flush(timeout_millis))
        except Exception:
            log.exception("evaluation events: flush failed")
            return False

    def shutdown(self) -> None:
        """Export what is queued and stop (idempotent; never raises)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._provider.shutdown()
        except Exception:
            log.exception("evaluation events: shutdown failed")
