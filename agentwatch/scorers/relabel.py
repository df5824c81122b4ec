"""A later label revises a published score: the same conversation, a higher revision, the label applied.

The rule is the scorer's: a label is a conversation's truth when the conversation is in the review sample or
already graded by another grader chosen blind to its outcome; elsewhere it is recorded (`label`) and feeds
label metrics, and the conversation stays outside the graded sample. The revision is computed from the stored
facts of the first score, so nothing needs to be scored again. The automated verdict (`automated`: what the
graders said before any label, the prediction a label corrects) is carried over unchanged, and recorded from
the score's own verdict when a score written before it existed is revised for the first time.
"""

from __future__ import annotations

from agentwatch.config import OutcomeCredits
from agentwatch.scorers.outcome import asr_credit
from agentwatch.stats.inclusion import automated_of
from agentwatch.wire.schema import ConversationScore, Outcome, OutcomeSource


def label_grades(review_sampled: bool, graded_by: list[str]) -> bool:
    """Whether a label decides success: on the review sample, or where another grader already applies."""
    return review_sampled or any(g != "label" for g in graded_by)


def relabel(score: ConversationScore, label: Outcome, credits: OutcomeCredits) -> ConversationScore | None:
    """`score` revised by a later `label` (revision + 1); None when the label changes nothing."""
    if score.label is label:
        return None
    others = [g for g in score.graded_by if g != "label"]
    reasons = [r for r in score.reasons if not r.startswith("label:")]
    update: dict[str, object] = {
        "label": label,
        "revision": score.revision + 1,
        "automated": automated_of(score),
    }
    if label_grades(score.review_sampled, others) or score.outcome_source is OutcomeSource.LABEL:
        passed = None if label is Outcome.UNSCORED else label is Outcome.COMPLETE
        reasons.insert(0, f"label: outcome {label.value} set by a label")
        reasons = [r for r in reasons if not r.startswith("no_grader:")]
        update.update(
            outcome=label,
            outcome_source=OutcomeSource.LABEL,
            passed=passed,
            graded_by=[*others, "label"] if passed is not None else [],
            asr_credit=asr_credit(label, score.cost_penalty, credits),
        )
    else:
        reasons.insert(
            0, f"label: outcome {label.value} set by a label outside the graded sample (not graded)"
        )
    update["reasons"] = reasons
    return score.model_copy(update=update)
