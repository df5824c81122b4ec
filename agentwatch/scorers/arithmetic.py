"""A safe evaluator of arithmetic written as text: numbers, + − × ÷ (also - * /), parentheses, unary signs.

`430+412-(136+109)` and `(430-136)+(412-109)` are the same amount written two ways; comparing them needs
their values. This is a small recursive-descent parser over a bounded input, never `eval`: anything that is
not a number, one of the four operators or a parenthesis (names, `**`, exponents such as `1e309`, calls)
makes the text "not arithmetic" (None), as do division by zero and results that are not finite.
"""

from __future__ import annotations

from math import isfinite

MAX_LENGTH = 256  # an expression longer than this is not an argument value anyone writes by hand
MAX_DEPTH = 32  # parentheses nested deeper are refused (no recursion limit reached)
_OPERATORS = {"+": "+", "-": "-", "−": "-", "*": "*", "×": "*", "/": "/", "÷": "/"}
_DIGITS = frozenset("0123456789")


class _NotArithmetic(ValueError):
    """The text is not an arithmetic expression this parser accepts."""


def _tokens(text: str) -> list[str | float]:
    """Numbers (as floats) and operator/parenthesis symbols, in order; _NotArithmetic on anything else."""
    out: list[str | float] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in _DIGITS or (ch == "." and i + 1 < n and text[i + 1] in _DIGITS):
            j = i
            while j < n and (text[j] in _DIGITS or text[j] in ".,"):
                j += 1
            out.append(_number(text[i:j]))
            i = j
        elif ch in _OPERATORS:
            out.append(_OPERATORS[ch])
            i += 1
        elif ch in "()":
            out.append(ch)
            i += 1
        else:
            raise _NotArithmetic(f"unexpected {ch!r}")
    return out


def _number(written: str) -> float:
    """A number as written, thousands separators allowed ("1,234.50"); raise _NotArithmetic if malformed."""
    whole, dot, decimals = written.partition(".")
    groups = whole.split(",")
    if (
        (dot and not decimals.isdigit())
        or not all(g.isdigit() for g in groups[1:])
        or any(len(g) != 3 for g in groups[1:])
        or (len(groups) > 1 and not 1 <= len(groups[0]) <= 3)
        or not (groups[0].isdigit() or (groups[0] == "" and len(groups) == 1 and dot))
    ):
        raise _NotArithmetic(f"malformed number {written!r}")
    return float(whole.replace(",", "") + dot + decimals) if whole else float("0" + dot + decimals)


class _Parser:
    """expression := term (('+'|'-') term)*; term := factor (('*'|'/') factor)*;
    factor := ('+'|'-') factor | number | '(' expression ')'."""

    __slots__ = ("depth", "pos", "tokens")

    def __init__(self, tokens: list[str | float]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.depth = 0

    def _peek(self) -> str | float | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def expression(self) -> float:
        value = self.term()
        while (op := self._peek()) in ("+", "-"):
            self.pos += 1
            right = self.term()
            value = value + right if op == "+" else value - right
        return value

    def term(self) -> float:
        value = self.factor()
        while (op := self._peek()) in ("*", "/"):
            self.pos += 1
            right = self.factor()
            if op == "*":
                value *= right
            elif right == 0:
                raise _NotArithmetic("division by zero")
            else:
                value /= right
        return value

    def factor(self) -> float:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _NotArithmetic("nested too deeply")
        token = self._peek()
        self.pos += 1
        if isinstance(token, float):
            value = token
        elif token in ("+", "-"):
            value = self.factor()
            value = -value if token == "-" else value
        elif token == "(":
            value = self.expression()
            if self._peek() != ")":
                raise _NotArithmetic("unbalanced parenthesis")
            self.pos += 1
        else:
            raise _NotArithmetic(f"expected a number, got {token!r}")
        self.depth -= 1
        return value


def evaluate(text: str) -> float | None:
    """The value of an arithmetic expression written as text, or None when it is not one (or not finite)."""
    if len(text) > MAX_LENGTH:
        return None
    try:
        tokens = _tokens(text)
        if not tokens:
            return None
        parser = _Parser(tokens)
        value = parser.expression()
        if parser.pos != len(tokens):
            return None
    except (_NotArithmetic, OverflowError):
        return None
    return value if isfinite(value) else None


def number_value(value: object) -> float | None:
    """A JSON number, or a string holding a number or an arithmetic expression, as a float; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:  # an integer past a float's range (JSON allows 400 digits)
            return None
        return number if isfinite(number) else None
    if isinstance(value, str):
        return evaluate(value.strip().lstrip("$€£").strip())
    return None
