"""Agreement of the judge with human labels: Cohen's kappa with a bootstrap interval, the confusion matrix over
the outcome classes, per-class precision and recall, and self-consistency (the same conversations judged twice).

Pure: lists of outcome labels in, numbers out. Conversations the judge failed on are left out of the agreement
(and counted): a failure is not a disagreement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentwatch.judge.verdict import JUDGE_OUTCOMES
from agentwatch.stats import agreement

CLASSES: tuple[str, ...] = tuple(o.value for o in JUDGE_OUTCOMES)
# A judge that graded fewer than this share of the labelled conversations (down, out of budget) is not
# calibrated: kappa on the few it graded would pass the gate on a handful of verdicts.
MIN_JUDGED_SHARE = 0.5


def _indices(values: list[str], classes: tuple[str, ...]) -> list[int]:
    index = {c: i for i, c in enumerate(classes)}
    return [index[v] for v in values]


def confusion(truth: list[str], predicted: list[str], classes: tuple[str, ...] = CLASSES) -> np.ndarray:
    """Counts: rows are the true class (the label), columns the judge's, in `classes` order."""
    return agreement.confusion(_indices(truth, classes), _indices(predicted, classes), len(classes))


def kappa_from_confusion(m: np.ndarray) -> float:
    """Cohen's kappa (po − pe) / (1 − pe); NaN when undefined (no items, or chance agreement is 1)."""
    return agreement.kappa(m)


def cohen_kappa(a: list[str], b: list[str], classes: tuple[str, ...] = CLASSES) -> float:
    """Cohen's kappa of two raters over the same items."""
    return kappa_from_confusion(confusion(a, b, classes))


def kappa_interval(
    a: list[str],
    b: list[str],
    level: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
    classes: tuple[str, ...] = CLASSES,
) -> tuple[float, float]:
    """Percentile bootstrap interval of kappa (items resampled with replacement; seeded)."""
    return agreement.kappa_interval(
        _indices(a, classes), _indices(b, classes), len(classes), level=level, resamples=resamples, seed=seed
    )


def precision_recall(m: np.ndarray, classes: tuple[str, ...] = CLASSES) -> dict[str, dict[str, Any]]:
    """Per class: precision (of the judge's calls of it), recall (of the labels of it), support; None if 0/0."""
    out = {}
    for i, c in enumerate(classes):
        tp = int(m[i, i])
        predicted, actual = int(m[:, i].sum()), int(m[i, :].sum())
        out[c] = {
            "precision": tp / predicted if predicted else None,
            "recall": tp / actual if actual else None,
            "support": actual,
        }
    return out


@dataclass
class CalibrationReport:
    """What `agentwatch judge calibrate` prints."""

    judge_id: str
    labelled: int
    judged: int
    failures: dict[str, int]
    kappa: float
    kappa_low: float
    kappa_high: float
    level: float
    accuracy: float
    classes: tuple[str, ...]
    confusion: list[list[int]]
    per_class: dict[str, dict[str, Any]]
    min_kappa: float
    consistency: dict[str, Any] = field(default_factory=dict)

    @property
    def too_few_judged(self) -> bool:
        """Whether the judge graded fewer than MIN_JUDGED_SHARE of the labelled conversations."""
        return self.judged < MIN_JUDGED_SHARE * self.labelled

    @property
    def passed(self) -> bool:
        """kappa at or above the minimum (an undefined kappa fails, and so do too few judged)."""
        return not math.isnan(self.kappa) and self.kappa >= self.min_kappa and not self.too_few_judged

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (NaN as null)."""

        def clean(x: Any) -> Any:
            if isinstance(x, float) and math.isnan(x):
                return None
            if isinstance(x, dict):
                return {k: clean(v) for k, v in x.items()}
            if isinstance(x, (list, tuple)):
                return [clean(v) for v in x]
            return x

        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["passed"] = self.passed
        d["too_few_judged"] = self.too_few_judged
        return {k: clean(v) for k, v in d.items()}


def self_consistency(
    first: list[str | None],
    second: list[str | None],
    scores1: list[float | None],
    scores2: list[float | None],
) -> dict[str, Any]:
    """Agreement of two runs of the judge on the same conversations (items where both runs graded)."""
    pairs = [
        (a, b, s, t)
        for a, b, s, t in zip(first, second, scores1, scores2, strict=True)
        if a is not None and b is not None
    ]
    if not pairs:
        return {"pairs": 0, "agreement": None, "kappa": None, "mean_abs_score_diff": None}
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs]
    diffs = [abs(p[2] - p[3]) for p in pairs if p[2] is not None and p[3] is not None]
    kappa = cohen_kappa(a, b)
    return {
        "pairs": len(pairs),
        "agreement": sum(x == y for x, y in zip(a, b, strict=True)) / len(pairs),
        "kappa": None if math.isnan(kappa) else kappa,
        "mean_abs_score_diff": sum(diffs) / len(diffs) if diffs else None,
    }


def calibrate(
    judge_id: str,
    labels: list[str],
    verdicts: list[Any],
    repeat: list[Any] | None = None,
    *,
    min_kappa: float = 0.6,
    level: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
) -> CalibrationReport:
    """The report from human `labels` and the judge's `verdicts` (same order); `repeat`: a second run."""
    failures: dict[str, int] = {}
    truth, predicted = [], []
    for label, v in zip(labels, verdicts, strict=True):
        if not v.ok:
            failures[v.failure] = failures.get(v.failure, 0) + 1
            continue
        truth.append(label)
        predicted.append(v.outcome.value)
    m = confusion(truth, predicted)
    kappa = kappa_from_confusion(m)
    lo, hi = kappa_interval(truth, predicted, level, resamples, seed)
    consistency: dict[str, Any] = {}
    if repeat is not None:
        consistency = self_consistency(
            [v.outcome.value if v.ok else None for v in verdicts],
            [v.outcome.value if v.ok else None for v in repeat],
            [v.score for v in verdicts],
            [v.score for v in repeat],
        )
    return CalibrationReport(
        judge_id=judge_id,
        labelled=len(labels),
        judged=len(truth),
        failures=failures,
        kappa=kappa,
        kappa_low=lo,
        kappa_high=hi,
        level=level,
        accuracy=float(np.trace(m) / m.sum()) if m.sum() else math.nan,
        classes=CLASSES,
        confusion=m.tolist(),
        per_class=precision_recall(m),
        min_kappa=min_kappa,
        consistency=consistency,
    )
