"""An expectation of the whole conversation (`Conversation.expected`), matched anywhere in it.

- tools: the expected calls against every call of the conversation, by effects (`scorers.effects`): expected
  calls with effects must happen with fitting arguments (`scorers.arguments`, per the tool's `match`), in
  order when `sequence_matters`; lookups and handoffs nobody expected are free (`extra_calls`);
- forbidden tools: none of them called, anywhere;
- reference answer: the best answer of any turn is graded;
- outputs: values some answer states (`scorers.outputs`);
- end: a handoff to a person, or none;
- utilization (only when `uses_tool_results` is true: a conversation's expected lookups often precede a refusal
  that quotes nothing they returned; what an answer must state is `outputs`): some answer uses a value of a
  successful tool result of its turn or an earlier one.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentwatch.scorers.answer import grade_answer
from agentwatch.scorers.arguments import values_match
from agentwatch.scorers.differences import Difference, argument_differences
from agentwatch.scorers.effects import Graded, WantedCall, check_calls, wanted_calls
from agentwatch.scorers.endings import ending_reasons
from agentwatch.scorers.graders import forbidden_called
from agentwatch.scorers.made_calls import MadeCall, made_calls
from agentwatch.scorers.names import NameNormalizer
from agentwatch.scorers.outputs import outputs_reasons
from agentwatch.scorers.tool_kinds import ToolKinds
from agentwatch.scorers.utilization import conversation_uses_results
from agentwatch.wire.schema import Conversation, Expectation, ExpectedTool


@dataclass(slots=True)
class ExpectedResult(Graded):
    """What a conversation-level expectation found."""

    answer_score: float | None = None  # best answer score against the reference, when one is given


def says_something(exp: Expectation) -> bool:
    """Whether an expectation gives a grader something to check (an empty one does not grade)."""
    return bool(
        exp.tools
        or "tools" in exp.model_fields_set
        or exp.forbidden_tools
        or exp.reference_answer is not None
        or exp.outputs
        or exp.end is not None
    )


def expected_tool_fits(tool: ExpectedTool, made: MadeCall, tolerance: float) -> bool:
    """Whether a call's arguments fit an expected tool (null arguments: any; extra arguments allowed; an
    argument in `ignore` mode may be absent)."""
    expected = tool.arguments
    if expected is None:
        return True
    args = made.call.arguments
    match = tool.match
    for key, value in expected.items():
        mode = match.get(key)
        if mode == "ignore":
            continue
        if key not in args or not values_match(value, args[key], mode, tolerance):
            return False
    return True


def grade_expected(
    exp: Expectation,
    conv: Conversation,
    names: NameNormalizer,
    kinds: ToolKinds,
    tolerance: float,
    answer_threshold: float,
) -> ExpectedResult:
    """Check a conversation-level expectation against `conv` (see the module docstring)."""
    result = ExpectedResult()
    fail = result.failures.append
    made = made_calls(conv, names, kinds)
    if exp.tools or "tools" in exp.model_fields_set:
        wanted = wanted_calls(exp.tools, names, kinds, made)

        def fits(w: WantedCall, m: MadeCall) -> bool:
            return expected_tool_fits(w.spec, m, tolerance)

        def differ(w: WantedCall, m: MadeCall) -> list[Difference]:
            return argument_differences(w.spec.arguments or {}, m.call.arguments, w.spec.match, tolerance)

        order = "relative" if exp.sequence_matters else "any"
        found = check_calls(wanted, made, fits, differ, order, exp.extra_calls)
        result.add_calls(found, "expected", exp.extra_calls)
    if exp.forbidden_tools:
        result.forbidden = forbidden_called(
            [m.call for m in made], exp.forbidden_tools, names, [m.name for m in made]
        )
        if result.forbidden:
            fail(f"forbidden_tool: called {', '.join(result.forbidden)}")
    if exp.reference_answer is not None:
        answers: list[str | None] = [t.answer for t in conv.turns if t.answer and t.answer.strip()] or [None]
        score = max(grade_answer(a, exp.reference_answer, tolerance) for a in answers)
        result.answer_score = score
        if score < answer_threshold:
            fail(f"answer: the best answer scores {score:.3g}, below the threshold {answer_threshold:.3g}")
    result.failures.extend(outputs_reasons("expected", exp.outputs, conv))
    result.failures.extend(ending_reasons("expected", exp.end, made))
    if exp.uses_tool_results is True:
        used = conversation_uses_results(conv.turns)
        if used is False:
            fail("tool_utilization: no answer uses a value from a successful tool result")
        elif used is None and any(
            c.error is None and c.result is not None for t in conv.turns for c in t.tool_calls
        ):
            result.notes.append(
                "note: tool_utilization: not checked (the answers were searched for result values past the "
                "search budget)"
            )
    return result
