"""Anchors: a frozen set of labelled conversations the judge grades again, to tell judge drift from agent
drift.

When the agent's success rate moves, either the agent changed or the judge did (a new model behind the same
name, a new rubric). The anchors do not change: each is a conversation with a person's label and the verdict
the judge gave when the set was frozen. Judging them again and comparing (`compare`) says whether the judge
moved:

- **agreement**: the share of anchors whose verdict keeps its frozen class, and Cohen's kappa of the two;
- **kappa with the labels**, now and frozen: whether the judge got better or worse at the truth;
- **the pass-rate shift**: the share of anchors passed now minus the share passed when frozen, on the same
  anchors (paired), with the Bonett–Price interval for a difference of paired proportions.

Judge drift is raised when the shift's interval excludes 0 (the judge passes more, or fewer, of the same
conversations) or the agreement falls below `anchors.min_agreement` (verdicts move between classes without
moving the pass rate). A failed call is left out of the comparison and counted: a failure is not a drift.

The anchor set is a JSONL file (one `Anchor` per line: the transcript, the label, the frozen verdict): a file
is reviewable, versionable with the rubric, and the same for SQLite and PostgreSQL review stores. It is made
by `agentwatch judge anchors freeze` from a labels file or from the blind labels of the review store.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from scipy.special import ndtri

from agentwatch.judge.calibration import CLASSES, confusion, kappa_from_confusion
from agentwatch.judge.verdict import JudgeVerdict
from agentwatch.wire.json_text import model_from_json
from agentwatch.wire.schema import Conversation, Outcome
from agentwatch.wire.transcripts import MAX_LINE_BYTES, bounded_lines

__all__ = [
    "Anchor",
    "AnchorComparison",
    "AnchorsFileError",
    "FrozenVerdict",
    "compare",
    "freeze",
    "paired_shift",
    "read_anchors",
    "write_anchors",
]


class FrozenVerdict(BaseModel):
    """The judge's verdict on an anchor when the set was frozen."""

    model_config = ConfigDict(extra="forbid")

    judge: str = Field(description="Id of the judge that gave it (name:model:prompt version).")
    outcome: Outcome
    score: float = Field(ge=0, le=1, allow_inf_nan=False)


class Anchor(BaseModel):
    """One anchor: a conversation, a person's label, and the frozen verdict."""

    model_config = ConfigDict(extra="forbid")

    conversation: Conversation
    label: Outcome = Field(description="The person's outcome class (never unscored).")
    frozen: FrozenVerdict
    frozen_at: datetime


class AnchorsFileError(ValueError):
    """An anchor file that cannot be used: missing, empty, too large, or with a bad line (its number in the
    message): a malformed line, an unscored label or frozen verdict, a conversation already anchored."""


def write_anchors(path: Path, anchors: Iterable[Anchor]) -> int:
    """Write the anchor set (one JSON object per line) atomically; how many."""
    # a job reading the set as it is frozen again in place sees the old file or the new one, never a part
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    n = 0
    try:
        with partial.open("w", encoding="utf-8") as out:
            for a in anchors:
                out.write(a.model_dump_json() + "\n")
                n += 1
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return n


# An anchor set is a few hundred transcripts (freeze's default is 200): a file past this size is not one, and is
# refused before anything of it is held in memory; a line past MAX_LINE_BYTES is read past, never held whole.
MAX_FILE_BYTES = 256 * 1024 * 1024


