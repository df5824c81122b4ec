"""A readable stream made of another, a block at a time, each block changed on the way (re-encoded, its line
ends rewritten): what `io.BufferedReader` wraps to read it line by line."""

from __future__ import annotations

import io
from abc import abstractmethod

BLOCK = 64 * 1024


class BlockStream(io.RawIOBase):
    """The bytes of `source`, read `BLOCK` at a time and passed through `convert`."""

    def __init__(self, source: io.BufferedIOBase) -> None:
        self._source = source
        self._pending = b""

    @abstractmethod
    def convert(self, block: bytes, final: bool) -> bytes:
        """What `block` becomes (`final`: the source ended, `block` is empty: what was held back is due)."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._pending:
            block = self._source.read1(BLOCK)
            self._pending = self.convert(block, final=not block)
            if not block:
                break
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n
