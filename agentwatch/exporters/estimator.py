"""The rolling estimator: a fold of `ConversationScore`s into per-series sliding windows, read as estimates.

- Series = (agent, version, task), plus (agent, version, "*") pooling all tasks of an agent version.
- Event time = `score.ended_at` (naive datetimes are UTC; missing → now). Scores older than the longest window
  are rejected (`too_old`), future ones are clamped to now and counted.
- Identity = (agent, conversation id): two agents may reuse an id. An identity is remembered while its event time
  is inside the longest window (ids expire with it), with what it contributed and the two series keys it was
  added to ((agent, version, task) and (agent, version, "*")).
- Revisions: a score with a higher `revision` than the one counted for its identity replaces the earlier
  contribution in every window of both series, at the original event time (the same conversation, the same
  bucket), so nothing is counted twice. Where that bucket has already left a window, the window is not changed
  (the revision is applied only where the original still is). A score with an equal or lower revision is
  rejected as `duplicate`. Since-start counters count a conversation once, at its first arrival; accepted
  revisions are counted in `revisions`. Replaying the scores topic (revisions of one conversation are on one
  partition, in order) gives the same windows: at any time, a window holds the latest revision of exactly
  the conversations whose event time it covers.
- Label values are bounded: agents beyond `exporter.max_agents`, versions beyond `exporter.max_versions_per_agent`
  (per agent), tasks outside `exporter.tasks` or, with no list, beyond `exporter.max_tasks`, and failure modes
  beyond `exporter.max_failure_modes` fold into `other` (first come, first kept among the values seen in the
  longest window); every fold is counted per label. A score of a new series when `exporter.max_series` real series
  are in the longest window is counted in (other, other, other) (the `series` fold). A score recording a
  (judge rate, review rate) pair past `exporter.max_sample_rates` weighs as one recording none (the `rates`
  fold). Values are sanitised without merging distinct names (`sanitize_label`).
- Units: a score naming an instance or an attempt belongs to the unit (task, instance) of its agent version;
  each window counts the graded conversations per unit, which the estimates over units read (`summary`). At
  most `exporter.max_units` units per agent version are tracked (first come, first kept among those seen in
  the longest window); a conversation of any other unit counts as a unit of its own, and `units_folded` counts
  it. So does a graded conversation that would add a (unit, bucket) entry past `exporter.max_unit_entries`,
  counted over every window bucket of every series (`unit_entries`): memory grows with those entries.
- A series whose windows are all empty is forgotten (its estimates and counters vanish).
- Thread-safe: `add` and `snapshot` take one lock. Snapshots reuse the estimates of unchanged windows.
- What one score adds to a window is made in `contribution` (`Contributions.of`).
"""

from __future__ import annotations

import dataclasses
import heapq
import logging
import math
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from agentwatch.config import Settings
from agentwatch.exporters.alert_rules import (
    Alert,
    AlertParams,
    Minutes,
    SeriesInput,
    alerts_of,
    credit_point,
    observation,
    plan,
    reference_counts,
)
from agentwatch.exporters.buckets import Contribution
from agentwatch.exporters.contribution import MEASURED_FIELDS, Contributions, ignored_measures
from agentwatch.exporters.counters import EstimatorCounters, SeriesCounters
from agentwatch.exporters.judge_agreement import JudgeAgreement, agreements
from agentwatch.exporters.labels import ALL_TASKS, OTHER, LabelCaps
from agentwatch.exporters.regression import RegressionParams, attach_regressions
from agentwatch.exporters.summary import SeriesEstimate, StatsParams, summarise
from agentwatch.exporters.unit_entries import UnitEntries
from agentwatch.exporters.windows import SlidingWindow, parse_duration
from agentwatch.wire.kept import kept
from agentwatch.wire.schema import ConversationScore

log = logging.getLogger(__name__)

REJECT_REASONS: tuple[str, ...] = ("duplicate", "too_old", "invalid", "forgotten")
# New alert designs made per snapshot at most for this long (after a restart, the first scrapes may lack some
# alert gauges rather than time out); `Estimator.alerts` makes them all.
DESIGN_SECONDS_PER_SNAPSHOT = 2.0
SeriesKey = tuple[str, str, str]


class _Counted:
    """What one identity contributed: enough to take it back when a revision arrives."""

    __slots__ = ("contribution", "keys", "revision", "t")

    def __init__(
        self, t: float, revision: int, contribution: Contribution, keys: tuple[SeriesKey, SeriesKey]
    ):
        self.t = t
        self.revision = revision
        self.contribution = contribution
        self.keys = keys


