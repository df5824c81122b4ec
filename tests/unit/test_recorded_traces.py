"""Spans real agent SDKs sent, recorded on 2026-11-28 against fake models and rebuilt by both decoders:
- by `python -m tests.support.record_agents` (versions there): Strands, messages as span events in Bedrock's
  content-block shape, a tool span whose arguments and result are events, an agent span with the usage of all
  its model calls; Pydantic AI, the GenAI conventions with its own cost; the OpenAI Agents SDK under
  OpenInference, the tool's schema as `tool.parameters`, and under its official instrumentation, with its
  Chat Completions model and its default Responses model (under OpenLLMetry's too); Google ADK, the GenAI conventions with content on
  spans, and its own attributes as 1.x sends them; LlamaIndex under OpenInference, workflow objects as the run's input and output, a tool's
  `{"kwargs": ...}` and `ToolOutput`, an LLM span that only prepares the call; smolagents under OpenInference, its
  run's `task`, a `final_answer` tool; Google's GenAI SDK under the official instrumentation, two model calls of a
  loop the caller runs; LangGraph under OpenInference, an AGENT
  span per run of the graph's "agent" node with the tool node beside them, two turns of one thread;
- the Vercel AI SDK, majors 4 to 6 (`ai.*` keys) and 7 (the GenAI conventions through `@ai-sdk/otel`),
  `tests/support/ai_sdk/record.mjs`, under an HTTP span;
- the official OpenAI instrumentation and OpenLLMetry's on a loop the caller runs, both model calls streamed,
  and on the Responses API; OpenLLMetry's and OpenInference's Anthropic instrumentations on the same loop; those
  two and the OpenAI instrumentations of OpenLLMetry and OpenInference with prompt-cache tokens, and Pydantic AI on
  Anthropic's API with them; Langfuse's own spans, of `@observe` and its OpenAI wrapper, and of its LangChain
  callback handler on the LangGraph agent; MLflow Tracing's, Traceloop's decorators, and Logfire's.
Each run is a question, one tool call with its arguments and result, the answer, two model calls."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml

import agentwatch
from agentwatch.collector.decode import SpanRecord, decode_message
from agentwatch.collector.loop_join import drop_continued
from agentwatch.collector.otlp_files import group_by_conversation
from agentwatch.collector.reconstruct import build_conversation
from agentwatch.collector.span_tree import role_of, setup_only
from agentwatch.config import Settings
from agentwatch.config.prices import PriceLookup
from agentwatch.scorers import ConversationScorer
from agentwatch.scorers.cost import conversation_cost
from agentwatch.wire.schema import Expectation, ExpectedTool, Turn
from tests.support.fake_models import CACHE
from tests.support.fake_openai import FINAL_TEXT, TOOL_CALL_ID, USAGE
from tests.support.record_agents import calls_of, weather_call
from tests.support.spans import otlp_json_to_protobuf

DATA = Path(__file__).parent.parent / "data"
SYSTEM = "You answer weather questions."


class Recording(NamedTuple):
    file: str
    agent: str
    session: str | None  # the conversation id it names, if any (else the trace id)
    call_id: str | None = TOOL_CALL_ID  # the tool call's id, where the tool span logs it
    notes: tuple[str, ...] = ()
    tokens: bool = True  # whether its model calls report their tokens
    system: bool = True  # whether it logs the agent's instructions


RECORDINGS = [
    Recording("strands_trace.json", "Strands Agents", None),
    Recording("pydantic_ai_trace.json", "weather-agent", "01a22314-950d-746c-8db8-a28b836019d0"),
    # its TOOL span's `tool.parameters` is the tool's schema, not the arguments: those are its `input.value`; it
    # logs no call id, the model's call of that tool with those arguments gives it
    Recording("openai_agents_trace.json", "weather-agent", None),
    # the official instrumentation: a default agent name ("OpenAI Agent") on model and tool spans, the agent's on
    # its invoke_agent span below the workflow's; the first call's output logged as a Python repr, its tool call
    # only in the second call's input
    Recording("openai_agents_otel_trace.json", "weather-agent", None),
    # the OpenAI Agents SDK's default model, the Responses API: none of the three instrumentations logs the
    # instructions (a request parameter of their own there); the official one logs the first call's output as
    # the repr of the SDK's `ResponseFunctionToolCall`, and no tool call or result in the second call's input;
    # OpenLLMetry repeats the call in the second call's input under the item's id (`fc_…`), not the call's
    Recording("openai_agents_responses_trace.json", "weather-agent", None, system=False),
    Recording("openai_agents_otel_responses_trace.json", "weather-agent", None, system=False),
    Recording("openai_agents_openllmetry_responses_trace.json", "weather-agent", None, system=False),
    # the same three run streamed (`Runner.run_streamed`, the events read to the end), as chat front ends run it
    Recording("openai_agents_streamed_trace.json", "weather-agent", None, system=False),
    Recording("openai_agents_otel_streamed_trace.json", "weather-agent", None, system=False),
    Recording("openai_agents_openllmetry_streamed_trace.json", "weather-agent", None, system=False),
    Recording("adk_trace.json", "weather_agent", "s-1"),
    # ADK's own attributes; a `call_llm` span around each `generate_content` span, both with the call's tokens
    Recording("adk_legacy_trace.json", "weather_agent", "s-1"),
    # its root is a CHAIN whose input and output are workflow objects: the question and answer are the models'
    Recording("llama_index_trace.json", "llama-index-weather", None),
    # it answers by calling its `final_answer` tool (a call that changes nothing, left out of tool grading)
    Recording("smolagents_trace.json", "smolagents-weather", None),
    # two model calls of a loop the caller runs, no tool span: the call and its result are in the messages
    Recording(
        "google_genai_trace.json",
        "google-genai-weather",
        None,
        call_id="get_weather_0",
        notes=("tool calls taken from model output messages (no execute_tool spans) for turn(s) 0",),
    ),
    Recording("ai_sdk_4_trace.json", "weather-chat", "chat-41"),
    Recording("ai_sdk_5_trace.json", "weather-chat", "chat-42"),
    Recording("ai_sdk_6_trace.json", "weather-chat", "chat-43"),
    Recording("ai_sdk_7_trace.json", "weather-chat", None),
    # both model calls streamed without `include_usage`, as chat front ends ask: the official OpenAI
    # instrumentation (content on spans) and OpenLLMetry's (attributes) gather the chunks into the output
    # messages, and report no tokens (the stream had none)
    Recording("openai_stream_trace.json", "weather-agent", "conv-events-1", tokens=False),
    Recording("openllmetry_stream_trace.json", "weather-agent", "conv-events-1", tokens=False),
    # the same loop on the Responses API: the instructions a parameter of their own; OpenLLMetry logs the model's
    # call under the output item's id (`fc_…`) and its result under the call's, which the tool span has
    Recording("openai_responses_trace.json", "weather-agent", "conv-responses-1"),
    Recording("openllmetry_responses_trace.json", "weather-agent", "conv-responses-1"),
    # Microsoft Agent Framework's own telemetry (sensitive data on): the GenAI conventions
    Recording("agent_framework_trace.json", "weather-agent", None),
    # Azure AI Inference's own tracing (content recording on): messages as span events, azure-core's HTTP spans
    Recording("azure_ai_inference_trace.json", "weather-agent", "conv-azure-1"),
    # Anthropic's Messages API: the call a `tool_use` block, its result a `tool_result` block of a user message
    Recording(
        "anthropic_openllmetry_trace.json", "weather-agent", "conv-anthropic-1", call_id="toolu_fake_1"
    ),
    Recording(
        "anthropic_openinference_trace.json", "weather-agent", "conv-anthropic-1", call_id="toolu_fake_1"
    ),
    # the model reporting prompt tokens read from (and, Anthropic, written to) its cache: OpenLLMetry's and
    # OpenInference's OpenAI instrumentations on the loop, and both Anthropic ones (Anthropic counts the cache
    # apart from its input tokens; both instrumentations add it in)
    # LiteLLM's OpenTelemetry callback with a span per call (`USE_OTEL_LITELLM_REQUEST_SPAN=true`): its messages
    # GenAI parts with OpenAI's `tool_calls` and `tool_call_id` beside them, its output messages without the
    # calls (its `raw_gen_ai_request` spans below them are read as nothing)
    Recording("litellm_request_span_trace.json", "weather-agent", "conv-litellm-1"),
    # the OpenAI Agents SDK's tool served by an MCP server (stdio), under OpenInference and the official
    # instrumentation: the result logged as MCP's text content block, its JSON in its text
    Recording("openai_agents_mcp_trace.json", "weather-agent", None),
    Recording("openai_agents_otel_mcp_trace.json", "weather-agent", None),
    # and by default: each call written over the agent span (the first there, the second lost), the calls whole
    # only in the `raw_gen_ai_request` span it opens per call below it (the provider's request and response as
    # Python reprs)
    Recording("litellm_trace.json", "weather-agent", "conv-litellm-1"),
    # Bedrock's Converse API (boto3) under OpenLLMetry: the tool's result logged as Bedrock's content blocks
    # (`[{"json": {...}}]`) in JSON
    Recording("bedrock_openllmetry_trace.json", "weather-agent", "conv-bedrock-1", call_id="tooluse_fake_1"),
    # and under OpenInference: the model under Bedrock's id (`anthropic.claude-…-v1:0`), priced as the vendor's
    Recording(
        "bedrock_openinference_trace.json", "weather-agent", "conv-bedrock-1", call_id="tooluse_fake_1"
    ),
    # Agno's `Agent` under OpenInference: its run (`session.id`), flattened messages on its model calls
    Recording("agno_trace.json", "weather-agent", "conv-agno-1"),
    Recording("openllmetry_cache_trace.json", "weather-agent", "conv-events-1"),
    Recording("openinference_openai_cache_trace.json", "weather-agent", "conv-events-1"),
    Recording(
        "anthropic_cache_openllmetry_trace.json", "weather-agent", "conv-anthropic-1", call_id="toolu_fake_1"
    ),
    Recording(
        "anthropic_cache_openinference_trace.json",
        "weather-agent",
        "conv-anthropic-1",
        call_id="toolu_fake_1",
    ),
    # Langfuse 5.0.4's own OpenTelemetry spans (`langfuse.observation.*`): `@observe` on the agent (declared one,
    # or a plain observation) and the tool, the model calls through its OpenAI wrapper, `session.id`
    Recording("langfuse_trace.json", "langfuse-weather", "conv-langfuse-1"),
    Recording("langfuse_span_trace.json", "langfuse-span-weather", "conv-langfuse-1"),
    # MLflow Tracing 3.17.2 (`mlflow.*` keys, every value JSON): `@mlflow.trace` on the agent and the tool, its
    # OpenAI autologger; the session is trace metadata no span carries: the trace is the conversation
    Recording("mlflow_trace.json", "mlflow-weather", None),
    # Traceloop's SDK 0.45.6 (what `pip install traceloop-sdk` resolves to today): `@agent` and `@tool`
    # decorators (`traceloop.entity.*`), the session as an association property, OpenLLMetry's flattened keys
    Recording("traceloop_trace.json", "weather-agent", "conv-traceloop-1"),
    # Logfire 5.4.0's OpenAI instrumentation: the GenAI conventions, content on spans; the caller's spans plain
    Recording(
        "logfire_trace.json",
        "logfire-weather",
        "conv-logfire-1",
        notes=("tool calls taken from model output messages (no execute_tool spans) for turn(s) 0",),
    ),
]


def _records(file: str, encoding: str) -> list[SpanRecord]:
    text = (DATA / file).read_bytes()
    if encoding == "json":
        return decode_message(text, "application/json")
    return decode_message(otlp_json_to_protobuf(text))


@pytest.mark.parametrize("encoding", ["json", "protobuf"])
@pytest.mark.parametrize("recording", RECORDINGS, ids=[r.file for r in RECORDINGS])
def test_a_recorded_run_rebuilds_its_turn(recording: Recording, encoding: str) -> None:
    records = _records(recording.file, encoding)
    conv = build_conversation(records)
    assert conv.notes == list(recording.notes) and conv.not_captured == []
    assert conv.conversation_id == (recording.session or records[0].trace_id)
    assert conv.agent == recording.agent
    if recording.system:
        assert conv.system is not None and SYSTEM in conv.system  # ADK and smolagents add their own
    else:
        assert conv.system is None
    (turn,) = conv.turns  # an HTTP span above the call is not a turn of its own
    assert turn.input == "What is the weather in Paris?"
    assert (
        turn.answer is not None and turn.answer.strip() == FINAL_TEXT
    )  # Strands' answer ends with a newline
    calls = [c for c in turn.tool_calls if c.name != "final_answer"]
    assert calls_of(calls) == weather_call(recording.call_id)
    # each model call's tokens once: the totals on the agent span (`ai.usage.*`, Strands') are not a model call
    tokens = [USAGE["tool_call"], USAGE["final"]] if recording.tokens else [(0, 0), (0, 0)]
    assert [(u.input_tokens, u.output_tokens) for u in turn.usage] == tokens


@pytest.mark.parametrize("file", ["openai_stream_trace.json", "openllmetry_stream_trace.json"])
def test_a_streamed_run_without_token_counts_has_an_unknown_cost_not_a_free_one(file: str) -> None:
    score = ConversationScorer().score(build_conversation(_records(file, "json")))
    assert score.cost_usd is None
    assert "cost_unknown: a model call reported no token usage" in score.reasons
    assert score.evidence == [] and score.turn_scores[0].error is None  # its streamed answer was read


_PRICES = yaml.safe_load((Path(agentwatch.__file__).parent / "data" / "prices.yaml").read_text())["models"]


@pytest.mark.parametrize(
    ("file", "model", "writes"),
    [
        ("openllmetry_cache_trace.json", "gpt-4o-mini", False),  # OpenAI reports no cache writes
        ("openinference_openai_cache_trace.json", "gpt-4o-mini", False),
        ("anthropic_cache_openllmetry_trace.json", "claude-sonnet-4-5", True),
        ("anthropic_cache_openinference_trace.json", "claude-sonnet-4-5", True),
    ],
)
def test_prompt_cache_tokens_are_read_and_priced_at_the_cache_prices(
    file: str, model: str, writes: bool
) -> None:
    """Each call's cached tokens as the fake model reported them, and the cost with them at the cache's prices
    (the shipped table read as YAML, summed in exact fractions): not the input price, nor left out."""
    conv = build_conversation(_records(file, "json"))
    (turn,) = conv.turns
    expected = [CACHE["tool_call"], CACHE["final"]]
    if not writes:
        expected = [(read, 0) for read, _ in expected]
    assert [(u.cache_read_input_tokens, u.cache_creation_input_tokens) for u in turn.usage] == expected
    price = {key: Fraction(str(value)) for key, value in _PRICES[model].items()}
    cost = (
        sum(
            (prompt - read - write) * price["input_per_mtok"]
            + read * price["cache_read_per_mtok"]
            + write * price.get("cache_write_per_mtok", 0)
            + out * price["output_per_mtok"]
            for (prompt, out), (read, write) in zip(
                [USAGE["tool_call"], USAGE["final"]], expected, strict=True
            )
        )
        / 10**6
    )
    score = ConversationScorer().score(conv)
    assert score.cost_usd == pytest.approx(float(cost), rel=1e-12)
    assert not any(r.startswith("cost_unknown") for r in score.reasons)
    assert score.cache_read_input_tokens == sum(read for read, _ in expected)


def test_the_price_table_prices_cached_calls_as_pydantic_ai_reports_them() -> None:
    """Pydantic AI on Anthropic's API reports each call's cost (`operation.cost`, from its own price list) with
    the cache's reads and writes in it: the shipped table and its cache prices give the same figures."""
    (turn,) = build_conversation(_records("pydantic_ai_anthropic_cache_trace.json", "json")).turns
    assert [(u.cache_read_input_tokens, u.cache_creation_input_tokens) for u in turn.usage] == [
        CACHE["tool_call"],
        CACHE["final"],
    ]
    prices = PriceLookup(Settings().cost.prices.models)
    for usage in turn.usage:
        ours = conversation_cost([Turn(usage=[usage.model_copy(update={"cost_usd": None})])], prices)
        assert usage.cost_usd is not None and ours.cost_usd == pytest.approx(usage.cost_usd, rel=1e-9)


