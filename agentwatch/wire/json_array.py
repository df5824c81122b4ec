"""The items of a JSON array found in its text without parsing it, so that each can be parsed on its own.

A JSON array file is parsed whole; when that fails, one bad item (NaN, an integer of 5,000 digits, nesting past
the parser's depth, bytes that are not UTF-8) or a file cut short would lose every item. `array_items` finds where
each item's text starts and ends by its brackets and strings alone, so that the bad item is reported and the others
are read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# a string (its end quote missing where the text is cut inside it), or one byte of the array's structure
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{},]', re.DOTALL)
_QUOTE, _COMMA, _OPEN, _CLOSE, _OPEN_OBJECT = b'"', b",", b"[", b"]", b"{"


def array_items(raw: bytes, start: int) -> Iterator[tuple[int, int, bytes]]:
    """(start, end, what ends it) of each item of the JSON array that opens at `raw[start]`: what ends an item is
    `,`, `]` (the last), or b"" when the text ends inside the array."""
    depth, item = 0, start + 1
    for match in _TOKEN.finditer(raw, start + 1):
        at = match.start()
        byte = raw[at : at + 1]
        if byte == _QUOTE or (byte == _COMMA and depth > 0):
            continue
        if depth == 0 and byte in (_COMMA, _CLOSE):
            yield item, at, byte
            if byte == _CLOSE:
                return
            item = match.end()
        elif byte in (_OPEN, _OPEN_OBJECT):
            depth += 1
        else:  # a closing bracket; one without an opening one is the item's own error, found when it is parsed
            depth = max(0, depth - 1)
    yield item, len(raw), b""


def array_end(raw: bytes, start: int) -> int | None:
    """The offset just after the `]` that closes the JSON array opening at `raw[start]`; None when the text ends
    inside it."""
    end = None
    for _, stop, what in array_items(raw, start):
        end = stop + 1 if what == _CLOSE else None
    return end
