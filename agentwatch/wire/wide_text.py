"""Transcript files written as UTF-16 or UTF-32 (PowerShell's `>` writes UTF-16), read as the UTF-8 they hold.

Read as UTF-8, every line of such a file is malformed and the reasons (`not UTF-8 at byte 0`, `Expecting
value`) do not say why. `wide_encoding` names the encoding from a byte order mark, or from the zero bytes around
the `{` or `[` a JSON file starts with; `as_utf8` decodes the stream as it is read, a block at a time, so that a
line is still read no more than its bound at a time. A lone surrogate is replaced by U+FFFD, as a lone surrogate
escape in UTF-8 JSON is.
"""

from __future__ import annotations

import codecs
import io

from agentwatch.wire.block_stream import BlockStream

_BOMS = (  # UTF-32's first: its little-endian mark starts with UTF-16's
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_STARTS = b"{["


def wide_encoding(head: bytes) -> str | None:
    """The encoding of a file starting with `head` (4 bytes or more) when it is UTF-16 or UTF-32; else None."""
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return encoding
    if len(head) < 4 or head[:1] not in (b"{", b"[", b"\x00"):
        return None
    if head[1:4] == b"\x00\x00\x00" and head[0] in _STARTS:
        return "utf-32-le"
    if head[:3] == b"\x00\x00\x00" and head[3] in _STARTS:
        return "utf-32-be"
    if head[1] == 0 and head[3] == 0 and head[0] in _STARTS and head[2] != 0:
        return "utf-16-le"
    if head[0] == 0 and head[2] == 0 and head[1] in _STARTS and head[3] != 0:
        return "utf-16-be"
    return None


class _Recoded(BlockStream):
    """The UTF-8 bytes of a stream of text in another encoding, decoded a block at a time."""

    def __init__(self, source: io.BufferedIOBase, encoding: str) -> None:
        super().__init__(source)
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")

    def convert(self, block: bytes, final: bool) -> bytes:
        """The block's text as UTF-8 (a character cut at the block's end held for the next)."""
        return self._decoder.decode(block, final=final).encode("utf-8", "replace")


def as_utf8(source: io.BufferedIOBase, encoding: str) -> io.BufferedReader:
    """`source`, text in `encoding`, as a stream of its UTF-8 bytes (a byte order mark dropped)."""
    return io.BufferedReader(_Recoded(source, encoding))