def read_anchors(path: Path) -> list[Anchor]:
    """Read an anchor set; a bad line fails with its number (a set is used whole or not at all)."""
    try:
        size = path.stat().st_size
        fh = path.open("rb")
    except OSError as exc:
        raise AnchorsFileError(f"{path}: cannot read the anchor set: {exc}") from None
    if size > MAX_FILE_BYTES:
        fh.close()
        raise AnchorsFileError(
            f"{path}: {size} bytes, more than an anchor set's {MAX_FILE_BYTES >> 20} MiB: not read"
        )
    anchors: list[Anchor] = []
    first_line: dict[str, int] = {}  # conversation id → line number, for a duplicate's message
    read = 0
    with fh:
        try:
            for number, raw in enumerate(bounded_lines(fh, MAX_LINE_BYTES), 1):
                if raw is None:
                    raise AnchorsFileError(f"{path}:{number}: line longer than {MAX_LINE_BYTES} bytes")
                read += len(raw)
                if read > MAX_FILE_BYTES:  # grew while read
                    raise AnchorsFileError(f"{path}: more than {MAX_FILE_BYTES >> 20} MiB: not read")
                if raw.strip():
                    anchor = _anchor_line(path, number, raw)
                    cid = anchor.conversation.conversation_id
                    if cid in first_line:
                        # the same conversation twice would weigh twice in every figure
                        raise AnchorsFileError(
                            f"{path}:{number}: conversation {cid!r} is already the anchor of line {first_line[cid]}"
                        )
                    first_line[cid] = number
                    anchors.append(anchor)
        except OSError as exc:
            raise AnchorsFileError(f"{path}: cannot read the anchor set: {exc}") from None
    if not anchors:
        raise AnchorsFileError(f"{path}: no anchor in the file")
    return anchors


