"""A published τ-bench run rewritten as other agents and loggers would have logged the same steps.

τ-bench's `ChatReActAgent` (strategies `react` and `act`, sierra-research/tau-bench
`tau_bench/agents/chat_react_agent.py`) does not use the model's tool calls: every step is an assistant message
whose text ends in `Action:` and a JSON object `{"name", "arguments"}` (`respond` with `{"content"}` to speak to
the user), `react` with a `Thought:` line before it; the environment's answer to a tool action comes back as a
*user* message starting `API output: `. The rewrite keeps every step, argument, result and reward of the
tool-calling run, so verdicts on the rewritten run must equal the verdicts on the original. `tau_bench_in` does the same for the
message shapes of other APIs and loggers (`agentwatch.importers.dialects`).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from agentwatch.config import Settings
from agentwatch.importers.tau_bench import import_results
from agentwatch.report.validity import blind, grade
from agentwatch.scorers.policy import TaskPolicy
from agentwatch.wire.schema import Conversation

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


def _failed(text: str) -> bool:
    return text.lstrip().startswith("Error")


def _call(message: dict[str, Any]) -> tuple[str, str, Any] | None:
    """(id, name, arguments) of a tool-calling step's one call, or None for a message to the user."""
    calls = message.get("tool_calls") or []
    if not calls:
        return None
    function = calls[0]["function"]
    return calls[0]["id"], function["name"], json.loads(function["arguments"] or "{}")


def _anthropic(message: dict[str, Any]) -> list[dict[str, Any]]:
    role, text = message["role"], message.get("content") or ""
    if role == "assistant":
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        call = _call(message)
        if call is not None:
            blocks.append({"type": "tool_use", "id": call[0], "name": call[1], "input": call[2]})
        return [{"role": "assistant", "content": blocks}]
    if role == "tool":
        result = {"type": "tool_result", "tool_use_id": message["tool_call_id"], "is_error": _failed(text)}
        return [{"role": "user", "content": [result | {"content": [{"type": "text", "text": text}]}]}]
    return [{"role": role, "content": [{"type": "text", "text": text}] if role == "user" else text}]


def _responses(message: dict[str, Any]) -> list[dict[str, Any]]:
    role, text = message["role"], message.get("content") or ""
    if role == "system":
        return [{"role": "developer", "content": text}]
    if role == "user":
        return [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}]
    if role == "tool":
        return [{"type": "function_call_output", "call_id": message["tool_call_id"], "output": text}]
    items: list[dict[str, Any]] = [{"type": "reasoning", "id": "rs_1", "summary": []}]
    if text:
        output: list[dict[str, Any]] = [{"type": "output_text", "text": text, "annotations": []}]
        items.append({"type": "message", "role": "assistant", "status": "completed", "content": output})
    call = _call(message)
    if call is not None:
        arguments = json.dumps(call[2])
        items.append({"type": "function_call", "call_id": call[0], "name": call[1], "arguments": arguments})
    return items


def _gemini(message: dict[str, Any]) -> list[dict[str, Any]]:
    role, text = message["role"], message.get("content") or ""
    if role == "assistant":
        parts: list[dict[str, Any]] = [{"text": text}] if text else []
        call = _call(message)
        if call is not None:
            parts.append({"functionCall": {"name": call[1], "args": call[2]}})  # Gemini's calls carry no id
        return [{"role": "model", "parts": parts}]
    if role == "tool":
        response = {"error": text} if _failed(text) else {"result": text}
        return [
            {"role": "user", "parts": [{"functionResponse": {"name": message["name"], "response": response}}]}
        ]
    return [{"role": role, "parts": [{"text": text}]}]


def _langchain(message: dict[str, Any]) -> list[dict[str, Any]]:
    role, text = message["role"], message.get("content") or ""
    data: dict[str, Any] = {"content": text, "additional_kwargs": {}, "response_metadata": {}, "id": None}
    kind = {"system": "system", "user": "human", "assistant": "ai", "tool": "tool"}[role]
    if role == "assistant":
        call = _call(message)
        calls = (
            [] if call is None else [{"name": call[1], "args": call[2], "id": call[0], "type": "tool_call"}]
        )
        data |= {"tool_calls": calls, "invalid_tool_calls": [], "usage_metadata": None}
    elif role == "tool":
        status = "error" if _failed(text) else "success"
        data |= {"tool_call_id": message["tool_call_id"], "name": message["name"], "status": status}
    return [{"type": kind, "data": data | {"type": kind, "name": None}}]


DIALECTS = {"anthropic": _anthropic, "responses": _responses, "gemini": _gemini, "langchain": _langchain}


def tau_bench_in(document: list[dict[str, Any]], dialect: str) -> list[dict[str, Any]]:
    """A τ-bench tool-calling results document with every trajectory's messages as `dialect` writes them:
    Anthropic Messages, OpenAI Responses items, Gemini contents, or LangChain's `messages_to_dict`."""
    rewrite = DIALECTS[dialect]
    rewritten = []
    for entry in document:
        entry = dict(entry)
        entry["traj"] = [m for message in entry["traj"] for m in rewrite(message)]
        rewritten.append(entry)
    return rewritten


def verdicts(document: Any) -> dict[str, tuple[bool | None, tuple[str, ...], list[Any]]]:
    """Per conversation of a τ-bench or τ²-bench results document, graded blind by its policies: the verdict, its
    reason codes, and every turn's tool calls (name, arguments, result, error)."""
    imported = import_results(document, "agent", "v", "run")
    assert not imported.errors
    conversations, _ = blind([Conversation.model_validate(line) for line in imported.lines])
    policies = [TaskPolicy.model_validate(p) for p in imported.policies]
    scores = grade(conversations, Settings().model_copy(update={"policies": policies}))
    calls = {
        c.conversation_id: [
            [(call.name, call.arguments, call.result, call.error) for call in t.tool_calls] for t in c.turns
        ]
        for c in conversations
    }
    return {
        s.conversation_id: (
            s.passed,
            tuple(sorted({r.split(":")[0] for r in s.reasons})),
            calls[s.conversation_id],
        )
        for s in scores
    }
