"""Label values of the exporter's series: sanitised without merging names, and bounded by caps that fold the
values beyond them into `other` (first come, first kept among those seen in the longest window; counted)."""

from __future__ import annotations

import hashlib
import re
import sys

from agentwatch.config import ExporterConfig
from agentwatch.exporters.buckets import Unit
from agentwatch.wire.contract import INFORMATIONAL_REASONS
from agentwatch.wire.kept import KEPT_LENGTH, kept

ALL_TASKS = "*"
OTHER = "other"
FOLDED_LABELS: tuple[str, ...] = ("agent", "version", "task", "mode", "judge", "series", "rates")
RESERVED = frozenset({OTHER, ALL_TASKS})

_UNSAFE = re.compile(r"[^A-Za-z0-9_.:/@+\-]")
_MODE_UNSAFE = re.compile(r"[^a-z0-9_]")
_HASH_HEX = 8
_SUFFIXED = re.compile(rf"_[0-9a-f]{{{_HASH_HEX}}}\Z")


def sanitize_label(value: object, max_length: int = 64) -> str:
    """A label value that never silently merges two distinct names.

    A value made only of [A-Za-z0-9_.:/@+-], at most `max_length` long, is kept as it is. Any other value
    (non-ASCII or illegal characters, too long, the reserved `other`, or one that already ends like a hash
    suffix) has its illegal characters replaced by `_`, is cut to leave room, and gets `_` + 8 hex digits of
    the SHA-256 of the original appended: `café` → `caf__<hash>` and `cafè` → `caf__<other hash>`. The
    empty value reads `unknown` (the schema's default). Stable across processes and restarts.
    """
    text = str(value)
    if not text:
        return "unknown"
    clean = _UNSAFE.sub("_", text)
    if clean == text and len(text) <= max_length and text not in RESERVED and not _SUFFIXED.search(text):
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_HEX]
    return f"{clean[: max(0, max_length - _HASH_HEX - 1)]}_{digest}"


def failure_mode(reason: str, max_length: int = 64) -> str:
    """The code of a reason such as `loop: search called 3 times` → `loop` (lower-case, [a-z0-9_])."""
    head = reason.split(":", 1)[0].strip().lower()
    head = head.split()[0] if head.split() else ""
    return _MODE_UNSAFE.sub("_", head.replace("-", "_"))[:max_length] or "unknown"