class _Series:
    __slots__ = ("cache", "cache_gen", "counters", "counters_copy", "first_seen", "minutes", "windows")

    def __init__(self, windows: list[SlidingWindow], t: float, counted: bool) -> None:
        self.windows = windows
        self.first_seen = t
        self.counters = SeriesCounters() if counted else None
        self.counters_copy: SeriesCounters | None = None
        self.cache: list[SeriesEstimate | None] = [None] * len(windows)
        self.cache_gen: list[int] = [-1] * len(windows)
        self.minutes: Minutes | None = None  # per-minute counts of the alert rules (real series)


class Estimator:
    """Rolling Bayesian estimates per series and window, from a stream of conversation scores."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.time) -> None:
        cfg = settings.exporter
        self._clock = clock
        self._windows = [(w, parse_duration(w)) for w in cfg.windows]
        self._longest = max(s for _, s in self._windows)
        self._buckets = cfg.buckets_per_window
        self._housekeeping_every = min(s for _, s in self._windows) / self._buckets
        self._caps = LabelCaps(cfg)
        self._max_series = cfg.max_series
        self._max_conversations = cfg.max_conversations
        self._forgotten = 0  # conversations forgotten to keep at most max_conversations
        self._forgotten_until = -math.inf  # the latest end time of a forgotten conversation
        self._contributions = Contributions(self._caps, settings.scoring.credits)
        self._entries = UnitEntries(cfg.max_unit_entries, 2 * len(self._windows))
        self.min_kappa, self.min_kappa_labels = settings.judge.min_kappa, settings.judge.min_kappa_labels
        st = settings.stats
        self.stats_params = StatsParams(
            st.prior_alpha, st.prior_beta, st.level, tuple(st.ks), st.bootstrap_resamples, st.seed
        )
        self.regression_params = RegressionParams(
            tuple(cfg.regression_ks),
            settings.gate.regression_margin,
            cfg.regression_min_conversations,
            st.prior_alpha,
            st.prior_beta,
        )
        self.alert_params = AlertParams.from_settings(settings)
        self._longest_name = max(self._windows, key=lambda w: w[1])[0]
        self._lock = threading.Lock()
        self._series: dict[tuple[str, str, str], _Series] = {}
        self._seen: dict[tuple[str, str], _Counted] = {}  # identity -> what it contributed
        self._id_heap: list[tuple[float, tuple[str, str]]] = []
        self._key_pairs: dict[
            SeriesKey, tuple[SeriesKey, SeriesKey]
        ] = {}  # shared by the identities' records
        self._revisions = 0
        self._next_housekeeping = -math.inf
        self._consumed = 0
        self._rejected = dict.fromkeys(REJECT_REASONS, 0)
        self._clamped = 0
        self._ignored = dict.fromkeys(MEASURED_FIELDS, 0)
        self._last_ts: float | None = None

    @property
    def longest_window_s(self) -> float:
        """Width of the longest window in seconds (the replay and de-duplication horizon)."""
        return self._longest

    # ------------------------------------------------------------------ input

    def add(self, score: ConversationScore) -> bool:
        """Count one score; False when it is a duplicate or older than the longest window."""
        with self._lock:
            now = self._clock()
            self._consumed += 1
            t = now if score.ended_at is None else _epoch(score.ended_at)
            if t > now:
                t = now
                self._clamped += 1
            if t < now - self._longest:
                self._rejected["too_old"] += 1
                return False
            self._housekeeping(now)
            identity = (
                sys.intern(kept(score.agent)),
                kept(score.conversation_id),
            )  # one agent str for its ids
            counted = self._seen.get(identity)
            if counted is not None:
                if score.revision <= counted.revision:
                    self._rejected["duplicate"] += 1
                    return False
                self._revise(counted, score, now)
                return True
            if score.revision > 0 and t <= self._forgotten_until:
                # a revision whose original may have been forgotten: counting it would count the conversation
                # twice, and the original cannot be taken back
                self._rejected["forgotten"] += 1
                return False
            caps = self._caps
            agent = caps.agent(score.agent, t)
            version = caps.version(agent, score.version, t)
            task = caps.task(score.task, t)
            key = (agent, version, task)
            keys = self._key_pairs.get(key)
            if keys is None and len(self._key_pairs) >= self._max_series:  # a new series past the cap
                caps.folded["series"] += 1
                agent = version = task = OTHER
                key = (agent, version, task)
                keys = self._key_pairs.get(key)
            if keys is None:
                keys = self._key_pairs[key] = (key, (agent, version, ALL_TASKS))
            unit = None
            if score.instance is not None or score.attempt is not None:
                unit = caps.unit(agent, version, score.task, score.instance, t)
            contribution = self._contributions.of(score, t, unit)
            pair = [
                self._series_of(k, t, counted_here) for k, counted_here in ((keys[0], True), (keys[1], False))
            ]
            if contribution.scored and unit is not None:
                windows = (w for s in pair for w in s.windows)
                if not self._entries.admits(windows, t, unit, now, revision=False):
                    contribution = self._fold_unit(contribution)
            if (contribution.cost_bin is None and score.cost_usd is not None) or (
                contribution.duration_bin is None and score.duration_s is not None
            ):
                for name in ignored_measures(score):
                    self._ignored[name] += 1
            self._seen[identity] = _Counted(t, score.revision, contribution, keys)
            heapq.heappush(self._id_heap, (t, identity))
            if len(self._seen) > self._max_conversations:
                self._forget_oldest()
            observed = None  # what the score adds to the alert counts: the same for both series
            for s in pair:
                for w in s.windows:
                    w.add(t, contribution, now)
                if s.counters is not None:
                    s.counters.count(score, contribution)
                    if s.minutes is None:
                        s.minutes = Minutes(self.alert_params.minutes)
                    if observed is None:
                        observed = observation(contribution, credit_point(score.conversation_id))
                    s.minutes.add(t, observed, 1, now)
            self._last_ts = t if self._last_ts is None else max(self._last_ts, t)
            return True

    def _revise(self, counted: _Counted, score: ConversationScore, now: float) -> None:
        """Replace an identity's contribution by its revision wherever the original is still counted."""
        # the same conversation: the same unit
        new = self._contributions.of(score, counted.t, counted.contribution.unit)
        if new.scored and new.unit is not None:
            pair = [s for k in counted.keys if (s := self._series.get(k)) is not None]
            windows = (w for s in pair for w in s.windows)
            if not self._entries.admits(windows, counted.t, new.unit, now, revision=True):
                new = self._fold_unit(new)  # later revisions keep it a unit of its own
        for k in counted.keys:
            s = self._series.get(k)
            if s is None:
                continue
            for w in s.windows:
                w.replace(counted.t, counted.contribution, new, now)
            if s.minutes is not None and k is counted.keys[0]:
                point = credit_point(score.conversation_id)
                s.minutes.add(counted.t, observation(counted.contribution, point), -1, now)
                s.minutes.add(counted.t, observation(new, point), 1, now)
        counted.contribution = new
        counted.revision = score.revision
        self._revisions += 1

    def _series_of(self, key: SeriesKey, t: float, counted: bool) -> _Series:
        """The series `key` (made when new), first seen at `t` at the latest."""
        s = self._series.get(key)
        if s is None:
            s = self._series[key] = _Series(self._new_windows(), t, counted)
        s.first_seen = min(s.first_seen, t)
        return s

    def _fold_unit(self, contribution: Contribution) -> Contribution:
        """`contribution` as a unit of its own: its unit would add an entry past `max_unit_entries` (counted)."""
        self._caps.units_folded += 1
        return dataclasses.replace(contribution, unit=None)

    def _forget_oldest(self) -> None:
        """Forget the conversation that ended first: a later duplicate or revision of it is no longer known."""
        while self._id_heap:
            t, identity = heapq.heappop(self._id_heap)
            if self._seen.pop(identity, None) is not None:
                self._forgotten += 1
                self._forgotten_until = max(self._forgotten_until, t)
                return

    def reject_invalid(self) -> None:
        """Count one record that could not be read as a score."""
        with self._lock:
            self._consumed += 1
            self._rejected["invalid"] += 1

    def _new_windows(self) -> list[SlidingWindow]:
        return [SlidingWindow(name, s, self._buckets, self._entries) for name, s in self._windows]

    # ------------------------------------------------------------------ expiry

    def _housekeeping(self, now: float, force: bool = False) -> None:
        if not force and now < self._next_housekeeping:
            return
        self._next_housekeeping = now + self._housekeeping_every
        horizon = now - self._longest
        while self._id_heap and self._id_heap[0][0] < horizon:
            _, identity = heapq.heappop(self._id_heap)
            counted = self._seen.get(identity)
            if counted is not None and counted.t < horizon:
                del self._seen[identity]
        self._caps.expire(horizon)
        gone = []
        for key, s in self._series.items():
            for w in s.windows:
                w.advance(now)
            if all(w.empty for w in s.windows):
                gone.append(key)
        for key in gone:
            for w in self._series.pop(key).windows:
                w.release()  # its entries leave with it (empty windows hold none: this keeps the count honest)
            self._key_pairs.pop(key, None)

    # ------------------------------------------------------------------ output

    def snapshot(self, now: float | None = None) -> list[SeriesEstimate]:
        """Estimates of every series and window holding at least one conversation at `now` (default: clock)."""
        with self._lock:
            now = self._clock() if now is None else now
            self._housekeeping(now, force=True)
            out: list[SeriesEstimate | None] = []
            pending: list[tuple[_Series, int, int]] = []
            items = []
            for key, s in self._series.items():
                for i, w in enumerate(s.windows):
                    if w.empty:
                        continue
                    if s.cache_gen[i] == w.generation and s.cache[i] is not None:
                        out.append(s.cache[i])
                    else:
                        pending.append((s, i, len(out)))
                        items.append((key, w.name, w.total))
                        out.append(None)
            for (s, i, pos), est in zip(pending, summarise(items, self.stats_params), strict=True):
                s.cache[i] = est
                s.cache_gen[i] = s.windows[i].generation
                out[pos] = est
            result = [e for e in out if e is not None]
            first_seen = {key: s.first_seen for key, s in self._series.items()}
            inputs = self._alert_inputs(now)
        attach_regressions(result, first_seen, self.regression_params)
        deadline = time.monotonic() + DESIGN_SECONDS_PER_SNAPSHOT
        alerts = self._alerts(inputs, now, lambda: time.monotonic() < deadline)
        for e in result:
            e.alerts = alerts.get(e.series, ()) if e.window == self._longest_name else ()
        return result

    def alerts(self, now: float | None = None) -> dict[SeriesKey, tuple[Alert, ...]]:
        """The quality alert rules of every real series (no `task="*"`) with a reference, at `now` (default:
        clock)."""
        with self._lock:
            now = self._clock() if now is None else now
            self._housekeeping(now, force=True)
            inputs = self._alert_inputs(now)
        return self._alerts(inputs, now)

    def _alert_inputs(self, now: float) -> list[SeriesInput]:
        """What the rules need to choose references and designs: each real series' counts over the longest
        window and the seconds they cover (since it was first seen, at most the longest window)."""
        longest = next(i for i, (name, _s) in enumerate(self._windows) if name == self._longest_name)
        return [
            SeriesInput(
                key,
                s.first_seen,
                reference_counts(s.windows[longest].total),
                min(self._longest, max(60.0, now - s.first_seen)),
            )
            for key, s in self._series.items()
            if s.counters is not None and s.minutes is not None and not s.windows[longest].empty
        ]

    def _alerts(
        self, inputs: list[SeriesInput], now: float, may_design: Callable[[], bool] = lambda: True
    ) -> dict[SeriesKey, tuple[Alert, ...]]:
        """References and designs (outside the lock: a design not yet memoised takes milliseconds, and is made
        only while `may_design()` holds), then each series' statistics from its per-minute counts."""
        out: dict[SeriesKey, tuple[Alert, ...]] = {}
        for key, planned in plan(inputs, self.alert_params, may_design).items():
            with self._lock:
                s = self._series.get(key)
                minutes = s.minutes.ordered(now) if s is not None and s.minutes is not None else None
            if minutes is not None:
                out[key] = alerts_of(planned, minutes)
        return out

    def agreement(self, now: float | None = None) -> list[JudgeAgreement]:
        """Judge–human agreement per judge id and window over the real series (`judge_agreement`)."""
        with self._lock:
            now = self._clock() if now is None else now
            self._housekeeping(now, force=True)
            rows = [
                (w.name, judge, list(row))
                for (_a, _v, task), s in self._series.items()
                if task != ALL_TASKS
                for w in s.windows
                if w.total.judges
                for judge, row in w.total.judges.items()
            ]
        p = self.stats_params
        return agreements(rows, p.level, p.resamples, p.seed)

    def counters(self) -> EstimatorCounters:
        """Health counters and per-series counters since start (read-only copies, reused while unchanged)."""
        with self._lock:
            series = {}
            for key, s in self._series.items():
                if s.counters is None:
                    continue
                if s.counters_copy is None or s.counters_copy.revision != s.counters.revision:
                    s.counters_copy = s.counters.copy()  # shared by later calls while unchanged: read-only
                series[key] = s.counters_copy
            return EstimatorCounters(
                self._consumed,
                dict(self._rejected),
                self._clamped,
                dict(self._caps.folded),
                self._last_ts,
                series,
                self._revisions,
                self._caps.units_folded,
                dict(self._ignored),
                self._forgotten,
            )


def _epoch(dt: datetime) -> float:
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()
