"""The command in an agent's text, as SWE-agent's and mini-swe-agent's parsers find it (`importers.swe_agent`).

SWE-agent's ThoughtActionParser takes the last fenced block not nested in another, its XMLThoughtActionParser what
the last `<command>` tags hold. mini-swe-agent takes the one match of its `action_regex` (`re.findall`, DOTALL;
more than one is a format error), the run's own where its config logs one. A pattern ending in a literal closing
(```` \\n``` ````, `</mswea_bash_command>`) is searched only up to the last closing the text holds: each opening
after it would be searched to the end of the text for nothing, and a message of 20,000 unclosed openings took a
minute per pattern; the matches are the same. A run's own pattern comes with the file, so it is matched by RE2,
in time linear in the text whatever the pattern (with Python's `re`, `((?:a+)+)` before a closing that is not there
took 0.08 s at 22 a's and twice as long with every two more), unless RE2 does not take it (lookaround,
backreferences): then by `re`, as mini-swe-agent matches it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import re2


class TrajectoryError(ValueError):
    """A trajectory that cannot be read (the message says what is wrong, and where)."""


# mini-swe-agent's `action_regex` defaults: 2.x (`mswea_bash_command` fence), 1.x (`bash` fence), its XML config
MINI_PATTERNS = (
    r"```mswea_bash_command\s*\n(.*?)\n```",
    r"```bash\s*\n(.*?)\n```",
    r"<mswea_bash_command>(.*?)</mswea_bash_command>",
)
# SWE-agent's ThoughtActionParser: fence openings and closings, the action the last block not nested in another
_FENCE = re.compile(r"^```(\S*)\s*\n|^```\s*$", re.MULTILINE)
_ESCAPED = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v"}
_META = frozenset(".^$*+?{}[]|()")
_LONG_ESCAPES = frozenset("xuUN0123456789")


def message_text(content: Any) -> str | None:
    """A message's content as text: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p if isinstance(p, str) else p.get("text") for p in content if isinstance(p, (str, dict))]
        texts = [p for p in parts if isinstance(p, str)]
        return "\n".join(texts) if texts else None
    return None


def _closing(pattern: str) -> str:
    """The literal text every match of `pattern` ends with ("" when it cannot be told: an alternation, an anchor
    or a group of another kind (`(?`) anywhere, or no literal end)."""
    if "|" in pattern or "$" in pattern or "(?" in pattern or "\\Z" in pattern:
        return ""
    tail: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            escaped = pattern[i + 1]
            i += 2
            if escaped in _ESCAPED or not escaped.isalnum():
                tail.append(_ESCAPED.get(escaped, escaped))
            elif escaped in _LONG_ESCAPES:  # `\x41`, `\N{…}`, `\12`: the characters after it are its own
                return ""
            else:  # a class (`\s`), a boundary: no literal
                tail = []
            continue
        i += 1
        if char in _META:
            tail = []
        else:
            tail.append(char)
    if pattern.endswith(("*", "+", "?", "}")) or not tail:
        return ""
    return "".join(tail)


# RE2 as mini-swe-agent's DOTALL reads a pattern; a pattern it refuses is an error to fall back on, not a log line.
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.dot_nl = True
_RE2_OPTIONS.log_errors = False


@lru_cache(maxsize=64)
def _compiled(pattern: str) -> tuple[Any, str]:
    """`pattern` compiled with DOTALL (a run's own pattern by RE2 where RE2 takes it) and its literal closing."""
    if pattern not in MINI_PATTERNS:
        try:
            return re2.compile(pattern, _RE2_OPTIONS), _closing(pattern)
        except re2.error:
            pass  # lookaround or a backreference: Python's re, as mini-swe-agent itself
    return re.compile(pattern, re.DOTALL), _closing(pattern)


def commands_found(pattern: str, text: str) -> list[str]:
    """What `re.findall(pattern, text, re.DOTALL)` finds (stripped), in time linear in the text for a pattern
    of mini-swe-agent's shape (an opening, `(.*?)`, a literal closing)."""
    compiled, closing = _compiled(pattern)
    if closing:
        end = text.rfind(closing)
        if end < 0:
            return []
        text = text[: end + len(closing)]
    return [a.strip() for a in compiled.findall(text)]


def mini_command(message: dict[str, Any], patterns: Sequence[str]) -> str | None:
    """The one command of a mini-swe-agent assistant message: the `extra.actions` it logged, else the one match
    of the first of `patterns` that matches (more than one is a format error, as mini-swe-agent reads it)."""
    extra = message.get("extra")
    actions = extra.get("actions") if isinstance(extra, dict) else None
    if isinstance(actions, list) and len(actions) == 1 and isinstance(actions[0], dict):
        command = actions[0].get("command")
        if isinstance(command, str):
            return command
    text = message_text(message.get("content"))
    if not text:
        return None
    for pattern in patterns:
        found = commands_found(pattern, text)
        if found:
            return found[0] if len(found) == 1 else None
    return None


def mini_patterns(record: Any) -> Sequence[str]:
    """The `action_regex` the run was configured with (model config since 2.0, agent config before), else the
    defaults; TrajectoryError for one that cannot read a command (no regular expression, or more than one
    group: `re.findall` then finds tuples, and mini-swe-agent's run stops)."""
    info = record.get("info") if isinstance(record, dict) else None
    config = info.get("config") if isinstance(info, dict) else None
    for part in ("model", "agent"):
        section = config.get(part) if isinstance(config, dict) else None
        regex = section.get("action_regex") if isinstance(section, dict) else None
        if isinstance(regex, str) and regex:
            where = f"info.config.{part}.action_regex {regex[:60]!r}"
            try:
                groups = _compiled(regex)[0].groups
            except (re.error, RecursionError, OverflowError) as exc:
                raise TrajectoryError(f"{where} is no regular expression: {exc}") from None
            if groups > 1:
                raise TrajectoryError(f"{where} has {groups} groups: a command is read from one")
            return (regex,)
    return MINI_PATTERNS


def swe_agent_command(text: str) -> str | None:
    """The command of a SWE-agent response as its parsers find it: the last fenced block not nested in another
    (ThoughtActionParser), else what the last `<command>` tags hold (XMLThoughtActionParser)."""
    stack: list[re.Match[str]] = []
    last: tuple[re.Match[str], re.Match[str]] | None = None
    for match in _FENCE.finditer(text):
        if stack and not match.group(1):
            start = stack.pop()
            if not stack:
                last = (start, match)
        elif match.group(1) is not None:
            stack.append(match)
    if last is not None:
        return text[last[0].end() : last[1].start()]
    opening, closing = text.rfind("<command>"), text.rfind("</command>")
    return text[opening + len("<command>") : closing] if 0 <= opening < closing else None
