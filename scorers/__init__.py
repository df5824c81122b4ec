"""Scorers: pure functions turning a `Conversation` into a `ConversationScore` (see docs/scoring.md)."""

from agentwatch.scorers.conversation import ConversationScorer, score_conversation, unscored
from agentwatch.scorers.judge import Judge, JudgeVerdict

__all__ = ["ConversationScorer", "Judge", "JudgeVerdict", "score_conversation", "unscored"]