def test_pydantic_ai_reports_the_cost_of_each_model_call() -> None:
    """`operation.cost` (USD): gpt-4o-mini's prices times the fake model's tokens, 21 × 0.15 + 9 × 0.60 and
    40 × 0.15 + 11 × 0.60 per million."""
    (turn,) = build_conversation(_records("pydantic_ai_trace.json", "json")).turns
    assert [u.cost_usd for u in turn.usage] == pytest.approx([8.55e-06, 1.26e-05], rel=1e-12)


@pytest.mark.parametrize("encoding", ["json", "protobuf"])
@pytest.mark.parametrize(
    ("file", "agent"),
    [
        ("langgraph_trace.json", "langgraph-weather"),
        # OpenLLMetry's LangChain instrumentation 0.62.4 (`record_agents langgraph_openllmetry`): the GenAI
        # conventions, the graph's name as the agent; a tool span's arguments and result are the callback's whole
        # input and output (`{"input_str", "inputs", "kwargs": {"tool_call_id"}, …}`, `{"output": <ToolMessage>}`)
        ("langgraph_openllmetry_trace.json", "LangGraph"),
        # LangChain 1's `create_agent` (built on LangGraph: "model" and "tools" nodes) under OpenInference
        ("langchain_agent_trace.json", "langchain-agent-weather"),
        # and under OpenLLMetry, which also sends the agent's creation as a `create_agent` trace of its own
        ("langchain_agent_openllmetry_trace.json", "LangGraph"),
        # Langfuse 5.0.4's LangChain callback handler (`record_agents langgraph_langfuse`): `langfuse.observation.*`
        # keys, an `agent` observation per run of the "agent" node, the tool's result a `ToolMessage`'s dump
        ("langgraph_langfuse_trace.json", "langgraph-langfuse-weather"),
    ],
)
def test_a_langgraph_thread_is_one_conversation_of_its_two_requests(
    file: str, agent: str, encoding: str
) -> None:
    """Each request of the thread is one turn: the graph's two "agent" steps of the first (the tool call, then
    the answer) and the tool node between them, not a turn per step with the tool left out; the second request's
    input is its own message (the state's latest), not the thread's first. A trace that only creates the agent is
    no conversation."""
    groups = group_by_conversation(_records(file, encoding))
    (spans,) = [group for group in groups.values() if not setup_only(group)]
    conv = build_conversation(spans)
    assert conv.notes == [] and conv.not_captured == []
    assert (conv.conversation_id, conv.agent, conv.system) == ("thread-1", agent, SYSTEM)
    first, second = conv.turns
    assert (first.input, first.answer) == ("What is the weather in Paris?", FINAL_TEXT)
    assert calls_of(first.tool_calls) == weather_call()
    assert [(u.input_tokens, u.output_tokens) for u in first.usage] == [USAGE["tool_call"], USAGE["final"]]
    assert (second.input, second.answer, second.tool_calls) == ("Thanks. And tomorrow?", FINAL_TEXT, [])
    assert first.duration_ms is not None and second.started_at is not None and first.started_at is not None
    # the first turn runs to the end of its second step, before the second request starts
    assert first.started_at.timestamp() * 1000 + first.duration_ms <= second.started_at.timestamp() * 1000


