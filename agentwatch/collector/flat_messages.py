"""Messages logged as flattened attributes (OpenInference, OpenLLMetry) folded into the GenAI message attributes.

OpenInference writes a model call's messages one attribute per field (`llm.input_messages.1.message.content`,
`llm.output_messages.0.message.tool_calls.0.tool_call.function.name`), OpenLLMetry likewise
(`gen_ai.prompt.1.content`, `gen_ai.completion.0.tool_calls.0.name`). The decoders keep those keys and fold
them here into `gen_ai.input.messages` / `gen_ai.output.messages`: a JSON list of `{role, parts}` in the GenAI
form (`text`, `tool_call`, `tool_call_response` parts), which is what the rest of the collector reads. A span
that already carries the GenAI attribute keeps it. The folded text is JSON, like the attribute it stands for, so
it survives re-keying (re-encoded as a string) and is bounded like one: past the attribute limit the oldest
messages are left out, the system messages and the latest kept first.
"""

from __future__ import annotations

from typing import Any

from agentwatch.collector.foreign_messages import ENCODE, bounded
from agentwatch.collector.span_record import MAX_ARRAY
from agentwatch.wire import attributes as A

# prefix -> (the GenAI attribute it folds into, the word between the message index and its fields, if any)
_FORMS: dict[str, tuple[str, str]] = {
    "llm.input_messages.": (A.INPUT_MESSAGES, "message."),
    "llm.output_messages.": (A.OUTPUT_MESSAGES, "message."),
    "gen_ai.prompt.": (A.INPUT_MESSAGES, ""),
    "gen_ai.completion.": (A.OUTPUT_MESSAGES, ""),
}
PREFIXES: tuple[str, ...] = tuple(_FORMS)
_BY_PREFIX = {
    tuple(prefix.split(".")[:2]): form for prefix, form in _FORMS.items()
}  # ("llm", "input_messages")
# The first message's role or content: a span with flattened messages has one of these keys. The protobuf decoder
# looks them up with the keys it always reads, and walks a span's other keys for the rest only when one is there
# (the OTLP/JSON decoder reads every key anyway, and keeps any key of the forms).
FIRST_KEYS: frozenset[str] = frozenset(
    f"{prefix}0.{word}{field}" for prefix, (_, word) in _FORMS.items() for field in ("role", "content")
)


class _Message:
    """The fields of one flattened message, gathered key by key."""

    __slots__ = ("calls", "call_id", "role", "texts")

    def __init__(self) -> None:
        self.role: str | None = None
        self.texts: dict[int, str] = {}  # content first (-1), then `contents.N` in order
        self.call_id: str | None = None  # a tool message: the call it answers
        self.calls: dict[int, dict[str, Any]] = {}

    def set(self, field: str, value: Any) -> None:
        """Record one field (the key's part after the message index)."""
        if field == "role":
            self.role = str(value)
        elif field == "content":
            self.texts[-1] = _text(value)
        elif field == "tool_call_id":
            self.call_id = str(value)
        elif field.startswith("contents."):  # OpenInference: contents.N.message_content.text
            index, _, rest = field[9:].partition(".")
            at = _index(index)
            if rest == "message_content.text" and at is not None:
                self.texts[at] = _text(value)
        elif field.startswith("tool_calls."):
            index, _, rest = field[11:].partition(".")
            at = _index(index)
            rest = rest.removeprefix("tool_call.").removeprefix("function.")
            if at is not None and rest in ("id", "name", "arguments"):
                self.calls.setdefault(at, {})[rest] = value
        elif field in ("function_call_name", "function_call_arguments_json"):  # OpenInference's older form
            self.calls.setdefault(0, {})["name" if field == "function_call_name" else "arguments"] = value

    def as_genai(self, default_role: str) -> dict[str, Any]:
        """The message in the GenAI form (`default_role` when the span did not say)."""
        role = self.role or default_role
        # `content`, else the `contents` parts (a logger that writes both writes the same text twice)
        found = self.texts
        texts = [found[-1]] if -1 in found else [found[i] for i in sorted(found)]
        texts = [t for t in texts if t]
        if role == "tool" and self.call_id is not None:
            response = "\n".join(texts) if texts else None
            return {
                "role": role,
                "parts": [{"type": "tool_call_response", "id": self.call_id, "response": response}],
            }
        parts: list[dict[str, Any]] = [{"type": "text", "content": t} for t in texts]
        for i in sorted(self.calls):
            call = self.calls[i]
            parts.append(
                {
                    "type": "tool_call",
                    "id": None if call.get("id") is None else str(call["id"]),
                    "name": str(call.get("name") or "unknown"),
                    "arguments": call.get("arguments"),
                }
            )
        return {"role": role, "parts": parts}


def _index(text: str) -> int | None:
    """A message's, content's or call's index: ASCII digits below `MAX_ARRAY`; else None."""
    if text.isascii() and text.isdigit() and len(text) <= 4:
        index = int(text)
        return index if index < MAX_ARRAY else None
    return None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ENCODE(value)


def fold(attrs: dict[str, Any], limit: int) -> None:
    """Replace the flattened message keys of one span's attributes with the GenAI message attributes."""
    found: dict[str, dict[int, _Message]] = {}
    for key in [k for k in attrs if k.startswith(PREFIXES)]:
        value = attrs.pop(key)
        parts = key.split(".", 3)  # prefix (two words), message index, field
        if len(parts) < 4:
            continue
        target, word = _BY_PREFIX[parts[0], parts[1]]
        at, field = _index(parts[2]), parts[3]
        if at is None or not field.startswith(word) or value is None:
            continue
        messages = found.setdefault(target, {})
        message = messages.get(at)
        if message is None:
            message = messages[at] = _Message()
        message.set(field[len(word) :], value)
    for target, messages in found.items():
        if attrs.get(target) in (None, ""):
            role = "assistant" if target == A.OUTPUT_MESSAGES else "user"
            attrs[target] = bounded([messages[i].as_genai(role) for i in sorted(messages)], limit)
