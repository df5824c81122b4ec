"""Task policies: expectations kept in configuration that grade every conversation of a task.

A policy matches conversations by agent and task (exact name or shell-style glob; the first matching policy
wins) and checks the whole conversation: expected tool calls with argument constraints and an order, forbidden
tools, tools required before the first answer (grounding), and caps on tool calls, turns and cost. Each broken
rule is a reason `policy_<rule>: ...`; a conversation passes the policy when no rule is broken.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from agentwatch.scorers.names import NameNormalizer

from agentwatch.config import PolicyTool, TaskPolicy
from agentwatch.schema import Conversation, ToolCall

RULES: tuple[str, ...] = (
    "policy_tools",
    "policy_order",
    "policy_forbidden",
    "policy_grounding",
    "policy_max_tool_calls",
    "policy_max_turns",
    "policy_max_cost",
)


@dataclass(slots=True)
class PolicyResult:
    """What one policy found in one conversation."""

    ref: str  # id@version
    failures: list[str] = field(default_factory=list)  # reasons, `policy_<rule>: text`
    forbidden: list[str] = field(default_factory=list)  # forbidden tools called, as called

    @property
    def passed(self) -> bool:
        """No rule of the policy is broken."""
        return not self.failures


class PolicyBook:
    """The configured policies, matched by agent and task (first match wins; matches are cached)."""

    def __init__(self, policies: Sequence[TaskPolicy]) -> None:
        self.policies = list(policies)
        self._matches: dict[tuple[str, str], TaskPolicy | None] = {}

    def match(self, agent: str, task: str) -> TaskPolicy | None:
        """The policy grading conversations of `agent` and `task`, if any."""
        key = (agent, task)
        if key in self._matches:
            return self._matches[key]
        found = next(
            (p for p in self.policies if fnmatchcase(agent, p.agent) and fnmatchcase(task, p.task)), None
        )
        if len(self._matches) < 10_000:
            self._matches[key] = found
        return found


def _describe(tool: PolicyTool) -> str:
    if not tool.arguments:
        return tool.name
    return f"{tool.name}({', '.join(f'{k}={v!r}' for k, v in tool.arguments.items())})"


def _scalar_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _satisfies(value: Any, constraint: Any, user_text: str) -> bool:
    if isinstance(constraint, dict):
        if "any" in constraint:
            return True
        if "regex" in constraint:
            return re.fullmatch(str(constraint["regex"]), _scalar_text(value)) is not None
        if "from_input" in constraint:
            text = _scalar_text(value).strip().casefold()
            return bool(text) and text in user_text
    if value == constraint:
        return True
    # "4100" and 4100 are the same argument to a person reading the transcript
    return not isinstance(constraint, (dict, list)) and _scalar_text(value) == _scalar_text(constraint)


def _matches(call: ToolCall, call_name: str, tool: PolicyTool, tool_name: str, user_text: str) -> bool:
    if call_name != tool_name:
        return False
    args = call.arguments
    return all(key in args and _satisfies(args[key], c, user_text) for key, c in tool.arguments.items())


def _subsequence(calls: list[tuple[ToolCall, str]], tools: list[tuple[PolicyTool, str]], user_text: str) -> bool:
    i = 0
    for call, name in calls:
        if i < len(tools) and _matches(call, name, tools[i][0], tools[i][1], user_text):
            i += 1
    return i == len(tools)


def grade_policy(
    policy: TaskPolicy, conv: Conversation, cost_usd: float | None, names: NameNormalizer
) -> PolicyResult:
    """Check every rule of `policy` against `conv` (`cost_usd`: the conversation's cost, if known)."""
    result = PolicyResult(policy.ref)
    fail = result.failures.append
    calls = [(call, names(call.name)) for turn in conv.turns for call in turn.tool_calls]
    user_text = "\n".join(t.input for t in conv.turns if t.input).casefold()

    tools = [(tool, names(tool.name)) for tool in policy.tools]
    missing = [
        tool for tool, name in tools if not any(_matches(c, cn, tool, name, user_text) for c, cn in calls)
    ]
    for tool in missing:
        fail(f"policy_tools: no call matches {_describe(tool)}")
    if not missing and len(tools) > 1 and policy.order != "any":
        in_order = _subsequence(calls, tools, user_text)
        if policy.order == "strict":
            in_order = in_order and len(calls) == len(tools)
        if not in_order:
            expected = " → ".join(t.name for t, _ in tools)
            made = " → ".join(c.name for c, _ in calls)
            fail(f"policy_order: expected {policy.order} order {expected}, got {made}")
    elif not missing and policy.order == "strict" and len(calls) != len(tools):
        fail(f"policy_order: expected exactly {len(tools)} tool call(s), got {len(calls)}")

    if policy.forbidden_tools:
        banned = set(names.all(policy.forbidden_tools))
        for call, name in calls:
            if name in banned and call.name not in result.forbidden:
                result.forbidden.append(call.name)
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

    if policy.max_tool_calls is not None and len(calls) > policy.max_tool_calls:
        fail(f"policy_max_tool_calls: {len(calls)} tool calls, at most {policy.max_tool_calls} allowed")
    if policy.max_turns is not None and len(conv.turns) > policy.max_turns:
        fail(f"policy_max_turns: {len(conv.turns)} turns, at most {policy.max_turns} allowed")
    if policy.max_cost_usd is not None and cost_usd is not None and cost_usd > policy.max_cost_usd:
        fail(f"policy_max_cost: cost ${cost_usd:.4g} above ${policy.max_cost_usd:.4g}")
    return result
