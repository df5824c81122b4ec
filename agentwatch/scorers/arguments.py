"""Argument matching, per argument: how an expected argument value is compared with the one the agent passed.

Modes (an expectation's or a policy tool's `match: {argument: mode}`):
- an object or a list passed as its JSON or Python-literal text (`"['1', '2']"`, as some agents and loggers pass
  them) is read as that object or list, in every mode but `exact`;
- default (no mode): objects compare as subsets (every expected key present and matching, extra keys such as a
  descriptive `origin` inside a flight allowed), lists element by element in order, values equal — numbers by
  value (1 == 1.0), a number and its text equal ("4100" == 4100), booleans not numbers;
- `exact`: JSON equality, no extra keys at any depth;
- `ignore`: anything, or absent (free text such as a handoff summary);
- `numeric`: both sides numbers — a JSON number, or text holding a number or an arithmetic expression
  (`430+412-(136+109)`), evaluated safely — equal within the numeric tolerance;
- `subset`: an object with extra keys allowed (as the default), or a list holding every expected element
  (any order, extra elements allowed);
- `unordered`: a list with the same elements in any order.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

from agentwatch.scorers.arithmetic import number_value
from agentwatch.scorers.matching import match_pairs
from agentwatch.scorers.text import is_number, parse_number
from agentwatch.wire.json_text import MAX_NESTING, deeper_than
from agentwatch.wire.values import read_structured

DEFAULT_TOLERANCE = 1e-6  # relative, for `numeric` (scoring.numeric_tolerance)
_MAX_PAIRED = 200  # longer unordered lists compare as multisets of exact values (no pairing search)
_MAX_DEPTH = 64


def canonical_json(value: Any, separators: tuple[str, str] = (",", ":")) -> str:
    """`value` as canonical JSON (sorted keys, what JSON cannot hold as its text); a value nested deeper than
    `MAX_NESTING` is a JSON string naming the object, so that it equals no other value (the encoder's own limit
    depends on how deep the caller's stack is, and is not reached compiled)."""
    if isinstance(value, (dict, list)) and deeper_than(value, MAX_NESTING):
        return json.dumps(f"<nested too deep to compare: object {id(value):x}>")
    return json.dumps(value, sort_keys=True, separators=separators, ensure_ascii=False, default=str)


def _same_number(a: float, b: float) -> bool:
    return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)


def scalars_equal(expected: Any, used: Any) -> bool:
    """Equal scalars: strings exactly, numbers by value, a number and its text, booleans as booleans."""
    te, tu = type(expected), type(used)
    if te is str and tu is str:
        return bool(expected == used)
    if te is bool or tu is bool:
        return te is tu and expected == used
    e_num, u_num = is_number(expected), is_number(used)
    if e_num and u_num:
        return _same_number(float(expected), float(used))
    if e_num and tu is str:
        parsed = parse_number(used)
        return parsed is not None and _same_number(float(expected), parsed)
    if u_num and te is str:
        parsed = parse_number(expected)
        return parsed is not None and _same_number(parsed, float(used))
    return expected == used and te is tu


def exact_equal(expected: Any, used: Any, depth: int = 0) -> bool:
    """JSON equality: objects with the same keys, lists in order, numbers by value, bools not numbers."""
    if depth > _MAX_DEPTH:
        return canonical_json(expected) == canonical_json(used)
    if isinstance(expected, dict):
        return (
            isinstance(used, dict)
            and expected.keys() == used.keys()
            and all(exact_equal(v, used[k], depth + 1) for k, v in expected.items())
        )
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(used, (list, tuple))
            and len(expected) == len(used)
            and all(exact_equal(e, u, depth + 1) for e, u in zip(expected, used, strict=True))
        )
    if isinstance(used, (dict, list, tuple)):
        return False
    if is_number(expected) and is_number(used):
        return _same_number(float(expected), float(used))
    return type(expected) is type(used) and expected == used


