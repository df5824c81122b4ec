"""Where an expected call and the closest call made differ: each differing value's path and both values.

`flights[1].flight_number: expected 'HAT033', got 'HAT212'` says what a bare "no call matches" hides. The
walk follows the matching rules of `scorers.arguments`: objects by key (extra keys of the call allowed by
default), lists in order position by position (a list of another length differs as a whole), `unordered` and
`subset` lists as multisets (the expected elements missing, the ones nobody expected), `ignore` skipped. A
policy's constraint (`{regex: ...}`, `{from_input: true}`) differs as the constraint against the value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentwatch.scorers.arguments import values_match
from agentwatch.scorers.matching import match_pairs

ABSENT = "<absent>"  # what `got` reads when the call has no such argument
MAX_SHOWN = 80  # characters of one value in a reason text
MAX_DIFFERENCES = 8  # differences kept per call (the first ones, in argument order)
_MAX_DEPTH = 32


@dataclass(frozen=True, slots=True)
class Difference:
    """One differing value: its path in the arguments, what was expected and what the call had."""

    path: str
    expected: Any
    got: Any

    def text(self) -> str:
        """`path: expected X, got Y`, each value shortened."""
        return f"{self.path}: expected {shown(self.expected)}, got {shown(self.got)}"


def clip_reason(text: str, head: int = 100, tail: int = 220) -> str:
    """A long reason cut in its middle: its start says what failed, its end where the values differ."""
    return text if len(text) <= head + tail + 3 else f"{text[:head]} … {text[-tail:]}"


def shown(value: Any) -> str:
    """A value as a reason prints it: its repr, cut to `MAX_SHOWN` characters."""
    text = value if value is ABSENT else repr(value)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."


def argument_differences(
    expected: Mapping[str, Any],
    used: Any,
    modes: Mapping[str, str],
    tolerance: float,
    satisfies: Callable[[Any, Any, str | None], bool] | None = None,
) -> list[Difference]:
    """The differences between expected arguments and a call's; `satisfies(value, expected, mode)` decides a
    top-level argument where the expectation is not a plain value (a policy's constraint)."""
    args = used if isinstance(used, dict) else {}
    out: list[Difference] = []
    for key, value in expected.items():
        mode = modes.get(key)
        if mode == "ignore":
            continue
        if key not in args:
            out.append(Difference(key, value, ABSENT))
        elif satisfies is not None:
            if not satisfies(args[key], value, mode):
                _walk(key, value, args[key], mode, tolerance, out, 0)
        elif not values_match(value, args[key], mode, tolerance):
            _walk(key, value, args[key], mode, tolerance, out, 0)
        if len(out) >= MAX_DIFFERENCES:
            break
    return out[:MAX_DIFFERENCES]


def _walk(
    path: str, expected: Any, got: Any, mode: str | None, tolerance: float, out: list[Difference], depth: int
) -> None:
    """Add the differences below `path` (the two values are known to differ)."""
    if depth > _MAX_DEPTH or mode in ("exact", "numeric"):
        out.append(Difference(path, expected, got))
    elif isinstance(expected, dict) and isinstance(got, dict):
        before = len(out)
        for key, value in expected.items():
            inner = f"{path}.{key}"
            if key not in got:
                out.append(Difference(inner, value, ABSENT))
            elif not values_match(value, got[key], None, tolerance):
                _walk(inner, value, got[key], None, tolerance, out, depth + 1)
        if len(out) == before:  # differs in a way no key shows (should not happen): say so as a whole
            out.append(Difference(path, expected, got))
    elif isinstance(expected, list) and isinstance(got, list):
        if mode in ("unordered", "subset"):
            _multiset(path, expected, got, mode == "unordered", tolerance, out)
        elif len(expected) != len(got):
            out.append(Difference(f"{path} (length)", len(expected), len(got)))
        else:
            for i, (e, g) in enumerate(zip(expected, got, strict=True)):
                if not values_match(e, g, None, tolerance):
                    _walk(f"{path}[{i}]", e, g, None, tolerance, out, depth + 1)
    else:
        out.append(Difference(path, expected, got))


def _multiset(
    path: str, expected: list[Any], got: list[Any], all_used: bool, tolerance: float, out: list[Difference]
) -> None:
    """The expected elements no element of the call matches, and (all used) the call's left over."""
    pairs = match_pairs(
        range(len(expected)), len(got), lambda i, j: values_match(expected[i], got[j], None, tolerance)
    )
    missing = [e for i, e in enumerate(expected) if i not in pairs]
    taken = set(pairs.values())
    extra = [g for j, g in enumerate(got) if j not in taken] if all_used else []
    if missing or extra:
        out.append(Difference(f"{path} (any order)", missing, extra))


def closest(
    candidates: list[Any], differences: Callable[[Any], list[Difference]]
) -> tuple[Any, list[Difference]] | None:
    """The candidate with the fewest differences (the first of equals) and its differences; None if none."""
    best: tuple[Any, list[Difference]] | None = None
    for candidate in candidates:
        found = differences(candidate)
        if best is None or len(found) < len(best[1]):
            best = (candidate, found)
    return best
