"""The values `conversation(...)` is given, read leniently: one it cannot use is logged and left out, never raised
into the agent's code (the agent's object, the agent's bug: not the agent's crash)."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping

log = logging.getLogger(__name__)


def read_attempt(value: object) -> int | None:
    """An attempt number (an integer >= 0); anything else is logged and left out, never raised."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    log.warning("agentwatch: attempt=%r ignored: not an integer >= 0", value)
    return None


def read_budget(value: object) -> float | None:
    """A budget in USD (a finite number >= 0); anything else ("$0.50") is logged and left out, never raised."""
    if value is None:
        return None
    try:
        budget = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        budget = math.nan
    if math.isfinite(budget) and budget >= 0:
        return budget
    log.warning("agentwatch: budget_usd=%r ignored: not a number of USD >= 0", value)
    return None


def tag_text(value: object) -> str:
    """A tag key or value as text; one whose `__str__` fails is its type's name (logged), never an error."""
    found = text_or_none("a tag", value)
    return f"<{type(value).__name__}>" if found is None else found


def text_or_none(what: str, value: object) -> str | None:
    """`str(value)`; None, logged, when its `__str__` fails (the agent's object, the agent's bug: not its crash)."""
    if value is None:
        return None
    try:
        return str(value)
    except Exception as exc:  # noqa: BLE001
        log.warning("agentwatch: %s of type %s has no text, left out: %r", what, type(value).__name__, exc)
        return None


def read_tags(tags: object) -> dict[str, str]:
    """Tags as texts: a mapping, or (key, value) pairs; anything else is logged and left out."""
    try:
        if not tags:  # inside: a pandas Series' or numpy array's truth value raises
            return {}
        pairs = tags.items() if isinstance(tags, Mapping) else dict(tags).items()  # type: ignore[call-overload]
        return {tag_text(k): tag_text(v) for k, v in pairs}
    except Exception as exc:  # noqa: BLE001
        log.warning("agentwatch: tags=%s left out: not a mapping: %r", type(tags).__name__, exc)
        return {}
