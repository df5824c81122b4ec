"""What the store's listings return: a conversation as the queue shows it, and as the failing list shows it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class QueueItem:
    """One conversation in the queue."""

    id: int
    agent: str
    version: str
    task: str
    sample: str
    at: float
    turns: int
    preview: str


@dataclass(frozen=True, slots=True)
class FailingItem(QueueItem):
    """One failing conversation as listed: why it failed (its failure codes and reasons), and whether a person
    labelled it."""

    failures: str
    labelled: bool
    reasons: list[str]
