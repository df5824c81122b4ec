"""A slim OTLP `TracesData` message type: the same wire format, only the fields the collector reads.

Parsing with the official classes makes a Python object for every attribute of every span (most of which the
collector skips). This type declares `attributes` as a protobuf map, which has exactly the wire format of
`repeated KeyValue` (a map entry is a message with `key = 1`, `value = 2`), so upb parses each span's
attributes into a hash table and the decoder looks up only the keys it needs. Duplicate keys: the last one
wins, as in the dict the decoder built before. Fields not declared here (kind, links, scope, trace state,
dropped counts) are skipped by the parser as unknown fields. Equivalent `.proto`:

    syntax = "proto3";
    package agentwatch.collector.slim;
    import "opentelemetry/proto/common/v1/common.proto";
    import "opentelemetry/proto/trace/v1/trace.proto";
    message Resource { map<string, opentelemetry.proto.common.v1.AnyValue> attributes = 1; }
    message Span {
      bytes trace_id = 1; bytes span_id = 2; bytes parent_span_id = 4; string name = 5;
      fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8;
      map<string, opentelemetry.proto.common.v1.AnyValue> attributes = 9;
      repeated opentelemetry.proto.trace.v1.Span.Event events = 11;
      opentelemetry.proto.trace.v1.Status status = 15;
    }
    message ScopeSpans { repeated Span spans = 2; }
    message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
    message TracesData { repeated ResourceSpans resource_spans = 1; }
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message
from opentelemetry.proto.common.v1 import common_pb2  # noqa: F401 - registers the imported types
from opentelemetry.proto.trace.v1 import trace_pb2  # noqa: F401

_PACKAGE = "agentwatch.collector.slim"
_ANY_VALUE = ".opentelemetry.proto.common.v1.AnyValue"
_FD = descriptor_pb2.FieldDescriptorProto
_REPEATED = _FD.LABEL_REPEATED


def _field(
    name: str, number: int, kind: _FD.Type.ValueType, type_name: str = "", repeated: bool = False
) -> descriptor_pb2.FieldDescriptorProto:
    """One field declaration."""
    field = _FD(name=name, number=number, type=kind, label=_REPEATED if repeated else _FD.LABEL_OPTIONAL)
    if type_name:
        field.type_name = type_name
    return field


def _message(
    name: str, fields: list[descriptor_pb2.FieldDescriptorProto], attributes_map: bool = False
) -> descriptor_pb2.DescriptorProto:
    """A message declaration; with `attributes_map`, its nested `AttributesEntry` map entry type."""
    message = descriptor_pb2.DescriptorProto(name=name, field=fields)
    if attributes_map:
        entry = message.nested_type.add(name="AttributesEntry")
        entry.field.extend(
            [_field("key", 1, _FD.TYPE_STRING), _field("value", 2, _FD.TYPE_MESSAGE, _ANY_VALUE)]
        )
        entry.options.map_entry = True
    return message


def _attributes(number: int, owner: str) -> descriptor_pb2.FieldDescriptorProto:
    """A `map<string, AnyValue> attributes` field of message `owner`."""
    return _field("attributes", number, _FD.TYPE_MESSAGE, f".{_PACKAGE}.{owner}.AttributesEntry", True)


def _file() -> descriptor_pb2.FileDescriptorProto:
    """The file descriptor of the slim types (see the module docstring for the `.proto` text)."""
    msg = _FD.TYPE_MESSAGE
    return descriptor_pb2.FileDescriptorProto(
        name="agentwatch/collector/otlp_slim.proto",
        package=_PACKAGE,
        syntax="proto3",
        dependency=["opentelemetry/proto/common/v1/common.proto", "opentelemetry/proto/trace/v1/trace.proto"],
        message_type=[
            _message("Resource", [_attributes(1, "Resource")], attributes_map=True),
            _message(
                "Span",
                [
                    _field("trace_id", 1, _FD.TYPE_BYTES),
                    _field("span_id", 2, _FD.TYPE_BYTES),
                    _field("parent_span_id", 4, _FD.TYPE_BYTES),
                    _field("name", 5, _FD.TYPE_STRING),
                    _field("start_time_unix_nano", 7, _FD.TYPE_FIXED64),
                    _field("end_time_unix_nano", 8, _FD.TYPE_FIXED64),
                    _attributes(9, "Span"),
                    _field("events", 11, msg, ".opentelemetry.proto.trace.v1.Span.Event", True),
                    _field("status", 15, msg, ".opentelemetry.proto.trace.v1.Status"),
                ],
                attributes_map=True,
            ),
            _message("ScopeSpans", [_field("spans", 2, msg, f".{_PACKAGE}.Span", True)]),
            _message(
                "ResourceSpans",
                [
                    _field("resource", 1, msg, f".{_PACKAGE}.Resource"),
                    _field("scope_spans", 2, msg, f".{_PACKAGE}.ScopeSpans", True),
                ],
            ),
            _message("TracesData", [_field("resource_spans", 1, msg, f".{_PACKAGE}.ResourceSpans", True)]),
        ],
    )


def _traces_data_class() -> type[Message]:
    """Register the slim file in the default pool (once) and return its `TracesData` class."""
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName("agentwatch/collector/otlp_slim.proto")
    except KeyError:
        pool.Add(_file())
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.TracesData"))


SlimTracesData = _traces_data_class()