@pytest.mark.parametrize("encoding", ["json", "protobuf"])
def test_mlflows_langchain_autologger_makes_each_request_of_a_thread_a_conversation(encoding: str) -> None:
    """MLflow Tracing 3.17.2's LangChain autologger on LangGraph's prebuilt agent (`record_agents
    langgraph_mlflow`): `mlflow.*` keys on every runnable; the thread is in no span (MLflow keeps sessions in
    trace metadata), so each request's trace is a conversation, read whole."""
    groups = group_by_conversation(_records("langgraph_mlflow_trace.json", encoding))
    first, second = sorted(
        (build_conversation(s) for s in groups.values()), key=lambda c: c.turns[0].started_at or 0
    )
    for conv in (first, second):
        assert (conv.agent, conv.system, conv.notes, conv.not_captured) == (
            "langgraph-mlflow-weather",
            SYSTEM,
            [],
            [],
        )
    (asked,), (followed,) = first.turns, second.turns
    assert (asked.input, asked.answer) == ("What is the weather in Paris?", FINAL_TEXT)
    assert calls_of(asked.tool_calls) == weather_call()
    assert [(u.input_tokens, u.output_tokens) for u in asked.usage] == [USAGE["tool_call"], USAGE["final"]]
    assert (followed.input, followed.answer, followed.tool_calls) == ("Thanks. And tomorrow?", FINAL_TEXT, [])


