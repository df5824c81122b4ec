"""The values `conversation(...)` is given, read leniently: one it cannot use is logged and left out, never raised
into the agent's code (the agent's object, the agent's bug: not the agent's crash)."""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Mapping
from itertools import islice

log = logging.getLogger(__name__)

# Ids, names and tags are stamped on every span of a conversation: one of a megabyte would go out with each.
# Past MAX_NAME_BYTES a text is cut and ends in its SHA-256 digest, so two long ids stay two conversations.
MAX_NAME_BYTES = 1024
MAX_TAGS = 64
_DIGEST_MARK = "…sha256:"
_KEPT_BYTES = MAX_NAME_BYTES - len(_DIGEST_MARK.encode()) - 64


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
    """A tag key or value as bounded text (`read_name`); one whose `__str__` fails is its type's name (logged),
    never an error."""
    found = read_name("a tag", value)
    return f"<{type(value).__name__}>" if found is None else found


def read_name(what: str, value: object) -> str | None:
    """`text_or_none`, bounded to MAX_NAME_BYTES of UTF-8: a longer text is cut and ends in its digest (logged)."""
    text = text_or_none(what, value)
    if text is None or len(text) * 4 <= MAX_NAME_BYTES:
        return text
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= MAX_NAME_BYTES:
        return text
    log.warning(
        "agentwatch: %s of %d bytes cut to %d (it ends in its digest)", what, len(data), MAX_NAME_BYTES
    )
    kept = data[:_KEPT_BYTES].decode("utf-8", "ignore")  # a character cut in two is left out
    return kept + _DIGEST_MARK + hashlib.sha256(data).hexdigest()


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
    """Tags as bounded texts, at most MAX_TAGS of them: a mapping, or (key, value) pairs; anything else is logged
    and left out."""
    try:
        if not tags:  # inside: a pandas Series' or numpy array's truth value raises
            return {}
        items = tags.items() if isinstance(tags, Mapping) else dict(tags).items()  # type: ignore[call-overload]
        pairs = list(islice(items, MAX_TAGS + 1))
        if len(pairs) > MAX_TAGS:
            log.warning(
                "agentwatch: %d tags, the first %d kept (each is stamped on every span)", len(pairs), MAX_TAGS
            )
            del pairs[MAX_TAGS:]
        return {tag_text(k): tag_text(v) for k, v in pairs}
    except Exception as exc:  # noqa: BLE001
        log.warning("agentwatch: tags=%s left out: not a mapping: %r", type(tags).__name__, exc)
        return {}
