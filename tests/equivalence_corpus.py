"""A seeded corpus of odd OTLP messages, and what decode → rebuild → score makes of each, as JSON-able values.

Run as a script it prints that output as JSON, together with which hot-path modules were compiled, so that a
test can compare the compiled build with the pure-Python sources in a separate process. The messages mix the
GenAI and OpenInference conventions, broken JSON in message attributes, every AnyValue kind, cycles and
dangling parents, duplicate span ids, error statuses and exception events, in protobuf and OTLP/JSON.
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

from agentwatch.collector.assembler import FinishedConversation
from agentwatch.collector.decode import DecodeError, _set_value, decode_message
from agentwatch.collector.reconstruct import build_conversation
from agentwatch.scorers import ConversationScorer
from google.protobuf.json_format import MessageToJson
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from agentwatch.compiled import COMPILED_MODULES, is_compiled

OPS = ["invoke_agent", "chat", "execute_tool", "text_completion", "embeddings", None, "Chat"]
KINDS = [None, None, "AGENT", "TOOL", "LLM", "llm", "CHAIN", "RETRIEVER"]
NAMES = ["invoke_agent bot", "chat gpt", "execute_tool refund", "execute_tool", "foo", "", "LLM call", "tool x"]
TOOLS = ["refund", "lookup_order", "functions.get-order", "get_order", "Refund", "send_email", ""]
KEYS = [
    "gen_ai.conversation.id", "session.id", "gen_ai.agent.name", "agent.name", "gen_ai.agent.version",
    "gen_ai.tool.name", "tool.name", "gen_ai.tool.call.id", "tool_call.id", "gen_ai.tool.call.arguments",
    "tool.parameters", "gen_ai.tool.call.result", "gen_ai.response.model", "gen_ai.request.model",
    "llm.model_name", "gen_ai.usage.input_tokens", "llm.token_count.prompt", "gen_ai.usage.output_tokens",
    "llm.token_count.completion", "agentwatch.cost.usd", "llm.cost.total", "gen_ai.input.messages",
    "gen_ai.output.messages", "input.value", "output.value", "error.type", "agentwatch.task",
    "agentwatch.conversation.end", "agentwatch.expected", "agentwatch.reference_answer", "agentwatch.outcome",
    "agentwatch.budget.usd", "agentwatch.tag.tier", "agentwatch.tag.", "thread.id", "noise.key",
]  # fmt: skip
EXPECTATIONS = [
    {"tools": [{"name": "refund"}, {"name": "lookup_order", "arguments": {"order": 12}}]},
    {"tools": []},
    {"reference_answer": "Order refunded", "forbidden_tools": ["cancel"]},
    {"tools": "bad"},
    {"tools": [{"name": "x"}], "sequence_matters": False, "uses_tool_results": True},
]


def _text(r: random.Random) -> str:
    return r.choice(
        [
            "refund order 12 please",
            "Order ORD-1234 refunded: $12.50",
            "I have cancelled it",
            "",
            "total 42.50 EUR",
            "user@example.com wrote",
            "ok",
            "é ünïcode ✓",
            "x" * r.randint(0, 300),
        ]
    )


def _messages(r: random.Random, role: str) -> str:
    c = r.random()
    if c < 0.1:
        return "not json {"
    if c < 0.2:
        return json.dumps({"role": role, "content": _text(r)})
    if c < 0.3:
        return json.dumps([{"role": role, "content": _text(r)}, {"role": "assistant", "parts": []}])
    messages = []
    for _ in range(r.randint(0, 3)):
        parts: list[dict[str, Any]] = []
        for _ in range(r.randint(0, 3)):
            k = r.random()
            if k < 0.5:
                parts.append({"type": "text", "content": _text(r) if r.random() < 0.9 else 5})
            elif k < 0.75:
                parts.append(
                    {
                        "type": "tool_call",
                        "id": r.choice(["c1", "c2", None, 7]),
                        "name": r.choice(TOOLS),
                        "arguments": r.choice([{"order": 12}, '{"a": 1}', "raw", None]),
                    }
                )
            else:
                parts.append(
                    {
                        "type": "tool_call_response",
                        "id": r.choice(["c1", "c2", 7]),
                        "response": r.choice([{"ok": True}, "42.50", None]),
                    }
                )
        messages.append({"role": r.choice([role, role, "user", "assistant", "system"]), "parts": parts})
    return json.dumps(messages)


def _value(r: random.Random, key: str) -> Any:
    c = r.random()
    if "messages" in key and c < 0.8:
        return _messages(r, "user" if "input" in key else "assistant")
    if key == "agentwatch.expected" and c < 0.8:
        return json.dumps(r.choice(EXPECTATIONS))
    if c < 0.45:
        return _text(r)
    if c < 0.65:
        return r.choice([0, 1, 350, -5, 2**60, 12])
    if c < 0.75:
        return r.choice([True, False])
    if c < 0.85:
        return r.choice([0.0, 1.5, -2.0, 1e300, 0.0123])
    if c < 0.92:
        return [r.choice(["a", 1, True]) for _ in range(r.randint(0, 3))]
    if c < 0.97:
        return {"k": r.choice(["v", 2]), "n": {"d": 1}}
    return b"\x00\x01bytes"


def _set(target: Any, v: Any) -> None:
    """An AnyValue from a Python value: the collector's own encoder, plus bytes (which it never writes)."""
    if isinstance(v, bytes):
        target.bytes_value = v
    else:
        _set_value(target, v)