def _anchor_line(path: Path, number: int, raw: bytes) -> Anchor:
    """One line's anchor; AnchorsFileError naming the line and the field."""
    try:
        anchor = model_from_json(Anchor, raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise AnchorsFileError(f"{path}:{number}: {where}: {first['msg']}") from None
    except ValueError as exc:  # not UTF-8
        raise AnchorsFileError(f"{path}:{number}: {exc}") from None
    # an unscored class is no verdict: the comparison's classes are the judge's five
    if anchor.label is Outcome.UNSCORED:
        raise AnchorsFileError(f"{path}:{number}: label: an anchor's label is an outcome class, not unscored")
    if anchor.frozen.outcome is Outcome.UNSCORED:
        raise AnchorsFileError(
            f"{path}:{number}: frozen.outcome: a frozen verdict is an outcome class, not unscored"
        )
    return anchor


def freeze(
    labelled: Sequence[tuple[Conversation, Outcome]], verdicts: Sequence[JudgeVerdict], at: datetime
) -> tuple[list[Anchor], int]:
    """Anchors from labelled conversations and the judge's verdicts on them (same order); the conversations
    the judge failed on are left out: (anchors, left out)."""
    anchors, failed = [], 0
    for (conv, label), v in zip(labelled, verdicts, strict=True):
        if not v.ok or v.outcome is None or v.score is None:
            failed += 1
            continue
        anchors.append(
            Anchor(
                conversation=conv,
                label=label,
                frozen=FrozenVerdict(judge=v.judge_id, outcome=v.outcome, score=v.score),
                frozen_at=at,
            )
        )
    return anchors, failed


def paired_shift(up: int, down: int, n: int, level: float = 0.95) -> tuple[float, float, float]:
    """(shift, lower, upper) of a difference of paired proportions: `up` items passed now but not before,
    `down` the other way, of `n`. The interval is Bonett and Price's (2012) adjusted Wald interval: each
    discordant share with one pseudo-item, (p12 − p21) ± z·sqrt((p12 + p21 − (p12 − p21)²) / (n + 2))."""
    if n <= 0:
        return math.nan, math.nan, math.nan
    p12, p21 = (up + 1) / (n + 2), (down + 1) / (n + 2)
    diff = p12 - p21
    half = float(ndtri(0.5 + level / 2)) * math.sqrt(max(0.0, p12 + p21 - diff * diff) / (n + 2))
    return (up - down) / n, max(-1.0, diff - half), min(1.0, diff + half)


@dataclass(frozen=True, slots=True)
class AnchorComparison:
    """The judge now against the frozen verdicts and the labels, on the same anchors."""

    judge: str  # the judge now
    frozen_judge: str  # the judge that gave the frozen verdicts (the most common id in the set)
    anchors: int  # anchors in the set
    judged: int  # anchors the judge graded now (failures left out)
    failures: int
    agreement: float  # share of judged anchors whose class is the frozen one
    agreement_kappa: float  # kappa of the classes now against the frozen ones
    kappa_now: float  # kappa of the verdicts now against the labels
    kappa_frozen: float  # kappa of the frozen verdicts against the labels (same anchors)
    pass_rate_now: float
    pass_rate_frozen: float
    pass_rate_labels: float
    shift: float  # pass_rate_now − pass_rate_frozen
    shift_lower: float
    shift_upper: float
    min_agreement: float

    @property
    def drift(self) -> bool:
        """Whether the judge moved: the shift's interval excludes 0, or too few anchors keep their class."""
        if self.judged == 0:
            return False
        return self.shift_lower > 0.0 or self.shift_upper < 0.0 or self.agreement < self.min_agreement

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict (NaN as null), with the drift decision."""
        out: dict[str, object] = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}
        out["drift"] = self.drift
        return out


def _kappa(a: list[str], b: list[str]) -> float:
    return kappa_from_confusion(confusion(a, b, CLASSES)) if a else math.nan


def compare(
    anchors: Sequence[Anchor],
    verdicts: Sequence[JudgeVerdict],
    judge: str,
    level: float = 0.95,
    min_agreement: float = 0.9,
) -> AnchorComparison:
    """The anchors judged again (`verdicts`, same order) against their frozen verdicts and labels."""
    now, frozen, labels = [], [], []
    failures = 0
    for a, v in zip(anchors, verdicts, strict=True):
        if not v.ok or v.outcome is None:
            failures += 1
            continue
        now.append(v.outcome.value)
        frozen.append(a.frozen.outcome.value)
        labels.append(a.label.value)
    n = len(now)
    passed_now = np.array([x == "complete" for x in now], dtype=bool)
    passed_frozen = np.array([x == "complete" for x in frozen], dtype=bool)
    up, down = int((passed_now & ~passed_frozen).sum()), int((~passed_now & passed_frozen).sum())
    shift, lo, hi = paired_shift(up, down, n, level)
    ids = [a.frozen.judge for a in anchors]
    frozen_judge = max(set(ids), key=ids.count) if ids else ""

    def share(xs: list[str]) -> float:
        return sum(x == "complete" for x in xs) / len(xs) if xs else math.nan

    return AnchorComparison(
        judge=judge,
        frozen_judge=frozen_judge,
        anchors=len(anchors),
        judged=n,
        failures=failures,
        agreement=sum(x == y for x, y in zip(now, frozen, strict=True)) / n if n else math.nan,
        agreement_kappa=_kappa(now, frozen),
        kappa_now=_kappa(labels, now),
        kappa_frozen=_kappa(labels, frozen),
        pass_rate_now=share(now),
        pass_rate_frozen=share(frozen),
        pass_rate_labels=share(labels),
        shift=shift,
        shift_lower=lo,
        shift_upper=hi,
        min_agreement=min_agreement,
    )


def render(c: AnchorComparison) -> str:
    """The comparison as text."""

    def num(x: float) -> str:
        return "n/a" if math.isnan(x) else f"{x:.3f}"

    verdict = "JUDGE DRIFT" if c.drift else "no judge drift"
    return (
        "\n".join(
            [
                f"Anchors — {c.judge} against the frozen verdicts of {c.frozen_judge}",
                f"anchors: {c.anchors}; judged: {c.judged}; failures: {c.failures}",
                (
                    f"same class as frozen: {num(c.agreement)} (minimum {c.min_agreement:.2f}); "
                    f"kappa now vs frozen {num(c.agreement_kappa)}"
                ),
                f"kappa with the labels: now {num(c.kappa_now)}, frozen {num(c.kappa_frozen)}",
                (
                    f"pass rate: now {num(c.pass_rate_now)}, frozen {num(c.pass_rate_frozen)}, labels "
                    f"{num(c.pass_rate_labels)}; shift {c.shift:+.3f} "
                    f"[{num(c.shift_lower)}, {num(c.shift_upper)}]"
                    if c.judged
                    else "pass rate: n/a"
                ),
                verdict,
            ]
        )
        + "\n"
    )


def anchors_json(c: AnchorComparison) -> str:
    """The comparison as JSON."""
    return json.dumps(c.to_dict(), indent=2)
