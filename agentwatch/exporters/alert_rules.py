"""The quality alert rules: what each one counts, against which reference, and each series' share of the budget.

Every rule is the Bernoulli CUSUM of `agentwatch.stats.cusum` on one kind of bad observation in one
population of a series' conversations:

| rule | population (observations) | bad observation | tuned for |
|---|---|---|---|
| pass | graded conversations | failed | pass^k lower by `alerts.pass_pow_drop` |
| asr | graded conversations with an ASR credit | credit not earned (binarised below) | ASR lower by `alerts.asr_drop` |
| abandoned | graded conversations | outcome `abandoned` | odds × `rate_ratio` |
| error, no_answer, loop, hallucination, over_budget | all conversations | that failure evidence | odds × `rate_ratio` |

Success-type rules (pass, asr, abandoned) read the graded sample, failure evidence is over all conversations
(docs/scoring.md, "two populations"). An ASR credit x in [0, 1] is binarised by a fixed point u of the
conversation (SHA-256 of a salted id, uniform on [0, 1), independent of the sampling points): earned when
u < x. The binarised stream has mean exactly the ASR and is a Bernoulli sequence, so the CUSUM's ARL stays
exact; the reference's posterior uses the credits themselves, Beta(α + Σx, β + n − Σx), which is at least as
wide as the credits' own uncertainty (their variance is at most μ(1 − μ)).

Reference of a series and rule: among the other versions of the same agent and task first seen before it, the
most recently started one with at least `exporter.regression_min_conversations` observations in the rule's
population over the longest window (the regression gauge's baseline rule); that baseline when it holds at
least `alerts.min_reference` of them, else the series itself (its own trailing history) when it does; else the
rule is not evaluated for the series (no gauge).

Budget: the M (series, rule) pairs with a reference share `alerts.false_pages_per_month` (divided by
`alerts.exporter_instances`) equally: each may page falsely B / M times a month. With the series' traffic in
the rule's population (observations over the longest window, or since the series was first seen when that is
shorter, per 30-day month), `cusum.design` gives the threshold whose expected false pages a month, averaged over
the reference's posterior, are at most that share.

Per-minute counts: each real series keeps, for each minute of `alerts.window`, its observations and bad
observations of every rule (`Minutes`, a ring of 16-bit counts widened to 32 bits if a minute ever holds
more); the statistic of every rule is computed from them at each snapshot (`cusum.statistic`), a pure function
of the latest revision of each conversation per minute: arrival and replay order do not matter.
"""

from __future__ import annotations

import hashlib
import math
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from agentwatch.config import Settings, parse_duration
from agentwatch.exporters.buckets import EVIDENCE, OUTCOMES, Bucket, Contribution
from agentwatch.stats.cusum import Design, cached_design, design, on_grid, statistic

MONTH_S = 30 * 86_400.0
SeriesKey = tuple[str, str, str]

# Per-minute channels: observation counts of the populations and of the bad observations.
CHANNELS: tuple[str, ...] = (
    "all",
    "graded",
    "failed",
    "credited",
    "credit_missed",
    "abandoned",
    "error",
    "no_answer",
    "loop",
    "hallucination",
    "over_budget",
)
_CH = {name: i for i, name in enumerate(CHANNELS)}
_EVIDENCE_CHANNELS = tuple((EVIDENCE.index(code), _CH[code]) for code in CHANNELS if code in EVIDENCE)
_ABANDONED = OUTCOMES.index("abandoned")


@dataclass(slots=True, frozen=True)
class Rule:
    """A rule: the channel of its observations and of its bad observations."""

    name: str
    population: int
    event: int
    success: bool  # the gauge of the reference shows 1 - q0 (a success rate or ASR), not q0


RULES: dict[str, Rule] = {
    "pass": Rule("pass", _CH["graded"], _CH["failed"], True),
    "asr": Rule("asr", _CH["credited"], _CH["credit_missed"], True),
    "abandoned": Rule("abandoned", _CH["graded"], _CH["abandoned"], False),
    **{
        code: Rule(code, _CH["all"], _CH[code], False)
        for code in ("error", "no_answer", "loop", "hallucination", "over_budget")
    },
}


@dataclass(slots=True, frozen=True)
class PassDrop:
    """pass: the failure probability whose pass^k is `drop` lower (at least a quarter of pass^k is left)."""

    k: int
    drop: float

    def __call__(self, q0: float) -> float:
        """q1 for in-control failure probability q0."""
        p0k = (1.0 - q0) ** self.k
        return 1.0 - float(max(p0k - self.drop, p0k / 4.0) ** (1.0 / self.k))


@dataclass(slots=True, frozen=True)
class MeanDrop:
    """asr: the missed-credit probability of an ASR `drop` lower (at least a quarter of the ASR is left)."""

    drop: float

    def __call__(self, q0: float) -> float:
        """q1 for in-control missed-credit probability q0."""
        mu = 1.0 - q0
        return 1.0 - max(mu - self.drop, mu / 4.0)


