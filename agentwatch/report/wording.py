"""How the text and HTML reports word numbers, differences, counts and lists of ids."""

from __future__ import annotations

from collections.abc import Sequence

from agentwatch.report.label_agreement import LabelAgreement
from agentwatch.report.model import Delta

OK, BAD = "✓", "✗"
MAX_IDS_SHOWN = 5


def fmt(x: float | None, digits: int = 3) -> str:
    """A number with `digits` decimals, or 'n/a'."""
    return "n/a" if x is None else f"{x:.{digits}f}"


def interval(lo: float | None, hi: float | None) -> str:
    """` [lo, hi]` with three decimals, or nothing when a bound is missing."""
    return "" if lo is None or hi is None else f" [{lo:.3f}, {hi:.3f}]"


def pct(x: float | None) -> str:
    """A share as a percentage with one decimal, or 'n/a'."""
    return "n/a" if x is None else f"{100 * x:.1f}%"


def plural(n: int, noun: str, many: str | None = None) -> str:
    """`1 conversation`, `2 conversations` (thousands separated)."""
    return f"{n:,} {noun if n == 1 else (many or noun + 's')}"


def first_few(items: Sequence[str], total: int | None = None) -> str:
    """The first items, then `and N more` when there are more."""
    total = len(items) if total is None else total
    shown = ", ".join(items[:MAX_IDS_SHOWN])
    return shown + (f" and {total - min(len(items), MAX_IDS_SHOWN):,} more" if total > MAX_IDS_SHOWN else "")


def money(x: float | None) -> str:
    """An amount in dollars with four significant digits, or 'n/a'."""
    return "n/a" if x is None else f"${x:.4g}"


def change(d: Delta) -> str:
    """A difference of two probabilities in points, and relative to the baseline where it has one."""
    if d.delta is None:
        return "n/a"
    text = f"{100 * d.delta:+.1f} points"
    if d.base:
        text += f", {100 * d.delta / d.base:+.0f}% relative"
    return text


def pct_interval(lo: float | None, hi: float | None) -> str:
    """` [lo%, hi%]` with one decimal, or nothing when a bound is missing."""
    return "" if lo is None or hi is None else f" [{100 * lo:.1f}%, {100 * hi:.1f}%]"


def agreement_words(a: LabelAgreement, level: float) -> str:
    """How the automated verdicts agree with the labels: `agree on 64 (55.7%), κ 0.106 [0.039, 0.202] (…)`."""
    kappa = "κ undefined (one of them gives a single answer)"
    if a.kappa is not None:
        bounds = f" [{fmt(a.kappa_lower)}, {fmt(a.kappa_upper)}]" if a.kappa_lower is not None else ""
        kappa = f"κ {fmt(a.kappa)}{bounds} ({level:.0%}, tasks resampled)"
    return f"agree on {a.agree} ({pct(a.agree / a.conversations)}), {kappa}"
