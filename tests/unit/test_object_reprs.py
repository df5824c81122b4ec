"""Tool calls logged as a Python repr (the official OpenAI Agents instrumentation writes the SDK's output object as
the text of a model call's output): read as the calls they stand for, literals only, never evaluated."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentwatch.collector.messages import messages, output_text
from agentwatch.wire.values import read_object_repr

CALL = (
    "ResponseFunctionToolCall(arguments='{\"city\": \"Paris\"}', call_id='call_1', name='get_weather', "
    "type='function_call', id='fc_1', status='completed')"
)
MESSAGE_DICT = (
    "{'content': None, 'role': 'assistant', 'tool_calls': [{'id': 'call_2', 'function': "
    "{'arguments': '{\"q\": 1}', 'name': 'lookup'}, 'type': 'function'}]}"
)


def _output(text: str) -> str:
    return json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}])


def test_an_object_repr_gives_its_class_and_fields_nested_reprs_as_dicts() -> None:
    assert read_object_repr(CALL) == (
        "ResponseFunctionToolCall",
        {
            "arguments": '{"city": "Paris"}',
            "call_id": "call_1",
            "name": "get_weather",
            "type": "function_call",
            "id": "fc_1",
            "status": "completed",
        },
    )
    nested = "ToolCall(id='c', function=Function(arguments='{}', name='f'), tags=('a', 'b'), n=None)"
    assert read_object_repr(nested) == (
        "ToolCall",
        {"id": "c", "function": {"arguments": "{}", "name": "f"}, "tags": ["a", "b"], "n": None},
    )


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('true')",  # a call of a call: the callee is no name
        "f(a=__import__('os'))",  # a field whose value calls something with a positional argument
        "f(a=g(1))",
        "f(a=b)",  # a name, not a literal
        "f(1, a=2)",
        "f(**x)",
        "f(a=1 + 2)",
        "os.system(a='x')",  # an attribute, not a class name
        "not a repr",
        "{'a': 1}",
        "",
        "f(" * 200 + ")" * 200,
    ],
)
def test_anything_but_keyword_literals_is_no_repr(text: str) -> None:
    assert read_object_repr(text) is None


@given(st.text(max_size=200))
def test_no_text_raises(text: str) -> None:
    found = read_object_repr(text)
    assert found is None or (isinstance(found[0], str) and isinstance(found[1], dict))


def test_a_responses_function_call_logged_as_its_repr_is_that_tool_call_not_an_answer() -> None:
    (message,) = messages(_output(CALL)) or []
    assert message["parts"] == [
        {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}
    ]
    assert output_text([message]) is None


def test_a_chat_message_logged_as_a_dict_repr_is_its_text_and_tool_calls() -> None:
    with_text = MESSAGE_DICT.replace("'content': None", "'content': 'Looking it up.'")
    (message,) = messages(_output(with_text)) or []
    assert message["parts"] == [
        {"type": "text", "content": "Looking it up."},
        {"type": "tool_call", "id": "call_2", "name": "lookup", "arguments": '{"q": 1}'},
    ]


@pytest.mark.parametrize(
    "text",
    [
        "The function takes arguments=3 and returns.",  # the mark in plain words
        "Point(x=1, y=2)",  # an object that is no tool call
        "{'tool_calls': 'none'}",
        'I said {"tool_calls": []} in JSON',
    ],
)
def test_text_that_is_no_repr_of_tool_calls_stays_text(text: str) -> None:
    (message,) = messages(_output(text)) or []
    assert message["parts"] == [{"type": "text", "content": text}]


def test_a_users_message_that_reads_as_a_repr_stays_text() -> None:
    said = json.dumps([{"role": "user", "parts": [{"type": "text", "content": CALL}]}])
    (message,) = messages(said) or []
    assert message["parts"] == [{"type": "text", "content": CALL}]
