"""Traces that only set an agent up, as AutoGen sends one for each agent's creation (`create_agent`, a trace of its
own), through a real broker without keys as the OpenTelemetry Collector writes them: no conversation is scored
for them, they are counted, and the agent's run beside them is scored as usual."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.support.collector_kafka import (
    ServiceThread,
    TopicReader,
    collector_settings,
    create_topic,
    producer,
    unique,
)
from tests.support.spans import otlp_json_to_protobuf

pytestmark = pytest.mark.broker

RECORDING = Path(__file__).parent.parent / "data" / "autogen_trace.json"


def test_a_trace_of_an_agents_creation_is_no_conversation(broker) -> None:
    bs = broker.bootstrap_servers
    name = unique("setup")
    topic = f"{name}-spans"
    settings = collector_settings(bs, [topic], name, idle_timeout_s=1.0, trace_join_timeout_s=1.0)
    for t in (topic, settings.collector.rekey_topic):
        create_topic(bs, t, 1)
    out = producer(bs)
    out.send(topic, value=otlp_json_to_protobuf(RECORDING.read_bytes()))
    out.flush()
    out.close()

    scores = TopicReader(bs, settings.collector.scores_topic)
    with ServiceThread(settings) as svc:
        records = scores.wait(lambda r: len(r) >= 1, 40)
        deadline = time.monotonic() + 20
        while svc.service.stats.setup_only < 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2.0)  # past the idle timeout again: a second score would have come
        records = scores.wait(lambda r: len(r) >= 1, 1)
        assert svc.error is None
        stats = svc.service.stats
    scores.close()

    (score,) = [json.loads(r.value) for r in records]
    assert (score["agent"], score["turns"]) == ("weather_agent", 1)
    assert stats.setup_only == 1 and stats.scores_produced == 1
