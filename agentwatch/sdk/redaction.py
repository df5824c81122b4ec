"""Secrets in captured values: the key names that redact a whole value, and the patterns that redact part of a text.

Standard library only (`re`), and nothing here raises into the agent: a pattern that fails redacts the whole
text instead (`REDACTED`). Patterns look only at the first `max_chars` characters of a text (the capture keeps
fewer), so a huge argument costs a bounded scan. Precision and recall on a corpus of real-looking secrets and
near misses are measured by `tests/unit/test_sdk_redaction.py` (docs/sdk.md, Redaction).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable

log = logging.getLogger(__name__)

REDACTED = "[REDACTED]"

# A key is secret when one of these is a whole word of it (snake_case, camelCase, kebab-case and dotted keys are
# split into words first): `db_password`, `userPwd`, `X-Api-Key`, `aws.secret_access_key`.
DEFAULT_REDACT_KEYS: tuple[str, ...] = (
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "secret",
    "token",
    "api_key",
    "apikey",
    "authorization",
    "auth",
    "credential",
    "credentials",
    "private_key",
    "access_key",
    "cookie",
    "cookies",
    "set_cookie",
    "jwt",
    "session_key",
    "connection_string",
    "dsn",
)

# name -> pattern; group "secret" (when present) is what is replaced, else the whole match. Each starts with a
# literal or a character class so that `re` can skip to candidates quickly (a pattern opening with `\b` or an
# alternation under (?i) is scanned position by position: ~100x slower on an 8 KB text).
DEFAULT_VALUE_PATTERNS: dict[str, str] = {
    "private_key_block": (
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----"
        r"(?:[\s\S]*?-----END[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----|[\s\S]*\Z)"
    ),
    "url_credentials": r"://[^\s:/?#@\[\]]{0,256}:(?P<secret>[^\s/?#@]{1,256})@",
    "bearer": r"[Bb][Ee][Aa][Rr][Ee][Rr]\s+(?P<secret>[A-Za-z0-9\-._~+/]{8,}=*)",
    "basic_auth_header": (
        r"[Aa][Uu][Tt][Hh][Oo][Rr][Ii][Zz][Aa][Tt][Ii][Oo][Nn]\W{0,3}\s*[Bb][Aa][Ss][Ii][Cc]\s+"
        r"(?P<secret>[A-Za-z0-9+/]{6,}={0,2})"
    ),
    # starts only where a token can start: at every "eyJ" of "eyJeyJeyJ…" the run was read to its end again
    # (9 KB of it took 22 ms)
    "jwt": r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
    "aws_access_key_id": r"A(?:KIA|SIA|BIA|CCA|GPA|IDA|IPA|ROA|NPA|NVA)[A-Z0-9]{16}(?![A-Z0-9])",
    "aws_secret_access_key": (
        r"[Aa][Ww][Ss].{0,20}?[Ss][Ee][Cc][Rr][Ee][Tt].{0,20}?\W\s*[\"']?(?P<secret>[A-Za-z0-9/+=]{40})"
        r"(?![A-Za-z0-9/+=])"
    ),
    "openai_anthropic_key": r"sk-(?:proj-|ant-|svcacct-)?[A-Za-z0-9_\-]{20,}",
    "github_token": r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}",
    "slack_token": r"xox[abposr]-[A-Za-z0-9\-]{10,}",
    "stripe_key": r"[srp]k_live_[A-Za-z0-9]{16,}",
    "google_api_key": r"AIza[0-9A-Za-z_\-]{35}",
    "gitlab_token": r"glpat-[A-Za-z0-9_\-]{20,}",
    # `password=…`, `"api_key": "…"`, `PGPASSWORD=…`: a secret word just before `=` or `:` (the default set runs
    # it as `assignment_secret`, which finds the words with `str.find`: the same matches, without trying the pattern
    # at every position)
    "assignment": (
        r"(?i)(?:password|passwd|passphrase|pwd|secret|api[_-]?key|apikey|token|private[_-]?key)[\"']?\s*[:=]"
        r"\s*[\"']?(?P<secret>[^\s\"',;&}{]{6,})"
    ),
}
MIN_CHARS = 12  # no default pattern matches a shorter text (the shortest secret with its context is longer)
_AFTER_WORD = re.compile(r"[\"']?\s*[:=]\s*[\"']?(?P<secret>[^\s\"',;&}{]{6,})")
_SECRET_WORDS = (
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "secret",
    "api_key",
    "api-key",
    "apikey",
    "token",
    "private_key",
    "private-key",
)
# the default patterns that open with a character class are run only when their word is in the text at all
_TRIGGERS = {
    "bearer": ("bearer",),
    "basic_auth_header": ("basic",),
    "aws_secret_access_key": ("secret",),
    "stripe_key": ("_live_",),
    "assignment": ("pass", "pwd", "secret", "key", "token"),
}

Rule = Callable[[str, str], str]  # (text, its ascii_lower as it was before any rule ran) -> text


def ascii_lower(text: str) -> str:
    """`text` in lower case, one character for one (non-ASCII characters become `?`): positions match `text`."""
    return text.encode("ascii", "replace").decode("ascii").lower()


def assignment_secret(text: str) -> str:
    """`text` with the value after `<secret word>=` or `<secret word>:` replaced (the `assignment` pattern),
    found word first with `str.find` (the pattern itself is tried at every position)."""
    low = ascii_lower(text)
    spans: list[tuple[int, int]] = []
    for word in _SECRET_WORDS:
        at = low.find(word)
        while at >= 0:
            after = at + len(word)
            found = _AFTER_WORD.match(text, after)
            if found is not None:
                spans.append(found.span("secret"))
            at = low.find(word, after)
    if not spans:
        return text
    parts, last = [], 0
    for begin, end in sorted(spans):
        if begin < last:  # inside (or overlapping) a value already replaced
            last = max(last, end)
            continue
        parts += [text[last:begin], REDACTED]
        last = end
    parts.append(text[last:])
    return "".join(parts)


def compile_patterns(patterns: dict[str, str] | Iterable[str | re.Pattern[str]]) -> list[Rule]:
    """The rules of patterns (a `dict` of named ones, or strings and compiled patterns): each replaces what its
    pattern finds; ValueError names a pattern that is not a regular expression."""
    items = patterns.items() if isinstance(patterns, dict) else enumerate(patterns)
    out: list[Rule] = []
    for name, pattern in items:
        default = isinstance(name, str) and pattern == DEFAULT_VALUE_PATTERNS.get(name)
        if default and name == "assignment":
            out.append(_triggered(lambda text, _low: assignment_secret(text), _TRIGGERS["assignment"]))
            continue
        if not isinstance(pattern, re.Pattern):
            try:
                pattern = re.compile(pattern)
            except (re.error, TypeError) as exc:  # TypeError: not a string (a number, None)
                raise ValueError(
                    f"redaction pattern {name!r} is not a valid regular expression: {exc}"
                ) from None
        rule = _rule(pattern)
        triggers = _TRIGGERS.get(str(name)) if default else None
        out.append(_triggered(rule, triggers) if triggers else rule)
    return out


def _rule(pattern: re.Pattern[str]) -> Rule:
    if pattern.groupindex.get("secret"):
        return lambda text, _low: pattern.sub(_keep_around_secret, text)
    return lambda text, _low: pattern.sub(REDACTED, text)


def _triggered(rule: Rule, words: tuple[str, ...]) -> Rule:
    """`rule`, run only when one of `words` is in the (lower-case) text."""

    def run(text: str, low: str) -> str:
        return rule(text, low) if any(w in low for w in words) else text

    return run


def shortest_match(patterns: dict[str, str] | Iterable[str | re.Pattern[str]]) -> int:
    """Characters a text needs before one of `patterns` can match in it: `MIN_CHARS` for the default patterns
    (or some of them), 1 as soon as one pattern is the user's (`TCK-\\d{6}` matches 10)."""
    if isinstance(patterns, dict) and all(DEFAULT_VALUE_PATTERNS.get(k) == v for k, v in patterns.items()):
        return MIN_CHARS
    return 1


class ValueRedactor:
    """Replaces the secrets the rules find in a text with `REDACTED`; texts shorter than `min_chars` (what the
    shortest match needs) are not searched."""

    __slots__ = ("max_chars", "min_chars", "rules")

    def __init__(self, rules: list[Rule], max_chars: int, min_chars: int = MIN_CHARS) -> None:
        self.rules = rules
        self.max_chars = max(64, max_chars)
        self.min_chars = min_chars if rules else 1 << 62

    def __call__(self, text: str) -> str:
        """`text` with every secret found replaced (cut to `max_chars` first); never raises."""
        if len(text) < self.min_chars:
            return text
        if len(text) > self.max_chars:
            text = text[: self.max_chars]
        try:
            low = ascii_lower(text)
            for rule in self.rules:
                text = rule(text, low)
        except Exception:  # noqa: BLE001 - a redaction that fails must hide everything, never raise
            log.debug("agentwatch: a redaction pattern failed; the whole value is redacted", exc_info=True)
            return REDACTED
        return text


def _keep_around_secret(match: re.Match[str]) -> str:
    whole, start, end = match.group(0), match.start("secret"), match.end("secret")
    if start < 0:
        return whole
    base = match.start()
    return whole[: start - base] + REDACTED + whole[end - base :]
