"""Text helpers shared by the graders: number extraction and loose numeric comparison."""

from __future__ import annotations

import math
import re
from math import isfinite

# A number as people write it: optional sign, thousands separators, decimals ("1,234.50", "-3", ".5").
_NUM = r"[-+]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)"
NUMBER_RE = re.compile(r"(?=[-+.\d])(?<![\w.])" + _NUM + r"(?!\w|\.\d)")  # the definition; scanned with:
# The same matches, found faster: the pattern starts with a character class, so the regex engine skips to
# candidate characters instead of trying every position (the look-behind, now after the first character,
# still sees the character before it), then continues by what that first character was. Fuzzed against
# NUMBER_RE; with the ASCII twin below, 15k -> 11k instructions on a 30-character answer.
_NUMBER_SCAN = (
    r"[-+.\d](?<![\w.][-+.\d])"
    r"(?:(?<=[-+])(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)"  # a sign, then _NUM without it
    r"|(?<=\d)(?:\d{0,2}(?:,\d{3})+|\d*)(?:\.\d+)?"  # a digit, then the rest of _NUM's first alternative
    r"|(?<=\.)\d+)"  # ".5"
    r"(?!\w|\.\d)"
)
_PLAIN_NUMBER_RE = re.compile(_NUM + r"$")
# Whitespace-separated words holding a digit; the look-behind only lets matches start at a word's start (the
# only place they can start anyway), which spares the regex engine a backtracking attempt at every character.
# The word is read up to its first digit possessively (no backtracking from the word's end to its last digit;
# same whole word matched) - written out for ASCII texts, where Unicode's \s is [\t-\r\x1c-\x1f ]: 15k -> 12k
# instructions for a 30-character answer.
_DIGIT_WORD = re.compile(r"(?<!\S)[^\s\d]*+\d\S*")
_DIGIT_WORD_ASCII = re.compile(r"(?<![^\t-\r\x1c- ])[^\t-\r\x1c- 0-9]*+[0-9][^\t-\r\x1c- ]*", re.ASCII)


def ascii_twin(pattern: str, flags: int = 0) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """`pattern` compiled as is and with `re.ASCII`: on an ASCII text both find the same matches, the second
    about 20% faster (\\d and \\w need no Unicode table look-up). Not for patterns using \\s or \\S: Unicode
    also counts \\x1c-\\x1f as white space, ASCII mode does not."""
    return re.compile(pattern, flags), re.compile(pattern, flags | re.ASCII)


_NUMBERS, _NUMBERS_ASCII = ascii_twin(_NUMBER_SCAN)


def numbers_in(text: str) -> list[tuple[float, int]]:
    """Numbers written in `text`, each as (value, decimals shown)."""
    out: list[tuple[float, int]] = []
    for token in (_NUMBERS_ASCII if text.isascii() else _NUMBERS).findall(text):
        value = float(token.replace(",", "")) if "," in token else float(token)
        if isfinite(value):
            dot = token.find(".")
            out.append((value, 0 if dot < 0 else len(token) - dot - 1))
    return out


def number_values(text: str) -> list[float]:
    """The values of the numbers written in `text` (`numbers_in` without the decimals)."""
    out: list[float] = []
    for token in (_NUMBERS_ASCII if text.isascii() else _NUMBERS).findall(text):
        value = float(token.replace(",", "")) if "," in token else float(token)
        if isfinite(value):
            out.append(value)
    return out


def parse_number(token: str) -> float | None:
    """Value of a number written as text ("1,234.50" → 1234.5); None if it is not one number."""
    token = token.strip()
    whole, dot, decimals = token.partition(".")
    if whole.isdecimal() and (not dot or decimals.isdecimal()):
        # digits, maybe with decimals ("12.50", the usual case): _PLAIN_NUMBER_RE holds, no regex needed
        # (isdecimal() is exactly the regex's \d); 0.55 -> 0.3 µs
        value = float(token)
        return value if isfinite(value) else None
    if not _PLAIN_NUMBER_RE.match(token):
        return None
    try:
        value = float(token.replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def shown_matches(shown: float, decimals: int, value: float) -> bool:
    """Whether `value` written with `decimals` decimals reads as `shown` (42.5 vs "42.50", 3.14159 vs "3.14")."""
    if shown == value:
        return True
    half_step = 0.5 * 10.0 ** (-decimals)
    return abs(value - shown) <= half_step + 1e-9 * max(1.0, abs(value))


def is_number(value: object) -> bool:
    """A JSON number (int or float, not bool, finite)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class AnswerText:
    """A turn's answer, read once for all of its graders: the text, case-folded, its words holding a digit
    (identifiers, amounts) and the numbers it shows (utilization, numeric references)."""

    __slots__ = ("_digit_words", "_numbers", "folded", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.folded = text.casefold()
        self._digit_words: list[str] | None = None
        self._numbers: list[tuple[float, int]] | None = None

    def digit_words(self) -> list[str]:
        """The whitespace-separated words holding a digit, read on first use."""
        if self._digit_words is None:
            self._digit_words = (_DIGIT_WORD_ASCII if self.text.isascii() else _DIGIT_WORD).findall(self.text)
        return self._digit_words

    def numbers(self) -> list[tuple[float, int]]:
        """`numbers_in(text)`, read on first use."""
        if self._numbers is None:
            # A number holds no white space and the number pattern looks one character to either side of it:
            # the digit words hold the same numbers as the whole answer, and are shorter.
            words = self.digit_words()
            numbers = _plain_numbers(words) if self.text.isascii() else None
            if numbers is None:
                numbers = numbers_in(" ".join(words)) if words else []
            self._numbers = numbers
        return self._numbers


# ASCII characters that are neither word characters (\w) nor white space: punctuation after a number.
_TRAILING = "".join(c for c in map(chr, range(128)) if not (c.isalnum() or c == "_" or c.isspace()))


def _plain_numbers(words: list[str]) -> list[tuple[float, int]] | None:
    """`numbers_in` of ASCII digit words that are each a plain number maybe followed by punctuation; else None.

    "2", "12.50." or "3)," hold exactly that number: it starts the word, the punctuation after it (no word
    character, no digit) ends it and holds no digit to start another. One float() per word instead of a regex
    scan: 6.5k instructions less per answer such as "Order 2 refunded: 12.50 EUR." (fuzzed against numbers_in).
    """
    out: list[tuple[float, int]] = []
    for word in words:
        core = word.rstrip(_TRAILING)
        whole, dot, decimals = core.partition(".")
        if not (whole.isdigit() and (not dot or decimals.isdigit())):
            return None
        value = float(core)
        if isfinite(value):
            out.append((value, len(decimals)))
    return out
