"""Decode OTLP/JSON `TracesData` (the protobuf JSON mapping; camelCase or snake_case; hex or base64 ids)."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from typing import Any

from agentwatch.collector.adk_spans import KEYS as ADK_KEYS
from agentwatch.collector.adk_spans import fold as fold_adk
from agentwatch.collector.conventions import (
    EXCEPTION_EVENT,
    EXCEPTION_MESSAGE_KEY,
    EXCEPTION_TYPE_KEY,
    NEEDED_KEYS,
    RESOURCE_KEYS,
    TAG_PREFIX,
)
from agentwatch.collector.flat_messages import PREFIXES as FLAT_PREFIXES
from agentwatch.collector.flat_messages import fold
from agentwatch.collector.langfuse_spans import KEYS as LANGFUSE_KEYS
from agentwatch.collector.langfuse_spans import TYPE as LANGFUSE_TYPE
from agentwatch.collector.langfuse_spans import fold as fold_langfuse
from agentwatch.collector.litellm_raw import SPAN_NAME as RAW_SPAN
from agentwatch.collector.litellm_raw import fold as fold_raw
from agentwatch.collector.litellm_raw import raw_keys
from agentwatch.collector.message_events import DEPTH as MESSAGE_DEPTH
from agentwatch.collector.message_events import NAMES as MESSAGE_EVENTS
from agentwatch.collector.message_events import fold as fold_events
from agentwatch.collector.mlflow_spans import KEYS as MLFLOW_KEYS
from agentwatch.collector.mlflow_spans import TYPE as MLFLOW_TYPE
from agentwatch.collector.mlflow_spans import fold as fold_mlflow
from agentwatch.collector.span_record import (
    MAX_ARRAY,
    DecodeError,
    SpanRecord,
    conversation_of,
    error_of,
    truncate,
    with_conversations,
)
from agentwatch.collector.traceloop_spans import KEYS as TRACELOOP_KEYS
from agentwatch.collector.traceloop_spans import KIND as TRACELOOP_KIND
from agentwatch.collector.traceloop_spans import fold as fold_traceloop
from agentwatch.collector.vercel_ai import KEYS as VERCEL_KEYS
from agentwatch.collector.vercel_ai import OPERATION_ID as VERCEL_OPERATION
from agentwatch.collector.vercel_ai import fold as fold_vercel
from agentwatch.wire import json_text

_SNAKE = re.compile(r"(?<=[a-z])(?=[A-Z])")
_SPAN_KEYS = NEEDED_KEYS | VERCEL_KEYS | ADK_KEYS | LANGFUSE_KEYS | MLFLOW_KEYS | TRACELOOP_KEYS
_JSON_SCALARS = (
    ("stringValue", "string_value", str),
    ("boolValue", "bool_value", bool),
    ("intValue", "int_value", int),
    ("doubleValue", "double_value", float),
)


def json_value(v: Any, limit: int, where: str, depth: int = 0, max_depth: int = 2) -> Any:
    """An OTLP/JSON `AnyValue` as a Python value (like `decode.pb_value`); DecodeError for a bad number."""
    if not isinstance(v, dict):
        return None
    for camel, snake, kind in _JSON_SCALARS:
        raw = v.get(camel, v.get(snake)) if (camel in v or snake in v) else None
        if raw is None:
            continue
        if kind is str:
            return truncate(str(raw), limit)
        if kind is bool:
            return raw if isinstance(raw, bool) else str(raw).lower() == "true"
        try:
            return kind(raw)
        except (TypeError, ValueError, OverflowError):
            raise DecodeError("invalid_json", f"{where}: {camel} {str(raw)[:40]!r} is not a number") from None
    arr = v.get("arrayValue", v.get("array_value"))
    if isinstance(arr, dict) and depth <= max_depth:
        values = arr.get("values") or []
        if isinstance(values, list):
            return [json_value(x, limit, where, depth + 1, max_depth) for x in values[:MAX_ARRAY]]
    kvl = v.get("kvlistValue", v.get("kvlist_value"))
    if isinstance(kvl, dict) and depth <= max_depth:
        values = kvl.get("values") or []
        if isinstance(values, list):
            return {
                str(kv.get("key")): json_value(kv.get("value"), limit, where, depth + 1, max_depth)
                for kv in values[:MAX_ARRAY]
                if isinstance(kv, dict)
            }
    raw = v.get("bytesValue", v.get("bytes_value"))
    if raw is not None:
        return truncate(str(raw), limit)
    return None


def json_id(raw: Any, nbytes: int, where: str, required: bool) -> str | None:
    if raw is None or raw == "":
        if required:
            raise DecodeError("invalid_span", f"{where}: id missing")
        return None
    if not isinstance(raw, str):
        raise DecodeError("invalid_span", f"{where}: id is not a string")
    if len(raw) == 2 * nbytes:
        try:
            value = bytes.fromhex(raw)
        except ValueError:
            value = b""
    else:
        try:
            value = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            value = b""
    if len(value) != nbytes or value == bytes(nbytes):
        if required:
            raise DecodeError("invalid_span", f"{where}: malformed id {raw[:40]!r}")
        return None
    return value.hex()


def _required_id(raw: Any, nbytes: int, where: str) -> str:
    """A trace or span id that must be there: its hex, or DecodeError."""
    value = json_id(raw, nbytes, where, True)
    if value is None:  # _json_id raises first when an id is required
        raise DecodeError("invalid_span", f"{where}: id missing")
    return value


def json_field(d: dict, camel: str, snake: str, default: Any = None) -> Any:
    value = d.get(camel)
    if value is None:
        value = d.get(snake, default)
    return value


def json_list(d: Any, camel: str, snake: str, where: str) -> list:
    if not isinstance(d, dict):
        raise DecodeError("invalid_json", f"{where}: expected an object")
    value = json_field(d, camel, snake, [])
    if value is None:
        return []
    if not isinstance(value, list):
        raise DecodeError("invalid_json", f"{where}.{camel}: expected a list")
    return value


def json_int(raw: Any, where: str) -> int:
    if raw is None or raw == "":
        return 0
    try:
        value = int(raw)
    except (TypeError, ValueError, OverflowError):
        raise DecodeError("invalid_json", f"{where}: {str(raw)[:40]!r} is not an integer") from None
    if value < 0 or value >= 1 << 64:
        raise DecodeError("invalid_span", f"{where}: {value} out of range")
    return value


def json_attributes(
    items: Any,
    limit: int,
    where: str,
    keys: frozenset[str] | None = None,
    flat: bool = False,
    max_depth: int = 2,
) -> dict[str, Any]:
    """The attributes of `keys` (all with None) and the `agentwatch.tag.*` ones, values nested at most
    `max_depth` deep; with `flat`, the flattened messages too, folded into the GenAI message keys."""
    out: dict[str, Any] = {}
    if not isinstance(items, list):
        return out
    folded = False
    for kv in items:
        if not isinstance(kv, dict):
            continue
        key = kv.get("key")
        if not isinstance(key, str):
            continue
        if keys is None or key in keys or key.startswith(TAG_PREFIX):
            out[key] = json_value(kv.get("value"), limit, f"{where} attribute {key!r}", max_depth=max_depth)
        elif flat and key.startswith(FLAT_PREFIXES):
            out[key] = json_value(kv.get("value"), limit, f"{where} attribute {key!r}")
            folded = True
    if folded:
        fold(out, limit)
    return out


def load_json(payload: bytes) -> Any:
    """The JSON document of a message, lone surrogate escapes made U+FFFD; DecodeError `invalid_json`."""
    try:
        doc = json_text.loads(payload)
    except (ValueError, RecursionError) as exc:
        raise DecodeError("invalid_json", str(exc)[:200]) from None
    return doc


def otlp_items(
    payload: bytes, limit: int, lists: tuple[str, str, str]
) -> Iterator[tuple[dict[str, Any], Any, str]]:
    """(resource attributes, item, where) of each item of one OTLP/JSON document (or a JSON list of them), its
    three lists named by `lists` in camelCase (`resourceSpans`, `scopeSpans`, `spans`); snake_case is read too.
    DecodeError for a document without the outer list."""
    outer, scope, items = lists
    names = [(name, _SNAKE.sub("_", name).lower()) for name in lists]
    doc = load_json(payload)
    for d, data in enumerate(doc if isinstance(doc, list) else [doc]):
        if not isinstance(data, dict) or not (names[0][0] in data or names[0][1] in data):
            raise DecodeError("not_otlp", f"document {d}: no {outer}")
        for r, rs in enumerate(json_list(data, *names[0], f"document {d}")):
            where_r = f"{outer}[{r}]"
            res = json_field(rs, "resource", "resource", {}) if isinstance(rs, dict) else {}
            attributes = res.get("attributes") if isinstance(res, dict) else None
            resource = json_attributes(attributes, limit, where_r, RESOURCE_KEYS)
            for s, ss in enumerate(json_list(rs, *names[1], where_r)):
                where_s = f"{where_r}.{scope}[{s}]"
                for i, item in enumerate(json_list(ss, *names[2], where_s)):
                    yield resource, item, f"{where_s}.{items}[{i}]"


def decode_json(payload: bytes, limit: int) -> list[SpanRecord]:
    """Span records of one OTLP/JSON document (or a JSON list of them); raise DecodeError."""
    records = [
        _json_span(sp, resource, limit, where)
        for resource, sp, where in otlp_items(payload, limit, ("resourceSpans", "scopeSpans", "spans"))
    ]
    return with_conversations(records)


def _json_span(sp: Any, resource: dict, limit: int, where: str) -> SpanRecord:
    if not isinstance(sp, dict):
        raise DecodeError("invalid_json", f"{where}: expected an object")
    attrs = json_attributes(sp.get("attributes"), limit, where, _SPAN_KEYS, flat=True)
    if sp.get("name") == RAW_SPAN:  # LiteLLM's: its provider's request and response, keys of its own
        items = sp.get("attributes")
        names = [kv.get("key") for kv in items if isinstance(kv, dict)] if isinstance(items, list) else []
        keys = frozenset(raw_keys(k for k in names if isinstance(k, str)))
        attrs.update(json_attributes(items, limit, where, keys))
        fold_raw(attrs, limit)
    if VERCEL_OPERATION in attrs:
        fold_vercel(attrs, limit)
    elif not ADK_KEYS.isdisjoint(attrs):
        fold_adk(attrs, limit)
    elif LANGFUSE_TYPE in attrs:
        fold_langfuse(attrs, str(sp.get("name") or ""), limit)
    elif MLFLOW_TYPE in attrs:
        fold_mlflow(attrs, str(sp.get("name") or ""), limit)
    elif TRACELOOP_KIND in attrs:
        fold_traceloop(attrs, str(sp.get("name") or ""), limit)
    exc_type = None
    events = sp.get("events")
    if isinstance(events, list):
        found: list[tuple[str, dict[str, Any]]] = []
        for ev in events:
            if not isinstance(ev, dict):
                continue
            name = ev.get("name")
            if not isinstance(name, str):  # an event whose name is no text is none the collector reads
                continue
            if name == EXCEPTION_EVENT:
                ev_attrs = json_attributes(ev.get("attributes"), limit, where)
                exc_type = ev_attrs.get(EXCEPTION_TYPE_KEY) or ev_attrs.get(EXCEPTION_MESSAGE_KEY) or exc_type
            elif name in MESSAGE_EVENTS:
                values = json_attributes(ev.get("attributes"), limit, where, max_depth=MESSAGE_DEPTH)
                found.append((name, values))
        if found:
            fold_events(attrs, found, limit)
    status = sp.get("status")
    is_error, message = False, ""
    if isinstance(status, dict):
        code = status.get("code")
        is_error = code in (2, "2", "STATUS_CODE_ERROR")
        message = truncate(str(status.get("message") or ""), limit)
    conv = conversation_of(attrs)
    return SpanRecord(
        _required_id(json_field(sp, "traceId", "trace_id"), 16, f"{where}.traceId"),
        _required_id(json_field(sp, "spanId", "span_id"), 8, f"{where}.spanId"),
        json_id(json_field(sp, "parentSpanId", "parent_span_id"), 8, f"{where}.parentSpanId", False),
        truncate(str(sp.get("name") or ""), limit),
        json_int(json_field(sp, "startTimeUnixNano", "start_time_unix_nano"), f"{where}.startTimeUnixNano"),
        json_int(json_field(sp, "endTimeUnixNano", "end_time_unix_nano"), f"{where}.endTimeUnixNano"),
        error_of(is_error, message, attrs, str(exc_type) if exc_type else None),
        attrs,
        resource,
        "" if conv is None else truncate(conv, limit),
    )