@pytest.mark.parametrize("keep", [("openai.response", "invoke_agent"), ("openai.response",)])
def test_openllmetry_responses_without_tool_spans_pairs_results_with_calls_in_order(
    keep: tuple[str, ...],
) -> None:
    """OpenLLMetry's Responses API instrumentation alone (no tool span, with or without the caller's agent span):
    the call read from the model's output under the item's id, its result from the next call's input under the
    call's id, paired in order; the two model calls one turn."""
    records = [r for r in _records("openllmetry_responses_trace.json", "json") if r.name.startswith(keep)]
    conv = build_conversation(records)
    assert conv.not_captured == []
    (turn,) = conv.turns
    _is_the_weather_turn(turn, "fc_fake_1")


def test_autogen_sends_each_agents_creation_as_a_trace_that_is_no_conversation() -> None:
    """AutoGen AgentChat 0.7.5 (`record_agents autogen`; its runtime's spans, model calls under OpenLLMetry): a
    `create_agent` trace of its own beside the run's; the run is one turn as the other SDKs'."""
    groups = group_by_conversation(_records("autogen_trace.json", "json"))
    setup = [spans for spans in groups.values() if setup_only(spans)]
    (run,) = [spans for spans in groups.values() if not setup_only(spans)]
    assert [[s.attrs["gen_ai.operation.name"] for s in spans] for spans in setup] == [["create_agent"]]
    conv = build_conversation(run)
    assert (conv.agent, conv.system, conv.notes, conv.not_captured) == ("weather_agent", SYSTEM, [], [])
    (turn,) = conv.turns
    _is_the_weather_turn(turn, TOOL_CALL_ID)


