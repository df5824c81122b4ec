"""Our SDK in an agent process → broker → collector → scores topic, every ConversationScore field checked."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from tests.support.agent_script import AGENT
from tests.support.collector_kafka import (
    TopicReader,
    assert_refund_agent_score,
    collect_one_score,
    unique,
)

pytestmark = pytest.mark.broker


def _turn_spans(records) -> list[tuple[int, int]]:
    """(start, end) ns of invoke_agent spans, read with the protobuf classes alone."""
    out = []
    for r in records:
        for rs in TracesData.FromString(r.value).resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    ops = [a.value.string_value for a in span.attributes if a.key == "gen_ai.operation.name"]
                    if ops == ["invoke_agent"]:
                        out.append((span.start_time_unix_nano, span.end_time_unix_nano))
    return sorted(out)


def test_sdk_agent_through_broker_and_collector(broker, topic, tmp_path):
    bs = broker.bootstrap_servers
    cid = unique("sdk")
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    run = subprocess.run(
        [sys.executable, str(script), bs, topic, cid], check=False, capture_output=True, timeout=60
    )
    assert run.returncode == 0, run.stderr.decode()[-2000:]

    spans_topic = TopicReader(bs, topic)
    span_records = spans_topic.wait(lambda r: len(r) > 0, 10)
    spans_topic.close()
    assert all(r.key == cid.encode() for r in span_records)
    turns = _turn_spans(span_records)
    assert len(turns) == 2

    record, _ = collect_one_score(bs, topic, "sdk")
    assert record.key == b"support-bot|1.2.0|refunds"
    s = json.loads(record.value)

    ended = datetime.fromtimestamp(max(e for _, e in turns) / 1e9, tz=UTC)
    assert_refund_agent_score(s, cid, duration_s=sum(e - b for b, e in turns) / 1e9, ended_at=ended)


def test_example_instrumented_agent_through_the_collector(broker, topic):
    """examples/instrumented_agent.py (two turns, a failing tool) → broker → collector → its score."""
    bs = broker.bootstrap_servers
    cid = unique("example")
    example = Path(__file__).resolve().parents[2] / "examples" / "instrumented_agent.py"
    run = subprocess.run(
        [sys.executable, str(example), "--bootstrap-servers", bs, "--topic", topic, "--conversation-id", cid],
        check=False,
        capture_output=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    record, _ = collect_one_score(bs, topic, "example")
    assert record.key == b"travel-agent|1.0.0|travel"
    s = json.loads(record.value)
    assert s["conversation_id"] == cid
    assert s["turns"] == 2
    # each turn: one model call with one message → 12 input and 8 output tokens, 0.0001 USD (record_usage)
    assert (s["input_tokens"], s["output_tokens"]) == (24, 16)
    assert s["cost_usd"] == pytest.approx(0.0002)
    first, second = s["turn_scores"]
    assert first["passed"] is True and first["answer_score"] == pytest.approx(1.0)
    assert first["tool"]["selection"] == first["tool"]["parameters"] == first["tool"]["sequence"] == 1.0
    # the booking tool failed and the answer says so: nothing to use, utilization is not graded, the turn passes
    assert second["tool"]["utilization"] is None and second["tool"]["passed"] is True
    assert second["passed"] is True
    assert s["passed"] is True and s["outcome"] == "complete" and s["reasons"] == [], s["reasons"]
    assert s["incomplete"] is False
