"""The records of the review path: transcripts to review (collector → review service) and saved labels.

`TranscriptRecord` is the value of the transcripts topic (`wire.TRANSCRIPTS_TOPIC`, keyed by conversation id):
the transcript of a conversation in the review sample or flagged by a person, with its first score, or a later
revision of that score (`kind="revision"`, no transcript). `LabelRecord` is the value of the labels topic
(`wire.LABELS_TOPIC`): what a reviewer decided, beside what the judge and the pipeline had said, and whether
the conversation was in the blind review sample — everything an estimate corrected by labels needs.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentwatch import wire
from agentwatch.wire.schema import Conversation, ConversationScore, Outcome, OutcomeSource

Sample = Literal["review_sample", "flagged", "evidence", "failing"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore")


def judge_outcome(score: ConversationScore) -> Outcome | None:
    """The outcome class the judge returned for `score`'s conversation, if a verdict graded it (for a score
    written before `judge_outcome` existed: its outcome, when the judge set it)."""
    if score.judge_outcome is not None:
        return score.judge_outcome
    if score.judge_score is not None and score.outcome_source is OutcomeSource.JUDGE:
        return score.outcome
    return None


def failed(score: ConversationScore) -> bool:
    """Whether a conversation failed: a failed verdict, or failure evidence (graded or not)."""
    return score.passed is False or bool(score.evidence)


def review_sample_of(
    score: ConversationScore, evidence: frozenset[str] = frozenset(), failing: bool = False
) -> Sample | None:
    """Why `score`'s conversation goes to the review service: in the blind review sample, flagged by a label,
    found by one of the detectors of `evidence` (`sampling.review_evidence`; queued, not random), or (with
    `failing`) because it failed — kept for the list of a series' failing conversations, not queued; None when
    none of these."""
    if score.review_sampled:
        return "review_sample"
    if score.label is not None:
        return "flagged"
    if evidence and evidence.intersection(score.evidence):
        return "evidence"
    if failing and failed(score):
        return "failing"
    return None


class TranscriptRecord(_Record):
    """A conversation to review with its first score (`transcript`), or a later revision of its score."""

    format_version: int = Field(default=wire.REVIEW_FORMAT_VERSION, description="Format of this record.")
    kind: Literal["transcript", "revision"] = Field(description="A transcript with its score, or a revision.")
    sample: Sample = Field(
        description="review_sample (blind, random), flagged (a person's label; not random), evidence (a "
        "detector's finding; not random) or failing (it failed; listed with its series' failing conversations, "
        "not queued)."
    )
    conversation: Conversation | None = Field(
        default=None, description="The transcript as the collector rebuilt it (null on a revision)."
    )
    score: ConversationScore = Field(description="The score published with it (the first, or the revision).")
    published_at: datetime = Field(description="When the collector published this record.")


class LabelRecord(_Record):
    """A label a reviewer saved, with what the judge and the pipeline said before it (for κ, corrections)."""

    format_version: int = Field(default=wire.REVIEW_FORMAT_VERSION)
    label_id: str = Field(description="Unique id of this label (consumers de-duplicate by it).")
    conversation_id: str
    agent: str
    version: str
    task: str
    outcome: Outcome = Field(description="The outcome class the reviewer chose.")
    note: str = Field(default="", description="The reviewer's note.")
    reviewer: str = Field(description="Name of the signed-in reviewer.")
    labelled_at: datetime
    sample: Sample = Field(
        description="review_sample: blind random sample; flagged, evidence, failing: not a random sample."
    )
    blind: bool = Field(
        description="The reviewer decided without seeing the judge's verdict or another label."
    )
    judge: str | None = Field(default=None, description="Id of the judge that graded the first score.")
    judge_outcome: Outcome | None = Field(
        default=None, description="The first score's outcome, when the judge set it."
    )
    judge_score: float | None = None
    judge_explanation: str | None = None
    first_outcome: Outcome = Field(description="The outcome of the first score (what estimates used before).")
    first_outcome_source: OutcomeSource
    first_passed: bool | None = Field(description="The first score's pass/fail; null when it was unscored.")
    revision: int | None = Field(
        default=None, description="Revision of the score this label published; null when it changed nothing."
    )

    @classmethod
    def of(
        cls,
        first: ConversationScore,
        outcome: Outcome,
        *,
        note: str,
        reviewer: str,
        labelled_at: datetime,
        sample: Sample,
        blind: bool,
        revision: int | None,
        label_id: str,
    ) -> LabelRecord:
        """The record of a label on the conversation whose first score is `first`."""
        return cls(
            label_id=label_id,
            conversation_id=first.conversation_id,
            agent=first.agent,
            version=first.version,
            task=first.task,
            outcome=outcome,
            note=note,
            reviewer=reviewer,
            labelled_at=labelled_at,
            sample=sample,
            blind=blind,
            judge=first.judge,
            judge_outcome=judge_outcome(first),
            judge_score=first.judge_score,
            judge_explanation=first.judge_explanation,
            first_outcome=first.outcome,
            first_outcome_source=first.outcome_source,
            first_passed=first.passed,
            revision=revision,
        )
