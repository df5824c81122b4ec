"""Steps the live tests share: an SDK agent script sends spans to the broker; the collector and the exporter
run in one process (`Pipeline`) until the estimates hold what was sent; /metrics is read."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from agentwatch.config import Settings
from agentwatch.pipeline import Pipeline
from tests.support.collector_kafka import collector_settings, create_topic, unique
from tests.support.metrics_reference import scrape


def run_agent(script: str, bootstrap: str, topic: str, plan: list[dict], tmp_path: Path) -> None:
    """Run `script` (argv: bootstrap, topic, plan file) in a fresh interpreter; fail with its stderr, or when its
    exporter dropped spans (a test counts every conversation it sent).

    The topic is created first: the exporter's first send to a topic the broker has yet to create waits for
    metadata at most `max_block_ms` and drops the batch after it, which a loaded machine can take."""
    create_topic(bootstrap, topic, 4)
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    (tmp_path / "agent.py").write_text(script)
    run = subprocess.run(
        [sys.executable, str(tmp_path / "agent.py"), bootstrap, topic, str(tmp_path / "plan.json")],
        check=False,
        capture_output=True,
        timeout=120,
    )
    stderr = run.stderr.decode()
    assert run.returncode == 0, stderr[-2000:]
    assert "spans not sent" not in stderr and "agentwatch: dropped" not in stderr, stderr[-2000:]


def pipeline_settings(bootstrap: str, topic: str, prefix: str) -> Settings:
    """Collector reading `topic`, exporter reading its scores; unique topics and groups, fast group joins."""
    settings = collector_settings(bootstrap, [topic], unique(prefix))
    scores = settings.collector.scores_topic
    settings.exporter = settings.exporter.model_copy(
        update={
            "scores_topic": scores,
            "group_id": f"{scores}-exp",
            "metrics_port": 0,
            "session_timeout_ms": 2000,
            "heartbeat_interval_ms": 500,
        }
    )
    return settings


def metrics_when(settings: Settings, done: Callable[[Pipeline], bool], timeout_s: float = 90) -> dict:
    """Run the pipeline until `done(pipeline)` and return every /metrics sample then; fail, saying what the
    pipeline had counted, when `timeout_s` passes first."""
    pipeline = Pipeline(settings)
    port = pipeline.exporter.start_http(port=0, host="127.0.0.1")
    pipeline.start()
    try:
        deadline = time.monotonic() + timeout_s
        while not (finished := done(pipeline)) and time.monotonic() < deadline and not pipeline.errors:
            time.sleep(0.5)
        assert not pipeline.errors, pipeline.errors
        assert finished, f"not done after {timeout_s} s; conversations counted by (task, window): " + str(
            {(e.task, e.window): e.conversations for e in pipeline.exporter.estimator.snapshot()}
        )
        return scrape(port)
    finally:
        pipeline.close()


def one_sample(samples: dict, name: str, **labels: str) -> float | None:
    """The value of the one sample of `name` whose labels include `labels`; None when there is none."""
    want = set(labels.items())
    found = [v for (n, ls), v in samples.items() if n == name and want <= set(ls)]
    assert len(found) <= 1, (name, labels, found)
    return found[0] if found else None
