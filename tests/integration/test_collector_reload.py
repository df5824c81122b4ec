"""SIGHUP: a running `agentwatch collector` reloads task policies; a bad file is refused and the old ones stay."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
import yaml

from tests.support.collector_kafka import (
    TopicReader,
    collector_settings,
    scores_of,
    start_collector_process,
    unique,
)

pytestmark = pytest.mark.broker

AGENT = r"""
import sys
from agentwatch.sdk import configure, conversation, shutdown, trace

bootstrap, topic, cid = sys.argv[1:4]
configure("kafka", agent="support-bot", version="3.1", bootstrap_servers=bootstrap, topic=topic)


@trace(kind="agent")
def bot(question: str) -> str:
    return "Hello!"


with conversation(id=cid, task="greeting"):
    bot("hi")
    conversation.end()
shutdown()
"""


def _policy_file(path, version: str) -> None:
    path.write_text(yaml.safe_dump({"policies": [{"id": "greet", "version": version, "task": "greeting"}]}))


def _wait_for(log_path, text: str, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if text in log_path.read_text(errors="replace"):
            return
        time.sleep(0.1)
    raise AssertionError(f"{text!r} not in the collector log:\n{log_path.read_text()[-3000:]}")


def test_sighup_reloads_policies(broker, topic, tmp_path) -> None:
    bs = broker.bootstrap_servers
    config = tmp_path / "agentwatch.yaml"
    _policy_file(config, "1")
    settings = collector_settings(bs, [topic], unique("hup"))
    log_path = tmp_path / "collector.log"
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    reader = TopicReader(bs, settings.collector.scores_topic)
    proc = start_collector_process(settings, str(log_path), "--config", str(config))
    try:

        def converse() -> None:
            run = subprocess.run(
                [sys.executable, str(agent), bs, topic, unique("c")],
                check=False,
                capture_output=True,
                timeout=60,
            )
            assert run.returncode == 0, run.stderr.decode()[-2000:]

        converse()
        reader.wait(lambda r: len(r) >= 1, 40)
        _policy_file(config, "2")
        proc.send_signal(signal.SIGHUP)
        _wait_for(log_path, "SIGHUP: 1 task policies")
        converse()
        reader.wait(lambda r: len(r) >= 2, 40)
        config.write_text(yaml.safe_dump({"policies": [{"id": "greet", "ordr": "strict"}]}))
        proc.send_signal(signal.SIGHUP)
        _wait_for(log_path, "configuration not reloaded")
        converse()
        records = reader.wait(lambda r: len(r) >= 3, 40)
        assert proc.poll() is None, "the collector died"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        reader.close()
    assert [s["policy"] for s in scores_of(records)] == ["greet@1", "greet@2", "greet@2"]
    assert "policies.0.ordr" in log_path.read_text()
