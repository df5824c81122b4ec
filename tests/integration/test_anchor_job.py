"""`agentwatch judge anchors run --serve` as a process: its command-line options hold over a reload (a file
edit and SIGHUP), and SIGTERM during a run starts no more calls."""

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


def test_the_job_keeps_its_options_over_reloads_and_stops_mid_run_on_sigterm(tmp_path: Path) -> None:
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
            # a new anchor set is judged at once; SIGTERM while its calls wait on the judge
            judge.gate.clear()
            judge.started.clear()
            calls = len(server.requests)
            edit_config(
                config, lambda d: d["anchors"].update(path=str(anchor_set(tmp_path / "new.jsonl", 40)))
            )
            assert judge.started.wait(60)
            proc.send_signal(signal.SIGTERM)
            time.sleep(2)  # the signal handled (a run looks at its stop every 0.5 s) before calls end
            judge.gate.set()
            assert proc.wait(60) == 0
            assert len(server.requests) - calls <= 2  # the calls in flight (concurrency 2), none after
        finally:
            judge.gate.set()
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
            log.close()
        text = (tmp_path / "job.log").read_text()
        assert "the anchor run stopped before its end" in text, text


def test_a_metrics_port_in_use_stops_the_job_at_start_naming_it(tmp_path: Path) -> None:
    with FakeOpenAI(Judge()) as server, socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = judge_config(tmp_path / "agentwatch.yaml", server, anchor_set(tmp_path / "anchors.jsonl", 2))
        args = ["judge", "anchors", "run", "--serve", "--config", str(config), "--metrics-port", str(port)]
        done = subprocess.run(
            [sys.executable, "-m", "agentwatch", *args], capture_output=True, text=True, timeout=120
        )
    assert done.returncode == 2, done.stderr
    assert f"error: cannot serve /metrics on port {port}: Address already in use" in done.stderr
    assert "Traceback" not in done.stderr
