"""Failure modes of scores: the code of a reason, the failing codes of a conversation, each mode counted with
the conversations it lists, and why conversations are outside the graded sample (coverage, not failure)."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence

from agentwatch.report.model import FailureMode
from agentwatch.wire.contract import INFORMATIONAL_REASONS
from agentwatch.wire.score_view import ScoreView

_UNSAFE = re.compile(r"[^a-z0-9_]")
INFORMATIONAL_CODES = INFORMATIONAL_REASONS
# Why a conversation is outside the graded sample: coverage (reported under `ungraded`), not failure modes.
COVERAGE_CODES = frozenset(
    {
        "no_grader",
        "judge_timeout",
        "judge_bad_output",
        "judge_unavailable",
        "judge_budget_exhausted",
        "judge_tls_certificate",
        "scorer_error",
    }
)


def failure_code(reason: str) -> str:
    """The failure mode of a reason: the short code before the first colon ("loop: ..." -> "loop")."""
    head = reason.split(":", 1)[0].strip().lower().split()
    return _UNSAFE.sub("_", head[0].replace("-", "_"))[:64] if head else "unknown"


def failure_modes_of(score: ScoreView) -> set[str]:
    """The failure modes of a conversation: the codes of its reasons that fail (not a label's, not why it was
    not graded); a conversation that failed with none of them failed by its label (`label`), or for no
    reason given (`failed`)."""
    codes = {failure_code(r) for r in score.reasons} - INFORMATIONAL_CODES - COVERAGE_CODES
    if not codes and score.passed is False:
        by_label = any(failure_code(r) in INFORMATIONAL_CODES for r in score.reasons)
        return {"label"} if by_label else {"failed"}
    return codes


def has_loop(score: ScoreView) -> bool:
    """Whether any turn looped or a reason has the code `loop`."""
    return any(t.loop for t in score.turn_scores) or any(failure_code(r) == "loop" for r in score.reasons)


def failure_modes(scores: Sequence[ScoreView], examples: int) -> list[FailureMode]:
    """Each failure mode of `scores` with its count, its first `examples` conversations and a first reason,
    most frequent first."""
    counter: Counter[str] = Counter()
    listed: dict[str, list[str]] = defaultdict(list)
    first: dict[str, str] = {}  # the first reason of each mode, with its conversation
    for s in scores:
        codes = failure_modes_of(s)
        counter.update(codes)
        for code in codes:
            if len(listed[code]) < examples:
                listed[code].append(s.conversation_id)
            if code not in first:
                reason = next(
                    (r for r in s.reasons if failure_code(r) == code), code
                )  # label: no reason of its own
                first[code] = f"{s.conversation_id}: {reason}"
    return [
        FailureMode(mode=m, count=n, conversations=listed.get(m, []), example=first.get(m))
        for m, n in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def ungraded(scores: Sequence[ScoreView]) -> dict[str, int]:
    """Conversations outside the graded sample, by the coverage code of why (`other` when none says)."""
    counter: Counter[str] = Counter()
    for s in scores:
        if not s.scored:
            codes = {failure_code(r) for r in s.reasons} & COVERAGE_CODES
            counter.update(codes or {"other"})
    return dict(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))
