"""The anchor job under a hostile judge and hostile edits: a judge down or out of budget, a configuration
edited into something unusable, a stop during a run. Counts and states are asserted, never durations."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from agentwatch.config import load_settings
from agentwatch.judge.anchor_service import AnchorJob, serve_metrics
from tests.support.anchor_job import JUDGE, Judge, anchor_set, judge_config
from tests.support.fake_openai import FakeOpenAI
from tests.support.metrics_reference import scrape


def test_a_run_the_judge_mostly_failed_keeps_the_previous_result_and_counts_as_failed(tmp_path: Path) -> None:
    """The judge down at start serves no comparison (nothing to page on); once up, a run is served; down
    again, each run counts as failed and the served figures stay the last good run's, with its time."""
    judge = Judge()
    judge.down = True
    with FakeOpenAI(judge) as server:
        config = judge_config(tmp_path / "agentwatch.yaml", server, anchor_set(tmp_path / "anchors.jsonl"))
        job = AnchorJob(load_settings(config), config)
        metrics = serve_metrics(job, 0, "127.0.0.1")
        try:
            assert job.run_once() is None
            first = scrape(metrics.port)
            assert first[("agentwatch_anchor_runs_total", (("result", "failed"),))] == 1.0
            assert not any(
                name == "agentwatch_judge_drift" for name, _ in first
            )  # a restart pages on nothing
            judge.down = False
            good = job.run_once()
            assert good is not None and good.judged == 8
            served_at = job.state.finished_at
            judge.fail_from = 3  # 3 of 8 graded: fewer than half
            assert job.run_once() is None
            judge.down = True
            assert job.run_once() is None
            assert job.state.latest is good and job.state.finished_at == served_at
            assert job.state.runs == {"ok": 1, "failed": 3}
            last = scrape(metrics.port)
            stamp = ("agentwatch_anchor_last_run_timestamp_seconds", (("judge", JUDGE),))
            assert last[stamp] == served_at
            assert last[("agentwatch_anchor_conversations", (("judge", JUDGE), ("kind", "judged")))] == 8.0
        finally:
            metrics.stop()


def test_the_spend_cap_holds_across_runs(tmp_path: Path) -> None:
    """judge.daily_usd is the job's over the day: once spent, the next runs call nothing (each call costs
    $0.000036 at gpt-4o-mini's price; the cap allows two)."""
    with FakeOpenAI(Judge()) as server:
        anchors = anchor_set(tmp_path / "anchors.jsonl")
        config = judge_config(tmp_path / "agentwatch.yaml", server, anchors, concurrency=1, daily_usd=0.00005)
        job = AnchorJob(load_settings(config), config)
        assert job.run_once() is None  # 2 of 8 graded, then the cap
        calls = len(server.requests)
        assert calls == 2
        assert job.run_once() is None and job.run_once() is None
        assert len(server.requests) == calls
        assert job.state.runs == {"ok": 0, "failed": 3}


def _wait(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)
