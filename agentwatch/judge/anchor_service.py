"""The anchor job: judge the anchors again on a schedule and whenever the judge changes, and serve the result.

`AnchorJob.serve` judges the anchor set at start, then every `anchors.interval_s`, and at once when the judge
id (name, model, prompt version) or the anchors differ from the last run's — the configuration file and the
anchor set are read again when either changes (checked every `anchors.check_interval_s`) or on `reload()`
(SIGHUP). Every run is a real call per
anchor (no verdict cache: a cached verdict would hide the drift it looks for). The latest comparison of the
current judge is served as metrics (`AnchorMetrics`); a run that fails — an error, or the judge graded fewer
than half of the anchors (down, out of budget) — keeps the previous result and is counted. The spend cap holds
across runs, a reload keeps the command line's options, and a stop ends a run between calls.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from agentwatch.config import JudgeConfig, Settings, load_settings
from agentwatch.judge.anchors import Anchor, AnchorComparison, compare, read_anchors
from agentwatch.judge.budget import SpendCap
from agentwatch.judge.cache import JudgeCache
from agentwatch.judge.runner import JudgeRunner
from agentwatch.judge.verdict import JudgeVerdict

log = logging.getLogger(__name__)

RunnerFactory = Callable[[Settings], JudgeRunner]
Options = Callable[[Settings], Settings]
# A run in which the judge graded fewer than this share of the anchors is a failed run: a comparison on the few
# it graded (the judge down, the spend cap reached) would page on a handful of verdicts.
MIN_JUDGED_SHARE = 0.5
STOP_POLL_S = 0.5  # how often a run waiting on the judge looks at the stop event


class RunStopped(Exception):
    """The job was stopped during a run: no call started after it, the run's verdicts are dropped."""


def _no_cache(settings: Settings) -> Settings:
    """`settings` with no verdict cache file: every run is a real call, and the collector's file is its own."""
    if settings.judge.cache_path is None:
        return settings
    judge = JudgeConfig.model_validate({**settings.judge.model_dump(), "cache_path": None})
    return settings.model_copy(update={"judge": judge})  # the caller's settings keep their own


def _judge_all(runner: JudgeRunner, convs: Sequence[Any], stop: threading.Event | None) -> list[JudgeVerdict]:
    """Verdicts in input order, at most `concurrency` calls queued at a time so that a stop starts no more."""
    futures: list[Future[JudgeVerdict]] = []
    inflight: set[Future[JudgeVerdict]] = set()
    for conv in convs:
        while len(inflight) >= runner.concurrency:
            _, inflight = wait(inflight, STOP_POLL_S, FIRST_COMPLETED)
            if stop is not None and stop.is_set():
                raise RunStopped
        if stop is not None and stop.is_set():
            raise RunStopped
        future = runner.submit(conv)
        futures.append(future)
        inflight.add(future)
    while inflight:
        _, inflight = wait(inflight, STOP_POLL_S, FIRST_COMPLETED)
        if stop is not None and stop.is_set():
            raise RunStopped
    return [f.result() for f in futures]


def _mtime(path: Path | None) -> float | None:
    """The file's modification time; None when there is none."""
    try:
        return path.stat().st_mtime_ns if path is not None else None
    except OSError:
        return None


def _warn_if_small(n: int, min_agreement: float) -> None:
    """Say so when one anchor changing class is judge drift: (n − 1) / n below `min_agreement`."""
    if 0 < min_agreement < 1 and (n - 1) / n < min_agreement:
        needed = math.ceil(1 / (1 - min_agreement) - 1e-9)
        log.warning(
            "%d anchors: one verdict changing class is judge drift (agreement below anchors.min_agreement %.2f);"
            " freeze at least %d, a few hundred to see drift through a judge's own noise",
            n,
            min_agreement,
            needed,
        )


def judge_anchors(
    anchors: list[Anchor],
    settings: Settings,
    runner_factory: RunnerFactory = JudgeRunner.from_settings,
    cap: SpendCap | None = None,
    stop: threading.Event | None = None,
) -> AnchorComparison:
    """Judge every anchor with the configured judge (no cache; `cap`: the spend so far, shared by the runs) and
    compare with the frozen verdicts; RunStopped when `stop` is set meanwhile."""
    runner = runner_factory(_no_cache(settings))
    runner.cache = JudgeCache(max_entries=0)  # every run is a real call
    if cap is not None:
        runner.cap = cap
    try:
        verdicts = _judge_all(runner, [a.conversation for a in anchors], stop)
    finally:
        runner.close()
    return compare(anchors, verdicts, runner.judge_id, settings.stats.level, settings.anchors.min_agreement)


@dataclass(slots=True)
class AnchorState:
    """What the metrics show: the latest comparison of the current judge, and the runs so far."""

    latest: AnchorComparison | None = None
    finished_at: float | None = None
    runs: dict[str, int] = field(default_factory=lambda: {"ok": 0, "failed": 0})
    reloads: dict[str, int] = field(default_factory=lambda: {"ok": 0, "failed": 0})
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


