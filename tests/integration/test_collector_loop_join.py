"""A loop the caller runs, each model call a trace of its own with nothing joining them (Google's GenAI SDK under
the official instrumentation, recorded): through a real broker, unkeyed as the OpenTelemetry Collector writes
them, the loop is one conversation, not two; a fragment waiting for its continuation holds its offsets across a
restart; a fragment nothing continues is scored alone once `loop_join_timeout_s` has passed."""

from __future__ import annotations

import base64
import copy
import json
import time
from pathlib import Path
from typing import Any

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

RECORDING = Path(__file__).parent.parent / "data" / "google_genai_trace.json"


def _trace_ids() -> list[str]:
    """The recording's two trace ids (hex), in time order: the conversation ids the collector gives them."""
    whole = json.loads(RECORDING.read_text())
    spans = [s for r in whole["resourceSpans"] for ss in r["scopeSpans"] for s in ss["spans"]]
    ordered = sorted(spans, key=lambda s: int(s["startTimeUnixNano"]))
    return [base64.b64decode(s["traceId"]).hex() for s in ordered]


def _traces() -> list[bytes]:
    """The recording's two traces (the loop's two model calls), each an OTLP protobuf message, in time order."""
    whole = json.loads(RECORDING.read_text())
    spans = [(s, r, ss) for r in whole["resourceSpans"] for ss in r["scopeSpans"] for s in ss["spans"]]
    out = []
    for span, resource, scope in sorted(spans, key=lambda t: int(t[0]["startTimeUnixNano"])):
        one: dict[str, Any] = copy.deepcopy({**resource, "scopeSpans": [{**scope, "spans": [span]}]})
        out.append(otlp_json_to_protobuf(json.dumps({"resourceSpans": [one]}).encode()))
    return out


def _setup(bs: str, name: str, **collector: Any):
    topic = f"{name}-spans"
    settings = collector_settings(bs, [topic], name, trace_join_timeout_s=0.5, **collector)
    for t in (topic, settings.collector.rekey_topic):
        create_topic(bs, t, 1)
    return topic, settings


def _send(bs: str, topic: str, *payloads: bytes) -> None:
    out = producer(bs)
    for payload in payloads:
        out.send(topic, value=payload)
    out.flush()
    out.close()


def _until(check, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not check() and time.monotonic() < deadline:
        time.sleep(0.1)


def test_a_loop_whose_calls_are_traces_of_their_own_is_one_conversation_across_a_restart(broker) -> None:
    bs = broker.bootstrap_servers
    topic, settings = _setup(bs, unique("loop"), loop_join_timeout_s=60.0)
    first, last = _traces()
    scores = TopicReader(bs, settings.collector.scores_topic)
    _send(bs, topic, first)
    with ServiceThread(settings) as svc:  # the first call's trace: a fragment, held
        _until(lambda: len(svc.service.loops) == 1, 40)
        held = len(svc.service.loops)
        time.sleep(1.0)  # commits run meanwhile: none may pass the fragment's records
    assert svc.error is None and held == 1
    assert scores.wait(lambda r: False, 1) == [], "the fragment was scored while it waited"

    _send(bs, topic, last)
    with ServiceThread(settings) as again:  # same group: the fragment is replayed, then continued
        records = scores.wait(lambda r: len(r) >= 1, 40)
        _until(lambda: again.service.loops.stats.continued >= 1, 20)
        time.sleep(2.0)  # past the idle timeout: a second score would have come
        records = scores.wait(lambda r: len(r) >= 1, 1)
        assert again.error is None
        stats = again.service.loops.stats
    scores.close()

    (score,) = [json.loads(r.value) for r in records]
    # the last call's conversation, the whole turn: the answer given after the tool's result
    assert (score["conversation_id"], score["turns"], score["evidence"]) == (_trace_ids()[1], 1, [])
    assert score["turn_scores"][0]["reasons"] == [] and "steps" not in json.dumps(score["reasons"])
    assert (stats.continued, stats.alone, stats.parked) == (1, 0, 0)
    assert again.service.stats.loop_join["continued"] == 1


def test_a_fragment_nothing_continues_is_scored_alone_after_the_timeout(broker) -> None:
    bs = broker.bootstrap_servers
    topic, settings = _setup(bs, unique("loop-alone"), loop_join_timeout_s=3.0)
    first, _ = _traces()
    scores = TopicReader(bs, settings.collector.scores_topic)
    _send(bs, topic, first)
    with ServiceThread(settings) as svc:
        _until(lambda: len(svc.service.loops) == 1, 40)
        held = (len(svc.service.loops), scores.poll())  # while it waits, no score
        records = scores.wait(lambda r: len(r) >= 1, 30)
        assert svc.error is None
        stats = svc.service.loops.stats
    scores.close()
    assert held == (1, []), "the fragment was scored while it waited"
    (score,) = [json.loads(r.value) for r in records]
    assert (score["conversation_id"], score["turns"], score["evidence"]) == (_trace_ids()[0], 1, [])
    assert (stats.alone, stats.continued) == (1, 0)


def test_the_traces_of_one_loop_meet_on_one_partition_of_the_rekey_topic(broker) -> None:
    """Re-keyed once the trace join releases them (they name no conversation), both traces of the loop go to the
    rekey topic under one key, their loop's first tool call, so that one collector of a group holds both."""
    bs = broker.bootstrap_servers
    name = unique("loop-route")
    topic = f"{name}-spans"
    settings = collector_settings(bs, [topic], name, trace_join_timeout_s=0.5, loop_join_timeout_s=60.0)
    create_topic(bs, topic, 1)
    create_topic(bs, settings.collector.rekey_topic, 8)
    scores = TopicReader(bs, settings.collector.scores_topic)
    rekeyed = TopicReader(bs, settings.collector.rekey_topic)
    _send(bs, topic, *_traces())
    with ServiceThread(settings) as svc:
        records = scores.wait(lambda r: len(r) >= 1, 40)
        hops = rekeyed.wait(lambda r: len(_by_conversation(r)) >= 2, 20)
        assert svc.error is None
    scores.close()
    rekeyed.close()
    assert len(records) == 1
    routed = _by_conversation(hops)
    assert len(routed) == 2 and len({(r.key, r.partition) for r in routed}) == 1
    assert routed[0].key not in {t.encode() for t in _trace_ids()}


def _by_conversation(records: list) -> list:
    """The rekey topic's records of spans keyed for assembly (`agentwatch-key: conversation`)."""
    return [r for r in records if dict(r.headers).get("agentwatch-key") == b"conversation"]
