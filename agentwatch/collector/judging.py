"""Conversations waiting for the judge: verdicts come back on the judge's threads, scores leave on the consumer's.

The consume thread hands a finished, judge-sampled conversation to the `JudgeRunner` and goes on consuming.
Each waiting conversation holds back the offsets of its partition (from the lowest offset holding one of its
spans), so nothing is committed past a conversation whose verdict is not flushed: a crash replays it, and the
verdict cache makes the replay free. When too many are waiting, `JudgeBackpressure` pauses the service's
partitions instead of buffering without bound: too many conversations (`collector.max_pending_verdicts`) or too
many bytes of them (`collector.max_pending_bytes`, counted as the assembler counts them).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass

from confluent_kafka import Consumer

from agentwatch.collector.metrics import PipelineStats
from agentwatch.judge.verdict import JudgeVerdict
from agentwatch.wire.schema import Conversation

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Waiting:
    conversation: Conversation
    partition: int
    min_offset: int
    verdict: Future[JudgeVerdict]
    ids: tuple[str | None, str | None]  # trace and span id of its last turn
    nbytes: int = 0


class PendingVerdicts:
    """Judge-sampled conversations whose verdict has not been scored yet, by partition."""

    def __init__(self) -> None:
        self._waiting: list[_Waiting] = []
        self.nbytes = 0  # estimated bytes of the waiting conversations

    def __len__(self) -> int:
        return len(self._waiting)

    def add(
        self,
        conv: Conversation,
        partition: int,
        min_offset: int,
        verdict: Future[JudgeVerdict],
        ids: tuple[str | None, str | None] = (None, None),
        nbytes: int = 0,
    ) -> None:
        """Hold `conv` (read from `partition` from `min_offset` on; `ids`: its last turn's trace and span id;
        `nbytes` its estimated size) until `verdict` is done."""
        self._waiting.append(_Waiting(conv, partition, min_offset, verdict, ids, nbytes))
        self.nbytes += nbytes

    def ready(self) -> list[tuple[Conversation, JudgeVerdict, tuple[str | None, str | None]]]:
        """The conversations whose verdict is done, released in the order they finished."""
        if not self._waiting:
            return []
        keep: list[_Waiting] = []
        done: list[_Waiting] = []
        for (
            w
        ) in self._waiting:  # one look at each future: one that completes meanwhile waits for the next call
            (done if w.verdict.done() else keep).append(w)
        self._waiting = keep
        self.nbytes -= sum(w.nbytes for w in done)
        return [(w.conversation, w.verdict.result(), w.ids) for w in done]

    def low_offset(self, partition: int) -> int | None:
        """The lowest offset a waiting conversation holds on `partition`, if any."""
        offsets = [w.min_offset for w in self._waiting if w.partition == partition and w.min_offset >= 0]
        return min(offsets) if offsets else None

    def forget(self, partitions: Iterable[int]) -> int:
        """Drop the conversations of revoked partitions (their new owner replays them); how many."""
        gone = set(partitions)
        before = len(self._waiting)
        self._waiting = [w for w in self._waiting if w.partition not in gone]
        self.nbytes = sum(w.nbytes for w in self._waiting)
        return before - len(self._waiting)


class JudgeBackpressure:
    """Pauses every assigned partition while too many conversations, or too many bytes of them, wait for the
    judge, and resumes once both are at most half their limit."""

    def __init__(
        self, pending: PendingVerdicts, max_pending: int, max_bytes: int, stats: PipelineStats
    ) -> None:
        self.pending = pending
        self.max_pending = max(1, max_pending)
        self.max_bytes = max_bytes
        self.stats = stats
        self.paused = False

    def pause_if_full(self, consumer: Consumer | None) -> None:
        """Pause consuming when the waiting conversations reach either limit."""
        full = len(self.pending) >= self.max_pending or self.pending.nbytes >= self.max_bytes
        if not self.paused and full:
            self._set_paused(consumer, True)

    def resume_if_drained(self, consumer: Consumer | None) -> None:
        """Resume consuming once the waiting conversations are at most half of both limits."""
        if (
            self.paused
            and len(self.pending) <= self.max_pending // 2
            and self.pending.nbytes <= self.max_bytes // 2
        ):
            self._set_paused(consumer, False)

    def _set_paused(self, consumer: Consumer | None, paused: bool) -> None:
        """Pause (or resume) every assigned partition: the judge is the bottleneck, memory must not grow."""
        assert consumer is not None
        assignment = consumer.assignment()
        if paused:
            consumer.pause(assignment)
            self.stats.judge_pauses += 1
            log.info("%d conversations wait for the judge: consumption paused", len(self.pending))
        else:
            consumer.resume(assignment)
            log.info("consumption resumed (%d conversations wait for the judge)", len(self.pending))
        self.paused = paused
