"""The calls a conversation made as the effects grader sees them, and which of them changed nothing.

A successful call with effects changed the state, unless it returned a record exactly as the latest call returning
that record did (the state it leaves is the state already seen); an expected write the agent did not make would
have changed nothing when the latest look at its record shows its values already (`effects` says how each is
used).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentwatch.config.policies import is_constraint
from agentwatch.scorers.arguments import canonical_json
from agentwatch.scorers.names import NameNormalizer
from agentwatch.scorers.tool_kinds import EFFECT, ToolKinds
from agentwatch.wire.schema import Conversation, ToolCall
from agentwatch.wire.values import read_structured


@dataclass(slots=True)
class MadeCall:
    """A call of the conversation as the effects grader sees it."""

    call: ToolCall
    name: str  # normalised
    kind: str  # read_only, handoff or effect
    turn: int

    @property
    def ok(self) -> bool:
        """The call did not return an error (so it did what it does)."""
        return self.call.error is None


def made_calls(conv: Conversation, names: NameNormalizer, kinds: ToolKinds) -> list[MadeCall]:
    """Every call of the conversation, in order, with its normalised name and kind."""
    out: list[MadeCall] = []
    for i, turn in enumerate(conv.turns):
        for call in turn.tool_calls:
            name = names(call.name)
            out.append(MadeCall(call, name, kinds.of(call, name), i))
    return out


_RECORD_FIELDS = 3  # a result with fewer fields may be an acknowledgement a lookup can return too


def record_key(call: ToolCall, result: dict[str, Any]) -> tuple[frozenset[Any], frozenset[Any]]:
    """Which record `result` is: its keys (its kind), and the ids the call names that it holds at its top with the
    same value (`order_id` of `get_order_details(order_id)` and of `modify_pending_order_address(order_id, …)`):
    two orders of one user are two records, and a write of one between does not hide that the other is as last
    seen. Only ids: a value the call sets (a cabin) is the record's state, not which record it is."""
    named = frozenset(
        (k, v)
        for k, v in call.arguments.items()
        if is_id(k) and isinstance(v, (str, int)) and not isinstance(v, bool) and result.get(k, _ABSENT) == v
    )
    return frozenset(result), named


_ABSENT = object()


def is_id(name: str) -> bool:
    """Whether an argument's name says it is an id (`id`, `order_id`, `orderId`)."""
    return name.lower() == "id" or name.lower().endswith(("_id", "-id")) or name.endswith("Id")


def state_changes(made: Sequence[MadeCall]) -> list[bool]:
    """For each call, whether it changed the state: a successful call with effects, unless it returned a record (an
    object of `_RECORD_FIELDS` fields or more, not an acknowledgement such as `{"status": "sent"}`) exactly as the
    latest call returning that record (`record_key`), a lookup or a write, returned it: the state it leaves is the
    state already seen. One pass; only a write's record and the one before it are written as JSON."""
    latest: dict[tuple[frozenset[Any], frozenset[Any]], dict[str, Any]] = {}  # a record -> its latest state
    out: list[bool] = []
    for m in made:
        result = m.call.result
        if not (m.ok and isinstance(result, dict) and len(result) >= _RECORD_FIELDS):
            out.append(m.ok and m.kind == EFFECT)
            continue
        key = record_key(m.call, result)
        seen = latest.get(key)
        out.append(m.kind == EFFECT and (seen is None or canonical(seen) != canonical(result)))
        latest[key] = result
    return out


def canonical(value: Any) -> str:
    return canonical_json(value, (", ", ": "))


def lookups_latest_first(made: Sequence[MadeCall]) -> list[tuple[MadeCall, dict[str, str]]]:
    """The successful calls with arguments, latest first, each with its arguments as canonical JSON."""
    return [
        (m, {str(k): canonical(v) for k, v in m.call.arguments.items()})
        for m in reversed(made)
        if m.ok and m.call.arguments
    ]


def shown_already(
    spec: Any, lookups: Sequence[tuple[MadeCall, dict[str, str]]], budget: int
) -> tuple[MadeCall | None, int]:
    """The latest successful call addressing the record an expected write addresses, when its result shows the
    write's other values already (the write would change nothing), else None; and the calls looked at (none
    once `budget` is spent: the write then counts as missing).

    A call addresses the record when its arguments are some of the write's, with the same values, and nothing else
    (`get_user_details(user_id)` for `modify_user_address(user_id, address1, ...)`; a lookup of an order by its
    id does not address its user, though it holds the user's id and an address). The values must be in the
    record itself or in one object directly in it, all in the same one, equal as JSON; a write with a
    constraint for a value, or with no value beside the record's address, is never taken as shown.
    `lookups`: from `lookups_latest_first`."""
    args = getattr(spec, "arguments", None)
    if (
        len(lookups) > budget
        or not isinstance(args, dict)
        or len(args) < 2
        or any(is_constraint(v) for v in args.values())
    ):
        return None, 0
    wanted = {str(k): canonical(v) for k, v in args.items()}
    for n, (m, called) in enumerate(lookups, 1):
        if len(called) >= len(wanted) or any(wanted.get(k) != v for k, v in called.items()):
            continue  # another record, or not a lookup of one
        rest = {k: v for k, v in wanted.items() if k not in called}
        return (m if _holds(m.call.result, rest) else None), n  # the latest look at the record decides
    return None, len(lookups)


def _holds(result: Any, values: Mapping[str, str]) -> bool:
    """Whether a result (an object, or its JSON text) or one object directly in it has every key of `values`
    with that value (canonical JSON)."""
    if isinstance(result, str):
        result = read_structured(result)[0]
    if not isinstance(result, dict):
        return False
    for node in (result, *(v for v in result.values() if isinstance(v, dict))):
        if all(k in node and canonical(node[k]) == v for k, v in values.items()):
            return True
    return False
