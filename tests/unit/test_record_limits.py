"""The collector's record bounds fitted under what the broker's topics take (`collector.record_limits`)."""

from __future__ import annotations

import logging
from concurrent.futures import Future

import pytest
from confluent_kafka.admin import ConfigResource

from agentwatch.collector.record_limits import BATCH_ROOM, fit_record_limits
from agentwatch.config import CollectorConfig, ConfigError
from agentwatch.kafka.topics import largest_records


def _config(**values: object) -> CollectorConfig:
    return CollectorConfig.model_validate(
        {
            "scores_topic": "s",
            "transcripts_topic": "t",
            "dead_letter_topic": "d",
            "rekey_topic": "r",
            **values,
        }
    )


def test_topics_the_broker_says_nothing_of_keep_the_configured_bounds() -> None:
    limits = fit_record_limits(_config(max_score_bytes=500_000), {"other": 20_000})
    assert (limits.score, limits.transcript, limits.dead_letter) == (500_000, 1_000_000, 1_000_000)


def test_kafkas_default_limit_leaves_the_default_bounds_as_they_are() -> None:
    limits = fit_record_limits(_config(), dict.fromkeys("stdr", 1_048_588))
    assert (limits.score, limits.transcript, limits.dead_letter) == (1_000_000, 1_000_000, 1_000_000)


def test_a_topic_taking_less_lowers_its_bound_alone_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        limits = fit_record_limits(_config(), {"s": 300_000, "d": 2_000_000})
    assert limits.score == 300_000 - BATCH_ROOM
    assert (limits.transcript, limits.dead_letter) == (1_000_000, 1_000_000)
    (line,) = caplog.messages
    assert "'s'" in line and "collector.max_score_bytes" in line and "1,000,000" in line and "298,976" in line


def test_a_bound_already_under_the_topics_limit_is_kept() -> None:
    limits = fit_record_limits(_config(max_transcript_bytes=50_000), {"t": 50_000 + BATCH_ROOM})
    assert limits.transcript == 50_000
    assert (
        fit_record_limits(_config(max_transcript_bytes=50_000), {"t": 50_000}).transcript
        == 50_000 - BATCH_ROOM
    )


def test_a_topic_too_small_for_any_record_is_an_error_naming_it_and_the_setting() -> None:
    with pytest.raises(ConfigError) as err:
        fit_record_limits(_config(), {"d": 10_000})
    assert "'d'" in str(err.value) and "collector.max_dead_letter_bytes" in str(err.value)
    assert "max.message.bytes" in str(err.value)
    # the smallest the bound accepts, plus the batch's room, is enough
    assert fit_record_limits(_config(), {"d": 10_000 + BATCH_ROOM}).dead_letter == 10_000


def test_no_transcripts_topic_has_nothing_to_fit() -> None:
    limits = fit_record_limits(_config(transcripts_topic=None), {"t": 5_000})
    assert limits.transcript == 1_000_000


def test_a_rekey_topic_smaller_than_an_input_topic_is_warned_of(caplog: pytest.LogCaptureFixture) -> None:
    config = _config(input_topics=["in"])
    with caplog.at_level(logging.WARNING):
        fit_record_limits(config, {"in": 5_000_000, "r": 1_048_588})
    (line,) = caplog.messages
    assert "'in'" in line and "'r'" in line and "5,000,000" in line
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        fit_record_limits(config, {"in": 1_048_588, "r": 1_048_588})
    assert caplog.messages == []


class _Entry:
    def __init__(self, value: str | None) -> None:
        self.value = value


class _Waited(Future[object]):
    """A future that remembers how long each caller was willing to wait for it."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float | None] = []

    def result(self, timeout: float | None = None) -> object:
        self.waits.append(timeout)
        return super().result(timeout)


class _Admin:
    """Answers `describe_configs` with one future per topic: a config, an error, or none in time."""

    def __init__(self, answers: dict[str, object]) -> None:
        self.answers = answers
        self.futures: dict[str, _Waited] = {}

    def describe_configs(self, resources: list[ConfigResource]) -> dict[ConfigResource, _Waited]:
        out: dict[ConfigResource, _Waited] = {}
        for resource in resources:
            future = self.futures[resource.name] = _Waited()
            answer = self.answers[resource.name]
            if isinstance(answer, Exception):
                future.set_exception(answer)
            elif answer is not None:
                future.set_result(answer)
            out[resource] = future
        return out


def test_largest_records_keeps_what_the_broker_said_and_leaves_out_the_rest() -> None:
    admin = _Admin(
        {
            "set": {"max.message.bytes": _Entry("40000"), "retention.ms": _Entry("1")},
            "unset": {"retention.ms": _Entry("1")},
            "refused": RuntimeError("TOPIC_AUTHORIZATION_FAILED"),
            "silent": None,  # never answers
            "mute": None,  # never answers either
            "odd": {"max.message.bytes": _Entry("many")},
        }
    )
    topics = ["set", "unset", "refused", "silent", "mute", "odd"]
    found = largest_records(admin, topics, timeout_s=0.3)  # type: ignore[arg-type]
    assert found == {"set": 40_000}
    # one wait for all: the second topic that never answers is given what the first left of it, nothing
    (first,) = admin.futures["silent"].waits
    assert first is not None and 0 < first <= 0.3
    assert admin.futures["mute"].waits == [0.0]
