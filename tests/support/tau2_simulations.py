"""τ²-bench simulations written for tests: an agent's calls, each answered, between a request and an ending."""

from __future__ import annotations

from typing import Any


def tau2_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A call of the agent's, as a τ²-bench action or message tool call holds it."""
    return {"requestor": "assistant", "name": name, "arguments": arguments}


def tau2_simulation(
    task_id: str, calls: list[dict[str, Any]], request: str, answer: str, ending: str, result: str
) -> dict[str, Any]:
    """A simulation of `task_id`: the user's `request`, the agent's `calls` (each answered with `result`), the
    agent's `answer`, and the user's `ending` (`###STOP###`, `###TRANSFER###`)."""
    made: list[dict[str, Any]] = []
    for i, call in enumerate(calls):
        made.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", **call}]})
        made.append({"role": "tool", "id": f"c{i}", "content": result})
    return {
        "id": f"s-{task_id}",
        "task_id": task_id,
        "trial": 0,
        "messages": [
            {"role": "assistant", "content": "Hi! How can I help?"},
            {"role": "user", "content": request},
            *made,
            {"role": "assistant", "content": answer},
            {"role": "user", "content": ending},
        ],
    }
