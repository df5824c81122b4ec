"""Task policies: expectations kept in configuration that grade every conversation of a task.

A policy matches conversations by agent and task (exact name or shell-style glob; the first matching policy
wins) and checks the whole conversation: expected tool calls with argument constraints and an order, compared
by their effects (`scorers.effects`: lookups are free, a refused call changed nothing, an unexpected call with
effects fails), forbidden tools, tools required before the first answer (grounding), required outputs, how the
conversation ends (a handoff or not), and caps on tool calls, turns and cost. Each broken rule is a reason
`policy_<rule>: ...`; a conversation passes the policy when no rule is broken.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentwatch.config import HANDOFF_TOOLS, READ_ONLY_TOOLS, PolicyTool, TaskPolicy
from agentwatch.config.policies import is_constraint, policy_pattern
from agentwatch.scorers.arguments import DEFAULT_TOLERANCE, values_match
from agentwatch.scorers.differences import Difference, argument_differences
from agentwatch.scorers.effects import (
    Graded,
    check_calls,
    replacement_pairs,
    same_replacements,
    wanted_calls,
)
from agentwatch.scorers.endings import ending_reasons
from agentwatch.scorers.globs import selects
from agentwatch.scorers.graders import expected_repeats, forbidden_called
from agentwatch.scorers.made_calls import made_calls
from agentwatch.scorers.names import NameNormalizer
from agentwatch.scorers.outputs import outputs_reasons
from agentwatch.scorers.tool_kinds import ToolKinds
from agentwatch.wire.schema import Conversation, ToolCall

RULES: tuple[str, ...] = (
    "policy_tools",
    "policy_effects",
    "policy_order",
    "policy_forbidden",
    "policy_grounding",
    "policy_outputs",
    "policy_end",
    "policy_max_tool_calls",
    "policy_max_turns",
    "policy_max_cost",
)


@dataclass(slots=True)
class PolicyResult(Graded):
    """What one policy found in one conversation (failures read `policy_<rule>: text`)."""

    ref: str = ""  # id@version

    @property
    def passed(self) -> bool:
        """No rule of the policy is broken."""
        return not self.failures


class PolicyBook:
    """The configured policies, matched by agent and task (first match wins; matches are cached)."""

    def __init__(self, policies: Sequence[TaskPolicy]) -> None:
        self.policies = list(policies)
        self._matches: dict[tuple[str, str], TaskPolicy | None] = {}
        self._repeats: dict[int, dict[str, int]] = {}  # id of a policy of this book -> expected_repeats

    def repeats(self, policy: TaskPolicy, names: NameNormalizer) -> dict[str, int]:
        """`expected_repeats` of one of this book's policies, worked out once."""
        key = id(policy)  # the book holds its policies, so an id stays theirs
        if key not in self._repeats:
            self._repeats[key] = expected_repeats(policy.tools, names)
        return self._repeats[key]

    def match(self, agent: str, task: str) -> TaskPolicy | None:
        """The policy grading conversations of `agent` and `task`, if any."""
        key = (agent, task)
        if key in self._matches:
            return self._matches[key]
        found = next((p for p in self.policies if selects(p.agent, agent) and selects(p.task, task)), None)
        if len(self._matches) < 10_000:
            self._matches[key] = found
        return found


def _scalar_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _satisfies(value: Any, constraint: Any, mode: str | None, user_text: str, tolerance: float) -> bool:
    """Whether an argument value meets a policy constraint ({regex}, {from_input}, {any}) or a value."""
    if mode != "exact" and is_constraint(constraint):
        if "any" in constraint:
            return True
        if "regex" in constraint:
            return policy_pattern(str(constraint["regex"])).fullmatch(_scalar_text(value)) is not None
        text = _scalar_text(value).strip().casefold()
        return bool(text) and text in user_text
    return values_match(constraint, value, mode, tolerance)


def tool_fits(tool: PolicyTool, call: ToolCall, user_text: str, tolerance: float) -> bool:
    """Whether a call's arguments meet every argument constraint of a policy tool (extra arguments allowed;
    an argument in `ignore` mode may be absent; `replacements` compared as pairs)."""
    args = call.arguments
    match = tool.match
    paired: set[str] = set()
    for source, target in tool.replacements:
        paired.update((source, target))
        if not same_replacements(tool.arguments, args, source, target):
            return False
    for key, constraint in tool.arguments.items():
        mode = match.get(key)
        if mode == "ignore" or key in paired:
            continue
        if key not in args or not _satisfies(args[key], constraint, mode, user_text, tolerance):
            return False
    return True


