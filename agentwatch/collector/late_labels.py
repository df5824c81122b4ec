"""Late labels: a person's label on a conversation the collector already scored revises its score.

A label span (`agentwatch.outcome` on a span of its own) of a conversation that is no longer open finds the
score this collector remembers (`ScoreMemory`, bounded) and publishes the revision `relabel` makes; a label of a
conversation it does not remember — or of an id several agents used, the label naming none — goes to the
dead-letter topic with the reason, never silently nowhere.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

from agentwatch.collector.decode import SpanRecord
from agentwatch.collector.labels import AMBIGUOUS, FOUND, LateLabel, ScoreMemory, label_of
from agentwatch.collector.metrics import PipelineStats
from agentwatch.collector.record import Record
from agentwatch.config import OutcomeCredits
from agentwatch.scorers.relabel import relabel
from agentwatch.wire.json_text import model_from_json
from agentwatch.wire.schema import ConversationScore, Outcome

log = logging.getLogger(__name__)


class LateLabels:
    """Applies late labels against the scores remembered: revisions published, unknown labels dead-lettered."""

    def __init__(
        self,
        scores: ScoreMemory,
        credits: OutcomeCredits,
        stats: PipelineStats,
        is_open: Callable[[int, str], bool],
        publish: Callable[[ConversationScore], None],
        dead_letter: Callable[[Record, str, str], None],
    ) -> None:
        self._scores = scores
        self._credits = credits
        self._stats = stats
        self._is_open = is_open  # (partition, conversation id): whether the assembler still holds it
        self._publish = publish
        self._dead_letter = dead_letter

    def remember(self, score: ConversationScore, payload: bytes) -> None:
        """Remember a score published (its JSON `payload`), for the labels that may come later."""
        self._scores.remember(score, payload)

    def take(self, spans: list[SpanRecord], vp: int, record: Record) -> list[SpanRecord]:
        """Apply the label spans of conversations already scored and remembered; the other spans, to assemble."""
        keep: list[SpanRecord] | None = None
        for i, span in enumerate(spans):
            label = label_of(span) if span.attrs else None
            if label is None or self._is_open(vp, span.conversation_id):
                if keep is not None:
                    keep.append(span)
                continue
            status, _ = self._scores.find(label.conversation_id, label.agent)
            if (
                status != FOUND
            ):  # may open a conversation; if it holds nothing but labels, it is dead-lettered
                if keep is not None:
                    keep.append(span)
                continue
            if keep is None:
                keep = spans[:i]
            self.apply(label, record)
        return spans if keep is None else keep

    def apply(self, label: LateLabel, record: Record | None) -> None:
        """Publish the revision a late label makes, or dead-letter the label when its score is not remembered
        (`record`: the record it came in, None when its spans were assembled as a conversation of their own)."""
        status, payload = self._scores.find(label.conversation_id, label.agent)
        if status != FOUND or payload is None:
            reason = "label_ambiguous_conversation" if status == AMBIGUOUS else "label_unknown_conversation"
            self._stats.count_label(reason)
            self._refuse(label, record, reason)
            return
        first_score = model_from_json(ConversationScore, payload)
        revised = relabel(first_score, Outcome(label.outcome), self._credits)
        if revised is None:
            self._stats.count_label("unchanged")
            return
        self._stats.count_label("revised")
        log.info(
            "late label %s for %s (%s): revision %d",
            label.outcome,
            label.conversation_id,
            first_score.agent,
            revised.revision,
        )
        self._publish(revised)

    def _refuse(self, label: LateLabel, record: Record | None, reason: str) -> None:
        detail = f"label {label.outcome} for conversation {label.conversation_id!r}"
        if label.agent:
            detail += f" of agent {label.agent!r}"
        detail += (
            ": no score of it is remembered by this collector"
            if reason.endswith("unknown_conversation")
            else (": several agents used this id and the label does not name one")
        )
        self._stats.reject(reason)
        if (
            record is None
        ):  # the label spans were assembled as a conversation of their own: keep what they said
            value = json.dumps(
                {"conversation_id": label.conversation_id, "agent": label.agent, "outcome": label.outcome}
            ).encode()
            record = Record(
                "", -1, -1, label.conversation_id.encode(), value, [("content-type", b"application/json")]
            )
        self._dead_letter(record, reason, detail)
