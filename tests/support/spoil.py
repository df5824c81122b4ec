"""Published data spoiled on purpose, for property tests: any place of a JSON document replaced by an odd value or
taken out, as a hand-edited, half-written or hostile log would have it."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

# What a hand-edited or half-written log holds where a value should be.
ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=False),
    st.sampled_from(["", "x", "null", "{", "[1, 2]", "Error: boom", "1.5", "-1"]),
    # containers built anew at each draw: a later spoiling may change what it finds inside them
    st.builds(list),
    st.builds(dict),
    st.builds(lambda: [None]),
    st.builds(lambda: {"role": "tool"}),
)


def paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value (dict keys and list positions), the root left out."""
    found = [path] if path else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += paths(item, (*path, i))
    return found


def spoil(document: Any, data: st.DataObject, odd: st.SearchStrategy[Any] = ODD) -> Any:
    """A copy of `document` with one to four places replaced by a value of `odd` or taken out."""
    spoiled = copy.deepcopy(document)
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        places = paths(spoiled)
        if not places:
            break
        path = data.draw(st.sampled_from(places))
        parent = spoiled
        for key in path[:-1]:
            parent = parent[key]
        if data.draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = data.draw(odd)
    return spoiled