def _is_the_weather_turn(turn: Turn, call_id: str) -> None:
    """The recorded runs' turn: the question, one call of get_weather with its arguments and result, the answer."""
    assert (turn.input, turn.answer) == ("What is the weather in Paris?", FINAL_TEXT)
    assert calls_of(turn.tool_calls) == weather_call(call_id)


def test_a_crewai_crew_is_one_turn_of_its_task() -> None:
    """CrewAI 1.15.30 under OpenLLMetry's CrewAI and OpenAI instrumentations 0.62.4 (`record_agents crewai`): the
    question is CrewAI's task prompt, the agent its role, the instructions its backstory and goal; no tool span,
    the call read from the model's messages."""
    conv = build_conversation(_records("crewai_trace.json", "json"))
    assert conv.agent == "weather agent" and conv.system is not None and SYSTEM in conv.system
    assert conv.notes == ["tool calls taken from model output messages (no execute_tool spans) for turn(s) 0"]
    (turn,) = conv.turns
    assert turn.input is not None and "Current Task: What is the weather in Paris?" in turn.input
    assert turn.answer == FINAL_TEXT
    assert calls_of(turn.tool_calls) == weather_call()
    assert [(u.input_tokens, u.output_tokens) for u in turn.usage] == [USAGE["tool_call"], USAGE["final"]]


