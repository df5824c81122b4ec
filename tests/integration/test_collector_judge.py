"""The judge in the live path, on a real broker and a real HTTP judge (a fake OpenAI-compatible server).

Every judge-sampled conversation is judged exactly once across a collector restart (the verdict cache is kept on
disk), none is lost, offsets are not committed past conversations waiting for their verdict, and the consumer
pauses when the judge is slow instead of buffering without bound.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time

import pytest
from prometheus_client import CollectorRegistry

from agentwatch.collector.metrics import register
from agentwatch.config import JudgeConfig, SamplingConfig
from agentwatch.metrics_http import render_families
from agentwatch.scorers.sampling import sample_point
from tests.support.collector_kafka import (
    ServiceThread,
    TopicReader,
    collector_settings,
    create_topic,
    scores_of,
    unique,
)
from tests.support.fake_openai import FakeOpenAI, Reply, verdict_reply

pytestmark = pytest.mark.broker

AGENT = r"""
import sys, time
from agentwatch.sdk import configure, conversation, shutdown, trace

bootstrap, topic, prefix, count, pause = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
configure("kafka", agent="support-bot", version="4.0", bootstrap_servers=bootstrap, topic=topic)


@trace(kind="agent")
def bot(question: str) -> str:
    return "Your order has shipped."


for i in range(count):
    with conversation(id=f"{prefix}-{i:04d}", task="free_text"):
        bot(f"Where is my order ORD-{i:05d}?")
        conversation.end()
    if pause:
        time.sleep(pause)
        __import__("opentelemetry.trace", fromlist=["x"]).get_tracer_provider().force_flush()
