"""A published τ-bench run rewritten as τ-bench's other agent strategies would have logged the same steps.

τ-bench's `ChatReActAgent` (strategies `react` and `act`, sierra-research/tau-bench
`tau_bench/agents/chat_react_agent.py`) does not use the model's tool calls: every step is an assistant message
whose text ends in `Action:` and a JSON object `{"name", "arguments"}` (`respond` with `{"content"}` to speak to
the user), `react` with a `Thought:` line before it; the environment's answer to a tool action comes back as a
*user* message starting `API output: `. The rewrite keeps every step, argument, result and reward of the
tool-calling run, so verdicts on the rewritten run must equal the verdicts on the original.
"""

from __future__ import annotations

import copy
import json
from typing import Any

RESPOND = (
    "respond"  # tau_bench.types.RESPOND_ACTION_NAME; its argument is RESPOND_ACTION_FIELD_NAME, "content"
)


def _action(name: str, arguments: Any, thought: str | None) -> dict[str, Any]:
    """An assistant message as `ChatReActAgent` keeps it (litellm's `message.model_dump()`)."""
    body = json.dumps({"name": name, "arguments": arguments})
    content = f"Thought:\n{thought}\nAction:\n{body}" if thought is not None else f"Action:\n{body}"
    return {"content": content, "role": "assistant", "tool_calls": None, "function_call": None}


def _react_traj(traj: list[dict[str, Any]], reasoning: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in traj:
        role = message.get("role")
        if role == "assistant":
            calls = message.get("tool_calls") or []
            text = message.get("content")
            if calls:
                function = calls[0]["function"]  # τ-bench acts on the first call of a step only
                arguments = json.loads(function["arguments"] or "{}")
                thought = (text or f"I should call {function['name']}.") if reasoning else None
                out.append(_action(function["name"], arguments, thought))
            else:
                thought = "I can answer the user now." if reasoning else None
                out.append(_action(RESPOND, {"content": text or ""}, thought))
        elif role == "tool":
            out.append({"role": "user", "content": "API output: " + str(message.get("content") or "")})
        else:
            out.append(copy.deepcopy(message))
    return out


def tau_bench_as_react(document: list[dict[str, Any]], reasoning: bool = True) -> list[dict[str, Any]]:
    """A τ-bench tool-calling results document as the `react` strategy (`reasoning`) or `act` logs it."""
    rewritten = []
    for entry in document:
        entry = dict(entry)
        entry["traj"] = _react_traj(entry["traj"], reasoning)
        rewritten.append(entry)
    return rewritten