def test_a_loop_the_caller_runs_without_anything_joining_its_traces_is_not_taken_for_an_agent_that_stopped() -> (
    None
):
    """Google GenAI's two `generate_content` calls, each a trace of its own with no conversation id or agent span:
    two conversations. The first ends asking for a tool whose result is in the other: its answer went unseen
    (`answers` not captured), not missing, so `no_answer` does not fire. The second is the whole turn: the call
    made before it and its result read from its input, after the question."""
    groups = group_by_conversation(_records("google_genai_trace.json", "json"))
    first, second = sorted(
        (build_conversation(spans) for spans in groups.values()), key=lambda c: c.turns[0].answer is not None
    )
    assert (first.turns[0].answer, first.not_captured) == (None, ["answers", "results", "steps"])
    assert (second.turns[0].answer, second.not_captured) == (FINAL_TEXT, [])
    assert calls_of(second.turns[0].tool_calls) == weather_call("get_weather_0")
    scorer = ConversationScorer()
    assert [scorer.score(c).evidence for c in (first, second)] == [[], []]
    # rebuilt beside each other, the first is a part of the second: one conversation, not two
    assert drop_continued([first, second]) == ([second], 1) == drop_continued([second, first])
    # under an agent span the same stop is the agent's: the tool was never run, no answer came
    model = min(_records("google_genai_trace.json", "json"), key=lambda r: r.start_ns)
    agent = SpanRecord(model.trace_id, "a" * 16, None, "invoke_agent", 0, 2**62, None, {}, {}, "c")
    agent.attrs["gen_ai.operation.name"] = "invoke_agent"
    model.parent_span_id, model.conversation_id = agent.span_id, "c"
    stopped = build_conversation([agent, model])
    assert stopped.not_captured == ["results"] and scorer.score(stopped).evidence == ["no_answer"]


