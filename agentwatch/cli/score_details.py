"""`agentwatch score --details FILE`: each conversation's full score written as it is scored, one JSON per line.

Written as scoring goes so that the full scores need not be kept until the report is (the report keeps a
compact row of each, `agentwatch.report.rows`). The file is opened at the first score, so an input with no
readable conversation leaves it untouched; a failure to write is kept and reported after the input is read,
where `agentwatch score` reports its other problems.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from agentwatch.wire.schema import ConversationScore


class DetailsFile:
    """The `--details` file: scores appended one per line; `error` says why writing stopped, if it did."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.error: str | None = None
        self._fh: TextIO | None = None

    def write(self, score: ConversationScore) -> None:
        """Append `score` as one JSON line (nothing once writing has failed)."""
        if self.error is not None:
            return
        try:
            if self._fh is None:
                self._fh = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - open across many writes
            self._fh.write(score.model_dump_json() + "\n")
        except OSError as exc:
            self.error = str(exc.strerror or exc)

    def close(self) -> None:
        """Flush and close the file (a failure to flush is kept in `error`)."""
        if self._fh is None:
            return
        try:
            self._fh.close()
        except OSError as exc:
            if self.error is None:
                self.error = str(exc.strerror or exc)
        self._fh = None