class AnchorJob:
    """Judges the anchor set on a schedule and when the judge changes."""

    def __init__(
        self,
        settings: Settings,
        config_path: Path | None = None,
        runner_factory: RunnerFactory = JudgeRunner.from_settings,
        clock: Callable[[], float] = time.time,
        options: Options | None = None,
    ) -> None:
        if not settings.anchors.path:
            raise ValueError(
                "anchors.path is not set: no anchor set to judge (make one: agentwatch judge anchors freeze)"
            )
        self.settings = _no_cache(settings)
        self.anchors = read_anchors(Path(settings.anchors.path))
        _warn_if_small(len(self.anchors), settings.anchors.min_agreement)
        self._config_path = config_path
        self._config_mtime = _mtime(config_path)
        self._anchors_mtime = _mtime(Path(settings.anchors.path))
        self._runner_factory = runner_factory
        self._options = options  # the command line's, applied again to every configuration read
        self._clock = clock
        self.state = AnchorState()
        self._judge_id(self.settings)  # a judge that cannot be built fails here, at start
        self._last_judge: str | None = None
        self._reload = threading.Event()
        # one cap for every run: a runner's own would start from nothing each run
        self.cap = SpendCap(settings.judge.hourly_usd, settings.judge.daily_usd)

    def _judge_id(self, settings: Settings) -> str:
        """The judge id `settings` name; ValueError or OSError when no judge can be built from them."""
        runner = self._runner_factory(settings)
        try:
            return runner.judge_id
        finally:
            runner.close()

    def reload(self) -> None:
        """Read the configuration again at the next check (e.g. on SIGHUP)."""
        self._reload.set()

    def run_once(self, stop: threading.Event | None = None) -> AnchorComparison | None:
        """Judge the anchors now; the comparison, or None when the run failed or was stopped (kept out of the
        metrics)."""
        try:
            found = judge_anchors(self.anchors, self.settings, self._runner_factory, self.cap, stop)
        except RunStopped:
            log.info("the anchor run stopped before its end: its verdicts are dropped")
            return None
        except Exception:  # a failed run must not stop the job; the previous result stays
            log.exception("the anchor run failed")
            self._failed()
            return None
        if found.judged < MIN_JUDGED_SHARE * found.anchors:
            log.error(
                "the anchor run failed: the judge %s graded %d of %d anchors (%d failures); the previous "
                "result stays",
                found.judge,
                found.judged,
                found.anchors,
                found.failures,
            )
            self._failed()
            return None
        with self.state.lock:
            self.state.latest, self.state.finished_at = found, self._clock()
            self.state.runs["ok"] += 1
        self._last_judge = found.judge
        log.info(
            "anchors judged by %s: %d of %d, same class %.3f, pass-rate shift %+.3f [%.3f, %.3f]: %s",
            found.judge,
            found.judged,
            found.anchors,
            found.agreement,
            found.shift,
            found.shift_lower,
            found.shift_upper,
            "JUDGE DRIFT" if found.drift else "no drift",
        )
        return found

    def _failed(self) -> None:
        """Count a failed run."""
        with self.state.lock:
            self.state.runs["failed"] += 1

    def _reloaded(self, result: str) -> None:
        """Count a configuration read by its result."""
        with self.state.lock:
            self.state.reloads[result] += 1

    def _changed(self) -> bool:
        """Read the configuration and the anchor set again if either file changed (or on SIGHUP); whether the
        judge id or the anchors differ from the last run's."""
        config_mtime, anchors_mtime = _mtime(self._config_path), _mtime(Path(str(self.settings.anchors.path)))
        asked = self._reload.is_set()
        if not asked and (config_mtime, anchors_mtime) == (self._config_mtime, self._anchors_mtime):
            return False
        self._reload.clear()
        seen = self._anchors_mtime
        # seen, whatever comes of reading them: a file half written changes again when its writer ends
        self._config_mtime, self._anchors_mtime = config_mtime, anchors_mtime
        try:
            settings = load_settings(self._config_path)
            if self._options is not None:
                settings = self._options(settings)
            settings = _no_cache(settings)
            judge = self._judge_id(settings)
            anchors = self.anchors
            path = settings.anchors.path or self.settings.anchors.path
            if asked or path != self.settings.anchors.path or _mtime(Path(str(path))) != seen:
                anchors = read_anchors(Path(str(path)))  # a set frozen again in place is read again too
                self._anchors_mtime = _mtime(Path(str(path)))
                _warn_if_small(len(anchors), settings.anchors.min_agreement)
            new_set = anchors != self.anchors
        except Exception as exc:  # a bad edit keeps the configuration in force, whatever it broke
            log.error("configuration %s not reloaded, the one in force stays: %s", self._config_path, exc)
            self._reloaded("failed")
            return False
        if not settings.anchors.path:  # the set in force is kept; say which
            settings.anchors = settings.anchors.model_copy(update={"path": self.settings.anchors.path})
        self.settings, self.anchors = settings, anchors
        self.cap.hourly_usd, self.cap.daily_usd = settings.judge.hourly_usd, settings.judge.daily_usd
        self._reloaded("ok")
        return new_set or judge != self._last_judge

    def serve(self, stop: threading.Event) -> None:
        """Run at start, on the schedule and when the judge changes, until `stop` is set."""
        self.run_once(stop)
        next_run = time.monotonic() + self.settings.anchors.interval_s
        while not stop.wait(
            min(self.settings.anchors.check_interval_s, max(0.0, next_run - time.monotonic()))
        ):
            changed = self._changed()
            if changed:
                log.info("the judge or the anchor set changed: judging the anchors now")
            if changed or time.monotonic() >= next_run:
                self.run_once(stop)
                next_run = time.monotonic() + self.settings.anchors.interval_s