class LabelCaps:
    """The label values and units the estimator has seen in its longest window, each with its latest event
    time, and the caps of `ExporterConfig` applied to new ones (not thread-safe: the estimator's lock guards
    it)."""

    def __init__(self, cfg: ExporterConfig) -> None:
        self._max_label = cfg.max_label_length
        self._known_tasks = {sanitize_label(t, cfg.max_label_length) for t in cfg.tasks}
        self._max_tasks = cfg.max_tasks
        self._max_agents = cfg.max_agents
        self._max_versions = cfg.max_versions_per_agent
        self._max_modes = cfg.max_failure_modes
        self._max_judges = cfg.max_judges
        self._max_rates = cfg.max_sample_rates
        self._max_units = cfg.max_units
        self._max_units_total = cfg.max_units_total
        self._units_total = 0  # units in units_seen, over every agent version
        self._tasks_seen: dict[str, float] = {}  # task -> latest event time (for the cap when no list)
        self._agents_seen: dict[str, float] = {}  # agent -> latest event time
        self._versions_seen: dict[str, dict[str, float]] = {}  # agent -> version -> latest event time
        self._modes_seen: dict[str, float] = {}
        self._judges_seen: dict[str, float] = {}
        self._rates_seen: dict[tuple[float | None, float | None], float] = {}  # (judge, review rate) -> time
        self.units_seen: dict[tuple[str, str], dict[Unit, float]] = {}  # agent version -> unit -> last time
        self.units_folded = 0
        self.folded = dict.fromkeys(FOLDED_LABELS, 0)
        self._labels: dict[str, str] = {}  # sanitize_label of the agents, versions and tasks seen (bounded)
        self._judge_labels: dict[str, str] = {}

    def _fold(self, label: str, value: str, seen: dict[str, float], cap: int, t: float) -> str:
        """`value`, or `other` once `cap` other values are in `seen` (first come, first kept); counted."""
        last = seen.get(value)
        if last is None and len(seen) >= cap:
            self.folded[label] += 1
            return OTHER
        seen[value] = t if last is None else max(t, last)
        return value

    def agent(self, agent: str, t: float) -> str:
        """The agent's label value at event time `t`."""
        return self._fold("agent", self.label(agent), self._agents_seen, self._max_agents, t)

    def version(self, agent: str, version: str, t: float) -> str:
        """The version's label value under the (folded) agent at event time `t`."""
        seen = self._versions_seen.setdefault(agent, {})
        return self._fold("version", self.label(version), seen, self._max_versions, t)

    def task(self, task: str, t: float) -> str:
        """The task's label value at event time `t` (a configured list of tasks, or the cap)."""
        task = self.label(task)
        if self._known_tasks:
            if task not in self._known_tasks:
                self.folded["task"] += 1
                task = OTHER
            self._tasks_seen[task] = max(t, self._tasks_seen.get(task, t))
            return task
        return self._fold("task", task, self._tasks_seen, self._max_tasks, t)

    def modes(self, reasons: list[str], t: float) -> tuple[str, ...]:
        """The failure modes of a score's reasons (informational reasons left out), sorted; interned, so that the
        conversations remembered with them (`exporter.max_conversations`) share one string per mode, not a copy
        each of up to `max_failure_modes` codes of `max_label_length` characters."""
        codes = {sys.intern(failure_mode(r, self._max_label)) for r in reasons} - INFORMATIONAL_REASONS
        return tuple(
            sorted({self._fold("mode", code, self._modes_seen, self._max_modes, t) for code in codes})
        )

    def unit(self, agent: str, version: str, task: str, instance: str | None, t: float) -> Unit | None:
        """The unit (task, instance) of a score naming an instance or an attempt; None (a unit of its own) when
        the agent version's bound or the bound over every agent version is reached (counted)."""
        # interned: one string per task and instance, not a copy in every bucket its unit is attempted in (each
        # score brings its own, up to KEPT_LENGTH characters)
        unit = (sys.intern(kept(task)), None if instance is None else sys.intern(kept(instance)))
        seen = self.units_seen.setdefault((agent, version), {})
        last = seen.get(unit)
        if last is None:
            if len(seen) >= self._max_units or self._units_total >= self._max_units_total:
                self.units_folded += 1
                return None
            self._units_total += 1
        seen[unit] = t if last is None else max(t, last)
        return unit

    def label(self, value: str) -> str:
        """`sanitize_label(value)`, remembered for the few distinct names scores carry (up to KEPT_LENGTH long)."""
        label = self._labels.get(value)
        if label is None:
            label = sanitize_label(value, self._max_label)
            if len(self._labels) < 65_536 and len(value) <= KEPT_LENGTH:
                self._labels[value] = label
        return label

    def judge(self, judge: str, t: float) -> str:
        """A judge id as a label value at event time `t` (interned: one string per judge), or `other` past the
        cap: each judge is a label value of the agreement gauges and a row in every bucket it graded in."""
        found = self._judge_labels.get(judge)
        if found is None:
            found = sys.intern(sanitize_label(judge, self._max_label))
            if len(self._judge_labels) < 10_000 and len(judge) <= KEPT_LENGTH:
                self._judge_labels[judge] = found
        return self._fold("judge", found, self._judges_seen, self._max_judges, t)

    def rates(self, judge_rate: float | None, review_rate: float | None, t: float) -> bool:
        """Whether a score's recorded (judge rate, review rate) are taken as they are at event time `t`: each
        distinct pair makes strata of the weighted estimates (`Bucket.graded_p`, `CorrectionSums`) in every bucket
        it has conversations in, so past `max_sample_rates` pairs in the longest window the score weighs as one
        that records no rate (counted: `rates`). Rates a collector records are few (configured, or on the
        adaptive grid of `scorers.target_rate`); a producer writing a new one with every score made each hold
        7.2 KB in the windows for as long as they held it."""
        key = (judge_rate, review_rate)
        last = self._rates_seen.get(key)
        if last is None and len(self._rates_seen) >= self._max_rates:
            self.folded["rates"] += 1
            return False
        self._rates_seen[key] = t if last is None else max(t, last)
        return True

    def expire(self, horizon: float) -> None:
        """Forget the values and units last seen before `horizon`."""
        for seen in (
            self._tasks_seen,
            self._modes_seen,
            self._judges_seen,
            self._agents_seen,
            *self._versions_seen.values(),
        ):
            for name in [n for n, last in seen.items() if last < horizon]:
                del seen[name]
        for pair in [p for p, last in self._rates_seen.items() if last < horizon]:
            del self._rates_seen[pair]
        for agent in [a for a, versions in self._versions_seen.items() if not versions]:
            del self._versions_seen[agent]
        for agent_version, units in list(self.units_seen.items()):
            for unit in [u for u, last in units.items() if last < horizon]:
                del units[unit]
                self._units_total -= 1
            if not units:
                del self.units_seen[agent_version]
