"""JSON text read into values every writer takes: a lone surrogate escape (`"\\ud800"`, valid JSON) parses to
a str that is not UTF-8, which no JSON writer, template or database accepts; each is replaced by U+FFFD, one
for each byte of its UTF-8 form, as a decoder replaces bytes that are not UTF-8."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

_LONE_SURROGATE_TEXT = re.compile(
    r"\\u[dD][89a-fA-F]"
)  # may be half of a pair: the check is cheap, not exact
_LONE_SURROGATE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")


def loads(data: str | bytes, parse_constant: Callable[[str], Any] | None = None) -> Any:
    """`data` parsed as JSON (as `json.loads`), lone surrogates replaced; ValueError or RecursionError as
    `json.loads` raises them."""
    doc = json.loads(data) if parse_constant is None else json.loads(data, parse_constant=parse_constant)
    escaped = (
        _LONE_SURROGATE_TEXT.search(data) if isinstance(data, str) else _LONE_SURROGATE_BYTES.search(data)
    )
    return without_lone_surrogates(doc) if escaped else doc


def without_lone_surrogates(doc: Any) -> Any:
    """A parsed JSON value with the lone surrogates in its strings replaced."""
    raw = json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return json.loads(raw.decode("utf-8", "replace"))
