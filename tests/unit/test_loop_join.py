"""The loop join: the earlier traces of a loop the caller runs (loop fragments) are left out where a later trace's
conversation continues them, in files and live, in either order, bounded in time and bytes."""

from __future__ import annotations

from typing import Any

import pytest

from agentwatch.collector.loop_join import LoopJoin, continues, drop_continued, waits_on
from agentwatch.collector.turns import EARLIER_CALLS
from agentwatch.wire.schema import Conversation

ASKED = {"name": "get_weather", "arguments": {"city": "Paris"}, "call_id": "call_1"}
RESULT = {"temperature": 18}


def fragment(cid: str, *calls: dict[str, Any], agent: str = "weather", version: str = "1") -> Conversation:
    """A bare model call's conversation that ended asking for `calls` (no results): a loop fragment."""
    return Conversation.model_validate(
        {
            "conversation_id": cid,
            "agent": agent,
            "version": version,
            "turns": [{"input": "Weather in Paris?", "answer": None, "tool_calls": list(calls or [ASKED])}],
            "not_captured": ["answers", "steps"],
        }
    )


def continuation(
    cid: str, *calls: dict[str, Any], agent: str = "weather", version: str = "1", noted: bool = True
) -> Conversation:
    """A conversation whose first model call's input gave `calls` their results (the rebuild's note says so)."""
    done = [{**c, "result": RESULT} for c in (calls or [ASKED])]
    return Conversation.model_validate(
        {
            "conversation_id": cid,
            "agent": agent,
            "version": version,
            "turns": [{"input": "Weather in Paris?", "answer": "18 degrees.", "tool_calls": done}],
            "notes": [f"{EARLIER_CALLS} for turn(s) 0"] if noted else [],
        }
    )


def test_a_fragment_waits_on_the_calls_it_asked_for_and_nothing_else_does() -> None:
    assert len(waits_on(fragment("a"))) == 1
    answered = fragment("a").model_copy(update={"turns": [continuation("x").turns[0]]})
    assert waits_on(answered) == frozenset()
    assert waits_on(fragment("a").model_copy(update={"not_captured": ["answers"]})) == frozenset()
    failed = fragment("a", {**ASKED, "error": "timeout"})
    assert waits_on(failed) == frozenset()  # the call failed: nothing waits, the stop is the agent's
    assert continues(fragment("a")) == frozenset()
    assert continues(continuation("b", noted=False)) == frozenset()  # its calls are its own
    assert continues(continuation("b")) == waits_on(fragment("a"))


@pytest.mark.parametrize(
    "other",
    [
        continuation("b", agent="another"),
        continuation("b", version="2"),
        continuation("b", {**ASKED, "arguments": {"city": "Lyon"}}),
        continuation("b", {**ASKED, "call_id": "call_2"}),
        continuation("b", {**ASKED, "name": "get_forecast"}),
        continuation("b", noted=False),
    ],
    ids=["agent", "version", "arguments", "call id", "tool", "no earlier calls"],
)
def test_a_fragment_is_kept_beside_a_conversation_that_does_not_continue_it(other: Conversation) -> None:
    convs = [fragment("a"), other]
    assert drop_continued(convs) == (convs, 0)


def test_every_earlier_step_of_a_three_step_loop_is_left_out_in_any_order() -> None:
    second_call = {"name": "get_forecast", "arguments": {"city": "Paris", "days": 2}, "call_id": "call_2"}
    first = fragment("a")
    second = fragment("b", second_call).model_copy(update={"notes": [f"{EARLIER_CALLS} for turn(s) 0"]})
    second.turns[0].tool_calls.insert(0, continuation("x").turns[0].tool_calls[0])
    last = continuation("c", ASKED, second_call)
    assert drop_continued([first, second, last]) == ([last], 2)
    assert drop_continued([last, second, first]) == ([last], 2)
    assert drop_continued([first, second]) == ([second], 1)  # the last trace never came: the second stands


def test_ids_that_repeat_across_conversations_match_only_with_the_same_arguments() -> None:
    """Gemini's calls have no ids: the rebuild names them `get_weather_0` in every conversation."""
    paris = {"name": "get_weather", "arguments": {"city": "Paris"}, "call_id": "get_weather_0"}
    lyon = {**paris, "arguments": {"city": "Lyon"}}
    convs = [fragment("a", paris), fragment("b", lyon), continuation("c", lyon)]
    assert drop_continued(convs) == ([convs[0], convs[2]], 1)


def test_live_a_fragment_held_until_its_continuation_is_left_out_and_its_offsets_are_released() -> None:
    join: LoopJoin[str] = LoopJoin(timeout_s=60, max_bytes=10_000)
    assert join.take(continuation("x", noted=False), "x", 0, 5, 100, 0.0) is False  # no fragment: score now
    assert join.take(fragment("a"), "a", 0, 7, 100, 1.0) is True
    assert join.take(fragment("d", agent="other"), "d", 1, 3, 50, 1.0) is True
    assert (len(join), join.low_offset(0), join.low_offset(1), join.low_offset(2)) == (2, 7, 3, None)
    assert join.claim(continuation("b"), 2.0) == 1
    assert (len(join), join.low_offset(0), join.stats.continued, join.stats.parked_bytes) == (1, None, 1, 50)
    assert join.due(60.9) == []
    assert join.due(61.0) == ["d"]  # nothing continued it within the timeout: scored alone
    assert (join.stats.alone, join.stats.parked, join.stats.parked_bytes) == (1, 0, 0)


def test_live_a_fragment_that_finishes_after_its_continuation_is_left_out_within_the_timeout() -> None:
    join: LoopJoin[str] = LoopJoin(timeout_s=60, max_bytes=10_000)
    assert join.claim(continuation("b"), 0.0) == 0
    assert join.take(fragment("a"), "a", 0, 7, 100, 30.0) is True
    assert (len(join), join.stats.continued) == (0, 1)
    # a claim is remembered for the timeout only
    assert join.take(fragment("c"), "c", 0, 9, 100, 61.0) is True
    assert (len(join), join.stats.continued, join.low_offset(0)) == (1, 1, 9)


def test_live_fragments_are_bounded_in_bytes_forgotten_with_their_partition_and_drained_at_shutdown() -> None:
    join: LoopJoin[str] = LoopJoin(timeout_s=60, max_bytes=250)
    for i in range(3):
        call = {**ASKED, "call_id": f"call_{i}"}
        assert join.take(fragment(str(i), call), str(i), i % 2, 10 + i, 100, float(i))
    assert join.due(3.0) == ["0"]  # 300 bytes over 250: the oldest goes early
    assert (join.stats.evicted, join.stats.alone, join.stats.parked_bytes) == (1, 1, 200)
    assert join.forget([1]) == 1 and join.low_offset(1) is None
    assert join.drain() == ["2"]
    assert (len(join), join.stats.alone, join.stats.parked, join.stats.parked_bytes) == (0, 2, 0, 0)


def test_live_a_zero_timeout_turns_the_join_off() -> None:
    join: LoopJoin[str] = LoopJoin(timeout_s=0, max_bytes=10_000)
    assert join.claim(continuation("b"), 0.0) == 0
    assert join.take(fragment("a"), "a", 0, 7, 100, 0.0) is False
    assert len(join) == 0