shutdown()
"""

ORDER = re.compile(r"ORD-(\d{5})")


def _send(tmp_path, bs: str, topic: str, prefix: str, count: int, pause_s: float = 0.0) -> subprocess.Popen:
    """Start an agent process sending `count` conversations, `pause_s` apart."""
    path = tmp_path / "agent.py"
    path.write_text(AGENT)
    return subprocess.Popen(
        [sys.executable, str(path), bs, topic, prefix, str(count), str(pause_s)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _finished(agent: subprocess.Popen) -> None:
    _, err = agent.communicate(timeout=120)
    assert agent.returncode == 0, err.decode()[-2000:]


def _judged_orders(server: FakeOpenAI) -> list[int]:
    """The order number each judge request was about (a repair request would repeat one)."""
    out = []
    for body in server.requests:
        text = json.dumps(body["messages"])
        found = ORDER.findall(text)
        assert found, "a judge request without the transcript"
        out.append(int(found[0]))
    return out


def _settings(bs: str, topic: str, server: FakeOpenAI, cache, **collector):
    settings = collector_settings(bs, [topic], unique("judge"), **collector)
    settings.judge = JudgeConfig(
        enabled=True,
        base_url=server.base_url,
        model="gpt-4o-mini",
        timeout_s=10,
        concurrency=2,
        cache_path=str(cache),
        api_key_env="AGENTWATCH_TEST_JUDGE_KEY",
    )
    settings.sampling = SamplingConfig(judge_rate=0.5)
    return settings


def test_judged_once_across_a_restart_none_lost(broker, topic, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("AGENTWATCH_TEST_JUDGE_KEY", "sk-test")
    bs = broker.bootstrap_servers
    prefix, count = unique("j"), 24
    ids = [f"{prefix}-{i:04d}" for i in range(count)]
    sampled = {i for i, cid in enumerate(ids) if sample_point(cid) < 0.5}
    assert 4 <= len(sampled) <= 20
    with FakeOpenAI(lambda body: Reply(body=verdict_reply("complete", 0.9), delay_s=1.5)) as server:
        _finished(_send(tmp_path, bs, topic, prefix, count))
        settings = _settings(bs, topic, server, tmp_path / "verdicts.jsonl", verdict_wait_on_shutdown_s=0.0)
        reader = TopicReader(bs, settings.collector.scores_topic)
        with ServiceThread(settings) as first:
            deadline = time.monotonic() + 40
            while not server.requests and time.monotonic() < deadline:  # stop while verdicts are in flight
                time.sleep(0.05)
            time.sleep(0.3)
            waiting = len(first.service.pending)
        # what the first run asked the judge before it stopped (on a loaded machine it may not have read every
        # conversation yet: the replay asks for the rest, once each)
        asked_first = len(server.requests)
        assert first.error is None
        assert waiting > 0, "nothing was waiting for the judge when the collector stopped"
        scored_first = {s["conversation_id"] for s in scores_of(reader.wait(lambda r: False, 1))}
        with ServiceThread(settings) as second:  # same group: replays what was not committed
            records = reader.wait(lambda r: {s["conversation_id"] for s in scores_of(r)} >= set(ids), 60)
            assert second.error is None and second.service.judge is not None
            stats = second.service.judge.stats.snapshot()
        reader.close()
    scores = scores_of(records)
    assert {s["conversation_id"] for s in scores} == set(ids), "a conversation was lost"
    assert set(ids) - scored_first, "the first run scored everything: the restart tested nothing"
    judged = _judged_orders(server)
    assert sorted(judged) == sorted(sampled), "a sampled conversation was judged twice or not at all"
    # the replay paid nothing twice: verdicts asked for before the restart came from the cache
    assert stats["calls"] == len(sampled) - asked_first and stats["cache_hits"] >= 1
    for s in scores:
        i = ids.index(s["conversation_id"])
        if i in sampled:
            assert s["graded_by"] == ["judge"] and s["passed"] is True and s["outcome"] == "complete"
            assert s["judge"] and "gpt-4o-mini" in s["judge"] and s["outcome_source"] == "judge"
        else:
            assert s["graded_by"] == [] and s["passed"] is None and s["judge_sampled"] is False


def test_slow_judge_pauses_the_consumer_and_metrics_report_it(broker, topic, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("AGENTWATCH_TEST_JUDGE_KEY", "sk-test")
    bs = broker.bootstrap_servers
    prefix, count = unique("slow"), 40
    replies = iter([Reply(status=429, body={"error": "slow down"}, headers={"Retry-After": "0"})])

    def responder(body):
        reply = next(replies, None)  # the first call is rate-limited once, then retried
        return reply or Reply(body=verdict_reply("partial_correct", 0.5), delay_s=0.4)

    with FakeOpenAI(responder) as server:
        settings = _settings(bs, topic, server, tmp_path / "v.jsonl", max_pending_verdicts=3)
        settings.sampling = SamplingConfig(judge_rate=1.0)
        reader = TopicReader(bs, settings.collector.scores_topic)
        create_topic(bs, topic, 2)  # exists before the collector subscribes: consumed from the first message
        samples: list[tuple[float, bool, int]] = []  # (time, paused, messages consumed)
        with ServiceThread(settings) as svc:
            # conversations arrive at ~10/s; two calls of 0.4 s in flight judge 5/s: a backlog builds
            agent = _send(tmp_path, bs, topic, prefix, count, pause_s=0.1)
            registry = CollectorRegistry()
            register(svc.service.stats, registry, svc.service)
            done = threading.Event()

            def watch() -> None:
                while not done.is_set():
                    samples.append(
                        (
                            time.monotonic(),
                            svc.service.backpressure.paused,
                            svc.service.stats.messages_consumed,
                        )
                    )
                    time.sleep(0.02)

            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            records = reader.wait(lambda r: len(r) >= count, 90)
            _finished(agent)
            done.set()
            watcher.join()
            text = render_families(registry.collect())
            assert svc.error is None
            pauses = svc.service.stats.judge_pauses
            consumed = svc.service.stats.messages_consumed
        reader.close()
    assert len({s["conversation_id"] for s in scores_of(records)}) == count
    assert pauses >= 1
    # while paused, nothing more is read although the agent has sent more: the backlog stays in Kafka
    stretches, start = [], None
    for t, paused, msgs in samples:
        if paused and start is None:
            start = (t, msgs)
        elif paused and start is not None and t - start[0] > 0.3:
            stretches.append((t - start[0], msgs - start[1], msgs))
        elif not paused:
            start = None
    assert stretches, "never paused for long"
    held = [(length, grew, at) for length, grew, at in stretches if at < consumed]
    assert held and all(grew == 0 for _, grew, _ in held), stretches[:5]
    assert all(s["outcome"] == "partial_correct" and s["passed"] is False for s in scores_of(records))
    assert "agentwatch_judge_calls_total 40.0" in text and len(server.requests) == 41  # one 429, retried
    assert 'agentwatch_judge_failures_total{reason="judge_timeout"} 0.0' in text
    assert "agentwatch_judge_latency_seconds_count 40.0" in text
    assert "agentwatch_judge_pauses_total" in text


def test_verdicts_reach_an_otel_backend_as_evaluation_events(broker, topic, tmp_path, monkeypatch) -> None:
    """SDK agent → broker → collector with a judge → `gen_ai.evaluation.result` records on an OTLP/HTTP
    receiver, parented to the agent's last turn span."""
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    from tests.support.otlp_receiver import Receiver, attrs

    monkeypatch.setenv("AGENTWATCH_TEST_JUDGE_KEY", "sk-test")
    bs = broker.bootstrap_servers
    prefix, count = unique("ev"), 3
    receiver = Receiver()
    try:
        with FakeOpenAI(
            lambda body: Reply(body=verdict_reply("complete", 0.9, "quotes the order status"))
        ) as server:
            _finished(_send(tmp_path, bs, topic, prefix, count))
            settings = _settings(bs, topic, server, tmp_path / "v.jsonl")
            settings.sampling = SamplingConfig(judge_rate=1.0)
            settings.collector = settings.collector.model_copy(
                update={"evaluation_events_endpoint": receiver.endpoint}
            )
            spans = TopicReader(bs, topic)
            turn_spans = {}
            # every conversation's message (one each, keyed by its id; they land on several partitions)
            for r in spans.wait(lambda r: len({x.key for x in r}) >= count, 20):
                for rs in TracesData.FromString(r.value).resource_spans:
                    for ss in rs.scope_spans:
                        for span in ss.spans:
                            if span.name == "bot" or any(
                                a.key == "gen_ai.operation.name" and a.value.string_value == "invoke_agent"
                                for a in span.attributes
                            ):
                                cid = next(
                                    a.value.string_value
                                    for a in span.attributes
                                    if a.key == "gen_ai.conversation.id"
                                )
                                turn_spans[cid] = (span.trace_id, span.span_id)
            spans.close()
            reader = TopicReader(bs, settings.collector.scores_topic)
            with ServiceThread(settings) as svc:
                reader.wait(lambda r: len(r) >= count, 40)
                deadline = time.monotonic() + 20
                while len(receiver.records()) < 2 * count and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert svc.error is None
            reader.close()
        records = receiver.records()
    finally:
        receiver.close()
    assert len(turn_spans) == count
    outcome_records = [
        rec for _, rec in records if attrs(rec)["gen_ai.evaluation.name"] == "agentwatch.outcome"
    ]
    assert len(outcome_records) == count
    for rec in outcome_records:
        a = attrs(rec)
        assert rec.event_name == "gen_ai.evaluation.result"
        assert (rec.trace_id, rec.span_id) == turn_spans[a["gen_ai.conversation.id"]]
        assert a["gen_ai.evaluation.score.label"] == "complete"
        assert a["gen_ai.evaluation.explanation"] == "quotes the order status"
        assert "gpt-4o-mini" in a["agentwatch.judge"]
