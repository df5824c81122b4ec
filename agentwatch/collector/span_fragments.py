"""Fragments: the messages of a span that reached the collector apart from it, folded back into it.

GenAI instrumentations may log a model call's messages as OTLP log records instead of span attributes
(`log_records.py`). The collector turns the records of one span into a *fragment*: a span record named
`FRAGMENT_NAME`, parented to that span, carrying the span's id in `agentwatch.messages_of` and the GenAI message
keys the records fold into. A fragment travels like a span (re-keyed, joined to its trace's conversation,
de-duplicated by its id) and, once its conversation is complete, `attach` folds it into its span. The span's own
message keys win; the fragments of one span are read in time order. A fragment whose span is not in the
conversation (it arrived after the conversation finished, or its span never came) is left out and counted.
"""

from __future__ import annotations

from typing import Any

from agentwatch.collector.foreign_messages import bounded
from agentwatch.collector.span_record import SpanRecord
from agentwatch.wire import attributes as A
from agentwatch.wire.json_text import value_of

FRAGMENT_NAME = "agentwatch.log_messages"
FRAGMENT_KEY = A.MESSAGES_OF
_LISTS = (A.INPUT_MESSAGES, A.OUTPUT_MESSAGES)  # concatenated over a span's fragments
_FIRST = (A.SYSTEM_INSTRUCTIONS,)  # the first fragment's


def is_fragment(span: SpanRecord) -> bool:
    """Whether the span record is a fragment of another span's messages."""
    return span.name == FRAGMENT_NAME and FRAGMENT_KEY in span.attrs


def _messages(value: Any) -> list[dict[str, Any]]:
    """A fragment's messages (a JSON list of GenAI messages)."""
    if isinstance(value, str):
        try:
            value = value_of(value)
        except ValueError:
            return []
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def _fold(attrs: dict[str, Any], fragments: list[SpanRecord], limit: int) -> None:
    """Set the message keys `attrs` lacks from `fragments` (in time order)."""
    for key in _LISTS:
        if attrs.get(key) not in (None, ""):
            continue
        found = [m for fragment in fragments for m in _messages(fragment.attrs.get(key))]
        if found:
            attrs[key] = bounded(found, limit)
    for key in _FIRST:
        if attrs.get(key) in (None, ""):
            for fragment in fragments:
                if fragment.attrs.get(key) not in (None, ""):
                    attrs[key] = fragment.attrs[key]
                    break


def attach(spans: list[SpanRecord], limit: int = 65_536) -> tuple[list[SpanRecord], int]:
    """The spans without their fragments, each fragment folded into its span; and how many fragments had no
    span among them. Without fragments, `spans` itself."""
    if not any(span.name == FRAGMENT_NAME for span in spans):
        return spans, 0
    kept: list[SpanRecord] = []
    by_span: dict[str, list[SpanRecord]] = {}
    for span in spans:
        target = span.attrs.get(FRAGMENT_KEY) if span.name == FRAGMENT_NAME else None
        if isinstance(target, str):
            by_span.setdefault(target, []).append(span)
        else:
            kept.append(span)
    index = {span.span_id: span for span in kept}
    orphans = 0
    for span_id, fragments in by_span.items():
        owner = index.get(span_id)
        if owner is None:
            orphans += len(fragments)
            continue
        fragments.sort(key=lambda f: (f.start_ns, f.span_id))
        _fold(owner.attrs, fragments, limit)
    return kept, orphans
