"""Decode OTLP `TracesData` (protobuf or OTLP/JSON) into `SpanRecord`s, reading only the keys the collector needs."""

from __future__ import annotations

import base64
import logging
from typing import Any

from google.protobuf.message import DecodeError as _PbDecodeError
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status, TracesData

from agentwatch.collector.adk_spans import KEYS as _ADK_KEYS
from agentwatch.collector.adk_spans import fold as fold_adk
from agentwatch.collector.conventions import (
    CONVERSATION_KEYS,
    ERROR_TYPE_KEYS,
    EXCEPTION_EVENT,
    EXCEPTION_MESSAGE_KEY,
    EXCEPTION_TYPE_KEY,
    NEEDED_KEYS,
    RESOURCE_AGENT_KEYS,
    RESOURCE_VERSION_KEYS,
    TAG_PREFIX,
)
from agentwatch.collector.decode_json import decode_json
from agentwatch.collector.flat_messages import FIRST_KEYS as _FLAT_FIRST_KEYS
from agentwatch.collector.flat_messages import PREFIXES as _FLAT_PREFIXES
from agentwatch.collector.flat_messages import fold
from agentwatch.collector.langfuse_spans import KEYS as _LANGFUSE_KEYS
from agentwatch.collector.langfuse_spans import TYPE as _LANGFUSE_TYPE
from agentwatch.collector.langfuse_spans import fold as fold_langfuse
from agentwatch.collector.litellm_raw import SPAN_NAME as RAW_SPAN
from agentwatch.collector.litellm_raw import fold as fold_raw
from agentwatch.collector.litellm_raw import raw_keys
from agentwatch.collector.message_events import DEPTH as _MESSAGE_DEPTH
from agentwatch.collector.message_events import NAMES as _MESSAGE_EVENTS
from agentwatch.collector.message_events import fold as fold_events
from agentwatch.collector.mlflow_spans import KEYS as _MLFLOW_KEYS
from agentwatch.collector.mlflow_spans import TYPE as _MLFLOW_TYPE
from agentwatch.collector.mlflow_spans import fold as fold_mlflow
from agentwatch.collector.otlp_slim import SlimTracesData
from agentwatch.collector.span_record import (
    MAX_ARRAY,
    TRUNCATION_MARKER,
    DecodeError,
    SpanRecord,
    conversation_of,
    error_of,
    looks_json,
    message_bytes,
    truncate,
    with_conversations,
)
from agentwatch.collector.traceloop_spans import KEYS as _TRACELOOP_KEYS
from agentwatch.collector.traceloop_spans import KIND as _TRACELOOP_KIND
from agentwatch.collector.traceloop_spans import fold as fold_traceloop
from agentwatch.collector.vercel_ai import KEYS as _VERCEL_KEYS
from agentwatch.collector.vercel_ai import OPERATION_ID as _VERCEL_OPERATION
from agentwatch.collector.vercel_ai import fold as fold_vercel

__all__ = [
    "READ_KEYS",
    "TRUNCATION_MARKER",
    "DecodeError",
    "SpanRecord",
    "decode_message",
    "encode_spans_otlp",
    "pb_value",
]

log = logging.getLogger(__name__)

_ERROR = 2  # Status.STATUS_CODE_ERROR
_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)
_ERROR_TYPE_SET = frozenset(ERROR_TYPE_KEYS)
_RESOURCE_KEY_ORDER = tuple(dict.fromkeys(RESOURCE_AGENT_KEYS + RESOURCE_VERSION_KEYS))


# --------------------------------------------------------------------------- protobuf


