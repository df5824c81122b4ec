"""The `agentwatch collector` command: options over environment, and pipeline metrics on --metrics-port."""

from __future__ import annotations

import signal
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from agentwatch.kafka.broker import free_port
from tests.support.collector_kafka import (
    SDK_HEADERS,
    TopicReader,
    collector_settings,
    create_topic,
    ids_of,
    otlp_bytes,
    producer,
    simple_conversation,
    start_collector_process,
    unique,
)

pytestmark = pytest.mark.broker


def _scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _scrape_until(port: int, ok, timeout_s: float) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Scrape until `ok(metrics)` or the deadline; the last scrape either way (the caller asserts on it)."""
    deadline = time.monotonic() + timeout_s
    m = _scrape(port)
    while not ok(m) and time.monotonic() < deadline:
        time.sleep(0.1)
        m = _scrape(port)
    return m


def test_cli_options_and_pipeline_metrics(broker, tmp_path):
    bs = broker.bootstrap_servers
    topic = unique("spans")
    create_topic(bs, topic, 2)
    settings = collector_settings(bs, [topic], unique("cli"))
    right_scores = settings.collector.scores_topic
    # the environment names another scores topic and another broker: the command-line options must win
    settings.collector.scores_topic = unique("wrong-scores")
    settings.kafka.bootstrap_servers = "127.0.0.1:1"
    port = free_port()
    started = time.time()
    proc = start_collector_process(
        settings,
        str(tmp_path / "collector.log"),
        "--bootstrap-servers",
        bs,
        "--scores-topic",
        right_scores,
        "--metrics-port",
        str(port),
    )
    convs = [unique("m") for _ in range(20)]
    p = producer(bs)
    for cid in convs:
        p.send(topic, value=otlp_bytes(simple_conversation(cid)), key=cid.encode(), headers=SDK_HEADERS)
    twice = otlp_bytes(simple_conversation(convs[0] + "-twice"))
    for _ in range(2):  # the same message twice: its spans are duplicates (or late) the second time
        p.send(topic, value=twice, key=b"twice", headers=SDK_HEADERS, partition=0)
    for _ in range(2):
        p.send(topic, value=b"\xff\x00 definitely not otlp", key=b"junk")
    p.flush()
    reader = TopicReader(bs, right_scores)
    try:
        reader.wait(lambda r: len(set(ids_of(r))) >= len(convs) + 1, 40, alive=lambda: proc.poll() is None)
        assert proc.poll() is None, (tmp_path / "collector.log").read_text()[-3000:]
        n = len(convs) + 1
        m = _scrape_until(
            port,
            lambda m: (  # a commit cycle and a lag refresh: waited for, not slept
                m.get(("agentwatch_scores_produced_total", ())) == n
                and m.get(("agentwatch_last_commit_timestamp_seconds", ())) is not None
                and m.get(("agentwatch_messages_rejected_total", (("reason", "not_otlp"),))) == 2
                and any(k[0] == "agentwatch_consumer_lag" for k in m)
                and all(v == 0 for k, v in m.items() if k[0] == "agentwatch_consumer_lag")
            ),
            30,
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
        reader.close()
    assert set(ids_of(reader.records)) == {*convs, convs[0] + "-twice"}
    n = len(convs) + 1
    spans_per_conv = 3  # invoke_agent, execute_tool, chat
    assert m[("agentwatch_spans_consumed_total", ())] == spans_per_conv * (n + 1)
    assert m[("agentwatch_messages_rejected_total", (("reason", "not_otlp"),))] == 2
    assert m[("agentwatch_conversations_finished_total", (("reason", "end"),))] == n
    assert m[("agentwatch_scores_produced_total", ())] == n
    assert m[("agentwatch_open_conversations", ())] == 0
    assert (
        m[("agentwatch_duplicate_spans_total", ())] + m[("agentwatch_late_spans_total", ())] == spans_per_conv
    )
    lags = {k: v for k, v in m.items() if k[0] == "agentwatch_consumer_lag"}
    assert {dict(k[1])["topic"] for k in lags} == {topic}
    assert all(v == 0 for v in lags.values())
    assert started <= m[("agentwatch_last_commit_timestamp_seconds", ())] <= time.time()
