"""What one time bucket of a window holds (`Bucket`), what one conversation adds to it (`Contribution`), and the
bounded sketches they keep.

Each bucket holds exact counts (conversations, scored, passed, outcomes, failure modes, failure evidence codes,
judge and review samples, labels by outcome, over-budget), exact sums of the tool-correctness dimensions, two
bounded sketches: cost and duration in log-spaced bins with ≤ 1% relative error (DDSketch-style, bin i holds
(γ^(i−1), γ^i], γ = 1.01/0.99), and ASR credits rounded to 0.001, and the graded conversations per unit (the
task instance repeated attempts are at) with their ASR credits — n, c, the credited attempts k and the sum s of
their rounded credits packed in one integer, (n·2^32 + c)·2^64 + k·2^32 + s —, with the graded conversations
that have no unit counted apart. A window's running total is a bucket too (`Bucket.window_total`), which also
keeps the histogram of its units' (n, c) pairs, updated as units change, which the estimates over units read.

For the estimates that weigh conversations by their inclusion probability (`agentwatch.stats.inclusion`), a bucket
also counts its graded conversations per P(graded) (n·2^32 + c per probability), keeps the correction sums of
its automatically graded conversations (`agentwatch.stats.corrected.CorrectionSums`, per stratum of probabilities;
absent until the first one), and per judge id the conversations it graded and the confusion of review-sample
labels with its verdicts (absent until the first).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from agentwatch.stats.corrected import CorrectionPoint, CorrectionSums
from agentwatch.wire.schema import EVIDENCE as _SCHEMA_EVIDENCE

OUTCOMES: tuple[str, ...] = (
    "complete",
    "partial_correct",
    "partial_incorrect",
    "hallucinated",
    "abandoned",
    "unscored",
)
UNSCORED = OUTCOMES.index("unscored")
TOOL_DIMENSIONS: tuple[str, ...] = ("selection", "parameters", "sequence", "utilization", "overall", "binary")
EVIDENCE: tuple[str, ...] = _SCHEMA_EVIDENCE  # failure evidence codes, counted over all conversations
SAMPLES: tuple[str, ...] = ("judge", "review")

SKETCH_RELATIVE_ACCURACY = 0.01
_GAMMA = (1 + SKETCH_RELATIVE_ACCURACY) / (1 - SKETCH_RELATIVE_ACCURACY)
_LOG_GAMMA = math.log(_GAMMA)
_ZERO_BIN = -(10**9)  # values <= 1e-12 (zero cost) share one bin, read back as 0
_MIN_POSITIVE = 1e-12
ASR_RESOLUTION = 1000  # ASR credits kept as round(credit * 1000)
ONE_ATTEMPT = 1 << 32  # a unit's graded attempts n and passes c are kept as n * ONE_ATTEMPT + c
# A unit's counts in one int: (n * ONE_ATTEMPT + c) * UNIT_CREDITS + k * ONE_ATTEMPT + s, with k its credited
# attempts and s the sum of their ASR bins: one dict entry per unit, since units are what the exporter's memory grows with
UNIT_CREDITS = 1 << 64
Unit = tuple[str, str | None]  # (task, instance): what repeated attempts are attempts at
CLASSES = len(OUTCOMES) - 1  # outcome classes of a verdict or a label (not unscored)
# A judge's row of counts: the confusion (label * CLASSES + verdict), then the conversations it graded.
JUDGED = CLASSES * CLASSES


def sketch_bin(x: float) -> int:
    """Log-spaced bin of a non-negative value (relative accuracy 1%)."""
    if x <= _MIN_POSITIVE:
        return _ZERO_BIN
    return math.ceil(math.log(x) / _LOG_GAMMA)


def sketch_value(b: int) -> float:
    """Representative value of a bin: within 1% of every value the bin holds."""
    if b == _ZERO_BIN:
        return 0.0
    return 2.0 * _GAMMA**b / (_GAMMA + 1.0)


def sketch_quantile(bins: dict[int, int], q: float) -> float | None:
    """Nearest-rank q-quantile of the values a sketch holds (value of the ceil(q·n)-th smallest); None if empty."""
    total = sum(bins.values())
    if total <= 0:
        return None
    rank = max(1, math.ceil(q * total))
    seen = 0
    for b in sorted(bins):
        seen += bins[b]
        if seen >= rank:
            return sketch_value(b)
    return sketch_value(max(bins))  # pragma: no cover - unreachable when counts are consistent


@dataclass(slots=True, frozen=True)
class Contribution:
    """What one conversation adds to a bucket, extracted once from its score."""

    scored: bool
    passed: bool
    outcome: int  # index into OUTCOMES
    modes: tuple[str, ...]
    tool_sums: tuple[float, ...]  # per TOOL_DIMENSIONS, summed over tool-graded turns
    tool_counts: tuple[int, ...]
    cost_bin: int | None
    duration_bin: int | None
    budgeted: bool  # has both a cost and a ceiling
    over_budget: bool
    asr_bin: int | None  # round(credit * ASR_RESOLUTION)
    asr_credit: float | None
    evidence: tuple[int, ...] = ()  # indices into EVIDENCE
    judge_sampled: bool = False
    review_sampled: bool = False
    label: int | None = None  # index into OUTCOMES of a person's/feedback label
    unit: Unit | None = None  # the unit of a graded conversation; None: a unit of its own
    graded_p: float = 1.0  # P(graded) of a graded conversation (`inclusion.graded_probability`)
    correction: CorrectionPoint | None = None  # a conversation with an automated verdict
    judge: str | None = None  # the judge that graded it (label value)
    agreement: int | None = None  # review-sample label * CLASSES + the judge's verdict, when both exist


def _bump(target: dict, key: object, sign: int) -> None:
    v = target.get(key, 0) + sign
    if v:
        target[key] = v
    else:
        target.pop(key, None)


def _add_counts(target: dict, source: dict, sign: int) -> None:
    for key, n in source.items():
        v = target.get(key, 0) + sign * n
        if v:
            target[key] = v
        else:
            target.pop(key, None)


@dataclass(slots=True)
class Bucket:
    """Exact counts and bounded sketches of the conversations in one time bucket (or a whole window)."""

    total: int = 0
    scored: int = 0
    passed: int = 0
    outcomes: list[int] = field(default_factory=lambda: [0] * len(OUTCOMES))
    modes: dict[str, int] = field(default_factory=dict)
    tool_sums: list[float] = field(default_factory=lambda: [0.0] * len(TOOL_DIMENSIONS))
    tool_counts: list[int] = field(default_factory=lambda: [0] * len(TOOL_DIMENSIONS))
    cost: dict[int, int] = field(default_factory=dict)
    duration: dict[int, int] = field(default_factory=dict)
    budgeted: int = 0
    over_budget: int = 0
    asr: dict[int, int] = field(default_factory=dict)
    asr_sum: float = 0.0
    evidence: list[int] = field(default_factory=lambda: [0] * len(EVIDENCE))
    judge_sampled: int = 0
    review_sampled: int = 0
    labels: list[int] = field(default_factory=lambda: [0] * len(OUTCOMES))
    units: dict[Unit, int] = field(
        default_factory=dict
    )  # unit -> its counts, packed (UNIT_CREDITS; graded only)
    unit_asr: dict[int, int] = field(default_factory=dict)  # ASR bin -> credited conversations with a unit
    unit_attempts: int = 0  # graded conversations with a unit (the others, `alone`, are units of their own)
    unit_passes: int = 0
    pairs: dict[int, int] | None = None  # a window total's histogram: n * ONE_ATTEMPT + c -> units
    graded_p: dict[float, int] = field(default_factory=dict)  # P(graded) -> n * ONE_ATTEMPT + c
    corrections: CorrectionSums | None = None
    judges: dict[str, list[int]] | None = None  # judge -> confusion cells, then conversations it graded

    @classmethod
    def window_total(cls) -> Bucket:
        """An empty running total of a window (it keeps the units' histogram)."""
        return cls(pairs={})

    @property
    def alone(self) -> int:
        """Graded conversations without a unit."""
        return self.scored - self.unit_attempts

    @property
    def alone_passed(self) -> int:
        """Passed conversations without a unit."""
        return self.passed - self.unit_passes

    def _unit(self, unit: Unit, packed: int, sign: int) -> None:
        """Add a unit's packed counts (sign=-1: take them back) to its counts, and to the histogram."""
        pair = packed // UNIT_CREDITS
        self.unit_attempts += sign * (pair // ONE_ATTEMPT)
        self.unit_passes += sign * (pair % ONE_ATTEMPT)
        old = self.units.get(unit, 0)
        new = old + sign * packed
        if new:
            self.units[unit] = new
        else:
            self.units.pop(unit, None)
        if self.pairs is not None:
            if old:
                _bump(self.pairs, old // UNIT_CREDITS, -1)
            if new:
                _bump(self.pairs, new // UNIT_CREDITS, 1)

    def add(self, c: Contribution, sign: int = 1) -> None:
        """Count one conversation (sign=1), or take back one counted before (sign=-1)."""
        # _bump inlined for the sketches every conversation touches: this runs for every window of two series
        self.total += sign
        scored = c.scored
        if scored:
            self.scored += sign
        if c.passed:
            self.passed += sign
        self.outcomes[c.outcome] += sign
        for m in c.modes:
            _bump(self.modes, m, sign)
        if c.tool_counts:
            for i, (s, n) in enumerate(zip(c.tool_sums, c.tool_counts, strict=True)):
                self.tool_sums[i] += sign * s
                self.tool_counts[i] += sign * n
        if c.cost_bin is not None:
            _bump(self.cost, c.cost_bin, sign)
        if c.duration_bin is not None:
            _bump(self.duration, c.duration_bin, sign)
        if c.budgeted:
            self.budgeted += sign
        if c.over_budget:
            self.over_budget += sign
        if c.asr_bin is not None and c.asr_credit is not None:
            _bump(self.asr, c.asr_bin, sign)
            self.asr_sum += sign * c.asr_credit
        for i in c.evidence:
            self.evidence[i] += sign
        if c.judge_sampled:
            self.judge_sampled += sign
        if c.review_sampled:
            self.review_sampled += sign
        if c.label is not None:
            self.labels[c.label] += sign
        if scored:
            unit = c.unit
            if unit is not None:
                packed = (ONE_ATTEMPT + c.passed) * UNIT_CREDITS
                if c.asr_bin is not None and c.asr_credit is not None:
                    packed += ONE_ATTEMPT + c.asr_bin
                    _bump(self.unit_asr, c.asr_bin, sign)
                self._unit(unit, packed, sign)
            _bump(self.graded_p, c.graded_p, sign * (ONE_ATTEMPT + c.passed))
        if c.correction is not None:
            if self.corrections is None:
                self.corrections = CorrectionSums()
            self.corrections.add(c.correction, sign)
        judge = c.judge
        if judge is not None:  # the conversations the judge graded, and its label-verdict cell when labelled
            judges = self.judges
            if judges is None:
                judges = self.judges = {}
            row = judges.get(judge)
            if row is None:
                row = judges[judge] = [0] * (JUDGED + 1)
            row[JUDGED] += sign
            if c.agreement is not None:
                row[c.agreement] += sign
            if not row[JUDGED]:
                del judges[judge]

    def merge(self, other: Bucket, sign: int = 1) -> None:
        """Add (sign=1) or remove (sign=-1) everything `other` holds."""
        self.total += sign * other.total
        self.scored += sign * other.scored
        self.passed += sign * other.passed
        for i, n in enumerate(other.outcomes):
            self.outcomes[i] += sign * n
        _add_counts(self.modes, other.modes, sign)
        for i in range(len(TOOL_DIMENSIONS)):
            self.tool_sums[i] += sign * other.tool_sums[i]
            self.tool_counts[i] += sign * other.tool_counts[i]
        _add_counts(self.cost, other.cost, sign)
        _add_counts(self.duration, other.duration, sign)
        self.budgeted += sign * other.budgeted
        self.over_budget += sign * other.over_budget
        _add_counts(self.asr, other.asr, sign)
        self.asr_sum += sign * other.asr_sum
        for i, n in enumerate(other.evidence):
            self.evidence[i] += sign * n
        self.judge_sampled += sign * other.judge_sampled
        self.review_sampled += sign * other.review_sampled
        for i, n in enumerate(other.labels):
            self.labels[i] += sign * n
        for unit, packed in other.units.items():
            self._unit(unit, packed, sign)
        _add_counts(self.unit_asr, other.unit_asr, sign)
        _add_counts(self.graded_p, other.graded_p, sign)
        if other.corrections:
            if self.corrections is None:
                self.corrections = CorrectionSums()
            self.corrections.merge(other.corrections, sign)
        for judge, theirs in (other.judges or {}).items():
            if self.judges is None:
                self.judges = {}
            row = self.judges.setdefault(judge, [0] * (JUDGED + 1))
            for i, x in enumerate(theirs):
                row[i] += sign * x
            if not row[JUDGED]:
                del self.judges[judge]

    def graded_by_probability(self) -> dict[float, tuple[int, int]]:
        """{P(graded): (graded, passed)}."""
        return {p: (packed // ONE_ATTEMPT, packed % ONE_ATTEMPT) for p, packed in self.graded_p.items()}

    def unit_histogram(self) -> dict[tuple[int, int], int]:
        """{(n, c): units} of this window total; a conversation without a unit counts as a unit of its own."""
        assert self.pairs is not None, "only a window total keeps the histogram"
        out = {(packed // ONE_ATTEMPT, packed % ONE_ATTEMPT): m for packed, m in self.pairs.items()}
        for passed, m in ((1, self.alone_passed), (0, self.alone - self.alone_passed)):
            if m:
                out[(1, passed)] = out.get((1, passed), 0) + m
        return out

    def unit_credit_means(self) -> tuple[dict[float, int], float] | None:
        """{a unit's mean ASR credit: units}, a credited conversation without a unit counting as a unit of its
        own (credits at the sketch's 0.001), and the mean over those units of 1/(their credited attempts); None
        when no unit has two credited conversations."""
        credits = [packed % UNIT_CREDITS for packed in self.units.values()]
        if not any(credit >= 2 * ONE_ATTEMPT for credit in credits):
            return None
        out: dict[float, int] = {}
        by_attempts: dict[int, int] = {}  # credited attempts -> units (summed once each: order-independent)
        for credit in credits:
            attempts, bins = divmod(credit, ONE_ATTEMPT)
            if attempts:
                mean = bins / (attempts * ASR_RESOLUTION)
                out[mean] = out.get(mean, 0) + 1
                by_attempts[attempts] = by_attempts.get(attempts, 0) + 1
        for b, n in self.asr.items():
            alone = n - self.unit_asr.get(b, 0)
            if alone:
                mean = b / ASR_RESOLUTION
                out[mean] = out.get(mean, 0) + alone
                by_attempts[1] = by_attempts.get(1, 0) + alone
        inverse = math.fsum(m / a for a, m in by_attempts.items()) / sum(by_attempts.values())
        return out, inverse

    @property
    def repeated(self) -> bool:
        """Whether some unit of this window total has two or more graded attempts."""
        assert self.pairs is not None, "only a window total keeps the histogram"
        return any(packed >= 2 * ONE_ATTEMPT for packed in self.pairs)
