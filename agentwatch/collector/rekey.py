"""Re-keying: spans of messages not keyed by conversation are re-published to the rekey topic by conversation id.

Spans whose conversation the message does not reveal (no conversation key on them, none on another span of their
trace in the message) are re-published keyed by trace id instead, for the trace join (`trace_join.py`); so is
one announcement per trace whose conversation the message reveals. See docs/collector_service.md, Keying.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from agentwatch import wire
from agentwatch.collector.decode import SpanRecord, encode_spans_otlp
from agentwatch.collector.id_memory import ENTRY_ROOM, IdMemory
from agentwatch.collector.loop_join import loop_route
from agentwatch.collector.reconstruct import build_conversation
from agentwatch.collector.span_record import conversation_of
from agentwatch.collector.span_tree import role_of
from agentwatch.collector.trace_join import KEY_TRACE, KEY_TRACE_CONVERSATION
from agentwatch.collector.turns import MODEL

log = logging.getLogger(__name__)

# the header names and the conversation key value are the wire contract's (the SDK writes them too)
KEY_HEADER, KEY_CONVERSATION = wire.KEY_HEADER, wire.KEY_CONVERSATION
CONTENT_TYPE_HEADER, PROTOBUF = wire.CONTENT_TYPE_HEADER, wire.PROTOBUF

REKEY_HEADERS = [(CONTENT_TYPE_HEADER, PROTOBUF), (KEY_HEADER, KEY_CONVERSATION)]
TRACE_HEADERS = [(CONTENT_TYPE_HEADER, PROTOBUF), (KEY_HEADER, KEY_TRACE)]
ANNOUNCE_HEADERS = [(CONTENT_TYPE_HEADER, b"text/plain; charset=utf-8"), (KEY_HEADER, KEY_TRACE_CONVERSATION)]
_ANNOUNCED_MEMORY = 10_000  # traces whose announcement this process sent recently (not sent again)
# and bytes of their ids: a conversation id may be 64 K characters, 10,000 of them 650 MB; this is 5 MB
_ANNOUNCED_BYTES = _ANNOUNCED_MEMORY * ENTRY_ROOM


def header(headers: Sequence[tuple[str, bytes]] | None, name: str) -> bytes | None:
    """Value of the first record header called `name` (case-insensitive), or None."""
    for key, value in headers or ():
        if key.lower() == name:
            return value
    return None


def keyed_by_conversation(headers: Sequence[tuple[str, bytes]] | None) -> bool:
    """Whether a message says its key is already the conversation id (`agentwatch-key: conversation`)."""
    value = header(headers, KEY_HEADER)
    return value is not None and value.strip().lower() == KEY_CONVERSATION


def key_mode(headers: Sequence[tuple[str, bytes]] | None) -> bytes | None:
    """The `agentwatch-key` header, lower case (`conversation`, `trace`, `trace-conversation`), or None."""
    value = header(headers, KEY_HEADER)
    return None if value is None else value.strip().lower()


def conversation_known(span: SpanRecord) -> bool:
    """Whether the decoder found the span's conversation (its own key or another span's of its trace), rather
    than falling back to the trace id."""
    return span.conversation_id != span.trace_id or conversation_of(span.attrs) is not None


class Rekeyer:
    """Groups decoded spans by conversation id and queues one message per conversation on the rekey topic."""

    def __init__(self, producer: Any, topic: str) -> None:
        self._producer = producer
        self._topic = topic
        # trace id -> conversation id announced; trace id -> its loop's key, for its late spans
        self._announced: IdMemory[str] = IdMemory(_ANNOUNCED_MEMORY, _ANNOUNCED_BYTES)
        self._routes: IdMemory[bytes] = IdMemory(_ANNOUNCED_MEMORY, _ANNOUNCED_BYTES)

    def route(self, spans: list[SpanRecord]) -> int:
        """Spans of an input message not keyed by conversation: those whose conversation is known go to the
        rekey topic by conversation id (and their traces are announced by trace id), the others by trace id
        to the trace join. Returns the records queued (not flushed)."""
        unknown: dict[str, list[SpanRecord]] | None = None
        known: list[SpanRecord] = []
        announce: dict[str, str] = {}
        for span in spans:
            if conversation_known(span):
                known.append(span)
                if span.trace_id not in announce:
                    announce[span.trace_id] = span.conversation_id
            else:
                if unknown is None:
                    unknown = {}
                unknown.setdefault(span.trace_id, []).append(span)
        sent = self.republish(known) if known else 0
        send = self._producer.send
        announced = self._announced
        for tid, cid in announce.items():
            if announced.get(tid) == cid:
                announced.touch(tid)
                continue
            announced.remember(tid, cid)
            send(self._topic, value=cid.encode("utf-8"), key=tid.encode("ascii"), headers=ANNOUNCE_HEADERS)
            sent += 1
        if unknown:
            for tid, group in unknown.items():
                send(
                    self._topic,
                    value=encode_spans_otlp(group),
                    key=tid.encode("ascii"),
                    headers=TRACE_HEADERS,
                )
            sent += len(unknown)
        return sent

    def republish(self, spans: list[SpanRecord]) -> int:
        """Queue `spans` on the rekey topic, one message per conversation, keyed by its id, or, for a trace that
        named none and is a step of a loop the caller runs, by its loop (`loop_route`: its steps, each a trace
        of its own, meet on one partition for the loop join); returns messages queued (not flushed)."""
        groups: dict[str, list[SpanRecord]] = {}
        for span in spans:
            groups.setdefault(span.conversation_id, []).append(span)
        for conversation_id, group in groups.items():
            key = None if conversation_known(group[0]) else self._loop_key(group)
            self._producer.send(
                self._topic,
                value=encode_spans_otlp(group),
                key=key or conversation_id.encode("utf-8"),
                headers=REKEY_HEADERS,
            )
        return len(groups)

    def _loop_key(self, trace: list[SpanRecord]) -> bytes | None:
        """The loop a trace without a conversation id is a step of (`loop_join.loop_route`), if it is one;
        remembered, so that a span of it released later goes the same way."""
        tid = trace[0].trace_id
        key = self._routes.get(tid)
        if key is not None:
            self._routes.touch(tid)
            return key
        ids = {span.span_id for span in trace}
        if any(role_of(s) != MODEL for s in trace if s.parent_span_id not in ids):
            return (
                None  # a loop's step is bare model calls: under an agent or another span, the stop is its own
            )
        try:
            key = loop_route(build_conversation(trace))
        except Exception:  # noqa: BLE001 - a trace not rebuilt here is keyed by its id, and rebuilt later
            log.debug("trace %s not rebuilt for its loop key", tid, exc_info=True)
            return None
        if key is not None:
            self._routes.remember(tid, key)
        return key