def pb_value(v: Any, limit: int, depth: int = 0, max_depth: int = 2) -> Any:
    """An OTLP `AnyValue` as a Python value: strings cut to `limit`, lists and maps nested at most `max_depth`
    deep (deeper ones are None), bytes as base64."""
    which = v.WhichOneof("value")
    if which == "string_value":
        return truncate(v.string_value, limit)
    if which == "int_value":
        return v.int_value
    if which == "bool_value":
        return v.bool_value
    if which == "double_value":
        return v.double_value
    if which == "array_value":
        if depth > max_depth:
            return None
        return [pb_value(x, limit, depth + 1, max_depth) for x in v.array_value.values[:MAX_ARRAY]]
    if which == "kvlist_value":
        if depth > max_depth:
            return None
        values = v.kvlist_value.values[:MAX_ARRAY]
        return {kv.key: pb_value(kv.value, limit, depth + 1, max_depth) for kv in values}
    if which == "bytes_value":
        return truncate(base64.b64encode(v.bytes_value).decode("ascii"), limit)
    return None


def _pb_events(events: Any, attrs: dict[str, Any], limit: int) -> str | None:
    """The exception type of a span's `exception` events (None if it has none); its message events folded into
    `attrs` (`message_events`)."""
    exc_type = None
    found: list[tuple[str, dict[str, Any]]] = []
    for ev in events:
        name = ev.name
        if name == EXCEPTION_EVENT:
            for kv in ev.attributes:
                if kv.key == EXCEPTION_TYPE_KEY or (kv.key == EXCEPTION_MESSAGE_KEY and not exc_type):
                    exc_type = truncate(str(pb_value(kv.value, limit)), limit)
        elif name in _MESSAGE_EVENTS:
            values = ev.attributes[:MAX_ARRAY]
            found.append((name, {kv.key: pb_value(kv.value, limit, 0, _MESSAGE_DEPTH) for kv in values}))
    if found:
        fold_events(attrs, found, limit)
    return exc_type


# Every key the decoder looks up in a span's attribute map. A set: its intersection with a map walks the map's
# keys in C and returns a set (the first keys of flattened messages among them: they cost nothing there, and
# tell which spans have the rest).
READ_KEYS = (
    set(NEEDED_KEYS)
    | _FLAT_FIRST_KEYS
    | _VERCEL_KEYS
    | _ADK_KEYS
    | _LANGFUSE_KEYS
    | _MLFLOW_KEYS
    | _TRACELOOP_KEYS
)
_OTHER_SDKS = _ADK_KEYS | {_VERCEL_OPERATION}  # the keys that make a span the Vercel AI SDK's or ADK's
_TAG_BYTES = TAG_PREFIX.encode()


def _pb_attributes(attributes: Any, limit: int, tags: bool) -> dict[str, Any]:
    """The needed keys of a span's attribute map, its `agentwatch.tag.*` keys (`tags`: the message may hold
    some), its flattened messages and the Vercel AI SDK's and ADK's keys, folded into the GenAI keys."""
    attrs = {}
    found = READ_KEYS.intersection(attributes)
    for key in found:
        value = attributes[key]
        text = value.string_value  # most values are strings: a non-empty one needs no WhichOneof
        if text:
            attrs[key] = text if len(text) <= limit else truncate(text, limit)
        else:
            attrs[key] = pb_value(value, limit)
    flat = not _FLAT_FIRST_KEYS.isdisjoint(found)
    if tags or flat:
        for key in attributes:
            if tags and key.startswith(TAG_PREFIX):
                attrs[key] = pb_value(attributes[key], limit)
            elif flat and key.startswith(_FLAT_PREFIXES):
                attrs[key] = pb_value(attributes[key], limit)
        if flat:
            fold(attrs, limit)
    if not _OTHER_SDKS.isdisjoint(found):  # rare: one check for both
        if _VERCEL_OPERATION in attrs:
            fold_vercel(attrs, limit)
        else:
            fold_adk(attrs, limit)
    return attrs


