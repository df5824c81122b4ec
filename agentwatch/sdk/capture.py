"""What leaves the process: JSON serialisation of captured values, secret redaction, size cap, capture switch.

Everything here is on the agent's hot path and must never raise: a value that cannot be serialised becomes a
short placeholder string instead. Secrets are redacted twice over (`redaction`): a value under a secret key
name is replaced whole, and every string is searched for secrets by their shape (bearer tokens, JWTs, cloud
keys, private key blocks, credentials in URLs, `password=…`), which are replaced in place.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from agentwatch.sdk.redaction import (
    DEFAULT_REDACT_KEYS,
    DEFAULT_VALUE_PATTERNS,
    REDACTED,
    ValueRedactor,
    compile_patterns,
    shortest_match,
)

__all__ = [
    "DEFAULT_REDACT_KEYS",
    "DEFAULT_VALUE_PATTERNS",
    "REDACTED",
    "Capture",
    "capture_settings_from_env",
    "content_capture_from_env",
]

log = logging.getLogger(__name__)

DEFAULT_MAX_ATTRIBUTE_BYTES = 8192
TRUNCATION_MARKER = "…[truncated]"
_MAX_DEPTH = 32
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = str.maketrans({"-": "_", " ": "_", ".": "_"})
_PLAIN = frozenset({int, float, bool, type(None)})  # kept as they are (strings are searched for secrets)
_OFF_VALUES = {"no_content", "false", "0", "no", "off", "none"}
# the OTel GenAI utilities' modes (span_only, event_only, span_and_event) capture content too
_ON_VALUES = {"true", "1", "yes", "on", "span_only", "event_only", "span_and_event"}
# What `json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)` does, with the encoder made
# once: json.dumps builds a new encoder on every call that passes options, and this runs on every span.
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


def content_capture_from_env(environ: Mapping[str, str] | None = None, strict: bool = False) -> bool:
    """Whether content capture is on: AGENTWATCH_CAPTURE_CONTENT, then the OTel GenAI variable; default on.

    A value that is neither on nor off ("disabled", "flase") was taken for on: the privacy switch left open by a
    typo. With `strict` (`configure`) it is a ValueError naming the variable; without (a process that never
    calls `configure`), capture is off, and a warning says why."""
    env = os.environ if environ is None else environ
    for name in ("AGENTWATCH_CAPTURE_CONTENT", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"):
        raw = env.get(name, "").strip().lower()
        if not raw:
            continue
        if raw in _OFF_VALUES or raw in _ON_VALUES:
            return raw in _ON_VALUES
        why = f"{name}={raw!r} is neither on ({', '.join(sorted(_ON_VALUES))}) nor off ({', '.join(sorted(_OFF_VALUES))})"
        if strict:
            raise ValueError(why)
        log.warning("agentwatch: %s: content capture is off", why)
        return False
    return True


MIN_ATTRIBUTE_BYTES = 64


def capture_settings_from_env(
    environ: Mapping[str, str] | None = None, strict: bool = False
) -> dict[str, Any]:
    """`Capture`'s settings from AGENTWATCH_CAPTURE_CONTENT, _MAX_ATTRIBUTE_BYTES, _REDACT_KEYS and
    _REDACT_VALUES: read by `configure` (`strict`: a bad value is a ValueError naming its variable) and by a
    process that never calls it (its own TracerProvider), which ignored all but the first — the redaction keys
    it set, and the size cap, among them. There a bad size is the default, logged."""
    env = os.environ if environ is None else environ
    raw = env.get("AGENTWATCH_MAX_ATTRIBUTE_BYTES", "").strip()
    max_bytes = DEFAULT_MAX_ATTRIBUTE_BYTES
    if raw:
        try:
            max_bytes = int(raw)
            if max_bytes < MIN_ATTRIBUTE_BYTES:
                raise ValueError
        except ValueError:
            why = f"AGENTWATCH_MAX_ATTRIBUTE_BYTES must be an integer of {MIN_ATTRIBUTE_BYTES} or more, got {raw!r}"
            if strict:
                raise ValueError(why) from None
            log.warning("agentwatch: %s; %d is used", why, DEFAULT_MAX_ATTRIBUTE_BYTES)
            max_bytes = DEFAULT_MAX_ATTRIBUTE_BYTES
    keys_raw = env.get("AGENTWATCH_REDACT_KEYS", "").strip()
    keys = [k.strip() for k in keys_raw.lstrip("+").split(",") if k.strip()]
    redact_keys = [*DEFAULT_REDACT_KEYS, *keys] if keys_raw.startswith("+") or not keys else keys
    values_raw = env.get("AGENTWATCH_REDACT_VALUES", "").strip().lower() or "1"
    return {
        "enabled": content_capture_from_env(env, strict),
        "max_bytes": max_bytes,
        "redact_keys": redact_keys,
        "redact_values": values_raw not in ("0", "false", "no", "off"),
    }


def _normalise_key(key: str) -> str:
    if key.lower() != key:
        key = _CAMEL.sub("_", key)
    return "_" + key.lower().translate(_SEPARATORS) + "_"


class Capture:
    """Turns captured Python values into bounded, redacted JSON strings.

    `redact_keys`: key names whose values are replaced whole; `redact_values`: search strings for secrets by
    their shape, with `value_patterns` (default `DEFAULT_VALUE_PATTERNS`; a dict of named regular expressions, or
    a list; a group named `secret` limits the replacement to it). A bad pattern is a ValueError here, at setup.
    """

    __slots__ = ("_decisions", "_patterns", "_values", "enabled", "max_bytes")

    def __init__(
        self,
        enabled: bool = True,
        max_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
        redact_keys: Iterable[str] = DEFAULT_REDACT_KEYS,
        redact_values: bool = True,
        value_patterns: dict[str, str] | Iterable[str | re.Pattern[str]] | None = None,
    ) -> None:
        self.enabled = enabled
        self.max_bytes = max(MIN_ATTRIBUTE_BYTES, int(max_bytes))
        self._patterns = tuple(_normalise_key(k) for k in redact_keys if k)
        self._decisions: dict[str, bool] = {}
        chosen = DEFAULT_VALUE_PATTERNS if value_patterns is None else value_patterns
        patterns = compile_patterns(chosen)
        # a secret cut by the size bound is still found: the scan covers a margin beyond what is kept
        self._values = (
            ValueRedactor(patterns, self.max_bytes + 1024, shortest_match(chosen)) if redact_values else None
        )

    def redact_text(self, text: str) -> str:
        """`text` with the secrets its patterns find replaced (cut beyond what the size bound keeps)."""
        return self._values(text) if self._values is not None else text

    def is_secret(self, key: str) -> bool:
        """Whether a key names a secret: one of the redaction words as a whole word of the key."""
        decided = self._decisions.get(key)
        if decided is None:
            norm = _normalise_key(key)
            decided = any(p in norm for p in self._patterns)
            if len(self._decisions) < 4096:
                self._decisions[key] = decided
        return decided

    def without_secret_names(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """`arguments` with the value of each argument whose name names a secret replaced (an agent's one
        argument becomes the message's text without its name: `login(api_key=…)` sent the key)."""
        if not any(self.is_secret(name) for name in arguments):
            return arguments
        return {name: REDACTED if self.is_secret(name) else value for name, value in arguments.items()}

    def sanitize(self, value: Any) -> Any:
        """A JSON-ready copy of value with secrets redacted (containers are copied, numbers kept), cut (marked)
        where the JSON of what was copied would pass `max_bytes` (strings counted at most `_STRING_CHARGE`
        characters: `bound` cuts long ones later), a container met again inside itself written "[cycle]": a dict
        holding itself twice took 2^33 steps, and 100,000 rows 3.2 s, on the agent's thread."""
        return self._copy(value, 0, [self.max_bytes], set())

    def _copy(self, value: Any, depth: int, budget: list[int], path: set[int]) -> Any:
        if isinstance(value, str):
            return self._values(value) if self._values is not None else value
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if depth > _MAX_DEPTH:
            return "[too deep]"
        if id(value) in path:
            return "[cycle]"
        path.add(id(value))
        try:
            return self._copy_container(value, depth, budget, path)
        finally:
            path.discard(id(value))

    def _copy_container(self, value: Any, depth: int, budget: list[int], path: set[int]) -> Any:
        # A plain dict (what arguments and most results are) is a Mapping: checked first by its type, as the
        # abstract class's isinstance check costs more than the copy of a small dict.
        if type(value) is dict or isinstance(value, Mapping):
            out = {}
            decisions = self._decisions
            searched = self._values.min_chars if self._values is not None else 1 << 62
            for k, v in value.items():
                key = k if type(k) is str else str(k)
                if len(key) >= searched and self._values is not None:  # a token used as a key is a token
                    key = self._values(key)
                budget[0] -= _charge(key) + (_charge(v) if type(v) is str else 2)
                if budget[0] < 0:
                    out["…"] = TRUNCATION_MARKER
                    break
                secret = decisions.get(key)  # is_secret's own cache: most keys were decided before
                if secret is None:
                    secret = self.is_secret(key)
                if secret:
                    out[key] = REDACTED
                else:
                    out[key] = v if type(v) in _PLAIN else self._copy(v, depth + 1, budget, path)
            return out
        as_dict = getattr(value, "_asdict", None) if isinstance(value, tuple) else None
        if callable(as_dict):  # a NamedTuple: its field names, as a dict's keys
            try:
                named = as_dict()
            except Exception:  # noqa: BLE001
                return _placeholder(value)
            return self._copy_container(named, depth, budget, path)
        if isinstance(value, (list, tuple, set, frozenset)):
            items = []
            for v in value:
                budget[0] -= _charge(v) if type(v) is str else 2
                if budget[0] < 0:
                    items.append(TRUNCATION_MARKER)
                    break
                items.append(v if type(v) in _PLAIN else self._copy(v, depth + 1, budget, path))
            return items
        if isinstance(value, (bytes, bytearray, memoryview)):
            return f"<{len(value)} bytes>"
        dump = getattr(value, "model_dump", None)
        if callable(dump):  # pydantic v2 models
            try:
                return self._copy(dump(mode="json"), depth + 1, budget, path)
            except Exception:  # noqa: BLE001 - a broken model must not break the agent
                return _placeholder(value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            try:
                fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            except Exception:  # noqa: BLE001
                return _placeholder(value)
            return self._copy(fields, depth + 1, budget, path)
        to_dict = getattr(value, "to_dict", None)
        if callable(to_dict):
            try:
                return self._copy(to_dict(), depth + 1, budget, path)
            except Exception:  # noqa: BLE001
                return _placeholder(value)
        return _placeholder(value)

    def _nothing_to_redact(self, value: Any) -> bool:
        """Whether `value` is a plain dict of keys that name no secret and of numbers or strings too short to hold
        one (most tool arguments and results): it is then serialised as it is, without a redacted copy."""
        if type(value) is not dict:
            return False
        decisions = self._decisions
        # strings shorter than this are not searched for secrets
        searched = self._values.min_chars if self._values is not None else 1 << 62
        for k, v in value.items():
            if type(k) is not str or len(k) >= searched or decisions.get(k) is not False:
                return False  # a long key is searched as a value is
            if type(v) not in _PLAIN and (type(v) is not str or len(v) >= searched):
                return False
        return True

    def dumps(self, value: Any) -> str:
        """value as redacted JSON, at most max_bytes UTF-8 bytes (truncation is marked)."""
        try:
            clean = value if self._nothing_to_redact(value) else self.sanitize(value)
            text = _ENCODE(clean)
        except Exception as exc:  # noqa: BLE001 - never raise into the agent
            return f"<unserialisable: {type(exc).__name__}>"
        return self.bound(text, clean, sanitized=True)

    def dumps_plain(self, value: Any) -> str:
        """JSON of a message list built by the SDK, redacted (texts taken as they came, tool-call arguments of
        a chat: their secrets are found here), bounded to max_bytes."""
        try:
            clean = self.sanitize(value)
            text = _ENCODE(clean)
        except Exception as exc:  # noqa: BLE001
            return f"<unserialisable: {type(exc).__name__}>"
        return self.bound(text, clean, sanitized=True)

    def text(self, value: str) -> str:
        """A plain string, its secrets redacted, bounded to max_bytes (truncation is marked)."""
        if self._values is not None:
            value = self._values(value)
        return self.bound(value, None) if len(value) * 4 > self.max_bytes else value

    def bound(self, text: str, original: Any, sanitized: bool = False) -> str:
        """text if it fits in max_bytes; else a shrunk version, valid JSON where possible, with a marker
        (`sanitized`: `original` is already the redacted copy `text` was written from)."""
        if len(text) * 4 <= self.max_bytes or len(text.encode("utf-8")) <= self.max_bytes:
            return text
        if original is not None and not isinstance(original, str):
            shrunk = self._shrink_strings(original, sanitized)
            if shrunk is not None:
                return shrunk
        return _cut(text, self.max_bytes)

    def _shrink_strings(self, original: Any, sanitized: bool) -> str | None:
        """Re-serialise with long strings cut (and marked) until it fits; None if it never does."""
        try:
            clean = original if sanitized else self.sanitize(original)
        except Exception:  # noqa: BLE001
            return None
        limit = self.max_bytes // 2
        while limit >= 32:
            text = _ENCODE(_cut_strings(clean, limit))
            if len(text.encode("utf-8")) <= self.max_bytes:
                return text
            limit //= 2
        return None


_STRING_CHARGE = 64


def _charge(text: str) -> int:
    """The least JSON a string costs, counted up to `_STRING_CHARGE` characters (long ones are cut to fit later)."""
    return min(len(text), _STRING_CHARGE) + 3


def _placeholder(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001
        return f"<{type(value).__name__}>"
    return text if len(text) <= 512 else text[:512] + TRUNCATION_MARKER


def _cut(text: str, max_bytes: int) -> str:
    budget = max_bytes - len(TRUNCATION_MARKER.encode("utf-8"))
    head = text.encode("utf-8")[:budget].decode("utf-8", errors="ignore")
    return head + TRUNCATION_MARKER


def _cut_strings(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + TRUNCATION_MARKER
    if isinstance(value, dict):
        return {k: _cut_strings(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        if len(value) > limit:
            value = [*value[:limit], TRUNCATION_MARKER]
        return [_cut_strings(v, limit) for v in value]
    return value