def values_match(
    expected: Any, used: Any, mode: str | None = None, tolerance: float = DEFAULT_TOLERANCE, depth: int = 0
) -> bool:
    """Whether `used` matches `expected` under `mode` (None: the default rules; see the module docstring)."""
    if type(expected) is str and mode is None:  # the common case first
        return expected == used if type(used) is str else scalars_equal(expected, used)
    if type(used) is str and isinstance(expected, (dict, list, tuple)) and mode != "exact":
        used = read_structured(used)[0]  # a list passed as its JSON or Python text: what the tool received
    if mode is None:
        if isinstance(expected, dict):
            return _subset_object(expected, used, tolerance, depth)
        if isinstance(expected, (list, tuple)):
            if not isinstance(used, (list, tuple)) or len(expected) != len(used):
                return False
            for e, u in zip(expected, used, strict=True):
                if type(e) is str and type(u) is str:  # the usual list, of strings, inline
                    if e != u:
                        return False
                elif not values_match(e, u, None, tolerance, depth + 1):
                    return False
            return True
        return not isinstance(used, (dict, list, tuple)) and scalars_equal(expected, used)
    if mode == "ignore":
        return True
    if mode == "exact":
        return exact_equal(expected, used)
    if mode == "numeric":
        e, u = number_value(expected), number_value(used)
        return e is not None and u is not None and math.isclose(e, u, rel_tol=tolerance, abs_tol=1e-9)
    if mode == "subset":
        if isinstance(expected, (list, tuple)):
            return _list_pairs(expected, used, tolerance, depth, all_used=False)
        return values_match(expected, used, None, tolerance, depth)
    if mode == "unordered":
        if isinstance(expected, (list, tuple)):
            return _list_pairs(expected, used, tolerance, depth, all_used=True)
        return values_match(expected, used, None, tolerance, depth)
    raise ValueError(f"unknown argument mode {mode!r}")


def _subset_object(expected: dict[str, Any], used: Any, tolerance: float, depth: int) -> bool:
    if not isinstance(used, dict):
        return False
    if depth > _MAX_DEPTH:
        return exact_equal(expected, used)
    return all(
        k in used and values_match(v, used[k], None, tolerance, depth + 1) for k, v in expected.items()
    )


def _list_pairs(expected: Any, used: Any, tolerance: float, depth: int, all_used: bool) -> bool:
    """Every expected element paired with a distinct used one (and, with `all_used`, nothing left over)."""
    if not isinstance(used, (list, tuple)):
        return False
    if len(used) < len(expected) or (all_used and len(used) != len(expected)):
        return False
    if len(expected) > _MAX_PAIRED or depth > _MAX_DEPTH:
        want, have = Counter(map(canonical_json, expected)), Counter(map(canonical_json, used))
        return want == have if all_used else not (want - have)
    pairs = match_pairs(
        range(len(expected)),
        len(used),
        lambda i, j: values_match(expected[i], used[j], None, tolerance, depth + 1),
    )
    return len(pairs) == len(expected)


def argument_agreement(
    expected: Mapping[str, Any] | None, used: Mapping[str, Any], modes: Mapping[str, str] | None = None
) -> float:
    """(expected arguments matched) / (arguments in either), ignored arguments left out; 1 when `expected` is
    None or nothing is left to compare."""
    if expected is None:
        return 1.0
    if not modes and expected == used:  # loose Python equality (True == 1): confirm where it could differ
        for k, v in expected.items():
            if type(v) is not str and not values_match(v, used[k]):
                break
        else:
            return 1.0
    ignored = {k for k, m in modes.items() if m == "ignore"} if modes else ()
    keys = (expected.keys() | used.keys()) - set(ignored) if ignored else expected.keys() | used.keys()
    if not keys:
        return 1.0
    same = 0
    for k, v in expected.items():
        if k in keys and k in used and values_match(v, used[k], modes.get(k) if modes else None):
            same += 1
    return same / len(keys)
