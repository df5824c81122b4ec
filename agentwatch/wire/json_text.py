"""JSON text read into values every writer takes, and records read back however deep their values nest.

A lone surrogate escape (`"\\ud800"`, valid JSON) parses to a str that is not UTF-8, which no JSON writer,
template or database accepts: each is replaced by U+FFFD, one for each byte of its UTF-8 form, as a decoder
replaces bytes that are not UTF-8. Values read from text an agent logged (`value_of`) nest at most about
`MAX_NESTING` deep, so that the records holding them can be written (pydantic writes 255 levels, records
included); `model_from_json` reads such a record back past the 200 levels pydantic's parser takes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import from_json

M = TypeVar("M", bound=BaseModel)

MAX_NESTING = 200  # what pydantic's JSON parser takes: `value_of` parses with it
# may be half of a pair: the check is cheap, not exact
_LONE_SURROGATE_TEXT = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")


def loads(
    data: str | bytes,
    parse_constant: Callable[[str], Any] | None = None,
    parse_float: Callable[[str], Any] | None = None,
) -> Any:
    """`data` parsed as JSON (as `json.loads`, with its hooks when given), lone surrogates replaced; ValueError
    or RecursionError as `json.loads` raises them."""
    doc = json.loads(data, parse_constant=parse_constant, parse_float=parse_float)  # None: the default's
    escaped = (
        _LONE_SURROGATE_TEXT.search(data) if isinstance(data, str) else _LONE_SURROGATE_BYTES.search(data)
    )
    return without_lone_surrogates(doc) if escaped else doc


def value_of(text: str) -> Any:
    """`text` parsed as JSON nested at most about `MAX_NESTING` deep, lone surrogates replaced; ValueError (or
    RecursionError) when it is not such JSON."""
    try:
        return from_json(text)  # refuses lone surrogates and nesting past its limit
    except ValueError:
        if not _LONE_SURROGATE_TEXT.search(text):
            raise
    doc = loads(text)
    if deeper_than(doc, MAX_NESTING):
        raise ValueError(f"JSON nested deeper than {MAX_NESTING}")
    return doc


def model_from_json(model: type[M], data: str | bytes) -> M:
    """`model` validated from JSON `data`; a document nested deeper than pydantic's parser goes (a value an agent
    logged, inside a record's own levels) is parsed by the standard library's instead."""
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        if not any(e["type"] == "json_invalid" and "recursion limit" in e["msg"] for e in exc.errors()):
            raise
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError):
            raise exc from None
    return model.model_validate(doc)


def without_lone_surrogates(doc: Any) -> Any:
    """A parsed JSON value with the lone surrogates in its strings replaced."""
    raw = json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return json.loads(raw.decode("utf-8", "replace"))


def deeper_than(doc: Any, limit: int) -> bool:
    """Whether `doc` nests lists and objects more than `limit` deep (walked without recursion, so that the answer
    is the same however deep the caller's stack is, compiled or not)."""
    level: list[Any] = [doc]
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        deeper: list[Any] = []
        for value in level:
            if isinstance(value, dict):
                deeper.extend(v for v in value.values() if isinstance(v, (dict, list)))
            elif isinstance(value, list):
                deeper.extend(v for v in value if isinstance(v, (dict, list)))
        level = deeper
    return False
