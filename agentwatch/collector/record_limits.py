"""The byte bounds of the records the collector writes, fitted at start under what the broker's topics take.

A broker refuses a record larger than its topic's `max.message.bytes` (Kafka: the broker's `message.max.bytes`,
1,048,588 by default, unless the topic sets its own); the producer's flush then fails, and the collector, which
commits nothing past a lost record, stops on the same conversation at every restart. The collector bounds its
scores, transcripts and dead letters itself (`collector.max_score_bytes`, `max_transcript_bytes`,
`max_dead_letter_bytes`); a topic that takes less than its bound lowers the bound to what the topic takes, with a
warning naming both, and a topic that takes less than any record can be cut to is an error at start naming the
topic. A topic whose limit the broker does not describe (Tansu sets none unless the topic was created with one)
keeps the configured bound.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from agentwatch.config import CollectorConfig, ConfigError

log = logging.getLogger(__name__)

# What the broker counts and the collector's bounds do not: the record batch's header (61 bytes) and each
# record's and header's length fields, a few bytes each.
BATCH_ROOM = 1024
# The smallest bound each setting accepts (its `ge`), what the cuts need to keep a record's verdict.
SMALLEST = 10_000


@dataclass(frozen=True, slots=True)
class RecordLimits:
    """The largest score, transcript and dead-letter record the collector writes, key and headers counted."""

    score: int
    transcript: int
    dead_letter: int


def fit_record_limits(config: CollectorConfig, largest: Mapping[str, int]) -> RecordLimits:
    """`config`'s record bounds, each lowered to what its topic takes (`largest`: bytes by topic);
    ConfigError naming the topic when one takes less than `SMALLEST` bytes more than `BATCH_ROOM`."""

    def fitted(setting: str, configured: int, topic: str | None) -> int:
        taken = largest.get(topic) if topic is not None else None
        if taken is None or taken - BATCH_ROOM >= configured:
            return configured
        if taken - BATCH_ROOM < SMALLEST:
            raise ConfigError(
                f"topic {topic!r} takes records of at most {taken:,} bytes (its max.message.bytes); "
                f"collector.{setting} needs at least {SMALLEST + BATCH_ROOM:,}: raise the topic's "
                "max.message.bytes or write to another topic"
            )
        log.warning(
            "topic %r takes records of at most %s bytes (its max.message.bytes): collector.%s lowered from %s "
            "to %s",
            topic,
            f"{taken:,}",
            setting,
            f"{configured:,}",
            f"{taken - BATCH_ROOM:,}",
        )
        return taken - BATCH_ROOM

    limits = RecordLimits(
        score=fitted("max_score_bytes", config.max_score_bytes, config.scores_topic),
        transcript=fitted("max_transcript_bytes", config.max_transcript_bytes, config.transcripts_topic),
        dead_letter=fitted("max_dead_letter_bytes", config.max_dead_letter_bytes, config.dead_letter_topic),
    )
    _warn_rekey_smaller(config, largest)
    return limits


def _warn_rekey_smaller(config: CollectorConfig, largest: Mapping[str, int]) -> None:
    """Warn when the re-key topic takes smaller records than an input topic: a re-keyed message is about the
    size of the message it came from, and one the re-key topic refuses stops the collector on it."""
    rekey = largest.get(config.rekey_topic)
    if rekey is None:
        return
    for topic in (*config.input_topics, *config.log_topics):
        taken = largest.get(topic)
        if taken is not None and taken > rekey:
            log.warning(
                "topic %r takes records of up to %s bytes, the re-key topic %r of up to %s: a message re-keyed "
                "from it may be refused; give %r the same max.message.bytes",
                topic,
                f"{taken:,}",
                config.rekey_topic,
                f"{rekey:,}",
                config.rekey_topic,
            )