class AnchorMetrics(Collector):
    """The anchor job's families: the latest comparison of the current judge, the runs, the drift decision."""

    def __init__(self, job: AnchorJob, label: Callable[[str], str] = str) -> None:
        self._job = job
        self._label = label

    def collect(self) -> Iterator[Metric]:
        """Fresh families."""
        state = self._job.state
        with state.lock:
            c, at, runs, reloads = state.latest, state.finished_at, dict(state.runs), dict(state.reloads)
        fam = CounterMetricFamily("agentwatch_anchor_runs", "Anchor runs, by result.", labels=["result"])
        for result, n in runs.items():
            fam.add_metric([result], n)
        yield fam
        fam = CounterMetricFamily(
            "agentwatch_anchor_config_reloads",
            "Configuration reads after a change or SIGHUP, by result (failed: the one in force stays).",
            labels=["result"],
        )
        for result, n in reloads.items():
            fam.add_metric([result], n)
        yield fam
        yield GaugeMetricFamily(
            "agentwatch_anchor_min_agreement",
            "anchors.min_agreement.",
            value=self._job.settings.anchors.min_agreement,
        )
        if c is None or at is None:
            return
        judge, frozen = self._label(c.judge), self._label(c.frozen_judge)
        yield from _gauges(c, judge, frozen, at)


def _gauge(name: str, doc: str, labels: list[str], rows: list[tuple[list[str], float]]) -> GaugeMetricFamily:
    fam = GaugeMetricFamily(name, doc, labels=labels)
    for values, v in rows:
        if not math.isnan(v):  # an undefined figure is left out
            fam.add_metric(values, v)
    return fam


def _gauges(c: AnchorComparison, judge: str, frozen: str, at: float) -> Iterator[Metric]:
    pair = [judge, frozen]
    yield _gauge(
        "agentwatch_anchor_last_run_timestamp_seconds",
        "When the last anchor run finished.",
        ["judge"],
        [([judge], at)],
    )
    yield _gauge(
        "agentwatch_anchor_conversations",
        "Anchors in the set, judged now, and failed now.",
        ["judge", "kind"],
        [([judge, "set"], c.anchors), ([judge, "judged"], c.judged), ([judge, "failed"], c.failures)],
    )
    yield _gauge(
        "agentwatch_anchor_agreement",
        "Share of anchors whose verdict keeps its frozen class.",
        ["judge", "frozen_judge"],
        [(pair, c.agreement)],
    )
    yield _gauge(
        "agentwatch_anchor_agreement_kappa",
        "Cohen's kappa of the verdicts now with the frozen ones.",
        ["judge", "frozen_judge"],
        [(pair, c.agreement_kappa)],
    )
    yield _gauge(
        "agentwatch_anchor_label_kappa",
        "Cohen's kappa of the verdicts (now or frozen) with the labels.",
        ["judge", "verdicts"],
        [([judge, "now"], c.kappa_now), ([judge, "frozen"], c.kappa_frozen)],
    )
    yield _gauge(
        "agentwatch_anchor_pass_rate",
        "Share of anchors passed by the verdicts now, frozen, and labels.",
        ["judge", "verdicts"],
        [
            ([judge, "now"], c.pass_rate_now),
            ([judge, "frozen"], c.pass_rate_frozen),
            ([judge, "labels"], c.pass_rate_labels),
        ],
    )
    yield _gauge(
        "agentwatch_anchor_pass_rate_shift",
        "Pass rate now minus frozen on the same anchors, with its interval (stat mean/lower/upper).",
        ["judge", "frozen_judge", "stat"],
        [([*pair, "mean"], c.shift), ([*pair, "lower"], c.shift_lower), ([*pair, "upper"], c.shift_upper)],
    )
    yield _gauge(
        "agentwatch_judge_drift",
        "1 when the verdicts on the anchors moved (judge drift), else 0.",
        ["judge", "frozen_judge"],
        [(pair, float(c.drift))],
    )


def now_utc() -> datetime:
    """The current time (UTC), for a freeze."""
    return datetime.now(UTC)


def serve_metrics(job: AnchorJob, port: int, host: str, label: Callable[[str], str] = str) -> Any:
    """Serve the job's metrics on http://host:port/metrics; the server (`.port`, `.stop()`)."""
    from prometheus_client import CollectorRegistry

    from agentwatch.metrics_http import MetricsServer, render_families

    registry = CollectorRegistry()
    registry.register(AnchorMetrics(job, label))

    def body() -> bytes:
        return render_families(registry.collect()).encode()

    return MetricsServer(body, port, host, "agentwatch anchors")
