"""Text helpers shared by the graders: number extraction and loose numeric comparison."""

from __future__ import annotations

import re
import sys
from math import isfinite

# A number as people write it: optional sign, thousands separators, decimals ("1,234.50", "-3", ".5"), not part
# of a word or of a longer number. The look-ahead for the characters a number starts with comes first: the regex
# engine then skips to them instead of trying the look-behind at every position.
_NUM = r"[-+]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)"
NUMBER_RE = re.compile(r"(?=[-+.\d])(?<![\w.])" + _NUM + r"(?!\w|\.\d)")
_PLAIN_NUMBER_RE = re.compile(_NUM + r"$")
# the largest float as an integer: an int compared with an int never overflows (compiled, a comparison with a
# float would convert the int)
_FLOAT_MAX = int(sys.float_info.max)
# Whitespace-separated words holding a digit: identifiers and amounts.
_DIGIT_WORD = re.compile(
    r"(?<!\S)[^\s\d]*+\d\S*"
)  # possessive: the letters before the digit are never retried


def numbers_in(text: str) -> list[tuple[float, int]]:
    """Numbers written in `text`, each as (value, decimals shown)."""
    out: list[tuple[float, int]] = []
    for token in NUMBER_RE.findall(text):
        value = float(token.replace(",", ""))
        if isfinite(value):
            dot = token.find(".")
            out.append((value, 0 if dot < 0 else len(token) - dot - 1))
    return out


def number_values(text: str) -> list[float]:
    """The values of the numbers written in `text` (`numbers_in` without the decimals)."""
    return [value for value, _ in numbers_in(text)]


def parse_number(token: str) -> float | None:
    """Value of a number written as text ("1,234.50" → 1234.5); None if it is not one number."""
    token = token.strip()
    whole, dot, decimals = token.partition(".")
    if whole.isdecimal() and (not dot or decimals.isdecimal()):
        # Plain digits, maybe with decimals ("12.50"), are most of what answers hold; isdecimal() is the
        # regex's \d, so float() alone decides them without the regex.
        value = float(token)
        return value if isfinite(value) else None
    if not _PLAIN_NUMBER_RE.match(token):
        return None
    try:
        value = float(token.replace(",", ""))
    except ValueError:
        return None
    return value if isfinite(value) else None


def shown_matches(shown: float, decimals: int, value: float) -> bool:
    """Whether `value` written with `decimals` decimals reads as `shown` (42.5 vs "42.50", 3.14159 vs "3.14")."""
    if shown == value:
        return True
    half_step = 0.5 * 10.0 ** (-decimals)
    return abs(value - shown) <= half_step + 1e-9 * max(1.0, abs(value))


def is_number(value: object) -> bool:
    """A JSON number a float holds (int or float, not bool, finite): an integer past float range is not one, as
    reading it as a float would overflow (it still equals itself as an exact value)."""
    if isinstance(value, float):
        return isfinite(value)
    return isinstance(value, int) and not isinstance(value, bool) and -_FLOAT_MAX <= value <= _FLOAT_MAX


class AnswerText:
    """A turn's answer as its graders read it: the text, case-folded, its words holding a digit (identifiers,
    amounts) and the numbers it shows (utilization, numeric references), each worked out on first use and
    shared by the graders of the turn."""

    __slots__ = ("_digit_words", "_numbers", "folded", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.folded = text.casefold()
        self._digit_words: list[str] | None = None
        self._numbers: list[tuple[float, int]] | None = None

    def digit_words(self) -> list[str]:
        """The whitespace-separated words holding a digit."""
        if self._digit_words is None:
            self._digit_words = _DIGIT_WORD.findall(self.text)
        return self._digit_words

    def numbers(self) -> list[tuple[float, int]]:
        """`numbers_in(text)`."""
        if self._numbers is None:
            self._numbers = numbers_in(self.text)
        return self._numbers