SPLIT = [
    "openai_responses_trace.json",
    "openllmetry_responses_trace.json",
    "openai_stream_trace.json",
    "openllmetry_stream_trace.json",
    "anthropic_openllmetry_trace.json",
    "anthropic_openinference_trace.json",
    "azure_ai_inference_trace.json",
]


@pytest.mark.parametrize("file", SPLIT)
def test_each_model_call_a_trace_of_its_own_makes_an_unseen_answer_then_the_whole_turn(file: str) -> None:
    """The loop's two model calls alone, each made a trace (and so a conversation) of its own, as a caller that
    opens no span around them sends them: no failure evidence on the first, the whole turn in the second, which
    continues the first (left out beside it)."""
    models = sorted((s for s in _records(file, "json") if role_of(s) == "model"), key=lambda s: s.start_ns)
    convs = []
    for i, model in enumerate(models):
        model.parent_span_id, model.trace_id = None, f"{i + 1:032x}"
        model.conversation_id = model.trace_id
        convs.append(build_conversation([model]))
    first, second = convs
    scorer = ConversationScorer()
    assert (first.turns[0].answer, first.not_captured, scorer.score(first).evidence) == (
        None,
        ["answers", "results", "steps"],
        [],
    )
    assert (second.turns[0].answer, second.not_captured, scorer.score(second).evidence) == (
        FINAL_TEXT,
        [],
        [],
    )
    assert [(c.name, c.arguments, c.result) for c in second.turns[0].tool_calls] == [
        (name, arguments, result) for name, arguments, result, _ in weather_call()
    ]
    assert drop_continued(convs) == ([second], 1)


@pytest.mark.parametrize("encoding", ["json", "protobuf"])
def test_litellm_writing_a_call_over_the_callers_span_without_raw_spans_makes_no_verdict(
    encoding: str,
) -> None:
    """In the GenAI conventions' mode LiteLLM's callback still writes each model call over the span current when
    it logs, here the agent's, and opens no raw span: the span holds the first call (asking for the tool), the
    second logged after the span ended and was lost. Not an agent that stopped without answering: the answer and
    what came after went unseen, and the cost is a lower bound."""
    conv = build_conversation(_records("litellm_semconv_trace.json", encoding))
    assert conv.not_captured == ["answers", "arguments", "results", "steps"]
    assert any("USE_OTEL_LITELLM_REQUEST_SPAN=true" in note for note in conv.notes)
    score = ConversationScorer().score(conv)
    assert score.evidence == [] and score.passed is None
    assert "cost_unknown: a model call reported no token usage" in score.reasons
    assert score.cost_usd == pytest.approx((21 * 0.15 + 9 * 0.60) / 10**6, rel=1e-12)  # the call it holds


@pytest.mark.parametrize(
    ("file", "gaps"),
    [
        # the raw span below each call holds the call the first asked for: its result is what went unseen
        ("litellm_traces_trace.json", ["answers", "results", "steps"]),
        # no raw span in the conventions' mode, and LiteLLM's output messages drop the calls: the finish reason
        # says the model stopped for tools
        ("litellm_traces_semconv_trace.json", ["answers", "steps"]),
    ],
)
def test_litellm_without_a_span_around_its_calls_makes_an_unseen_answer_then_the_whole_turn(
    file: str, gaps: list[str]
) -> None:
    """Each call a trace of its own (its `litellm_request` span, the raw span below it counted once): the
    first ends asking for a tool, the second holds the whole turn in its input."""
    groups = group_by_conversation(_records(file, "json"))
    first, second = sorted(
        (build_conversation(spans) for spans in groups.values()), key=lambda c: c.turns[0].started_at or 0
    )
    scorer = ConversationScorer()
    assert (first.turns[0].answer, first.not_captured, scorer.score(first).evidence) == (None, gaps, [])
    assert (second.turns[0].answer, second.not_captured, scorer.score(second).evidence) == (
        FINAL_TEXT,
        [],
        [],
    )
    assert calls_of(second.turns[0].tool_calls) == weather_call()
    assert [[(u.input_tokens, u.output_tokens) for u in c.turns[0].usage] for c in (first, second)] == [
        [USAGE["tool_call"]],
        [USAGE["final"]],
    ]


