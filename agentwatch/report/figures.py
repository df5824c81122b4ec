"""The figures of a report group, read from the model: every estimate that carries an interval.

The HTML report's cards and tables are built from `figures(group)`, not from a list of names, so an estimate
added to `GroupStats` (a model with `lower` and `upper`, or a dict of them keyed by k or kind) shows up in
every table without touching the page. Its name comes from `NAMES` when it has one there, else from the
field's name, and its description from the field's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from agentwatch.report.model import GroupStats, KEstimate
from agentwatch.report.text_metrics import figure_name

# Which attribute of an estimate is the figure to read, in order of preference.
VALUE_FIELDS = ("value", "plugin", "rate", "mean")
# Display names of the fields whose name alone would not say it.
NAMES = {"success_rate": "success rate", "asr": "ASR", "failure_rates": "rate"}
# Shown first, in this order (pass^k, the figure the gate and the regression check read, before pass@k); other
# fields follow in the model's order.
FIRST = ("success_rate", "pass_pow_k", "pass_at_k", "asr")
# Fields read as percentages of all conversations (failure evidence), shown apart from the success figures.
EVIDENCE_FIELDS = frozenset({"failure_rates"})


@dataclass(frozen=True, slots=True)
class Figure:
    """One estimate with its interval, as shown: a stable key, a name and what it means."""

    key: str
    name: str
    value: float | None
    lower: float | None
    upper: float | None
    about: str
    evidence: bool = False
    method: str | None = None


def _has_interval(x: object) -> bool:
    return isinstance(x, BaseModel) and hasattr(x, "lower") and hasattr(x, "upper")


def _value(x: BaseModel) -> float | None:
    for name in VALUE_FIELDS:
        if hasattr(x, name):
            v = getattr(x, name)
            return None if v is None else float(v)
    return None


def _entry_name(field: str, key: str, x: BaseModel) -> str:
    if field in ("pass_at_k", "pass_pow_k") and isinstance(x, KEstimate):
        return figure_name("at" if field == "pass_at_k" else "pow", key, x)
    if field in EVIDENCE_FIELDS:
        return f"{key} {NAMES.get(field, field)}"
    return f"{NAMES.get(field, field.replace('_', ' '))} {key}"


def figures(group: GroupStats) -> list[Figure]:
    """Every estimate with an interval in `group`: `FIRST`, then the model's field order. pass@1 is pass^1 and
    is left out; so is p^1 under exchangeability (the success rate's posterior mean)."""
    out: list[Figure] = []
    fields = type(group).model_fields
    for field in [*(f for f in FIRST if f in fields), *(f for f in fields if f not in FIRST)]:
        info = fields[field]
        x = getattr(group, field)
        about = info.description or ""
        evidence = field in EVIDENCE_FIELDS
        if _has_interval(x):
            out.append(
                Figure(
                    field,
                    NAMES.get(field, field.replace("_", " ")),
                    _value(x),
                    x.lower,
                    x.upper,
                    about,
                    evidence,
                    getattr(x, "method", None),
                )
            )
        elif isinstance(x, dict) and x and all(_has_interval(v) for v in x.values()):
            for key, v in x.items():
                if key == "1" and (field == "pass_at_k" or getattr(v, "method", None) == "exchangeable"):
                    continue
                out.append(
                    Figure(
                        f"{field}.{key}",
                        _entry_name(field, key, v),
                        _value(v),
                        v.lower,
                        v.upper,
                        about,
                        evidence,
                        getattr(v, "method", None),
                    )
                )
    return out


def columns(groups: Iterable[GroupStats], evidence: bool = False) -> list[tuple[str, str, str]]:
    """(key, name, about) of the figures of any of `groups`, first seen first: success figures, or evidence.

    Evidence columns only for kinds some group has seen (a rate of 0 everywhere is not worth a column).
    """
    found: dict[str, tuple[str, str, str]] = {}
    for g in groups:
        for f in figures(g):
            if f.evidence != evidence or f.key in found:
                continue
            if evidence and not _seen(g, f.key):
                continue
            found[f.key] = (f.key, f.name, f.about)
    return list(found.values())


def _seen(g: GroupStats, key: str) -> bool:
    field, _, kind = key.partition(".")
    rate = g.failure_rates.get(kind) if field == "failure_rates" else None
    return rate is None or rate.count > 0


def by_key(group: GroupStats) -> dict[str, Figure]:
    """The figures of `group` keyed by their key."""
    return {f.key: f for f in figures(group)}


def headline(group: GroupStats, keys: Sequence[str] | None = None) -> list[Figure]:
    """The success figures of `group` (no evidence), optionally only those named."""
    found = [f for f in figures(group) if not f.evidence]
    return found if keys is None else [f for f in found if f.key in keys]
