"""The failing conversations the HTML report carries: every one listed, its transcript compressed in the page.

`CaseKeeper.offer` sees every conversation as it is scored. A conversation with a failure mode (a reason code
of a failure, or a failed verdict with no other reason: failed by its label) gets an entry — its score — and
its transcript is rendered at once (`conversation_body`) into the current *chunk*; a chunk of about
`CHUNK_BYTES` of HTML is gzip-compressed when full and only the compressed bytes are kept, so memory grows with
the compressed transcripts, not with the input. Once `max_bytes` of compressed transcripts are kept, later
failing conversations are still listed (id, task, why) without a transcript, and the page says how many.

The page decompresses one chunk when one of its conversations is opened: the page stays a few megabytes for
thousands of failing conversations (figures in docs/report.md). A later record of the same conversation
replaces the earlier one, as in the report; one that no longer fails leaves the lists.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field

from agentwatch.report.failure_modes import failure_modes_of
from agentwatch.report.html_conversation import conversation_body
from agentwatch.wire.schema import Conversation, ConversationScore

CHUNK_BYTES = 512 * 1024  # HTML per compressed chunk: what opening one conversation decompresses at most
MAX_CARRIED_BYTES = 32 * 1024 * 1024  # compressed transcripts one page carries


@dataclass(frozen=True, slots=True)
class Case:
    """A conversation's transcript and its score."""

    conversation: Conversation
    score: ConversationScore


@dataclass(slots=True)
class Entry:
    """A failing conversation: its latest score, and where its transcript is (chunk, position), if carried."""

    score: ConversationScore
    chunk: int | None = None
    position: int | None = None

    @property
    def agent_version(self) -> str:
        """'agent version', as the report names a version's section."""
        return f"{self.score.agent} {self.score.version}"


@dataclass(slots=True)
class CaseKeeper:
    """Every failing conversation of the input, with as many transcripts as `max_bytes` of them hold."""

    max_bytes: int = MAX_CARRIED_BYTES
    chunk_bytes: int = CHUNK_BYTES
    entries: dict[tuple[str, str, str], Entry] = field(default_factory=dict)
    chunks: list[bytes] = field(default_factory=list)
    carried_bytes: int = 0
    rendered_bytes: int = 0  # the carried transcripts' HTML before compression (what the page saves)
    _open: list[str] = field(default_factory=list)
    _open_bytes: int = 0

    def offer(self, conversation: Conversation, score: ConversationScore) -> None:
        """Keep this conversation when it fails (or replace the earlier record of it)."""
        key = (score.agent, score.version, score.conversation_id)
        if not failure_modes_of(score):
            self.entries.pop(key, None)
            return
        entry = self.entries[key] = Entry(score)
        if self.carried_bytes >= self.max_bytes:
            return
        body = conversation_body(conversation, score)
        entry.chunk, entry.position = len(self.chunks), len(self._open)
        self._open.append(body)
        self._open_bytes += len(body)
        self.rendered_bytes += len(body.encode("utf-8"))
        if self._open_bytes >= self.chunk_bytes:
            self._close_chunk()

    def _close_chunk(self) -> None:
        if not self._open:
            return
        packed = gzip.compress(json.dumps(self._open, ensure_ascii=False).encode("utf-8"), 6, mtime=0)
        self.chunks.append(packed)
        self.carried_bytes += len(packed)
        self._open, self._open_bytes = [], 0

    def finish(self) -> list[bytes]:
        """The compressed chunks, the last one closed (call once every conversation was offered)."""
        self._close_chunk()
        return self.chunks

    def failing(self, agent_version: str | None = None) -> list[Entry]:
        """The failing conversations (of one `agent version` when given), first seen first."""
        return [e for e in self.entries.values() if agent_version is None or e.agent_version == agent_version]

    @property
    def not_carried(self) -> int:
        """Failing conversations listed without their transcript (the byte budget was spent)."""
        return sum(1 for e in self.entries.values() if e.chunk is None)