def _decode_protobuf(payload: bytes, limit: int) -> list[SpanRecord]:
    try:
        # A class built from a descriptor at run time: the type checker cannot know its fields.
        data: Any = SlimTracesData.FromString(payload)
    except (_PbDecodeError, RuntimeError, ValueError) as exc:
        raise DecodeError("invalid_protobuf", str(exc)[:200]) from None
    records: list[SpanRecord] = []
    # A key starting with the tag prefix holds its bytes: a message without them has no tag on any span, and
    # its spans' keys need not be walked for one.
    tags = _TAG_BYTES in payload
    for rs in data.resource_spans:
        rattrs = rs.resource.attributes
        resource = {key: pb_value(rattrs[key], limit) for key in _RESOURCE_KEY_ORDER if key in rattrs}
        for ss in rs.scope_spans:
            for sp in ss.spans:
                tid = sp.trace_id
                sid = sp.span_id
                if len(tid) != 16 or len(sid) != 8 or tid == _ZERO_TRACE or sid == _ZERO_SPAN:
                    raise DecodeError(
                        "invalid_span", f"span {len(records)}: trace id or span id missing or malformed"
                    )
                pid = sp.parent_span_id
                attrs = _pb_attributes(sp.attributes, limit, tags)
                name = sp.name
                if name == RAW_SPAN:  # LiteLLM's: its provider's request and response, keys of its own
                    pb_attrs = sp.attributes
                    attrs.update((key, pb_value(pb_attrs[key], limit)) for key in raw_keys(pb_attrs))
                    fold_raw(attrs, limit)
                elif _LANGFUSE_TYPE in attrs:  # Langfuse's observations: the span's name is the observation's
                    fold_langfuse(attrs, name, limit)
                elif _MLFLOW_TYPE in attrs:
                    fold_mlflow(attrs, name, limit)
                elif _TRACELOOP_KIND in attrs:
                    fold_traceloop(attrs, name, limit)
                # most spans carry no events, and no error: the error text is only worked out when something
                # signals one
                exc_type = _pb_events(sp.events, attrs, limit) if sp.events else None
                status = sp.status
                if status.code == _ERROR or exc_type is not None or not _ERROR_TYPE_SET.isdisjoint(attrs):
                    error = error_of(status.code == _ERROR, truncate(status.message, limit), attrs, exc_type)
                else:
                    error = None
                conv = conversation_of(attrs)
                records.append(
                    SpanRecord(
                        tid.hex(),
                        sid.hex(),
                        pid.hex() if len(pid) == 8 and pid != _ZERO_SPAN else None,
                        name if len(name) <= limit else truncate(name, limit),
                        sp.start_time_unix_nano,
                        sp.end_time_unix_nano,
                        error,
                        attrs,
                        resource,
                        "" if conv is None else truncate(conv, limit),
                    )
                )
    return with_conversations(records)


# --------------------------------------------------------------------------- entry points


def decode_message(
    payload: bytes, content_type: str | None = None, *, max_attribute_bytes: int = 65536
) -> list[SpanRecord]:
    """Decode one Kafka message (protobuf or OTLP/JSON `TracesData`) into span records; raise DecodeError."""
    payload = message_bytes(payload)
    kind = (content_type or "").lower()
    if "json" in kind:
        return decode_json(payload, max_attribute_bytes)
    if "protobuf" in kind or "proto" in kind:
        return _decode_protobuf(payload, max_attribute_bytes)
    if looks_json(payload):
        try:
            return decode_json(payload, max_attribute_bytes)
        except DecodeError as exc:
            if exc.reason != "invalid_json" or payload[:1] != b"\n":
                raise
            # protobuf too: its first byte (the field tag 0x0a) is a newline, and a length of 123 or 91 reads "{" / "["
            try:
                return _decode_protobuf(payload, max_attribute_bytes)
            except DecodeError:
                raise exc from None
    try:
        return _decode_protobuf(payload, max_attribute_bytes)
    except DecodeError as exc:
        if exc.reason == "invalid_protobuf":
            raise DecodeError("not_otlp", f"neither OTLP protobuf nor OTLP/JSON ({exc.detail})") from None
        raise


# --------------------------------------------------------------------------- encoding (re-keying)


