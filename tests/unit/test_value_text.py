"""`input.value` / `output.value` of chain and agent spans: the text said, read out of the JSON bodies LangChain,
LangGraph and `@trace` chains log, on a trace built by the real OTel SDK and on each form alone."""

from __future__ import annotations

import json

import pytest

from agentwatch.collector.chain_values import is_body, langchain_tool_message, state_text, value_text
from agentwatch.collector.decode import decode_message
from agentwatch.collector.reconstruct import build_conversation
from agentwatch.wire.schema import Turn
from tests.support.spans import SpanFactory

RESULT = {"order": "A-1", "status": "shipped"}
ANSWER = "Order A-1 has shipped."


def test_a_langgraph_agent_span_gives_the_question_and_the_last_answer() -> None:
    state_in = {"messages": [["user", "Where is order A-1?"]]}
    state_out = {
        "messages": [
            {"type": "human", "content": "Where is order A-1?", "id": "6f1c2a9e-0b7d-4e3a-9c55-1d2e3f4a5b6c"},
            {"type": "ai", "content": "", "tool_calls": [{"name": "lookup", "id": "call_Xa9s8d7f6gH2"}]},
            {"type": "tool", "content": json.dumps(RESULT), "tool_call_id": "call_Xa9s8d7f6gH2"},
            {"type": "ai", "content": ANSWER, "id": "run-1a2b3c4d-0"},
        ]
    }
    f = SpanFactory()
    agent = {
        "openinference.span.kind": "AGENT",
        "session.id": "lg-1",
        "input.value": json.dumps(state_in),
        "output.value": json.dumps(state_out),
    }
    tool = {
        "openinference.span.kind": "TOOL",
        "tool.name": "lookup",
        "input.value": '{"order": "A-1"}',
        "output.value": json.dumps(RESULT),
    }
    with f.tracer.start_as_current_span("LangGraph", attributes=agent):
        f.tracer.start_span("lookup", attributes=tool).end()
    (turn,) = build_conversation(decode_message(f.protobuf())).turns
    assert (turn.input, turn.answer) == ("Where is order A-1?", ANSWER)
    assert [(c.name, c.result) for c in turn.tool_calls] == [("lookup", RESULT)]


@pytest.mark.parametrize(
    ("value", "said_by_user", "text"),
    [
        ("plain words", True, "plain words"),
        ('{"input": "Where is A-1?"}', True, "Where is A-1?"),
        ('{"output": "It shipped."}', False, "It shipped."),
        ('{"question": "Where is A-1?"}', True, "Where is A-1?"),
        # LangChain-serialised messages, and content given as parts
        (
            json.dumps(
                {
                    "messages": [
                        {
                            "lc": 1,
                            "type": "constructor",
                            "id": ["x", "HumanMessage"],
                            "kwargs": {"content": "q"},
                        },
                        {
                            "lc": 1,
                            "id": ["x", "AIMessage"],
                            "kwargs": {"content": [{"type": "text", "text": "a"}]},
                        },
                    ]
                }
            ),
            False,
            "a",
        ),
        (
            '{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}',
            True,
            "q",
        ),
        # the agent ended on a tool call: no answer, not the body
        (
            '{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": ""}]}',
            False,
            None,
        ),
        ('{"messages": []}', False, None),
        # other bodies are kept as they are
        ('{"order": "A-1", "qty": 2}', True, '{"order": "A-1", "qty": 2}'),
        # an agent call's arguments or result naming what was said (smolagents' task, LlamaIndex's user_msg)
        ('{"task": "Where is A-1?", "stream": false, "max_steps": null}', True, "Where is A-1?"),
        ('{"user_msg": "Where is A-1?", "chat_history": []}', True, "Where is A-1?"),
        ('{"final_answer": "It shipped.", "steps": 3}', False, "It shipped."),
        ('{"task": "", "query": "q2"}', True, "q2"),
        ('{"result": {"ok": true}}', False, '{"result": {"ok": true}}'),
        ("{not json", False, "{not json"),
        ('{"messages": [7, null, ["a", 1], {"role": 3, "content": "x"}]}', False, None),
        (42, False, "42"),
        (None, True, None),
    ],
)
def test_value_text_forms(value: object, said_by_user: bool, text: str | None) -> None:
    assert value_text(value, said_by_user) == text