def test_a_dspy_react_module_is_one_turn_of_its_question() -> None:
    """DSPy's ReAct under OpenInference: the question from the root's `{"input_args": {...}}` (its models' user
    messages are DSPy's formatted prompts), the tool by its span's name less `.__call__`, the answer its
    extraction step's; no tokens logged, so the cost is unknown."""
    conv = build_conversation(_records("dspy_trace.json", "json"))
    (turn,) = conv.turns
    assert (turn.input, turn.answer) == ("What is the weather in Paris?", FINAL_TEXT)
    assert calls_of([c for c in turn.tool_calls if c.name != "finish"]) == weather_call(None)
    score = ConversationScorer().score(conv)
    assert score.evidence == [] and "cost_unknown: a model call reported no token usage" in score.reasons


def test_a_haystack_agent_is_read_with_its_tool_result_marked_unlogged() -> None:
    """Haystack's Agent under OpenInference: no tool span, and its second model call's input keeps the tool
    message's role only (the call and the result dropped, Haystack's reprs in `input.value` are no Python): the
    call from the first call's output, its result `not_captured`, nothing failed for it."""
    conv = build_conversation(_records("haystack_trace.json", "json"))
    (turn,) = conv.turns
    assert (turn.input, turn.answer, conv.not_captured) == (
        "What is the weather in Paris?",
        FINAL_TEXT,
        ["results"],
    )
    assert [(c.name, c.arguments, c.result) for c in turn.tool_calls] == [
        ("get_weather", {"city": "Paris"}, None)
    ]
    assert ConversationScorer().score(conv).evidence == []


@pytest.mark.parametrize(
    "file", ["openai_agents_handoff_trace.json", "openai_agents_otel_handoff_trace.json"]
)
def test_an_agents_sdk_handoff_is_one_turn_its_handoff_no_call_with_effects(file: str) -> None:
    """A triage agent handing off to the weather agent, under OpenInference (the handoff a TOOL span `handoff to
    weather-agent`) and the official instrumentation: one turn, the question asked once, the weather agent's
    answer; graded against the weather call alone, the handoff is no unexpected call with effects."""
    conv = build_conversation(_records(file, "json"))
    (turn,) = conv.turns
    assert (conv.agent, turn.input, turn.answer) == (
        "triage-agent",
        "What is the weather in Paris?",
        FINAL_TEXT,
    )
    assert calls_of([c for c in turn.tool_calls if c.name == "get_weather"]) == weather_call()
    assert all(c.read_only for c in turn.tool_calls if c.name != "get_weather")
    turn.expected = Expectation(tools=[ExpectedTool(name="get_weather", arguments={"city": "Paris"})])
    score = ConversationScorer().score(conv)
    assert score.passed is True and score.evidence == []


def test_a_handoff_under_openllmetry_joins_the_two_agents_turns() -> None:
    """OpenLLMetry logs each agent as an `invoke_agent` span of its own, siblings under the workflow span, and the
    handoff as a span of operation `handoff` in the first: one turn, not the question asked twice. Its model
    spans log no output (the Chat Completions model under OpenLLMetry), so the answer is unseen."""
    conv = build_conversation(_records("openai_agents_openllmetry_handoff_trace.json", "json"))
    (turn,) = conv.turns
    assert (conv.agent, turn.input, turn.answer, conv.not_captured) == (
        "triage-agent",
        "What is the weather in Paris?",
        None,
        ["answers"],
    )
    assert calls_of(turn.tool_calls) == weather_call()
    assert ConversationScorer().score(conv).evidence == []
