"""Messages of other APIs and loggers (Anthropic, OpenAI Responses, Gemini, LangChain) read as chat messages:
each shape's calls, results, errors and words, and real runs logged in each shape graded as their chat logs."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from agentwatch.importers.formats import kind_of
from agentwatch.importers.openai_chat import conversation_from_messages, conversation_from_record
from agentwatch.wire.schema import Conversation
from tests.support import published_runs
from tests.support.dialects import DIALECTS, tau_bench_in, verdicts


def _calls(conv: Conversation) -> list[list[tuple[str, Any, Any, Any]]]:
    return [[(c.name, c.arguments, c.result, c.error) for c in t.tool_calls] for t in conv.turns]


def test_anthropic_blocks() -> None:
    conv = conversation_from_record(
        {
            "system": "You are a shop agent.",
            "messages": [
                {"role": "user", "content": "Where is order 7?"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "look it up", "signature": "x"},
                        {"type": "text", "text": "Let me check."},
                        {"type": "tool_use", "id": "toolu_1", "name": "get_order", "input": {"id": 7}},
                        {"type": "tool_use", "id": "toolu_2", "name": "get_refund", "input": {"id": 7}},
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_2",
                            "content": "no refund",
                            "is_error": True,
                        },
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_1",
                            "content": [{"type": "text", "text": '{"status": "shipped"}'}],
                        },
                    ],
                },
                {"role": "assistant", "content": [{"type": "text", "text": "It has shipped."}]},
            ],
        },
        "c",
    )
    assert conv.system == "You are a shop agent."
    assert _calls(conv) == [
        [("get_order", {"id": 7}, {"status": "shipped"}, None), ("get_refund", {"id": 7}, None, "no refund")]
    ]
    assert conv.turns[0].answer == "Let me check.\n\nIt has shipped."
    assert len(conv.turns) == 1  # tool results are not the user speaking


def test_anthropic_results_beside_words_of_the_user() -> None:
    conv = conversation_from_messages(
        [
            {"role": "user", "content": "Cancel order 7."},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "cancel", "input": {"id": 7}}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "done"},
                    {"type": "text", "text": "Thanks!"},
                ],
            },
        ],
        "c",
    )
    assert _calls(conv) == [[("cancel", {"id": 7}, "done", None)], []]
    assert [t.input for t in conv.turns] == ["Cancel order 7.", "Thanks!"]


def test_responses_items() -> None:
    items = [
        {"role": "developer", "content": "Be brief."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Oslo?"}]},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "weather",
            "arguments": '{"city": "Oslo"}',
        },
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        {"type": "function_call_output", "call_id": "call_1", "output": '{"temp_c": 4}'},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "4 °C.", "annotations": []}],
        },
    ]
    assert kind_of(items) == "chat"
    conv = conversation_from_record(items, "c")
    assert conv.system == "Be brief."
    assert _calls(conv) == [[("weather", {"city": "Oslo"}, {"temp_c": 4}, None)]]
    assert conv.turns[0].answer == "4 °C."
    assert conv.notes == ["1 item(s) of type 'web_search_call' left out (no chat message)"]


def test_gemini_parts() -> None:
    conv = conversation_from_messages(
        [
            {"role": "user", "parts": [{"text": "Book HAT001."}]},
            {
                "role": "model",
                "parts": [
                    {"text": "plan", "thought": True},
                    {"functionCall": {"name": "book", "args": {"flight": "HAT001"}}},
                ],
            },
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "book", "response": {"error": "full"}}}],
            },
            {"role": "model", "parts": [{"function_call": {"name": "book", "args": {"flight": "HAT002"}}}]},
            {
                "role": "function",
                "parts": [{"function_response": {"name": "book", "response": {"seat": "3A", "gate": 9}}}],
            },
            {"role": "model", "parts": [{"text": "Booked HAT002, seat 3A."}]},
        ],
        "c",
    )
    assert _calls(conv) == [
        [
            ("book", {"flight": "HAT001"}, None, "full"),
            ("book", {"flight": "HAT002"}, {"seat": "3A", "gate": 9}, None),
        ]
    ]
    assert conv.turns[0].answer == "Booked HAT002, seat 3A."


def test_langchain_flat_and_wrapped() -> None:
    flat: list[dict[str, Any]] = [
        {"type": "system", "content": "Rules."},
        {"type": "human", "content": "Refund order 9."},
        {
            "type": "ai",
            "content": "",
            "tool_calls": [{"name": "refund", "args": {"id": 9}, "id": "r1", "type": "tool_call"}],
        },
        {"type": "tool", "content": "Order 9 is not delivered", "tool_call_id": "r1", "status": "error"},
        {"type": "ai", "content": "Order 9 cannot be refunded yet."},
    ]
    wrapped = [{"type": m["type"], "data": m} for m in flat]
    assert kind_of(flat) == kind_of(wrapped) == "chat"
    for messages in (flat, wrapped):
        conv = conversation_from_messages(messages, "c")
        assert conv.system == "Rules."
        assert _calls(conv) == [[("refund", {"id": 9}, None, "Order 9 is not delivered")]]
        assert conv.turns[0].answer == "Order 9 cannot be refunded yet."


def test_sharegpt_messages() -> None:
    """ToolACE's published data, as LLaMA-Factory's ShareGPT shape writes it: a call as JSON text, its result an
    observation; two parallel calls answered by one observation holding a list of two results, one each. All 60
    conversations tried were refused before ("message 0 has no role")."""
    messages: list[dict[str, Any]] = [
        {"from": "system", "value": "Rules."},
        {"from": "human", "value": "Rate SPY and QQQ."},
        {
            "from": "function_call",
            "value": json.dumps(
                [
                    {"name": "Ratings", "arguments": {"symbol": "SPY"}},
                    {"name": "Ratings", "arguments": {"symbol": "QQQ"}},
                ]
            ),
        },
        {"from": "observation", "value": json.dumps([{"rating": 4.5}, {"rating": 4.3}])},
        {"from": "gpt", "value": "SPY is rated 4.5 and QQQ 4.3."},
        {"from": "human", "value": "And the calendar?"},
        {"from": "function_call", "value": '{"name": "Calendar", "arguments": {"year": 2023}}'},
        {"from": "observation", "value": "no events"},
        {"from": "gpt", "value": "No events in 2023."},
    ]
    assert kind_of(messages) == kind_of({"messages": messages}) == "chat"
    conv = conversation_from_messages(messages, "c")
    assert conv.system == "Rules."
    assert _calls(conv) == [
        [
            ("Ratings", {"symbol": "SPY"}, {"rating": 4.5}, None),
            ("Ratings", {"symbol": "QQQ"}, {"rating": 4.3}, None),
        ],
        [("Calendar", {"year": 2023}, "no events", None)],
    ]
    assert [t.answer for t in conv.turns] == ["SPY is rated 4.5 and QQQ 4.3.", "No events in 2023."]


def _two_weather_calls(*observations: Any) -> list[dict[str, Any]]:
    """Two parallel calls, the observations after them, then a call of another tool and its observation."""
    calls = [{"name": "weather", "arguments": {"city": c}} for c in ("Paris", "Rome")]
    return [
        {"from": "human", "value": "Weather in Paris and Rome, and the time in Rome?"},
        {"from": "function_call", "value": json.dumps(calls)},
        *({"from": "observation", "value": o} for o in observations),
        {"from": "function_call", "value": '{"name": "time", "arguments": {"city": "Rome"}}'},
        {"from": "observation", "value": "12:00"},
        {"from": "gpt", "value": "20 and 25 degrees; noon."},
    ]


def test_sharegpt_observations_one_per_parallel_call_are_each_its_result() -> None:
    """An OpenAI log converted to ShareGPT writes one `function_call` holding the step's calls and one observation
    per call after it. The first observation, a list as long as the calls, was split across both calls: the
    second observation then found no call waiting and was dropped."""
    conv = conversation_from_messages(_two_weather_calls("[1, 2]", '{"t": 25}'), "c")
    assert _calls(conv) == [
        [
            ("weather", {"city": "Paris"}, [1, 2], None),
            ("weather", {"city": "Rome"}, {"t": 25}, None),
            ("time", {"city": "Rome"}, "12:00", None),
        ]
    ]
    assert conv.notes == []


def test_sharegpt_one_observation_not_split_per_call_leaves_the_other_calls_without_one() -> None:
    """One observation answering two calls, an object keyed by city (no list of one result per call), cannot be
    told from one call's result: it stays the first call's, as before. The second call took the next call's
    observation ("12:00"), and that call was left without one; now the second gets none, and a note says so."""
    keyed = json.dumps({"Paris": {"t": 20}, "Rome": {"t": 25}})
    conv = conversation_from_messages(_two_weather_calls(keyed), "c")
    assert _calls(conv) == [
        [
            ("weather", {"city": "Paris"}, {"Paris": {"t": 20}, "Rome": {"t": 25}}, None),
            ("weather", {"city": "Rome"}, None, None),
            ("time", {"city": "Rome"}, "12:00", None),
        ]
    ]
    assert conv.notes == [
        "2 parallel calls (weather, weather) answered by an observation that is not a JSON list of one result per "
        "call: given whole to the first; 1 left without a result"
    ]
    listed = conversation_from_messages(_two_weather_calls('[{"t": 20}, {"t": 25}]'), "c")
    assert [c.result for c in listed.turns[0].tool_calls] == [{"t": 20}, {"t": 25}, "12:00"]
    assert listed.notes == []


def test_sharegpt_fewer_observations_than_parallel_calls_answer_the_first() -> None:
    calls: list[dict[str, Any]] = [{"name": n, "arguments": {}} for n in ("a", "b", "c")]
    messages = [
        {"from": "human", "value": "Go."},
        {"from": "function_call", "value": json.dumps(calls)},
        {"from": "observation", "value": "A"},
        {"from": "observation", "value": "B"},
        {"from": "function_call", "value": '{"name": "d", "arguments": {}}'},
        {"from": "observation", "value": "D"},
        {"from": "gpt", "value": "Done."},
    ]
    conv = conversation_from_messages(messages, "c")
    assert [(c.name, c.result) for c in conv.turns[0].tool_calls] == [
        ("a", "A"),
        ("b", "B"),
        ("c", None),
        ("d", "D"),
    ]
    assert conv.notes == [
        "3 parallel calls (a, b, c) answered by 2 observations: given to the first 2, in order; 1 left without a "
        "result"
    ]


def test_tau2_multi_tool_message_is_its_tool_messages() -> None:
    calls = [
        {"id": "a", "name": "get_user", "arguments": {"id": 1}, "requestor": "assistant"},
        {"id": "b", "name": "get_order", "arguments": {"id": 2}, "requestor": "assistant"},
    ]
    results = [
        {"id": "b", "role": "tool", "content": '{"order": 2}', "requestor": "assistant", "error": False},
        {"id": "a", "role": "tool", "content": "user 1 not found", "requestor": "assistant", "error": True},
    ]
    conv = conversation_from_messages(
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": calls},
            {"role": "tool", "tool_messages": results},
            {"role": "assistant", "content": "Done."},
        ],
        "c",
    )
    assert _calls(conv) == [
        [("get_user", {"id": 1}, None, "user 1 not found"), ("get_order", {"id": 2}, {"order": 2}, None)]
    ]


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@pytest.mark.parametrize("name", [published_runs.AIRLINE, published_runs.RETAIL])
def test_a_real_run_logged_by_another_api_gets_the_verdicts_of_its_chat_log(name: str, dialect: str) -> None:
    with gzip.open(published_runs.require(name)) as fh:
        document = json.load(fh)
    original = verdicts(document)
    assert len(original) == 100
    assert verdicts(tau_bench_in(document, dialect)) == original
