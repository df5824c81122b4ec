"""Grade one turn: answer, tools, required outputs, ending, forbidden tools, and the failure evidence on it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentwatch.config import ScoringConfig
from agentwatch.scorers.answer import grade_answer
from agentwatch.scorers.endings import handed_off
from agentwatch.scorers.graders import forbidden_called, loops
from agentwatch.scorers.grounding import SEARCH_BUDGET, Evidence
from agentwatch.scorers.hallucination import find_hallucinations
from agentwatch.scorers.names import NameNormalizer
from agentwatch.scorers.outcome import OutcomeFacts
from agentwatch.scorers.outputs import missing_outputs
from agentwatch.scorers.text import AnswerText
from agentwatch.scorers.tool_correctness import ToolGrader
from agentwatch.scorers.tool_kinds import EFFECT, READ_ONLY, ToolKinds
from agentwatch.scorers.utilization import SEARCH_BUDGET as UTILIZATION_BUDGET
from agentwatch.wire.schema import Turn


def fmt(x: float) -> str:
    """A score as reasons print it: three significant digits."""
    return f"{x:.3g}"


# ends the reason of a loop that is evidence whatever `scoring.failing_evidence` says (a lookup's or a handoff's,
# none refused): benchmarks.validity leaves it out of the loop's false-fail rate, which decides that setting
NEVER_FAILS = ", none refused)"


class TurnGrader:
    """Grades the turns of conversations with graders built once from the scoring configuration."""

    def __init__(self, scoring: ScoringConfig, names: NameNormalizer, kinds: ToolKinds) -> None:
        self._scoring = scoring
        self._names = names
        self._kinds = kinds
        self._tools = ToolGrader(
            names, scoring.tool_weights, scoring.tool_threshold, scoring.tolerance, kinds
        )
        self._answer_min = scoring.answer_threshold - scoring.tolerance

    def grade(
        self,
        i: int,
        turn: Turn,
        unanswered: bool,
        evidence: Evidence,
        facts: OutcomeFacts,
        found: set[str],
        failing: frozenset[str],
        arguments_known: bool = True,
        repeats: Mapping[str, int] | None = None,
        kinds: ToolKinds | None = None,
    ) -> tuple[dict[str, Any], float | None, float | None]:
        """Grade turn `i`: its `TurnScore` fields, answer score and tool overall.

        Failure evidence is added to `found`; a detector in `failing` also fails the turn (`passed` is False),
        and whether that counts is the conversation's business (only graded conversations have a verdict).
        Without `arguments_known` (the source recorded no tool arguments) calls cannot be told identical: no
        loop is looked for; `repeats`: the identical calls the task expects of a tool (`expected_repeats`);
        `kinds`: which tools are lookups, by the policy grading the conversation (else the configuration's)."""
        sc = self._scoring
        names = self._names
        exp = turn.expected
        reasons: list[str] = []
        applied = False
        failed = False

        calls = turn.tool_calls
        turn_input = turn.input
        error = turn.error
        used_names = names.of(calls) if calls else []  # shared by every grader of the turn
        evidence.add_turn(
            turn_input,
            calls,
            [self._kinds.of(c, n) != READ_ONLY for c, n in zip(calls, used_names, strict=True)],
        )

        answer = turn.answer
        has_answer = bool(answer and answer.strip())
        text = AnswerText(answer) if answer else None  # shared by the tool and hallucination graders
        reference = exp.reference_answer if exp is not None else None

        # answer correctness: judge_score > reference grader (a judge verdict grades the whole conversation)
        answer_score: float | None = None
        if turn.judge_score is not None:
            answer_score = turn.judge_score
        elif reference is not None:
            answer_score = grade_answer(answer, reference, sc.numeric_tolerance)
        answer_passed: bool | None = None
        if answer_score is not None:
            applied = True
            answer_passed = answer_score >= self._answer_min
            if not answer_passed:
                failed = True
                reasons.append(
                    f"answer: turn {i}: score {fmt(answer_score)} below threshold {fmt(sc.answer_threshold)}"
                )

        # tool correctness
        tool = None
        if exp is not None and (exp.tools or "tools" in exp.model_fields_set):
            applied = True
            tool = self._tools.grade_fields(
                exp,
                calls,
                answer,
                turn_input,
                used_names=used_names,
                answer_text=text,
                budget=evidence.results_search,
            )
            if not tool["passed"]:
                failed = True
                reasons.extend(_tool_reasons(i, tool, exp.sequence_matters))
            if tool["utilization"] is None and exp.utilization_required and evidence.results_search.left <= 0:
                reasons.append(
                    f"note: tool_utilization: turn {i}: not checked (the conversation's checks searched "
                    f"{UTILIZATION_BUDGET:,} characters of answers for result values)"
                )

        # required outputs and the turn's ending
        if exp is not None and exp.outputs:
            applied = True
            absent = missing_outputs(exp.outputs, [answer] if answer is not None and has_answer else [])
            if absent:
                failed = True
                stated = ", ".join(map(repr, absent))
                reasons.append(f"expected_outputs: turn {i}: the answer does not state {stated}")
        if exp is not None and exp.end is not None:
            applied = True
            if (exp.end == "handoff") != handed_off(turn, names, self._kinds):
                failed = True
                wanted = "a" if exp.end == "handoff" else "no"
                reasons.append(f"expected_end: turn {i}: expected {wanted} handoff")

        # forbidden tools
        forbidden: list[str] = []
        if exp is not None and exp.forbidden_tools:
            applied = True
            forbidden = forbidden_called(calls, exp.forbidden_tools, names, used_names)
            if forbidden:
                failed = True
                facts.forbidden = True
                found.add("forbidden_tool")
                reasons.append(f"forbidden_tool: turn {i}: called {', '.join(forbidden)}")

        # failure evidence, looked for on every conversation: loops, errors, missing final answer, hallucinations.
        # A detector in `failing` fails the turn; any other's finding is evidence only (reason `evidence: ...`).
        found_here: list[tuple[str, str]] = []  # (code, reason text)
        tool_kinds = kinds or self._kinds
        looped = (
            loops(
                calls,
                sc.loop_threshold,
                names,
                used_names,
                repeats,
                lambda call, name: call.error is None and tool_kinds.of(call, name) != READ_ONLY,
            )
            if arguments_known and len(calls) >= sc.loop_threshold
            else ()
        )
        for name, count, call, refused in looped:
            said = f"turn {i}: {name} called {count} times with identical arguments"
            kind = tool_kinds.of(call, name)
            if (
                refused
                or kind == EFFECT
                or (sc.lookup_loops_fail if kind == READ_ONLY else sc.handoff_loops_fail)
            ):
                found_here.append(("loop", said))
            else:
                # A lookup or a handoff repeated, none refused, changed nothing the first call had not: evidence,
                # not the verdict. On the real runs graded (docs/scoring.md, Precision first) a lookup's loop was
                # the only failure of 4 real successes and of no real failure; a handoff's, of 5 real successes of
                # one agent that sent the transfer again after each "Transfer successful", and of no real failure.
                found.add("loop")
                what = "a lookup" if kind == READ_ONLY else "a handoff"
                reasons.append(f"evidence: loop: {said} ({what}{NEVER_FAILS}")
        if error:
            found_here.append(("error", f"turn {i}: {error}"))
        if unanswered:
            found_here.append(
                ("no_answer", f"turn {i}: the conversation ends without an answer or a handoff")
            )
        if text is not None and sc.hallucination_checks:
            unchecked = evidence.unchecked
            for claim in find_hallucinations(text, evidence, reference):
                found_here.append(("hallucination", f"turn {i}: {claim}"))
            if evidence.unchecked > unchecked:
                reasons.append(
                    f"note: hallucination: turn {i}: {evidence.unchecked - unchecked} identifiers of the answer "
                    f"not checked (the conversation's checks searched {SEARCH_BUDGET:,} characters of evidence)"
                )
        for code, why in found_here:
            found.add(code)
            if code in failing:
                failed = True
                if code == "hallucination":
                    facts.hallucinated = True
                else:
                    facts.abandoned = True
                reasons.append(f"{code}: {why}")
            else:
                reasons.append(f"evidence: {code}: {why}")

        passed = False if failed else (True if applied else None)
        score = {
            "index": i,
            "answer_score": answer_score,
            "answer_passed": answer_passed,
            "tool": tool,
            "loop": bool(looped),
            "forbidden_tools": forbidden,
            "error": error,
            "passed": passed,
            "reasons": reasons,
        }
        return score, answer_score, (tool["overall"] if tool is not None else None)


def _tool_reasons(i: int, tool: dict[str, Any], sequence_matters: bool) -> list[str]:
    """Reason entries of a failed tool grading (`tool`: the fields of a `ToolScore`)."""
    out = []
    if tool["selection"] < 1.0 - 1e-9:
        out.append(f"tool_selection: turn {i}: selection {fmt(tool['selection'])} (tools missing or extra)")
    if tool["parameters"] < 1.0 - 1e-9:
        out.append(f"tool_parameters: turn {i}: parameters {fmt(tool['parameters'])} (arguments differ)")
    if sequence_matters and tool["sequence"] < 1.0 - 1e-9:
        out.append(f"tool_sequence: turn {i}: sequence {fmt(tool['sequence'])} (order differs)")
    if tool["utilization"] is not None and tool["utilization"] < 1.0:
        out.append(f"tool_utilization: turn {i}: the answer uses no value from a successful tool result")
    if not out:
        out.append(f"tool_overall: turn {i}: overall {fmt(tool['overall'])} below the tool threshold")
    return out
