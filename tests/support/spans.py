"""Build real OpenTelemetry spans (and log records) for the collector's pure-half tests (OTel SDK + in-memory
exporters)."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from google.protobuf.json_format import MessageToJson, Parse
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode
from opentelemetry.util.types import AttributeValue


class SpanFactory:
    """A tracer provider whose finished spans can be taken out as OTLP protobuf or OTLP/JSON."""

    def __init__(self, service: str = "shop-agent", version: str = "2.1.0") -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": service, "service.version": version})
        )
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("tests")
        self.log_exporter = _in_memory_log_exporter()
        self.logger_provider = LoggerProvider(resource=self.provider.resource)
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.log_exporter))

    def spans(self) -> list[ReadableSpan]:
        """Finished spans so far."""
        return list(self.exporter.get_finished_spans())

    def protobuf(self) -> bytes:
        """Finished spans as one OTLP protobuf TracesData."""
        return encode_spans(self.spans()).SerializeToString()

    def json(self, **kwargs: Any) -> bytes:
        """Finished spans as OTLP/JSON (protobuf's official JSON mapping)."""
        return MessageToJson(encode_spans(self.spans()), **kwargs).encode()

    def logs(self) -> list[Any]:
        """Log records emitted through `logger_provider` so far."""
        return list(self.log_exporter.get_finished_logs())

    def logs_json(self, **kwargs: Any) -> bytes:
        """Those log records as OTLP/JSON `LogsData` (protobuf's official JSON mapping)."""
        return MessageToJson(encode_logs(self.logs()), **kwargs).encode()


def _in_memory_log_exporter() -> Any:
    """The SDK's in-memory log exporter, under its name in the installed release (renamed in 1.39)."""
    from opentelemetry.sdk._logs import export

    exporter = getattr(export, "InMemoryLogRecordExporter", None) or export.InMemoryLogExporter
    return exporter()


def attrs(span: ReadableSpan) -> Mapping[str, AttributeValue]:
    """A finished span's attributes (the SDK's spans always have them; `ReadableSpan` types them Optional)."""
    assert span.attributes is not None
    return span.attributes


def start_of(span: ReadableSpan) -> int:
    """A finished span's start time, ns (`ReadableSpan` types it Optional)."""
    assert span.start_time is not None
    return span.start_time


def end_of(span: ReadableSpan) -> int:
    """A finished span's end time, ns (`ReadableSpan` types it Optional)."""
    assert span.end_time is not None
    return span.end_time


def user_msg(text: str) -> str:
    return json.dumps([{"role": "user", "parts": [{"type": "text", "content": text}]}])


def assistant_msg(text: str) -> str:
    return json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}])


def sdk_turn(
    tracer: Any,
    conversation_id: str,
    question: str,
    answer: str | None,
    tools: list[dict[str, Any]],
    *,
    agent: str = "shop-agent",
    task: str = "refunds",
    model: str = "gpt-4o-mini",
    tokens: tuple[int, int] = (100, 20),
    extra: dict[str, Any] | None = None,
    fail: str | None = None,
) -> None:
    """One turn as the agentwatch SDK writes it: invoke_agent > chat, execute_tool..., chat."""
    common = {"gen_ai.conversation.id": conversation_id, "agentwatch.task": task}
    attrs = {
        **common,
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent,
        "gen_ai.input.messages": user_msg(question),
        "http.noise": "x" * 50,
        **(extra or {}),
    }
    if answer is not None:
        attrs["gen_ai.output.messages"] = assistant_msg(answer)
    with tracer.start_as_current_span(f"invoke_agent {agent}", attributes=attrs) as turn:
        with tracer.start_as_current_span(
            f"chat {model}",
            attributes={
                **common,
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": model,
                "gen_ai.usage.input_tokens": tokens[0],
                "gen_ai.usage.output_tokens": tokens[1],
            },
        ):
            pass
        for tool in tools:
            tattrs = {**common, "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool["name"]}
            if "id" in tool:
                tattrs["gen_ai.tool.call.id"] = tool["id"]
            if "arguments" in tool:
                tattrs["gen_ai.tool.call.arguments"] = json.dumps(tool["arguments"])
            if "result" in tool:
                tattrs["gen_ai.tool.call.result"] = json.dumps(tool["result"])
            tattrs.update(tool.get("attributes", {}))
            with tracer.start_as_current_span(f"execute_tool {tool['name']}", attributes=tattrs) as tspan:
                if tool.get("error"):
                    tspan.set_status(Status(StatusCode.ERROR, tool["error"]))
        if fail:
            turn.set_status(Status(StatusCode.ERROR, fail))


_ID_KEYS = ("traceId", "spanId", "parentSpanId")


def otlp_json_to_protobuf(text: bytes) -> bytes:
    """An OTLP/JSON document (ids in hex, as OTLP/JSON has them, or in base64, as protobuf's JSON mapping
    writes them) as OTLP protobuf bytes."""
    doc = json.loads(text)
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for key in _ID_KEYS:
                    value = span.get(key)
                    if isinstance(value, str) and len(value) in (
                        16,
                        32,
                    ):  # hex: base64 of 8 or 16 bytes is 12 or 24
                        span[key] = base64.b64encode(bytes.fromhex(value)).decode()
    return Parse(json.dumps(doc), TracesData()).SerializeToString()
