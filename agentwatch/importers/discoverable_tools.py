"""τ³-bench's discoverable tools: a call through `call_discoverable_agent_tool` read as a call of the tool it names.

In τ²-bench's `banking_knowledge` domain (released as τ³-bench, sierra-research/tau2-bench v1.0) most of the
agent's tools are not in its tool list: it finds them in the knowledge base, unlocks one
(`unlock_discoverable_agent_tool`, kept in memory, not in the database) and calls it through one tool,
`call_discoverable_agent_tool(agent_tool_name, arguments)`, whose `arguments` is the named tool's arguments as
JSON text. Which call changes the database is the named tool's business: the environment records a call of a
tool that changes state, and of a read-only one only when the task's ground truth calls it too (its
`read_log_allowlist`, so that extra reads do not change the database the reward compares). Read as the
dispatcher, every such call would be one write with a text argument; read as the named tool's call, a lookup
is a lookup, a write's arguments compare as the object they are, and a read the ground truth makes is one the
reward requires (`required`: the environment logs it).

The same reading applies to a transcript's calls and to the ground truth's actions. A call that never reached
the tool it names is left as it was made: one the dispatcher refused (the tool unknown or not unlocked, its
arguments not JSON of an object or not the tool's) and one whose tool raised (τ²-bench's `error: true`); neither
is recorded. A discoverable write that ran and returned an error text is recorded all the same
(`tau_domains.Domain.recorded`).
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["DISPATCHER", "named_call", "read_messages"]

DISPATCHER = "call_discoverable_agent_tool"
# What the dispatcher answers when it does not call the tool (tau2-bench a2c0247,
# src/tau2/domains/banking_knowledge/tools.py, `call_discoverable_agent_tool`).
_REFUSED = re.compile(
    r"Error: (?:Unknown agent tool '|Tool '[^']*' has not been unlocked|Invalid JSON in arguments:|Invalid arguments:)"
)


def named_call(name: Any, arguments: Any) -> tuple[str, dict[str, Any]] | None:
    """The (tool, arguments) a dispatcher call names, or None when `name` is no dispatcher call or its
    arguments cannot be read as the environment reads them (the tool name a text, the arguments JSON text of an
    object, or an object, or absent)."""
    if name != DISPATCHER or not isinstance(arguments, dict):
        return None
    tool = arguments.get("agent_tool_name")
    inner = arguments.get("arguments", "{}")
    if not isinstance(tool, str) or not tool:
        return None
    if isinstance(inner, str):
        try:
            inner = json.loads(inner)
        except (ValueError, RecursionError):
            return None
    return (tool, inner) if isinstance(inner, dict) else None


def _unreached(messages: list[Any]) -> set[str]:
    """The ids of the calls whose tool message says the dispatcher refused them or their tool raised."""
    ids = set()
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "tool" and isinstance(message.get("id"), str):
            content = message.get("content")
            if message.get("error") is True or (isinstance(content, str) and _REFUSED.match(content)):
                ids.add(message["id"])
    return ids


def read_messages(messages: list[Any]) -> tuple[list[Any], int]:
    """`messages` (τ²-bench's) with each dispatcher call of the agent that reached its tool read as the named
    tool's call, and how many were; the messages given are not changed (a message with such a call is copied)."""
    out: list[Any] = []
    count = 0
    unreached: set[str] | None = None
    for message in messages:
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        if not isinstance(calls, list) or not any(
            isinstance(c, dict) and c.get("name") == DISPATCHER for c in calls
        ):
            out.append(message)
            continue
        if unreached is None:
            unreached = _unreached(messages)
        read: list[Any] = []
        for call in calls:
            named = named_call(call.get("name"), call.get("arguments")) if isinstance(call, dict) else None
            call_id = call.get("id") if isinstance(call, dict) else None
            if named is None or (isinstance(call_id, str) and call_id in unreached):
                read.append(call)
                continue
            read.append({**call, "name": named[0], "arguments": named[1]})
            count += 1
        out.append({**message, "tool_calls": read})
    return out, count
