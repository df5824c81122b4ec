"""Scorers: pure functions turning a `Conversation` into a `ConversationScore` (see docs/scoring.md)."""

from agentwatch.service_extra import require

require(__name__)  # fails with the extra to install, before any service dependency is imported

from agentwatch.judge.verdict import (  # the scorers take verdicts; the judge package obtains them
    Judge,
    JudgeVerdict,
)
from agentwatch.scorers.conversation import ConversationScorer, score_conversation, unscored

__all__ = ["ConversationScorer", "Judge", "JudgeVerdict", "score_conversation", "unscored"]
