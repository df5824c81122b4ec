"""What a grader needs of a conversation's content, against what its source captured (`not_captured`).

OpenTelemetry's GenAI instrumentations record no message or tool content by default: a turn then has no input,
no answer, and calls with names but no arguments or results. Absent content cannot be told from content never
recorded, so a grader that needs what was not captured is not applied (the conversation is not graded by it,
and the score says why), rather than failing every conversation; detectors that read it (loops: identical
arguments) are off.
"""

from __future__ import annotations

from collections.abc import Iterable

from agentwatch.config import TaskPolicy
from agentwatch.wire.schema import Conversation, Expectation

MESSAGES = "messages"
ANSWERS = "answers"  # the inputs were captured, no answer was: what reads messages reads the answers
ARGUMENTS = "arguments"
STEPS = "steps"  # what the agent did after its last call seen: every grader of the outcome is unmet
_WHAT = {
    MESSAGES: "messages",
    ANSWERS: "answers",
    ARGUMENTS: "tool arguments",
    "results": "tool results",
    STEPS: "the steps after its last call",
}


def missing(needs: frozenset[str], not_captured: Iterable[str]) -> frozenset[str]:
    """The content among `needs` its source did not capture (answers not captured leave a need of messages
    unmet: the graders that read messages read the answers; steps not captured leave every need unmet: a grader
    of the outcome judges what the agent did, and what it did last was not seen)."""
    gaps = frozenset(not_captured)
    found = needs & gaps
    if MESSAGES in needs and ANSWERS in gaps and MESSAGES not in gaps:
        found |= {ANSWERS}
    if STEPS in gaps:
        found |= {STEPS}
    return found


def answers_missing(conv: Conversation) -> bool:
    """Whether the conversation's answers were not captured (messages, or answers alone)."""
    return MESSAGES in conv.not_captured or ANSWERS in conv.not_captured


def policy_needs(policy: TaskPolicy) -> frozenset[str]:
    """The content a task policy reads: arguments for its argument constraints, messages for its required
    outputs and its grounding (the first answer)."""
    needs = set()
    if any(t.arguments or t.replacements for t in policy.tools):
        needs.add(ARGUMENTS)
    if policy.outputs or policy.grounding:
        needs.add(MESSAGES)
    return frozenset(needs)


def expectation_needs(expectation: Expectation) -> frozenset[str]:
    """The content an expectation reads: arguments of its expected calls, messages for its reference answer,
    required outputs and utilization."""
    needs = set()
    if any(t.arguments for t in expectation.tools):
        needs.add(ARGUMENTS)
    if expectation.reference_answer is not None or expectation.outputs or expectation.utilization_required:
        needs.add(MESSAGES)
    return frozenset(needs)


def expectations_need(conv: Conversation) -> frozenset[str]:
    """What the conversation's own expectation and its turns' expectations read, together."""
    expectations: Iterable[Expectation | None] = (conv.expected, *(t.expected for t in conv.turns))
    needs: frozenset[str] = frozenset()
    for e in expectations:
        if e is not None:
            needs |= expectation_needs(e)
    return needs


def without_expectations(conv: Conversation) -> Conversation:
    """`conv` with no expectation on it or its turns (a copy; the original is left as it was)."""
    turns = [t.model_copy(update={"expected": None}) if t.expected is not None else t for t in conv.turns]
    return conv.model_copy(update={"expected": None, "turns": turns})


def not_applied(grader: str, missing: Iterable[str]) -> str:
    """The reason a grader was not applied: the content it needs that was not captured."""
    if STEPS in missing:  # not a capture setting: the conversation's later steps were sent apart from it
        return (
            f"not_captured: {grader} not applied: {_WHAT[STEPS]} not seen (a loop the caller runs, its later "
            "steps in traces of their own: set gen_ai.conversation.id or open an agent span around them)"
        )
    what = " and ".join(_WHAT[m] for m in sorted(missing))
    return f"not_captured: {grader} not applied: {what} not recorded by the source (content capture off?)"