def set_any_value(target: Any, value: Any) -> None:
    """Write a plain value (JSON-like: bool, number, text, list, dict) into an OTLP `AnyValue`."""
    if isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int):
        if -(1 << 63) <= value < (1 << 63):
            target.int_value = value
        else:
            target.string_value = str(value)
    elif isinstance(value, float):
        target.double_value = value
    elif isinstance(value, str):
        target.string_value = value
    elif isinstance(value, (list, tuple)):
        arr = target.array_value
        for item in value:
            set_any_value(arr.values.add(), item)
        if not value:
            arr.SetInParent()
    elif isinstance(value, dict):
        kvl = target.kvlist_value
        for k, item in value.items():
            kv = kvl.values.add()
            kv.key = str(k)
            set_any_value(kv.value, item)
        if not value:
            kvl.SetInParent()
    elif value is not None:
        target.string_value = str(value)


def encode_spans_otlp(spans: list[SpanRecord]) -> bytes:
    """Encode span records as one OTLP protobuf `TracesData` (what `decode_message` reads back)."""
    data = TracesData()
    scopes: dict[tuple, Any] = {}
    groups: dict[tuple, list[SpanRecord]] = {}
    for rec in spans:
        rkey = tuple(sorted((k, repr(v)) for k, v in rec.resource.items()))
        groups.setdefault(rkey, []).append(rec)
        if rkey not in scopes:
            rs = data.resource_spans.add()
            for k, v in rec.resource.items():
                kv = rs.resource.attributes.add()
                kv.key = k
                set_any_value(kv.value, v)
            scope = scopes[rkey] = rs.scope_spans.add()
            scope.scope.name = "agentwatch.collector"
    ordered = [(rkey, rec) for rkey, group in groups.items() for rec in group]  # as decode_message reads them
    to_name = _conversations_to_name([rec for _, rec in ordered])
    for (rkey, rec), named in zip(ordered, to_name, strict=True):
        sp: Span = scopes[rkey].spans.add()
        sp.trace_id = bytes.fromhex(rec.trace_id)
        sp.span_id = bytes.fromhex(rec.span_id)
        if rec.parent_span_id:
            sp.parent_span_id = bytes.fromhex(rec.parent_span_id)
        sp.name = rec.name
        sp.start_time_unix_nano = rec.start_ns
        sp.end_time_unix_nano = rec.end_ns
        for k, v in rec.attrs.items():
            kv = sp.attributes.add()
            kv.key = k
            set_any_value(kv.value, v)
        if named:
            kv = sp.attributes.add()
            kv.key = CONVERSATION_KEYS[0]
            kv.value.string_value = rec.conversation_id
        if rec.status_error is not None:
            sp.status.code = Status.STATUS_CODE_ERROR
            sp.status.message = rec.status_error
    return data.SerializeToString()


def _conversations_to_name(spans: list[SpanRecord]) -> list[bool]:
    """Which spans (in a message's order) must carry their conversation id as an attribute for
    `decode_message` to give it back: those naming another, and, of those naming none, the first of each trace
    whose spans do not all belong to the trace itself; the others inherit it (`with_conversations`).

    One copy of the id a trace, never one a span: a 60 kB id on one span of 200 once made a 12 MB record from a
    74 kB message, which a broker refuses (and the collector stopped on it at every restart)."""
    own = [conversation_of(rec.attrs) for rec in spans]
    plain = {rec.trace_id for rec in spans}  # traces whose spans all have the trace's id as conversation id
    for rec, given in zip(spans, own, strict=True):
        if given is not None or rec.conversation_id != rec.trace_id:
            plain.discard(rec.trace_id)
    inherited: dict[str, str] = {}  # trace id -> the conversation id its first named span gives the others
    out = []
    for rec, given in zip(spans, own, strict=True):
        cid, tid = rec.conversation_id, rec.trace_id
        if given is not None:
            named = given != cid
        elif tid in plain:
            named = False
        else:
            named = inherited.get(tid) != cid  # the trace's first span, or one of another conversation
        if given is not None or named:
            inherited.setdefault(tid, cid)
        out.append(named)
    return out
