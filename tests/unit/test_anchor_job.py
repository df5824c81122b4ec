"""The anchor job under a hostile judge and hostile edits: a judge down or out of budget, a configuration
edited into something unusable, a stop during a run. Counts and states are asserted, never durations."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentwatch import metrics_http
from agentwatch.config import load_settings
from agentwatch.judge.anchor_service import AnchorJob, serve_metrics
from agentwatch.judge.anchors import Anchor, read_anchors, write_anchors
from tests.support.anchor_job import JUDGE, Judge, anchor_set, edit_config, judge_config
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


def test_a_reload_keeps_the_command_line_options_and_never_opens_the_cache_file(tmp_path: Path) -> None:
    """The options given at start (here the model) hold after the file is read again, and the verdict cache
    file of the configuration (the collector's) is neither opened nor created by the job."""
    cache = tmp_path / "collector-cache.jsonl"
    with FakeOpenAI(Judge()) as server:
        anchors = anchor_set(tmp_path / "anchors.jsonl")
        config = judge_config(tmp_path / "agentwatch.yaml", server, anchors, cache_path=str(cache))

        def options(settings: Any) -> Any:
            settings.judge = settings.judge.model_copy(update={"model": "gpt-4.1-mini"})
            return settings

        job = AnchorJob(options(load_settings(config)), config, options=options)
        assert job.run_once() is not None
        edit_config(config, lambda d: d["anchors"].update(interval_s=1800))
        assert job._changed() is False  # the same judge: no run at once
        assert job.settings.judge.model == "gpt-4.1-mini" and job.settings.anchors.interval_s == 1800
        assert job.run_once() is not None
        assert {r["model"] for r in server.requests} == {"gpt-4.1-mini"}
        assert job.state.reloads == {"ok": 1, "failed": 0}
        assert not cache.exists()


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda d, bad: d["anchors"].update(path=str(bad)), id="a bad anchor file"),
        pytest.param(
            lambda d, bad: d["anchors"].update(path=str(bad.parent / "missing.jsonl")), id="missing"
        ),
        pytest.param(
            lambda d, bad: d["judge"].update(model="no-such-model", daily_usd=1.0), id="unpriced cap"
        ),
        pytest.param(lambda d, bad: d["anchors"].update(interval_s=-1), id="invalid value"),
    ],
)
def test_a_reload_to_an_unusable_configuration_keeps_the_one_in_force(
    tmp_path: Path, edit: Callable[[dict, Path], None]
) -> None:
    """The serving job outlives the edit, counts the failed reload, and keeps judging with what it had."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    with FakeOpenAI(Judge()) as server:
        anchors = anchor_set(tmp_path / "anchors.jsonl")
        config = judge_config(tmp_path / "agentwatch.yaml", server, anchors)
        job = AnchorJob(load_settings(config), config)
        stop = threading.Event()
        thread = threading.Thread(target=job.serve, args=(stop,), daemon=True)
        thread.start()
        try:
            _wait(lambda: job.state.runs["ok"] == 1)
            good = yaml.safe_load(config.read_text())
            edit_config(config, lambda d: edit(d, bad))
            _wait(lambda: job.state.reloads["failed"] == 1 or not thread.is_alive())
            assert thread.is_alive()
            assert job.settings.anchors.path == str(anchors) and len(job.anchors) == 8
            assert job.settings.judge.model == "gpt-4o-mini"
            good["judge"]["model"] = "gpt-4.1-mini"
            edit_config(config, lambda d: d.update(good))  # a good edit is taken again
            _wait(lambda: job.state.runs["ok"] == 2)
            assert job.state.latest is not None and job.state.latest.judge == "openai:gpt-4.1-mini:v1"
        finally:
            stop.set()
            thread.join(30)


def test_a_new_anchor_set_is_judged_at_once(tmp_path: Path) -> None:
    with FakeOpenAI(Judge()) as server:
        config = judge_config(tmp_path / "agentwatch.yaml", server, anchor_set(tmp_path / "anchors.jsonl"))
        job = AnchorJob(load_settings(config), config)
        assert job.run_once() is not None
        other = anchor_set(tmp_path / "other.jsonl", 4)
        edit_config(config, lambda d: d["anchors"].update(path=str(other)))
        assert job._changed() is True
        found = job.run_once()
        assert found is not None and found.anchors == 4


def test_a_set_frozen_again_in_place_is_read_and_judged_at_once(tmp_path: Path) -> None:
    """`freeze --out` onto the file in force: the job reads it at the next check without a configuration edit;
    a SIGHUP with nothing changed reads both again and runs nothing."""
    with FakeOpenAI(Judge()) as server:
        anchors = anchor_set(tmp_path / "anchors.jsonl")
        config = judge_config(tmp_path / "agentwatch.yaml", server, anchors)
        job = AnchorJob(load_settings(config), config)
        assert job.run_once() is not None
        job.reload()
        assert job._changed() is False and job.state.reloads == {"ok": 1, "failed": 0}
        before = anchors.stat().st_mtime_ns
        while anchors.stat().st_mtime_ns == before:
            write_anchors(anchors, read_anchors(anchors)[:5])
        assert job._changed() is True
        found = job.run_once()
        assert found is not None and found.anchors == 5


def test_an_anchor_set_written_again_is_replaced_whole_or_not_at_all(tmp_path: Path) -> None:
    """A freeze that fails while writing leaves the set in force as it was, and no partial file."""
    path = anchor_set(tmp_path / "anchors.jsonl")
    before = path.read_bytes()

    def failing() -> Iterator[Anchor]:
        yield read_anchors(path)[0]
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_anchors(path, failing())
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["anchors.jsonl"]


def test_a_judge_that_cannot_be_built_fails_at_start(tmp_path: Path) -> None:
    with FakeOpenAI(Judge()) as server:
        anchors = anchor_set(tmp_path / "anchors.jsonl")
        config = judge_config(
            tmp_path / "agentwatch.yaml", server, anchors, model="no-such-model", daily_usd=1.0
        )
        with pytest.raises(ValueError, match="judge.model 'no-such-model' has no price in cost.prices"):
            AnchorJob(load_settings(config), config)


def test_a_stop_during_a_run_starts_no_more_calls_and_drops_the_run(tmp_path: Path) -> None:
    judge = Judge()
    judge.gate.clear()
    with FakeOpenAI(judge) as server:
        config = judge_config(
            tmp_path / "agentwatch.yaml", server, anchor_set(tmp_path / "anchors.jsonl", 20)
        )
        job = AnchorJob(load_settings(config), config)
        stop = threading.Event()
        found: list[object] = []
        thread = threading.Thread(target=lambda: found.append(job.run_once(stop)), daemon=True)
        thread.start()
        assert judge.started.wait(30)
        stop.set()
        judge.gate.set()
        thread.join(30)
        assert found == [None]
        assert len(server.requests) <= 2  # the calls in flight when it stopped (concurrency 2)
        assert job.state.runs == {"ok": 0, "failed": 0} and job.state.latest is None


def _wait(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_the_job_metrics_close_a_client_that_trickles_its_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job serves /metrics with the services' server: a request head still coming IDLE_TIMEOUT_S after it
    began is closed unanswered, however steadily its bytes come, and scrapes go on."""
    monkeypatch.setattr(metrics_http, "IDLE_TIMEOUT_S", 0.5)
    with FakeOpenAI(Judge()) as server:
        config = judge_config(tmp_path / "agentwatch.yaml", server, anchor_set(tmp_path / "anchors.jsonl", 2))
        job = AnchorJob(load_settings(config), config)
        assert job.run_once() is not None
        metrics = serve_metrics(job, 0, "127.0.0.1")
        try:
            head = b"GET /metrics HTTP/1.1\r\nX-Slow: " + b"y" * 200  # a byte every 0.05 s: never idle
            sent = 0
            with socket.create_connection(("127.0.0.1", metrics.port), timeout=5) as s:
                for byte in head:
                    try:
                        s.sendall(bytes([byte]))
                    except OSError:
                        break
                    sent += 1
                    time.sleep(0.05)
            assert sent < len(head)  # closed while the head was still coming
            assert scrape(metrics.port)[("agentwatch_anchor_runs_total", (("result", "ok"),))] == 1.0
        finally:
            metrics.stop()


def test_a_set_too_small_for_min_agreement_is_warned_of(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Below 10 anchors at min_agreement 0.9 one verdict changing class is drift: the job says so at start."""
    with FakeOpenAI(Judge()) as server:
        for n, warned in ((1, True), (9, True), (10, False)):
            caplog.clear()
            anchors = anchor_set(tmp_path / f"anchors-{n}.jsonl", n)
            config = judge_config(tmp_path / "agentwatch.yaml", server, anchors)
            with caplog.at_level(logging.WARNING, logger="agentwatch.judge.anchor_service"):
                AnchorJob(load_settings(config), config)
            expected = f"{n} anchors: one verdict changing class is judge drift"
            assert (
                any(
                    expected in r.getMessage() and "freeze at least 10" in r.getMessage()
                    for r in caplog.records
                )
                is warned
            )
