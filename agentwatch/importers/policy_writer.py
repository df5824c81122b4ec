"""One task policy from a benchmark task's ground truth: what `agentwatch import tau-bench` writes per task.

The ground-truth actions *with effects* are the expected calls (`order: any`); read-only actions and handoffs are
left out — unless the benchmark's reward requires every ground-truth call (`calls="every"`: each is then
`required`, and a call nobody expected is free unless the reward also reads the final state) — and with
`calls="none"` (a reward the calls do not decide) the policy lists no `tools` and grades no call. A string
argument of four words or more is free text (`match: ignore`); with the benchmark's `compare_args`, every other
argument is `ignore` too; a list of plain values is `unordered`; two list arguments
`X` and `new_X` of equal length are replacements; the same write on two tools with the same arguments is one
expectation with `alternatives`. A call with effects made in a history the transcript starts with, before the agent
ran (τ²-bench's `initial_state.message_history`), is allowed once and not required (`required: false`): its effect
is part of the starting state. (docs/importers.md, τ-bench and τ²-bench results.)
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from agentwatch.config import ScoringConfig
from agentwatch.config.loading import MAX_CONFIG_DEPTH
from agentwatch.scorers.names import NameNormalizer
from agentwatch.scorers.tool_kinds import EFFECT, ToolKinds

# Which ground-truth calls a benchmark's outcome requires: those with effects (it reads the final state), every
# one (it checks each call was made), or none.
Calls = Literal["effects", "every", "none"]
FREE_TEXT_WORDS = 4  # a string argument with this many words or more is free text
_WORD = re.compile(r"\S+")
# A call's arguments stand five levels into policies.yaml ({policies: [{tools: [{arguments: …}]}]}): nested past
# what a configuration file may be (`MAX_CONFIG_DEPTH`), `agentwatch score` refused the whole file, and deeper
# still, writing it raised RecursionError.
MAX_ARGUMENT_DEPTH = MAX_CONFIG_DEPTH - 5


def _depth(value: Any) -> int:
    """How many levels of objects and arrays `value` holds (0 for a scalar), counted without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth + 1)
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def _arguments(raw: Any) -> dict[str, Any]:
    """A ground-truth call's arguments as a policy holds them; ValueError when nested deeper than a configuration
    file may hold them (`MAX_ARGUMENT_DEPTH`)."""
    arguments = dict(raw or {})
    if _depth(arguments) > MAX_ARGUMENT_DEPTH:
        raise ValueError(
            f"arguments nested more than {MAX_ARGUMENT_DEPTH} levels deep, past what a policy holds"
        )
    return arguments


def _free_text(value: Any) -> bool:
    return isinstance(value, str) and len(_WORD.findall(value)) >= FREE_TEXT_WORDS


def _plain_list(value: Any) -> bool:
    """A list of scalars: which order the environment keeps it in, the ground truth cannot say."""
    return isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value)


def _replacements(arguments: dict[str, Any]) -> list[tuple[str, str]]:
    """Pairs (X, new_X) of list arguments of equal length: replacements read in parallel."""
    return [
        (k[4:], k)
        for k, v in arguments.items()
        if k.startswith("new_")
        and isinstance(v, list)
        and isinstance(arguments.get(k[4:]), list)
        and len(arguments[k[4:]]) == len(v)
    ]


def _tool(
    name: str, arguments: dict[str, Any], compared: list[str] | None, required: bool | None = None
) -> dict[str, Any]:
    """An expected call of `name` with `arguments` (`compared`: the only arguments that count, if given): free
    text ignored, plain lists in any order, parallel lists as replacements."""
    match = {k: "ignore" for k, v in arguments.items() if _free_text(v)}
    if compared is not None:
        match.update({k: "ignore" for k in arguments if k not in compared})
    replacements = _replacements(arguments)
    paired = {k for pair in replacements for k in pair}
    match.update(
        {
            k: "unordered"
            for k, v in arguments.items()
            if k not in match and k not in paired and _plain_list(v)
        }
    )
    tool: dict[str, Any] = {"name": name, "arguments": arguments}
    if required is not None:
        tool["required"] = required
    if match:
        tool["match"] = dict(sorted(match.items()))
    if replacements:
        tool["replacements"] = [list(pair) for pair in replacements]
    return tool


class PolicyWriter:
    """Builds one task policy from ground-truth actions, tools classified by the default scoring settings."""

    def __init__(self, agent: str, prefix: str, scoring: ScoringConfig | None = None) -> None:
        sc = scoring or ScoringConfig()
        names = NameNormalizer(sc.names)
        self._names = names
        self._kinds = ToolKinds(names, sc.read_only_tools, sc.handoff_tools)
        self.agent = agent
        self.prefix = prefix

    def policy(
        self,
        task: str,
        actions: list[dict[str, Any]],
        outputs: list[str],
        compare: dict[int, list[str]],
        calls: Calls = "effects",
        final_state: bool = True,
        given: list[dict[str, Any]] | None = None,
        logged: frozenset[int] = frozenset(),
    ) -> dict[str, Any]:
        """The policy of one task: `actions` as {name, arguments}; `compare[i]`: the only arguments of
        action i that count (others ignored), when the benchmark says so; `calls`: which of them the outcome
        requires (module docstring); `final_state` False when the outcome does not read the state the calls
        leave (a call nobody expected is then free); `given`: calls made before the agent ran, in a history
        the transcript starts with (allowed once each, never required); `logged`: the actions the environment
        records whatever their kind (a lookup among them is required, and none is another's alternative)."""
        tools: list[dict[str, Any]] = []
        by_arguments: dict[str, dict[str, Any]] = {}  # canonical arguments -> the tool expecting them
        for i, action in enumerate(actions if calls != "none" else ()):
            name = str(action["name"])
            lookup = self._kinds.of_name(self._names(name)) != EFFECT
            if lookup and calls != "every" and i not in logged:
                continue
            arguments = _arguments(action.get("arguments"))
            key = json.dumps(arguments, sort_keys=True, default=str)
            same = by_arguments.get(key) if arguments and calls != "every" and i not in logged else None
            if same is not None and same["name"] != name:  # the same write on another tool: one of them
                if name not in same.setdefault("alternatives", []):
                    same["alternatives"].append(name)
                continue
            tool = _tool(name, arguments, compare.get(i), True if lookup else None)
            tools.append(tool)
            if i not in logged:
                by_arguments.setdefault(key, tool)
        for call in given if calls != "none" and given else ():
            name = str(call["name"])
            if self._kinds.of_name(self._names(name)) == EFFECT:  # a lookup nobody expected is free anyway
                tools.append(_tool(name, _arguments(call.get("arguments")), None, required=False))
        policy: dict[str, Any] = {"id": f"{self.prefix}-task-{task}", "agent": self.agent, "task": task}
        if calls != "none":
            # the ground truth is replayed from the conversation's starting state: a write it holds that the
            # environment refuses from there is refused in the replay too
            policy.update(tools=tools, order="any", refused_first="note")
            if not final_state:
                policy["extra_calls"] = "any"
        if outputs:
            policy["outputs"] = [str(o) for o in outputs]
        return policy
