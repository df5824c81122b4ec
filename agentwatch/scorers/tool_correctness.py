"""Tool correctness of one turn: selection, parameters, sequence, utilization, overall, and Galtea's binary.

Definitions (Fair Forge's four dimensions, Galtea's binary set match), all on normalised tool names:
- selection: Jaccard similarity of the unique expected and used names (1 when both are empty);
- parameters: each expected call is matched to a distinct used call of the same name (optimal assignment);
  a matched pair scores (expected arguments matched) / (arguments in either), per argument as the
  expectation's `match` says (`scorers.arguments`), 1 when the expected arguments are null; an unmatched
  expected call scores 0; the dimension is the mean over expected calls (1 when none expected);
- sequence: length of the longest common subsequence of expected and used names / expected count, graded
  only when `sequence_matters` (reported as 1.0 otherwise and left out of the overall);
- utilization: 1 if the answer contains a salient value of a successful tool result that is not already in
  the turn's input or the call's arguments, graded only when `expected.utilization_required` and some result
  was captured (0 when no tool was called; not graded when every call failed: there was nothing to use, and
  an answer that says so is right);
- overall: weighted mean of the graded dimensions, weights normalised over them;
- binary: set of used names == set of expected names.

Calls nobody expected are graded as `expected.extra_calls` says: by default a read-only call or a handoff
(`scorers.tool_kinds`) whose name is not expected is left out of every dimension (looking things up is free);
`none` keeps every call, `any` leaves out every call whose name is not expected. An expected tool with
`required: false` that was not called is left out of the expectation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from agentwatch.config import HANDOFF_TOOLS, READ_ONLY_TOOLS, ToolWeights
from agentwatch.scorers.arguments import argument_agreement
from agentwatch.scorers.names import NameNormalizer
from agentwatch.scorers.text import AnswerText
from agentwatch.scorers.tool_kinds import EFFECT, ToolKinds
from agentwatch.scorers.utilization import SearchBudget, uses_results
from agentwatch.wire.schema import Expectation, ExpectedTool, ToolCall, ToolScore

_LCS_CELLS = 40_000  # a larger table is filled a row at a time with numpy
_MAX_ASSIGNED = 100  # expected calls of one name paired by the assignment solver; more are paired in order


def jaccard(a: set[str] | frozenset[str], b: set[str] | frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b|, 1 when both are empty."""
    if a == b:  # both empty included
        return 1.0
    return len(a & b) / len(a | b)


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two sequences."""
    if not a or not b:
        return 0
    if len(a) * len(b) > _LCS_CELLS:
        return _lcs_rows(a, b)
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def _lcs_rows(a: Sequence[str], b: Sequence[str]) -> int:
    """`lcs_length` a row of the table at a time with numpy: L[i][j] = max(L[i-1][j], L[i-1][j-1] + [a_i = b_j],
    L[i][j-1]), the same table (a match's diagonal is never below its neighbours), so a row is the running
    maximum of the first two terms (5,000 calls against 5,000 expected took 4 s cell by cell)."""
    codes: dict[str, int] = {}
    b_codes = np.array([codes.setdefault(y, len(codes)) for y in b], dtype=np.int64)
    prev = np.zeros(len(b) + 1, dtype=np.int64)
    for x in a:
        code = codes.get(x)
        if code is None:
            continue  # matches nothing: the row is the one before
        row = np.maximum(prev[1:], prev[:-1] + (b_codes == code))
        prev[1:] = np.maximum.accumulate(row)
    return int(prev[-1])


def parameters_score(
    expected: Sequence[tuple[str, dict[str, Any] | None]],
    used: Sequence[tuple[str, dict[str, Any]]],
    modes: Sequence[Mapping[str, str]] | None = None,
) -> float:
    """Mean over expected calls of their argument agreement with a distinct used call of the same name
    (`modes[i]`: how the arguments of expected call i are compared, if not by the default rules)."""
    if not expected:
        return 1.0
    used_by_name: dict[str, list[dict[str, Any]]] = {}
    for name, args in used:
        used_by_name.setdefault(name, []).append(args)
    exp_by_name: dict[str, list[tuple[dict[str, Any] | None, Mapping[str, str] | None]]] = {}
    for i, (name, wanted) in enumerate(expected):
        exp_by_name.setdefault(name, []).append((wanted, modes[i] if modes else None))
    total = 0.0
    for name, exp_args in exp_by_name.items():
        candidates = used_by_name.get(name)
        if not candidates:
            continue  # every expected call of this name scores 0
        if len(exp_args) == 1:
            e, m = exp_args[0]
            total += max(argument_agreement(e, u, m) for u in candidates)
            continue
        if len(exp_args) > _MAX_ASSIGNED or len(candidates) > _MAX_ASSIGNED:
            # the solver's table is expected x used agreements, and its time grows with the cube: 3,000 of each
            # took 11 s; so many calls of one name are paired in the order they were expected and made
            total += sum(argument_agreement(e, u, m) for (e, m), u in zip(exp_args, candidates, strict=False))
            continue
        # imported here: scipy.optimize is slow to import (the `score` command's start), and most turns never get here
        from scipy.optimize import linear_sum_assignment

        matrix = np.array([[argument_agreement(e, u, m) for u in candidates] for e, m in exp_args])
        rows, cols = linear_sum_assignment(matrix, maximize=True)
        total += float(matrix[rows, cols].sum())
    return total / len(expected)


class ToolGrader:
    """Grades tool use of one turn against an `Expectation`; holds normalised weights and the name normaliser."""

    __slots__ = ("_kinds", "_names", "_ones_give_one", "_threshold", "_tolerance", "_weights")

    def __init__(
        self,
        names: NameNormalizer | None = None,
        weights: ToolWeights | None = None,
        threshold: float = 1.0,
        tolerance: float = 1e-9,
        kinds: ToolKinds | None = None,
    ) -> None:
        self._names = names or NameNormalizer()
        self._kinds = kinds or ToolKinds(self._names, READ_ONLY_TOOLS, HANDOFF_TOOLS)
        w = weights or ToolWeights()
        self._weights = (w.selection, w.parameters, w.sequence, w.utilization)
        # With finite weights (and a finite sum), a weighted mean of ones is exactly 1.0 (x / x), so it need not
        # be computed; an infinite weight gives inf / inf = nan, which weighted_mean clamps to 0.0.
        self._ones_give_one = math.isfinite(sum(self._weights))
        self._threshold = threshold
        self._tolerance = tolerance

    def grade(
        self,
        expected: Expectation,
        calls: Sequence[ToolCall],
        answer: str | None,
        turn_input: str | None = None,
    ) -> ToolScore:
        """Tool correctness of one turn (`turn_input`: the turn's input, for utilization's echo rule)."""
        return ToolScore.model_validate(self.grade_fields(expected, calls, answer, turn_input))

    def grade_fields(
        self,
        expected: Expectation,
        calls: Sequence[ToolCall],
        answer: str | None,
        turn_input: str | None = None,
        *,
        used_names: list[str] | None = None,
        answer_text: AnswerText | None = None,
        budget: SearchBudget | None = None,
    ) -> dict[str, Any]:
        """Tool correctness of one turn as the fields of a `ToolScore` (validated later, with the whole result).

        `used_names` (the normalised names of `calls`) and `answer_text` (`answer`, read) may be passed when
        already known; `budget`: the conversation's, for the utilization check (one of its own without it)."""
        norm = self._names
        exp_tools = expected.tools
        exp_names = norm.of(exp_tools) if exp_tools else []
        if used_names is None:
            used_names = norm.of(calls) if calls else []
        weights = self._weights
        exp_set = frozenset(exp_names)
        all_calls = calls  # utilization reads every result, lookups included
        if calls and expected.extra_calls != "none" and not exp_set.issuperset(used_names):
            calls, used_names = self._graded_calls(calls, used_names, exp_set, expected.extra_calls)
        if exp_tools and _some_optional(exp_tools):
            made = frozenset(used_names)
            pairs = zip(exp_tools, exp_names, strict=True)
            kept = [(t, n) for t, n in pairs if t.required is not False or n in made]
            exp_tools, exp_names = [t for t, _ in kept], [n for _, n in kept]
            exp_set = frozenset(exp_names)
        same_names = exp_names == used_names
        if same_names and len(exp_set) == len(exp_names):
            # the common case: the expected calls, each once, in order: call i answers expectation i
            selection = 1.0
            used_set = exp_set
            total = 0.0
            for t, c in zip(exp_tools, calls, strict=True):
                args = c.arguments
                if args is not None:
                    expected_args = t.arguments
                    if expected_args is None:
                        total += 1.0
                    else:
                        total += argument_agreement(expected_args, args, t.match)
            parameters = total / len(exp_names) if exp_names else 1.0
        else:
            used_set = frozenset(used_names)
            selection = jaccard(exp_set, used_set)
            parameters = self._parameters(exp_names, exp_tools, exp_set, used_names, used_set, calls)
        sequence_graded = expected.sequence_matters
        if sequence_graded and not same_names:
            sequence = lcs_length(exp_names, used_names) / len(exp_names) if exp_names else 1.0
        else:
            sequence = 1.0
        utilization: float | None = None
        if expected.utilization_required:
            results: list[Any] = []
            arguments: list[Any] = []
            for c in all_calls:
                if c.error is None:
                    result = c.result
                    if result is not None:
                        results.append(result)
                        arguments.append(c.arguments)
            if results or not all_calls:
                if answer_text is None and answer:
                    answer_text = AnswerText(answer)
                used = answer_text is not None and uses_results(
                    answer_text, results, turn_input, arguments, budget
                )
                utilization = None if used is None else (1.0 if used else 0.0)
            # else: results not captured, or every call failed — utilization cannot be checked (nor when the
            # search ran out of budget, `used` None)
        if self._ones_give_one and selection == parameters == sequence == 1.0 and utilization != 0.0:
            # every graded dimension is 1 (utilization is None, 0 or 1; sequence is 1 when not graded)
            overall = 1.0
        else:
            graded = [(selection, weights[0]), (parameters, weights[1])]
            if sequence_graded:
                graded.append((sequence, weights[2]))
            if utilization is not None:
                graded.append((utilization, weights[3]))
            overall = weighted_mean(graded)
        return {
            "selection": selection,
            "parameters": parameters,
            "sequence": sequence,
            "utilization": utilization,
            "overall": overall,
            "binary": exp_set == used_set,
            "passed": overall >= self._threshold - self._tolerance,
        }

    def _graded_calls(
        self, calls: Sequence[ToolCall], names: list[str], expected: frozenset[str], extra: str
    ) -> tuple[list[ToolCall], list[str]]:
        """The calls tool correctness grades: those of an expected name, and (`extra` = read_only) the calls
        with effects nobody expected; lookups and handoffs nobody expected are free."""
        kinds = self._kinds
        kept = [
            (c, n)
            for c, n in zip(calls, names, strict=True)
            if n in expected or (extra == "read_only" and kinds.of(c, n) == EFFECT)
        ]
        return [c for c, _ in kept], [n for _, n in kept]

    @staticmethod
    def _parameters(
        exp_names: list[str],
        exp_tools: Sequence[ExpectedTool],
        exp_set: frozenset[str],
        used_names: list[str],
        used_set: frozenset[str],
        calls: Sequence[ToolCall],
    ) -> float:
        """The parameters dimension: calls paired by name when every name is expected and used at most once,
        else by the assignment solver (`parameters_score`)."""
        if len(exp_set) == len(exp_names) and len(used_set) == len(used_names):
            used_args = {n: c.arguments for n, c in zip(used_names, calls, strict=True)}
            total = 0.0
            for n, t in zip(exp_names, exp_tools, strict=True):
                args = used_args.get(n)
                if args is not None:
                    total += argument_agreement(t.arguments, args, t.match)
            return total / len(exp_names) if exp_names else 1.0
        return parameters_score(
            [(n, t.arguments) for n, t in zip(exp_names, exp_tools, strict=True)],
            [(n, c.arguments) for n, c in zip(used_names, calls, strict=True)],
            [t.match for t in exp_tools],
        )


def _some_optional(tools: Sequence[ExpectedTool]) -> bool:
    """Whether an expected tool says `required: false` (a loop: cheaper than any() on this hot path)."""
    for t in tools:
        if t.required is False:
            return True
    return False


def weighted_mean(graded: Sequence[tuple[float, float]]) -> float:
    """Mean of values weighted by their weights normalised to sum 1; plain mean if all weights are 0."""
    total_w = weighted = plain = 0.0
    for v, w in graded:
        total_w += w
        weighted += v * w
        plain += v
    if total_w <= 0:
        return plain / len(graded)
    return min(1.0, max(0.0, weighted / total_w))