def test_langchain_message_to_dict_form_and_the_state_alone() -> None:
    """OpenInference's LangChain instrumentor writes a state's messages as `{"type", "data": {"content"}}`;
    `state_text` reads a messages state and nothing else."""
    state = json.dumps(
        {
            "messages": [
                {"type": "human", "data": {"content": "first question", "type": "human"}},
                {"type": "ai", "data": {"content": "first answer", "type": "ai"}},
                {"type": "human", "data": {"content": "second question", "type": "human"}},
            ]
        }
    )
    assert value_text(state, True) == state_text(state, True) == "second question"
    assert value_text(state, False) == state_text(state, False) == "first answer"
    for other in ('{"input": "q"}', "plain text", '["messages"]', "{not json", json.dumps({"messages": "x"})):
        assert state_text(other, True) is None


def test_a_langchain_tool_message_gives_its_content_and_call_id() -> None:
    content = json.dumps(RESULT)
    plain = json.dumps(
        {"type": "tool", "data": {"content": content, "tool_call_id": "call_1", "type": "tool"}}
    )
    serialised = json.dumps(
        {
            "lc": 1,
            "type": "constructor",
            "id": ["langchain", "schema", "messages", "ToolMessage"],
            "kwargs": {"content": content, "tool_call_id": "call_2"},
        }
    )
    assert langchain_tool_message(plain) == (RESULT, "call_1")
    assert langchain_tool_message(serialised) == (RESULT, "call_2")
    for other in (content, '{"type": "tool"}', "tool", '{"type": "ai", "data": {"content": "x"}}', None, 3):
        assert langchain_tool_message(other) is None


@pytest.mark.parametrize(
    ("text", "body"),
    [
        ('{"init_state": {"is_running": false}}', True),
        ("[1, 2]", True),
        ("StopEvent(result=AgentOutput(response=ChatMessage(role=<MessageRole.ASSISTANT: 'assistant'>", True),
        ("AgentOutput(response='It shipped.')", True),
        ("It shipped (tracking A-1).", False),
        ("f(x) = 2 when x is 1", False),
        ("{not json", False),
        ("", False),
    ],
)
def test_bodies_are_told_from_text_said(text: str, body: bool) -> None:
    assert is_body(text) is body


def _chain_turn(chain: dict, model: dict | None) -> Turn:
    """The one turn of a trace: a CHAIN root with `chain`'s attributes and, if given, one LLM span below it."""
    f = SpanFactory()
    with f.tracer.start_as_current_span(
        "FunctionAgent.run", attributes={"openinference.span.kind": "CHAIN", **chain}
    ):
        if model is not None:
            f.tracer.start_span("OpenAI.chat", attributes={"openinference.span.kind": "LLM", **model}).end()
    (turn,) = build_conversation(decode_message(f.protobuf())).turns
    assert isinstance(turn, Turn)
    return turn


def test_a_chain_whose_input_and_output_are_bodies_takes_the_models_messages() -> None:
    chain = {
        "input.value": '{"init_state": {"is_running": false}}',
        "output.value": "StopEvent(result=AgentOutput(x=1))",
    }
    model = {
        "llm.model_name": "gpt-4o-mini",
        "llm.token_count.prompt": 10,
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Where is A-1?",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": ANSWER,
    }
    turn = _chain_turn(chain, model)
    assert (turn.input, turn.answer) == ("Where is A-1?", ANSWER)
    # without model calls, the bodies are all there is: kept
    turn = _chain_turn(chain, None)
    assert (turn.input, turn.answer) == (chain["input.value"], chain["output.value"])
    # a chain whose output is text said keeps it, whatever the model said last
    turn = _chain_turn({**chain, "output.value": "A-1 shipped today."}, model)
    assert turn.answer == "A-1 shipped today."