@dataclass(slots=True, frozen=True)
class OddsRatio:
    """Rate rules: the odds of the bad observation times `ratio` (about the rate times `ratio` while it is
    small), and at least `floor` above the reference."""

    ratio: float
    floor: float

    def __call__(self, q0: float) -> float:
        """q1 for in-control rate q0."""
        return max(self.ratio * q0 / (1.0 - q0 + self.ratio * q0), q0 + self.floor)


Alternative = PassDrop | MeanDrop | OddsRatio


@dataclass(slots=True, frozen=True)
class AlertParams:
    """The settings the rules need."""

    rules: tuple[str, ...]
    alternatives: tuple[Alternative, ...]  # per rule of `rules`
    pages_per_month: float  # of this exporter instance (the fleet budget / instances)
    window_s: float
    min_reference: int
    baseline_min: int  # observations a baseline version needs (the regression gauge's minimum)
    prior_alpha: float
    prior_beta: float

    @classmethod
    def from_settings(cls, settings: Settings) -> AlertParams:
        """From `alerts`, `exporter.regression_min_conversations` and the stats prior."""
        a = settings.alerts
        alts: list[Alternative] = []
        for name in a.rules:
            if name == "pass":
                alts.append(PassDrop(a.pass_k, a.pass_pow_drop))
            elif name == "asr":
                alts.append(MeanDrop(a.asr_drop))
            else:
                alts.append(OddsRatio(a.rate_ratios.get(name, a.rate_ratio), a.rate_min_increase))
        return cls(
            tuple(a.rules),
            tuple(alts),
            a.false_pages_per_month / a.exporter_instances,
            parse_duration(a.window),
            a.min_reference,
            settings.exporter.regression_min_conversations,
            settings.stats.prior_alpha,
            settings.stats.prior_beta,
        )

    @property
    def minutes(self) -> int:
        """Minutes the per-minute counts keep."""
        return max(1, math.ceil(self.window_s / 60))


@dataclass(slots=True, frozen=True)
class Alert:
    """One rule's test of one series at one instant."""

    rule: str
    statistic: float  # S in nats
    threshold: float  # h in nats
    alarm: bool  # S reached h and has not returned to 0 since
    reference: float  # the reference's rate: success rate (pass), ASR (asr), the bad rate (other rules)
    reference_version: str  # the version whose counts gave the reference (a baseline, or the series itself)
    design: Design


