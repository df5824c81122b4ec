"""`agentwatch judge anchors run --serve` as a process: its command-line options hold over a reload (a file
edit and SIGHUP)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.anchor_job import Judge, anchor_set, edit_config, judge_config
from tests.support.fake_openai import FakeOpenAI
from tests.support.metrics_reference import scrape


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(condition: Callable[[], bool], proc: subprocess.Popen, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert proc.poll() is None, "the job exited"
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _count(port: int, name: str, result: str) -> float:
    try:
        return scrape(port).get((name, (("result", result),)), -1.0)
    except OSError:  # not serving yet
        return -1.0


def test_the_job_keeps_its_options_over_reloads(tmp_path: Path) -> None:
    judge = Judge()
    with FakeOpenAI(judge) as server:
        anchors = anchor_set(tmp_path / "anchors.jsonl", 12)
        config = judge_config(tmp_path / "agentwatch.yaml", server, anchors, concurrency=2)
        port = _free_port()
        log = (tmp_path / "job.log").open("w")
        args = ["judge", "anchors", "run", "--serve", "--config", str(config), "--judge", "gpt-4.1-mini"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentwatch", *args, "--metrics-port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait(lambda: _count(port, "agentwatch_anchor_runs_total", "ok") == 1.0, proc)
            edit_config(config, lambda d: d["anchors"].update(interval_s=1800))
            _wait(lambda: _count(port, "agentwatch_anchor_config_reloads_total", "ok") == 1.0, proc)
            proc.send_signal(signal.SIGHUP)
            _wait(lambda: _count(port, "agentwatch_anchor_config_reloads_total", "ok") == 2.0, proc)
            assert _count(port, "agentwatch_anchor_runs_total", "ok") == 1.0  # the judge did not change
            assert {r["model"] for r in server.requests} == {"gpt-4.1-mini"}  # not the file's gpt-4o-mini
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(60) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
            log.close()
