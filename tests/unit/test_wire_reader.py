"""`benchmarks.wire_reader` (the wire-format floor of `benchmarks.wire_floor`) reads what the protobuf API reads."""

from __future__ import annotations

from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status, TracesData

from benchmarks.collector import make_workload
from benchmarks.wire_floor import _KEYS, _through_api
from benchmarks.wire_reader import read_spans


def test_it_reads_the_benchmark_workload_as_the_protobuf_api_does() -> None:
    workload = make_workload(20)
    assert sum(len(read_spans(p, _KEYS)) for p in workload.messages) == workload.spans
    for payload in workload.messages:
        assert read_spans(payload, _KEYS) == _through_api(payload)


def test_it_skips_every_field_it_does_not_read() -> None:
    """Fields of every wire type around the ones read: kinds, flags, events, links, scopes, dropped counts,
    values of other kinds, and a key given twice (the last wins, as in the API's map)."""
    data = TracesData()
    for r in range(2):
        rs = data.resource_spans.add()
        rs.resource.attributes.add(key="service.name").value.string_value = f"svc{r}"
        rs.resource.dropped_attributes_count = 3
        rs.schema_url = "https://opentelemetry.io/schemas/1.26.0"
        ss = rs.scope_spans.add()
        ss.scope.name = "scope"
        for i in range(3):
            sp = ss.spans.add()
            sp.trace_id = bytes(range(16))
            sp.span_id = bytes([r, i]) * 4
            sp.parent_span_id = b"\x09" * 8 if i else b""
            sp.name = f"chat ünïcode {i}"
            sp.kind = Span.SPAN_KIND_CLIENT
            sp.flags = 0xFFFFFFFF  # fixed32
            sp.start_time_unix_nano = 2**63 + i
            sp.end_time_unix_nano = 2**64 - 1
            sp.attributes.add(key="gen_ai.operation.name").value.string_value = "first"
            sp.attributes.add(key="gen_ai.usage.input_tokens").value.int_value = -5
            sp.attributes.add(key="other").value.double_value = 1.5
            sp.attributes.add(key="gen_ai.operation.name").value.string_value = "chat"
            sp.attributes.add(key="gen_ai.request.model").value.bool_value = True
            event = sp.events.add(name="gen_ai.user.message", time_unix_nano=7)
            event.attributes.add(key="content").value.string_value = "hi"
            sp.links.add(trace_id=b"\x01" * 16, span_id=b"\x02" * 8)
            sp.dropped_attributes_count = 2**32 - 1  # a five-byte varint
            sp.status.code = Status.STATUS_CODE_ERROR
            sp.status.message = "boom"
    payload = data.SerializeToString()
    spans = read_spans(payload, _KEYS)
    assert spans == _through_api(payload)
    assert len(spans) == 6 and spans[0][6]["gen_ai.operation.name"] == "chat"