def credit_point(conversation_id: str) -> float:
    """The conversation's fixed point in [0, 1) for binarising its ASR credit (independent of sampling)."""
    digest = hashlib.sha256(b"agentwatch.asr\x00" + conversation_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def observation(c: Contribution, point: float) -> np.ndarray:
    """What one conversation adds to each channel (0 or 1), `point` its `credit_point` (read-only: conversations
    with the same channels share one vector)."""
    scored = c.scored
    credited = scored and c.asr_credit is not None
    key = (
        scored,
        scored and not c.passed,
        credited,
        credited and point >= c.asr_credit,  # type: ignore[operator]
        scored and c.outcome == _ABANDONED,
        c.evidence,
    )
    v = _OBSERVATIONS.get(key)
    if v is None:
        v = np.zeros(len(CHANNELS), dtype=np.uint16)
        v[0] = 1
        v[1], v[2], v[3], v[4], v[5] = key[:5]
        for evidence, channel in _EVIDENCE_CHANNELS:
            if evidence in c.evidence:
                v[channel] = 1
        v.flags.writeable = False
        if len(_OBSERVATIONS) < 4096:  # distinct evidence sets are few; bounded all the same
            _OBSERVATIONS[key] = v
    return v


_OBSERVATIONS: dict[tuple[bool, bool, bool, bool, bool, tuple[int, ...]], np.ndarray] = {}
_WIDEST_SMALL = int(np.iinfo(np.uint16).max)


def reference_counts(total: Bucket) -> np.ndarray:
    """(observations, bad observations) of every rule of RULES, in its order, over a window total: the credits'
    shortfall for asr (fractional)."""
    credited = float(sum(total.asr.values()))
    out = {
        "pass": (total.scored, total.scored - total.passed),
        "asr": (credited, max(0.0, credited - total.asr_sum)),
        "abandoned": (total.scored, min(total.scored, total.outcomes[_ABANDONED])),
    }
    for code in ("error", "no_answer", "loop", "hallucination", "over_budget"):
        out[code] = (total.total, total.evidence[EVIDENCE.index(code)])
    return np.array([out[name] for name in RULES], dtype=np.float64)


_RULE_INDEX = {name: i for i, name in enumerate(RULES)}


class Minutes:
    """Counts per channel for each minute of event time over the last `minutes` minutes (a ring)."""

    __slots__ = ("added", "counts", "minute", "minutes")

    def __init__(self, minutes: int) -> None:
        self.minutes = minutes
        self.minute = np.full(
            minutes, -1, dtype=np.int32
        )  # minutes since 1970: int32 lasts until the year 6053
        self.counts = np.zeros((minutes, len(CHANNELS)), dtype=np.uint16)
        # observations added to each slot's minute: a bound on every channel's count there (each adds 0 or 1),
        # so the narrow counts are widened before they could wrap without reading them (an array, not a list:
        # the garbage collector need not walk a series' 1,440 slots)
        self.added = array("q", bytes(8 * minutes))

    def add(self, t: float, v: np.ndarray, sign: int, now: float) -> None:
        """Add (sign 1) or take back (sign -1) one observation vector at event time t (ignored once t's minute
        left the window, or when a newer minute holds its slot)."""
        m, now_m = int(t // 60), int(now // 60)
        if m <= now_m - self.minutes:
            return
        i = m % self.minutes
        if self.minute[i] != m:
            if self.minute[i] > m or sign < 0:  # a newer minute holds the slot, or nothing to take back
                return
            self.minute[i] = m
            self.counts[i] = 0
            self.added[i] = 0
        if sign > 0:
            counts = self.counts
            added = self.added[i] = self.added[i] + 1
            if added > _WIDEST_SMALL and counts.dtype == np.uint16:
                counts = self.counts = counts.astype(np.int32)  # a minute with more than 65,535: wider counts
            counts[i] += v if v.dtype == counts.dtype else v.astype(counts.dtype)
        else:
            self.counts[i] = np.maximum(self.counts[i].astype(np.int64) - v, 0).astype(self.counts.dtype)

    def ordered(self, now: float) -> np.ndarray:
        """Counts per minute (minutes × channels, int64), oldest first, of the window ending at `now`."""
        now_m = int(now // 60)
        ms = np.arange(now_m - self.minutes + 1, now_m + 1)
        idx = ms % self.minutes
        valid = self.minute[idx] == ms
        return np.where(valid[:, None], self.counts[idx].astype(np.int64), 0)


@dataclass(slots=True)
class SeriesInput:
    """What the rules read of one real series to choose references and designs."""

    key: SeriesKey
    first_seen: float
    counts: np.ndarray  # reference_counts of its longest window (rules of RULES × (n, bad))
    covered_s: float  # seconds of traffic the counts cover


@dataclass(slots=True, frozen=True)
class Planned:
    """A rule of a series with its reference and design."""

    rule: Rule
    design: Design
    reference_version: str


def plan(
    series: Iterable[SeriesInput], p: AlertParams, may_design: Callable[[], bool] = lambda: True
) -> dict[SeriesKey, list[Planned]]:
    """The reference and design of every (series, rule) with a reference; they share the budget equally.

    A design not memoised yet is made only while `may_design()` holds (a snapshot's time budget: a new design
    takes milliseconds); a pair left without one is left out of this plan, still counted in the shares.
    """
    groups: dict[tuple[str, str], list[SeriesInput]] = {}
    for s in series:
        groups.setdefault((s.key[0], s.key[2]), []).append(s)
    chosen: list[tuple[SeriesInput, int, SeriesInput]] = []  # (series, index in p.rules, reference series)
    for members in groups.values():
        members.sort(key=lambda s: (s.first_seen, s.key[1]))
        for i, s in enumerate(members):
            for j, name in enumerate(p.rules):
                r = _RULE_INDEX[name]
                base = next((m for m in reversed(members[:i]) if m.counts[r, 0] >= p.baseline_min), None)
                if base is not None and base.counts[r, 0] >= p.min_reference:
                    chosen.append((s, j, base))
                elif s.counts[r, 0] >= p.min_reference:
                    chosen.append((s, j, s))
    out: dict[SeriesKey, list[Planned]] = {}
    if not chosen:
        return out
    share = p.pages_per_month / len(chosen)
    for s, j, ref in chosen:
        rule = RULES[p.rules[j]]
        r = _RULE_INDEX[rule.name]
        n, bad = ref.counts[r]
        a, b = p.prior_alpha + bad, p.prior_beta + n - bad
        observations = s.counts[r, 0] / s.covered_s * MONTH_S
        key = (*on_grid(a / (a + b), a + b, observations, share), p.alternatives[j])
        d = cached_design(*key)
        if d is None:
            if not may_design():
                continue
            d = design(*key)
        out.setdefault(s.key, []).append(Planned(rule, d, ref.key[1]))
    return out


def alerts_of(planned: list[Planned], minutes: np.ndarray) -> tuple[Alert, ...]:
    """The alerts of one series from its plan and its per-minute counts (`Minutes.ordered`)."""
    ds = [x.design for x in planned]
    stat, alarm = statistic(
        minutes[:, [x.rule.population for x in planned]],
        minutes[:, [x.rule.event for x in planned]],
        np.array([d.up for d in ds]),
        np.array([d.down for d in ds]),
        np.array([d.h for d in ds]),
    )
    return tuple(
        Alert(
            x.rule.name,
            int(stat[i]) / x.design.scale,
            x.design.threshold,
            bool(alarm[i]),
            1.0 - x.design.q0 if x.rule.success else x.design.q0,
            x.reference_version,
            x.design,
        )
        for i, x in enumerate(planned)
    )
