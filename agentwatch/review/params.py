"""The review pages' path and query values read safely: integers and times within what the store and the
calendar hold (a value outside them is None, for the page to refuse or replace, never an error of the database
or of the date functions)."""

from __future__ import annotations

import math

MAX_OFFSET = 10**9
LATEST_TIME = 253402300799.0  # 9999-12-31 23:59:59 UTC, the last second a date can show


def integer(text: str | None, highest: int) -> int | None:
    """`text` as an integer from 0 to `highest` (ASCII digits only, no sign), else None."""
    if not text or len(text) > 19 or not text.isascii() or not text.isdigit():
        return None
    value = int(text)
    return value if value <= highest else None


def unix_time(text: str) -> float | None:
    """`text` as a time in Unix seconds from 1970 to the year 9999, else None."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and 0 <= value <= LATEST_TIME else None