def tool_differences(tool: PolicyTool, call: ToolCall, user_text: str, tolerance: float) -> list[Difference]:
    """Where a call's arguments differ from a policy tool's (see `scorers.differences`)."""
    out = [
        d for source, target in tool.replacements if (d := _replacements_differ(tool, call, source, target))
    ]
    paired = {k for pair in tool.replacements for k in pair}
    plain = {k: v for k, v in tool.arguments.items() if k not in paired}
    return out + argument_differences(
        plain,
        call.arguments,
        tool.match,
        tolerance,
        lambda v, c, mode: _satisfies(v, c, mode, user_text, tolerance),
    )


def _replacements_differ(tool: PolicyTool, call: ToolCall, source: str, target: str) -> Difference | None:
    """The replacements expected and not made, and made and not expected, as `from -> to` (None if equal)."""
    want = Counter(replacement_pairs(tool.arguments, source, target) or ())
    have = Counter(replacement_pairs(call.arguments, source, target) or ())
    if want == have and replacement_pairs(call.arguments, source, target) is not None:
        return None

    def shown_pairs(pairs: Counter[tuple[str, str]]) -> list[str]:
        return [f"{json.loads(a)} -> {json.loads(b)}" for a, b in sorted(pairs.elements())]

    return Difference(f"{source} -> {target} (any order)", shown_pairs(want - have), shown_pairs(have - want))


def grade_policy(
    policy: TaskPolicy,
    conv: Conversation,
    cost_usd: float | None,
    names: NameNormalizer,
    kinds: ToolKinds | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
) -> PolicyResult:
    """Check every rule of `policy` against `conv` (`cost_usd`: the conversation's cost, if known; `kinds`:
    how tools are classified, by default `scoring.read_only_tools` and `scoring.handoff_tools` as shipped)."""
    result = PolicyResult(ref=policy.ref)
    fail = result.failures.append
    kinds = (kinds or ToolKinds(names, READ_ONLY_TOOLS, HANDOFF_TOOLS)).extended(policy.read_only_tools)
    made = made_calls(conv, names, kinds)
    user_text = "\n".join(t.input for t in conv.turns if t.input).casefold()

    if policy.grades_calls:
        wanted = wanted_calls(policy.tools, names, kinds, made)
        found = check_calls(
            wanted,
            made,
            lambda w, m: tool_fits(w.spec, m.call, user_text, tolerance),
            lambda w, m: tool_differences(w.spec, m.call, user_text, tolerance),
            policy.order,
            "any" if policy.order == "strict" else policy.extra_calls,  # strict order covers extra calls
            policy.refused_first,
        )
        result.add_calls(found, "policy", policy.extra_calls)

    if policy.forbidden_tools:
        result.forbidden = forbidden_called(
            [m.call for m in made], policy.forbidden_tools, names, [m.name for m in made]
        )
        if result.forbidden:
            fail(f"policy_forbidden: called {', '.join(result.forbidden)}")

    if policy.grounding:
        before: set[str] = set()
        for turn in conv.turns:
            before.update(names(c.name) for c in turn.tool_calls if c.error is None)
            if turn.answer and turn.answer.strip():
                break
        absent = [g for g in policy.grounding if names(g) not in before]
        if absent:
            fail(f"policy_grounding: answered before a successful call to {', '.join(absent)}")

    result.failures.extend(outputs_reasons("policy", policy.outputs, conv))
    result.failures.extend(ending_reasons("policy", policy.end, made))

    if policy.max_tool_calls is not None and len(made) > policy.max_tool_calls:
        fail(f"policy_max_tool_calls: {len(made)} tool calls, at most {policy.max_tool_calls} allowed")
    if policy.max_turns is not None and len(conv.turns) > policy.max_turns:
        fail(f"policy_max_turns: {len(conv.turns)} turns, at most {policy.max_turns} allowed")
    if policy.max_cost_usd is not None and cost_usd is not None and cost_usd > policy.max_cost_usd:
        fail(f"policy_max_cost: cost ${cost_usd:.4g} above ${policy.max_cost_usd:.4g}")
    return result
