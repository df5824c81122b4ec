"""The ground-truth writes τ-bench's and τ²-bench's environments refuse from their starting database.

Both benchmarks reward a task by replaying its ground truth on the starting database and comparing the result with
the agent's database. A ground-truth write the environment refuses there (a return refunded to a payment method
the shop refuses, an exchange the named gift card cannot pay for) changes nothing in that replay: an agent that
does not make it loses nothing, and one that makes it is refused too. `data/tau_refused_writes.json` lists them,
found by replaying every published task with the benchmarks' own code (`scripts/tau_refused_writes.py`, which
says how); the import's policies leave them not required (`fit_to_domain`). It holds writes of the published
databases: a fork that changes the database could accept one of them.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["excuse_refused", "refused_from_start"]


def _key(name: str, arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments}, sort_keys=True, default=str)


@cache
def _refused() -> dict[str, frozenset[str]]:
    """The refused writes by domain, each as its canonical JSON."""
    text = (resources.files("agentwatch") / "data" / "tau_refused_writes.json").read_text("utf-8")
    table: dict[str, list[dict[str, Any]]] = json.loads(text)
    return {
        domain: frozenset(_key(w["name"], w["arguments"]) for w in writes) for domain, writes in table.items()
    }


def refused_from_start(domain: str, name: str, arguments: dict[str, Any]) -> bool:
    """Whether `domain`'s environment refuses the write `name(arguments)` from its starting database, as the
    ground truth of a published task holds it (the same arguments, lists in the same order)."""
    return _key(name, arguments) in _refused().get(domain, frozenset())


def excuse_refused(policy: dict[str, Any], domain: str) -> list[str]:
    """Leave each expected write of `policy` (a task of `domain` rewarded on its final state) that the
    environment refuses from its starting database not required (`required: false`: allowed, refused anyway);
    the names of those writes. One with `alternatives` stays required: the ground truth made the same write on
    another tool too, which the environment accepts (an exchange of an order still pending, then its
    modification)."""
    excused = []
    for tool in policy.get("tools", ()):
        if tool.get("required") is not None or tool.get("alternatives"):
            continue
        if refused_from_start(domain, tool["name"], tool["arguments"]):
            tool["required"] = False
            excused.append(str(tool["name"]))
    return excused