def _span(r: random.Random, sp: Any, ids: list[bytes], conv: str) -> None:
    sp.trace_id = r.choice([b"\x01" * 16, b"\x02" * 16])
    sid = r.randint(1, 30).to_bytes(8, "big")  # few ids: duplicates, self-parents and cycles happen
    sp.span_id = sid
    if ids and r.random() < 0.8:
        sp.parent_span_id = r.choice(ids)
    elif r.random() < 0.1:
        sp.parent_span_id = (99).to_bytes(8, "big")
    ids.append(sid)
    op = r.choice(OPS)
    sp.name = r.choice(NAMES) if op is None else f"{op} {r.choice(TOOLS)}"
    if r.random() < 0.9:
        sp.start_time_unix_nano = 1_790_000_000_000_000_000 + r.randint(0, 10**10)
        sp.end_time_unix_nano = sp.start_time_unix_nano + r.choice([0, 5_000_000, -1])
    attrs: dict[str, Any] = {}
    if op:
        attrs["gen_ai.operation.name"] = op
    kind = r.choice(KINDS)
    if kind:
        attrs["openinference.span.kind"] = kind
    if conv and r.random() < 0.8:
        attrs["gen_ai.conversation.id"] = conv
    for key in r.sample(KEYS, r.randint(0, 12)):
        attrs[key] = _value(r, key)
    for key, v in attrs.items():
        e = sp.attributes.add()
        e.key = key
        _set(e.value, v)
    if r.random() < 0.15:
        sp.status.code = 2
        sp.status.message = r.choice(["", "boom"])
    if r.random() < 0.1:
        ev = sp.events.add()
        ev.name = "exception"
        e = ev.attributes.add()
        e.key = r.choice(["exception.type", "exception.message"])
        e.value.string_value = "ValueError"


def random_message(seed: int) -> TracesData:
    """One OTLP message of 1–28 spans in one or two resources, drawn from `seed`."""
    r = random.Random(seed)
    data = TracesData()
    ids: list[bytes] = []
    conv = r.choice(["conv-a", "conv-b", ""])
    for _ in range(r.choice([1, 1, 1, 2])):
        rs = data.resource_spans.add()
        resource = [("service.name", "shop"), ("service.version", "1.2"), ("gen_ai.agent.name", "bot")]
        for k, v in r.sample(resource, r.randint(0, 3)):
            e = rs.resource.attributes.add()
            e.key = k
            _set(e.value, v)
        ss = rs.scope_spans.add()
        for _ in range(r.randint(1, 14)):
            _span(r, ss.spans.add(), ids, conv)
    return data


def outputs(seeds: int) -> list[Any]:
    """For each message of the corpus: the decode error, or the span records, conversations and scores."""
    payloads = []
    for seed in range(seeds):
        data = random_message(seed)
        payloads.append((data.SerializeToString(), "application/x-protobuf"))
        if seed % 4 == 0:
            payloads.append((MessageToJson(data).encode(), "application/json"))
    scorer = ConversationScorer()
    out: list[Any] = []
    for i, (payload, content_type) in enumerate(payloads):
        limit = 40 if i % 3 == 0 else 65536  # truncation of long values too
        try:
            records = decode_message(payload, content_type, max_attribute_bytes=limit)
        except DecodeError as exc:
            out.append(["decode_error", exc.reason, exc.detail])
            continue
        by_conversation: dict[str, list] = {}
        for rec in records:
            by_conversation.setdefault(rec.conversation_id, []).append(rec)
        rebuilt = []
        for cid, spans in sorted(by_conversation.items()):
            conv = build_conversation(FinishedConversation(cid, 0, spans, "idle", False))
            rebuilt.append([conv.model_dump(mode="json"), scorer.score(conv).model_dump(mode="json")])
        dumped = [
            [r.trace_id, r.span_id, r.parent_span_id, r.name, r.start_ns, r.end_ns, r.status_error,
             repr(sorted(r.attrs.items())), repr(sorted(r.resource.items())), r.conversation_id]
            for r in records
        ]  # fmt: skip
        out.append([dumped, rebuilt])
    return out


def compiled_modules() -> list[str]:
    """The hot-path modules this process imported compiled."""
    return [m for m in COMPILED_MODULES if is_compiled(m)]


if __name__ == "__main__":
    json.dump({"compiled": compiled_modules(), "outputs": outputs(int(sys.argv[1]))}, sys.stdout)
