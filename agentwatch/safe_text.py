"""Text from outside (conversation ids, agent names, reviewer names) made safe to print: on one line, inert.

A newline in a value logged by a service would start a line that looks like a log record of its own (a forged
`INFO … signed in`), and an escape sequence printed on a terminal can move the cursor, rewrite the title or
hide what follows. `one_line` shows every such character as an escape (`\\n`, `\\x1b`, `\\u202e`) instead;
`OneLineFormatter` applies it to every log message (the CLI installs it), keeping tracebacks on their lines.

On a web page line breaks are harmless but the bidirectional overrides and isolates are not: a tool named
`"\\u202eredro_dnufer"` reads as `refund_order`, and the page's own text after it runs backwards.
`html_escape` (the HTML report) and `no_reordering` (the review page's templates) show them as escapes too.
Standard library only.
"""

from __future__ import annotations

import html
import logging

# C0 controls but tab, DEL, C1 controls, and the characters that break or reorder lines on display: NEL,
# line and paragraph separators, bidirectional overrides and isolates
_UNSAFE = [*range(0x00, 0x09), *range(0x0A, 0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029]
_UNSAFE += [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_ESCAPES = {
    c: ("\\n" if c == 0x0A else "\\r" if c == 0x0D else f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}")
    for c in _UNSAFE
}
_TRACEBACK = {c: e for c, e in _ESCAPES.items() if c != 0x0A}  # a traceback keeps its own newlines
_REORDERING = {c: _ESCAPES[c] for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]}


def one_line(text: str) -> str:
    """`text` with every control, line-breaking or reordering character shown as an escape."""
    return text.translate(_ESCAPES)


def inert(text: str) -> str:
    """`text` with its newlines kept and every other control or reordering character shown as an escape."""
    return text.translate(_TRACEBACK)


def no_reordering(text: str) -> str:
    """`text` with every bidirectional override or isolate shown as an escape (for a web page)."""
    return text.translate(_REORDERING)


def html_escape(text: str) -> str:
    """`text` escaped for HTML (quotes too), its bidirectional overrides and isolates shown as escapes."""
    return html.escape(text.translate(_REORDERING))


class OneLineFormatter(logging.Formatter):
    """A formatter whose messages stay on one line and carry no terminal control (tracebacks keep their lines)."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - the logging API's name
        record.message = one_line(record.message)
        return super().formatMessage(record)

    def formatException(self, ei: object) -> str:  # noqa: N802
        return inert(super().formatException(ei))  # type: ignore[arg-type]

    def formatStack(self, stack_info: str) -> str:  # noqa: N802
        return inert(super().formatStack(stack_info))
