"""What the review service does when the store cannot take a transcript record: a record whose content the
database refuses is counted invalid and passed (retrying it would stop its partition for good); a database that
is away makes the service seek back and retry the same record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import DataError, OperationalError

from agentwatch.review.service import ReviewService
from tests.support.review import conversation, record, review_settings, scored


class _Message:
    """A consumed Kafka message, as far as the service reads one."""

    def __init__(self, offset: int, value: bytes) -> None:
        self._offset, self._value = offset, value

    def error(self) -> None:
        return None

    def value(self) -> bytes:
        return self._value

    def topic(self) -> str:
        return "transcripts"

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._offset


class _Consumer:
    """Records the offsets stored and the seeks made."""

    def __init__(self) -> None:
        self.stored: list[int] = []
        self.seeks: list[int] = []

    def store_offsets(self, message: _Message) -> None:
        self.stored.append(message.offset())

    def seek(self, partition: Any) -> None:
        self.seeks.append(partition.offset)


def _messages(n: int) -> list[_Message]:
    out = []
    for i in range(n):
        conv = conversation(f"c{i}")
        out.append(_Message(i, record(conv, scored(conv)).model_dump_json().encode()))
    return out


def _service(tmp_path: Path, refusal: Exception) -> ReviewService:
    service = ReviewService(review_settings("127.0.0.1:9", tmp_path, publish_retry_s=0.01))
    ingest = service.store.ingest

    def refuse_the_first(record: Any, *args: Any, **kwargs: Any) -> str:
        if record.score.conversation_id == "c0":
            raise refusal
        return ingest(record, *args, **kwargs)

    service.store.ingest = refuse_the_first  # type: ignore[method-assign]
    return service


def test_a_record_the_database_refuses_is_counted_invalid_and_the_next_ones_are_stored(
    tmp_path: Path,
) -> None:
    service = _service(tmp_path, DataError("INSERT …", {}, Exception("text fields cannot contain NUL")))
    consumer = _Consumer()
    assert service._store_batch(consumer, _messages(3)) == 3  # type: ignore[arg-type]
    assert consumer.stored == [0, 1, 2] and consumer.seeks == []
    assert service.stats.ingested == {"invalid": 1, "stored": 2}


@pytest.mark.parametrize("outage", [OperationalError("SELECT …", {}, Exception("connection refused"))])
def test_a_database_that_is_away_makes_the_service_seek_back_to_the_record(
    tmp_path: Path, outage: Exception
) -> None:
    service = _service(tmp_path, outage)
    consumer = _Consumer()
    assert service._store_batch(consumer, _messages(3)) == 0  # type: ignore[arg-type]
    assert consumer.stored == [] and consumer.seeks == [0]
    assert service.stats.ingested == {}
