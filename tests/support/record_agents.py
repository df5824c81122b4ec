"""Record the spans real agent SDKs send, for `tests/unit/test_recorded_traces.py`.

Each SDK runs one agent (one tool, `get_weather`) against the fake model of `tests.support.fake_openai`, and the
finished spans are written as OTLP/JSON (and the log records, where the SDK logs any, beside them as
`<sdk>_logs.json`). The SDKs are not test dependencies (each pins its own OpenAI and
OpenTelemetry versions); this script runs in a virtualenv where one is installed beside agentwatch:

    python -m venv /tmp/rec && /tmp/rec/bin/pip install -e . pytest <packages>
    /tmp/rec/bin/python -m tests.support.record_agents <sdk> tests/data/<sdk>_trace.json

| sdk | packages (recorded 2026-11-28) | what it sends |
|---|---|---|
| `strands` | `strands-agents[openai]` (1.62.0) | messages as span events, Bedrock content blocks |
| `pydantic_ai` | `pydantic-ai-slim[openai]` (2.68.0) | the GenAI conventions, with `operation.cost` |
| `pydantic_ai_anthropic_cache` | `pydantic-ai-slim[anthropic]` (2.68.0) | the same agent on Anthropic's Messages API, the fake model reporting prompt-cache reads and writes |
| `openai_agents` | `openai-agents` (0.24.0) `openinference-instrumentation-openai-agents` (2.6.0) | OpenInference: AGENT, LLM and TOOL spans, the tool's JSON schema as `tool.parameters` |
| `openai_agents_otel` | `openai-agents` (0.24.0) `opentelemetry-instrumentation-openai-agents-v2` (0.1.0) | the official instrumentation: the GenAI conventions, content on spans (`capture_message_content="span_only"`) |
| `openai_agents_openllmetry` | `openai-agents` (0.24.0) `opentelemetry-instrumentation-openai-agents` (OpenLLMetry, 0.62.4; it installs into the official one's module path, so in a virtualenv of its own), `TRACELOOP_TRACE_CONTENT=true` | agent, tool and model spans; with the Chat Completions model, model spans without output messages or tokens |
| `openai_agents_responses`, `openai_agents_otel_responses`, `openai_agents_openllmetry_responses` | as `openai_agents`, `openai_agents_otel` and `openai_agents_openllmetry` (each in its own virtualenv) | the SDK's default model, the Responses API, against a fake `/v1/responses`: no instructions logged; the official instrumentation's first output the repr of a `ResponseFunctionToolCall`; OpenLLMetry's later input repeating the call under its item id |
| `openai_agents_streamed`, `openai_agents_otel_streamed`, `openai_agents_openllmetry_streamed` | the same | the Responses model run with `Runner.run_streamed`, the fake endpoint answering in server-sent events |
| `adk` | `google-adk` (2.13.0) `litellm` (1.110.2) | the GenAI conventions (`invoke_workflow` above `invoke_agent`), content only with `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental` and `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY`, which the recording sets |
| `adk_legacy` | the same | ADK's own attributes (`ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1`, what ADK 1.x sends): the request and response as JSON on a `call_llm` span around the client's `generate_content`, the tool's arguments and result as `gcp.vertex.agent.*` |
| `llama_index` | `llama-index-core` (0.14.25) `llama-index-llms-openai` `openinference-instrumentation-llama-index` (4.6.1) | OpenInference: a CHAIN per workflow step under the agent's run, whose input and output are the workflow's objects (JSON, Python reprs); tool calls as `{"kwargs": ...}` and `ToolOutput` |
| `smolagents` | `smolagents[openai]` (1.26.0) `openinference-instrumentation-smolagents` (0.1.43) | OpenInference: the agent's run (its `task` as input), a CHAIN per step, tool input as a logged Python call; the agent answers by calling `final_answer` |
| `google_genai` | `google-genai` (2.34.0; the instrumentation takes `>=1.32,<3`) `opentelemetry-instrumentation-google-genai` (1.3b0) | the official GenAI instrumentation, content on spans: two `generate_content` calls of a loop the caller runs, tool calls only in the messages (ids made up by the instrumentation) |
| `langgraph_openllmetry` | `langgraph` (1.2.24) `langchain-openai` (1.7.4) `opentelemetry-instrumentation-langchain` (OpenLLMetry, 0.62.4) | the GenAI conventions and `traceloop.*`: an `invoke_agent` span per request (the graph's name, "LangGraph", as the agent), `execute_task` spans per node, a tool span whose arguments and result are the LangChain callback's whole input and output |
| `openai_events` | `opentelemetry-instrumentation-genai-openai` (1.3b0, a test dependency) | the official OpenAI instrumentation with content in events only (`EVENT_ONLY`, `OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT=true`): one `gen_ai.client.inference.operation.details` log record per call, no messages on the spans; the caller's agent span names the conversation |
| `openai_v2_events` | `opentelemetry-instrumentation-openai-v2` (2.1b0) `openai` | its predecessor: one log record per message (`gen_ai.user.message`, ..., `gen_ai.choice`), the message in the body |
| `openllmetry_events` | `opentelemetry-instrumentation-openai` (OpenLLMetry, 0.62.4) `openai` | OpenLLMetry's event mode (`use_attributes=False`): one log record per message, the choice's tool calls beside its message in the body |
| `google_genai_events` | the same | the same in event mode (`EVENT_ONLY`, `OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT=true`): no messages on the spans, one `gen_ai.client.inference.operation.details` log record per call |
| `openai_stream` | `opentelemetry-instrumentation-genai-openai` (1.3b0) | the `openai_events` loop with both calls streamed (no `include_usage`), content on spans (`SPAN_ONLY`): the chunks gathered into output messages, no tokens |
| `openllmetry_stream` | `opentelemetry-instrumentation-openai` (OpenLLMetry, 0.62.4) `openai` | the same loop under OpenLLMetry's default (attributes) mode: output messages gathered from the chunks, no tokens |
| `openai_responses` | `opentelemetry-instrumentation-genai-openai` (1.3b0) | the `openai_events` loop on the Responses API against a fake `/v1/responses`, content on spans |
| `openllmetry_responses` | `opentelemetry-instrumentation-openai` (OpenLLMetry, 0.62.4) `openai` | the same under OpenLLMetry: calls under the output item's id, results under the call's |
| `semantic_kernel` | `semantic-kernel` (1.45.0) | its own GenAI diagnostics (`SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS[_SENSITIVE]`): spans without messages, the messages Python log records bridged by a `LoggingHandler` (`event.name` attributes), written beside the spans as `semantic_kernel_logs.json` |
| `autogen` | `autogen-agentchat` `autogen-ext[openai]` (0.7.5) `opentelemetry-instrumentation-openai` (OpenLLMetry, 0.62.4) | its runtime's `invoke_agent` and `execute_tool` spans, the model calls OpenLLMetry's; each agent's creation a `create_agent` trace of its own |
| `agent_framework` | `agent-framework-core` (1.23.0) `agent-framework-openai` (1.17.0) | its own telemetry with sensitive data: `invoke_agent`, `chat` and `execute_tool` spans in the GenAI conventions |
| `azure_ai_inference` | `azure-ai-inference` (1.0.0b9) `azure-core-tracing-opentelemetry` (1.0.0b13) | the loop on `ChatCompletionsClient`, traced by its `AIInferenceInstrumentor` with content recording: messages as span events, azure-core's HTTP spans beneath |
| `crewai` | `crewai` (1.15.30) `opentelemetry-instrumentation-crewai` `opentelemetry-instrumentation-openai` (OpenLLMetry, 0.62.4), `TRACELOOP_TRACE_CONTENT=true` | crew, agent and task spans, the model calls OpenLLMetry's; no tool span |
| `anthropic_openllmetry` | `anthropic` (2.14.0) `opentelemetry-instrumentation-anthropic` (OpenLLMetry, 0.62.4), `TRACELOOP_TRACE_CONTENT=true` | the loop on Anthropic's Messages API against a fake `/v1/messages`: `tool_use` and `tool_result` blocks, the GenAI conventions |
| `anthropic_openinference` | `anthropic` (2.14.0) `openinference-instrumentation-anthropic` (3.1.0) | the same under OpenInference: flattened `llm.input_messages.*` keys |
| `openllmetry_cache`, `openinference_openai_cache` | `opentelemetry-instrumentation-openai` (OpenLLMetry, 0.62.4); `openinference-instrumentation-openai` (0.1.66), `openai` | the `openai_events` loop non-streamed, the fake model reporting prompt tokens read from its cache (`cached_tokens`, among the prompt tokens) |
| `anthropic_cache_openllmetry`, `anthropic_cache_openinference` | as `anthropic_openllmetry`, `anthropic_openinference` | the same loop with Anthropic's cache reads and writes (apart from its `input_tokens`) |
| `litellm`, `litellm_semconv`, `litellm_request_span`, `litellm_traces`, `litellm_traces_semconv` | `litellm` (1.110.2) | the loop through `litellm.completion` under LiteLLM's OpenTelemetry callback: by default (and with `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`) it writes each call over the agent span, with a `raw_gen_ai_request` span per call below it (not in the conventions' mode); with `USE_OTEL_LITELLM_REQUEST_SPAN=true` a `litellm_request` span per call; without a span of the caller's around the calls, each a trace of its own |
| `bedrock_openllmetry`, `bedrock_openinference` | `boto3` (1.44.8) `opentelemetry-instrumentation-bedrock` (OpenLLMetry, 0.62.4), `TRACELOOP_TRACE_CONTENT=true`; `openinference-instrumentation-bedrock` | the loop on Bedrock's Converse API against a fake endpoint: `toolUse` and `toolResult` blocks, the GenAI conventions, the result as Bedrock's content blocks |
| `agno` | `agno` (3.1.10) `openinference-instrumentation-agno` (1.0.15) | an Agno `Agent` on its OpenAI chat model, under OpenInference: the agent's run, its model calls and its tool |
| `dspy` | `dspy` (3.4.1) `openinference-instrumentation-dspy` (0.1.48) `openinference-instrumentation-litellm` (0.1.51) | DSPy's `ReAct` module with one tool (its chat adapter's `[[ ## field ## ]]` sections, answered by the fake model), under OpenInference: a CHAIN per module call, LLM spans without tokens, tool spans `<tool>.__call__` |
| `haystack` | `haystack-ai` (3.4.1) `openinference-instrumentation-haystack` (0.1.46) | Haystack's `Agent` with one tool on its OpenAI chat generator, under OpenInference: CHAIN and LLM spans, no tool span; the tool message of the second call's input without its content |
| `openai_agents_handoff`, `openai_agents_otel_handoff`, `openai_agents_openllmetry_handoff` | as `openai_agents`, `openai_agents_otel`, `openai_agents_openllmetry` | a triage agent handing off to the weather agent (`handoffs=[...]`), the fake model calling the handoff, then the tool, then answering |
| `langchain_agent`, `langchain_agent_openllmetry` | as `langgraph` and `langgraph_openllmetry`, with `langchain` (1.5.2) | LangChain 1's `create_agent` (a LangGraph graph of "model" and "tools" nodes), two requests of one thread |
| `openai_agents_mcp`, `openai_agents_otel_mcp` | as `openai_agents`, `openai_agents_otel`, with `mcp` (2.3.0) | the weather agent's tool served by an MCP server over stdio (`tests.support.mcp_weather`) |
| `langfuse`, `langfuse_span` | `langfuse` (5.0.4) `openai` | Langfuse's own spans (`langfuse.observation.*`): `@observe` on the agent (`as_type="agent"`, or the default) and the tool, the model calls through `langfuse.openai`, `propagate_attributes(session_id=...)` |
| `langgraph_langfuse` | as `langgraph`, with `langfuse` (5.0.4) | LangGraph's prebuilt agent traced by Langfuse's LangChain `CallbackHandler` (`langfuse_session_id` in the run's metadata) |
| `mlflow` | `mlflow-tracing` (3.17.2) `opentelemetry-exporter-otlp-proto-http` `openai` | MLflow Tracing's own spans (`mlflow.*`, every value JSON) on the global tracer provider, exporting by OTLP: `@mlflow.trace` on the agent and the tool, `mlflow.openai.autolog()` |
| `logfire` | `logfire` (5.4.0) `openai` | Logfire's OpenAI instrumentation (the GenAI conventions, content on spans) inside the caller's `logfire.span`s |
| `langgraph_mlflow` | as `langgraph`, with `mlflow-tracing` (3.17.2) `opentelemetry-exporter-otlp-proto-http` | LangGraph's prebuilt agent under MLflow's LangChain autologger (`mlflow.langchain.autolog()`), exporting by OTLP |
| `traceloop` | `traceloop-sdk` (0.45.6: what pip resolves today) `openai` | Traceloop's `@agent` and `@tool` decorators (`traceloop.entity.*`), its OpenAI instrumentation (flattened keys), the session as an association property |
| `langgraph` | `langgraph` (1.2.24) `langchain-openai` (1.7.4) `openinference-instrumentation-langchain` (0.1.80) | OpenInference: a CHAIN per graph run, an AGENT span per run of the "agent" node, the tool node beside them; two turns of one thread |
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry import trace

from tests.support.fake_models import (
    FakeEndpoint,
    anthropic_reply,
    cached_anthropic_reply,
    cached_completion,
    converse_reply,
    dspy_reply,
    gemini_server,
    handoff_reply,
    named_tool_reply,
    responses_server,
    smolagents_reply,
    streamed,
)
from tests.support.fake_openai import (
    TOOL_CALL_ID,
    FakeOpenAI,
    Reply,
    completion,
)
from tests.support.spans import SpanFactory

SYSTEM = "You answer weather questions."
QUESTION = "What is the weather in Paris?"
FOLLOW_UP = "Thanks. And tomorrow?"


def _strands(factory: SpanFactory, base_url: str) -> None:
    trace.set_tracer_provider(factory.provider)
    from strands import Agent, tool  # imported once the tracer provider is set: Strands takes the global one
    from strands.models.openai import OpenAIModel

    @tool
    def get_weather(city: str) -> dict:
        """Weather of a city."""
        return weather(city)

    model = OpenAIModel(client_args={"base_url": base_url, "api_key": "test"}, model_id="gpt-4o-mini")
    Agent(model=model, tools=[get_weather], system_prompt=SYSTEM, callback_handler=None)(QUESTION)


def _pydantic_ai(factory: SpanFactory, base_url: str, anthropic: bool = False) -> None:
    """Pydantic AI's agent on OpenAI's chat model, or (`anthropic`) on Anthropic's with prompt-cache counts."""
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings

    Agent.instrument_all(InstrumentationSettings(tracer_provider=factory.provider))
    server = None
    if anthropic:
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        server = FakeEndpoint(cached_anthropic_reply)
        model: Any = AnthropicModel(
            "claude-sonnet-4-5", provider=AnthropicProvider(base_url=server.base_url, api_key="test")
        )
    else:
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(base_url=base_url, api_key="test"))
    try:
        agent = Agent(model, system_prompt=SYSTEM, name="weather-agent")
        agent.tool_plain(weather, name="get_weather")
        agent.run_sync(QUESTION)
    finally:
        if server is not None:
            server.close()


def _langgraph(
    factory: SpanFactory,
    base_url: str,
    openllmetry: bool = False,
    create_agent: bool = False,
    langfuse: bool = False,
    mlflow: bool = False,
) -> None:
    """LangGraph's prebuilt ReAct agent (`create_agent`: LangChain 1's agent, built on LangGraph), two requests of
    one thread, under OpenInference, OpenLLMetry, (`langfuse`) Langfuse's LangChain callback handler or (`mlflow`)
    MLflow's LangChain autologger."""
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import MemorySaver
    from langgraph.prebuilt import create_react_agent

    callbacks: list[Any] = []
    if mlflow:
        _mlflow_on(factory)
        import mlflow as mlflow_module

        mlflow_module.langchain.autolog()
    elif langfuse:
        from langfuse import Langfuse
        from langfuse.langchain import CallbackHandler

        Langfuse(
            public_key="pk-lf-test",
            secret_key="sk-lf-test",
            host="http://127.0.0.1:9",
            tracer_provider=factory.provider,
        )
        callbacks.append(CallbackHandler())
    elif openllmetry:
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        LangchainInstrumentor().instrument(tracer_provider=factory.provider)
    else:
        from openinference.instrumentation.langchain import LangChainInstrumentor

        LangChainInstrumentor().instrument(tracer_provider=factory.provider)

    @tool
    def get_weather(city: str) -> dict:
        """Weather of a city."""
        return weather(city)

    llm = ChatOpenAI(model="gpt-4o-mini", base_url=base_url, api_key="test")
    if create_agent:
        from langchain.agents import create_agent as create

        agent: Any = create(llm, [get_weather], system_prompt=SYSTEM, checkpointer=MemorySaver())
    else:
        agent = create_react_agent(llm, [get_weather], prompt=SYSTEM, checkpointer=MemorySaver())
    metadata = {"session_id": "thread-1", "langfuse_session_id": "thread-1"}
    config: Any = {"configurable": {"thread_id": "thread-1"}, "metadata": metadata, "callbacks": callbacks}
    agent.invoke({"messages": [("user", QUESTION)]}, config=config)
    agent.invoke({"messages": [("user", FOLLOW_UP)]}, config=config)


def _instrument_agents_sdk(factory: SpanFactory, official: bool) -> None:
    """The OpenAI Agents SDK traced by the official instrumentation (the GenAI conventions, content on spans; in
    a virtualenv where OpenLLMetry's is installed, OpenLLMetry's, which takes its module path) or OpenInference."""
    if official:
        from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        OpenAIAgentsInstrumentor().instrument(
            tracer_provider=factory.provider, capture_message_content="span_only"
        )
    else:
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        OpenAIAgentsInstrumentor().instrument(tracer_provider=factory.provider)


def _openai_agents(
    factory: SpanFactory, base_url: str, official: bool = False, responses: bool = False, stream: bool = False
) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner, function_tool
    from openai import AsyncOpenAI

    _instrument_agents_sdk(factory, official)
    server = responses_server() if responses else None
    client = AsyncOpenAI(base_url=server.base_url if server else base_url, api_key="test")
    model: Any = (
        OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client)
        if responses
        else OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
    )
    tool = function_tool(weather, name_override="get_weather")
    try:
        agent = Agent(name="weather-agent", instructions=SYSTEM, tools=[tool], model=model)
        if stream:  # as chat front ends run it, the events read to the end

            async def run() -> None:
                async for _ in Runner.run_streamed(agent, QUESTION).stream_events():
                    pass

            asyncio.run(run())
        else:
            Runner.run_sync(agent, QUESTION)
    finally:
        if server is not None:
            server.close()


def _openai_agents_handoff(factory: SpanFactory, base_url: str, official: bool = False) -> None:
    """Two agents of the OpenAI Agents SDK: a triage agent that hands off to the weather agent, which calls the
    tool and answers (one run: one conversation, the question asked once)."""
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
    from openai import AsyncOpenAI

    _instrument_agents_sdk(factory, official)
    model: Any = OpenAIChatCompletionsModel(
        model="gpt-4o-mini", openai_client=AsyncOpenAI(base_url=base_url, api_key="test")
    )
    tool = function_tool(weather, name_override="get_weather")
    weather_agent = Agent(name="weather-agent", instructions=SYSTEM, tools=[tool], model=model)
    triage = Agent(
        name="triage-agent",
        instructions="Hand weather questions to the weather agent.",
        handoffs=[weather_agent],
        model=model,
    )
    Runner.run_sync(triage, QUESTION)


def _openai_agents_mcp(factory: SpanFactory, base_url: str, official: bool = False) -> None:
    """The weather agent of the OpenAI Agents SDK with its tool served by an MCP server over stdio
    (`tests.support.mcp_weather`), not a function of its own."""
    from agents import Agent, OpenAIChatCompletionsModel, Runner
    from agents.mcp import MCPServerStdio
    from openai import AsyncOpenAI

    _instrument_agents_sdk(factory, official)
    model: Any = OpenAIChatCompletionsModel(
        model="gpt-4o-mini", openai_client=AsyncOpenAI(base_url=base_url, api_key="test")
    )
    params: Any = {"command": sys.executable, "args": ["-m", "tests.support.mcp_weather"], "cwd": os.getcwd()}

    async def run() -> None:
        async with MCPServerStdio(params=params, name="weather-mcp") as server:
            agent = Agent(name="weather-agent", instructions=SYSTEM, mcp_servers=[server], model=model)
            await Runner.run(agent, QUESTION)

    asyncio.run(run())


def _openai_events(factory: SpanFactory, base_url: str) -> None:
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "EVENT_ONLY"
    os.environ["OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT"] = "true"
    kwargs: dict[str, Any] = {"tracer_provider": factory.provider, "logger_provider": factory.logger_provider}
    try:
        from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor
    except ImportError:  # its predecessor, which logs one event per message through the Events API
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor  # type: ignore[no-redef]
        from opentelemetry.sdk._events import EventLoggerProvider

        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
        kwargs["event_logger_provider"] = EventLoggerProvider(factory.logger_provider)
    OpenAIInstrumentor().instrument(**kwargs)
    _weather_loop(factory, base_url)


def _weather_loop(factory: SpanFactory, base_url: str, stream: bool = False) -> None:
    """The caller's agent span (naming the conversation) around two chat calls and a tool span without content:
    the model asks for the tool, then answers with its result (`stream`: both calls streamed, as chat front ends
    ask, without `include_usage`)."""
    from openai import OpenAI

    client: Any = OpenAI(base_url=base_url, api_key="test")  # messages as plain dicts, as agents build them
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER_PARAMETERS}}]
    with _agent_span(factory, "conv-events-1"):
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": QUESTION},
        ]
        chat = _streamed_chat(client) if stream else client.chat.completions.create
        asked = chat(model="gpt-4o-mini", messages=messages, tools=tools).choices[0].message
        call = asked.tool_calls[0]
        result = _run_tool(factory, call.id, call.function.arguments)
        messages += [
            asked.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": result},
        ]
        chat(model="gpt-4o-mini", messages=messages, tools=tools)


def _responses_loop(factory: SpanFactory) -> None:
    """`_weather_loop` on the Responses API: the instructions as their own parameter, the call and its output as
    input items of the second request."""
    from openai import OpenAI

    server = responses_server()
    client: Any = OpenAI(base_url=server.base_url, api_key="test")
    tools = [{"type": "function", "name": "get_weather", "parameters": WEATHER_PARAMETERS}]
    try:
        with _agent_span(factory, "conv-responses-1"):
            items: list[Any] = [{"role": "user", "content": QUESTION}]
            first = client.responses.create(
                model="gpt-4o-mini", instructions=SYSTEM, input=items, tools=tools
            )
            call = first.output[0]
            result = _run_tool(factory, call.call_id, call.arguments)
            items += [
                call.model_dump(exclude_none=True),
                {"type": "function_call_output", "call_id": call.call_id, "output": result},
            ]
            client.responses.create(model="gpt-4o-mini", instructions=SYSTEM, input=items, tools=tools)
    finally:
        server.close()


WEATHER_PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}}


def _agent_span(factory: SpanFactory, conversation: str) -> Any:
    """The caller's agent span, naming the conversation."""
    agent = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "weather-agent",
        "gen_ai.conversation.id": conversation,
    }
    return factory.tracer.start_as_current_span("invoke_agent weather-agent", attributes=agent)


def _run_tool(factory: SpanFactory, call_id: str, arguments: str) -> str:
    """The weather tool run under an execute_tool span that logs no content; its result as JSON."""
    tool = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.id": call_id,
    }
    with factory.tracer.start_as_current_span("execute_tool get_weather", attributes=tool):
        return json.dumps(weather(**json.loads(arguments)))


def _semantic_kernel(factory: SpanFactory, base_url: str) -> None:
    """Semantic Kernel's `ChatCompletionAgent` with a plugin's function, its own GenAI diagnostics on (they are
    read when its modules are imported, from the global tracer provider). Its messages are Python log records
    (`event.name` in their attributes), bridged to OpenTelemetry by a `LoggingHandler` as its docs set up."""
    import logging

    from opentelemetry.sdk._logs import LoggingHandler

    os.environ["SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS"] = "true"
    os.environ["SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE"] = "true"
    trace.set_tracer_provider(factory.provider)
    sk_logs = logging.getLogger("semantic_kernel")
    sk_logs.addHandler(LoggingHandler(logger_provider=factory.logger_provider))
    sk_logs.setLevel(logging.INFO)
    from openai import AsyncOpenAI
    from semantic_kernel.agents import ChatCompletionAgent
    from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion
    from semantic_kernel.functions import kernel_function

    class Weather:
        @kernel_function(name="get_weather", description="Weather of a city.")
        def get_weather(self, city: str) -> dict:
            return weather(city)

    client = AsyncOpenAI(base_url=base_url, api_key="test")
    service = OpenAIChatCompletion(ai_model_id="gpt-4o-mini", async_client=client)
    agent = ChatCompletionAgent(
        service=service, name="weather-agent", instructions=SYSTEM, plugins=[Weather()]
    )
    asyncio.run(agent.get_response(messages=QUESTION))


def _autogen(factory: SpanFactory, base_url: str) -> None:
    """AutoGen AgentChat's `AssistantAgent` (its runtime's own spans, from the global tracer provider) with the
    model calls under OpenLLMetry's OpenAI instrumentation, as AutoGen's docs set it up; the agent reflects on
    the tool's result (a second model call) rather than returning it."""
    trace.set_tracer_provider(factory.provider)
    from autogen_agentchat.agents import AssistantAgent
    from autogen_ext.models.openai import OpenAIChatCompletionClient
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=factory.provider)

    async def get_weather(city: str) -> dict:
        """Weather of a city."""
        return weather(city)

    info = {"vision": False, "function_calling": True, "json_output": True, "family": "gpt-4o"}
    client = OpenAIChatCompletionClient(
        model="gpt-4o-mini", base_url=base_url, api_key="test", model_info=info
    )
    agent = AssistantAgent(
        "weather_agent",
        model_client=client,
        tools=[get_weather],
        system_message=SYSTEM,
        reflect_on_tool_use=True,
    )
    asyncio.run(agent.run(task=QUESTION))


def _agent_framework(factory: SpanFactory, base_url: str) -> None:
    """Microsoft Agent Framework's `Agent` on its Chat Completions client, its own telemetry (on by default, from
    the global tracer provider) with sensitive data."""
    trace.set_tracer_provider(factory.provider)
    from agent_framework import Agent
    from agent_framework.observability import enable_instrumentation
    from agent_framework.openai import OpenAIChatCompletionClient

    enable_instrumentation(enable_sensitive_data=True)

    def get_weather(city: str) -> dict:
        """Weather of a city."""
        return weather(city)

    client = OpenAIChatCompletionClient(model="gpt-4o-mini", base_url=base_url, api_key="test")
    agent = Agent(client=client, name="weather-agent", instructions=SYSTEM, tools=[get_weather])
    asyncio.run(agent.run(QUESTION))


def _azure_ai_inference(factory: SpanFactory, base_url: str) -> None:
    """`_weather_loop` on Azure AI Inference's `ChatCompletionsClient` (its chat endpoint takes an `api-version`
    query), traced by its own `AIInferenceInstrumentor` through azure-core's OpenTelemetry plugin (the global
    tracer provider), content recording on: messages as span events."""
    trace.set_tracer_provider(factory.provider)
    from azure.ai.inference import ChatCompletionsClient
    from azure.ai.inference.models import (
        ChatCompletionsToolDefinition,
        FunctionDefinition,
        SystemMessage,
        ToolMessage,
        UserMessage,
    )
    from azure.ai.inference.tracing import AIInferenceInstrumentor
    from azure.core.credentials import AzureKeyCredential
    from azure.core.settings import settings

    settings.tracing_implementation = "opentelemetry"
    AIInferenceInstrumentor().instrument(enable_content_recording=True)
    server = FakeEndpoint(completion)
    client = ChatCompletionsClient(endpoint=server.base_url, credential=AzureKeyCredential("test"))
    tool = ChatCompletionsToolDefinition(
        function=FunctionDefinition(
            name="get_weather", description="Weather of a city.", parameters=WEATHER_PARAMETERS
        )
    )
    try:
        with _agent_span(factory, "conv-azure-1"):
            said: list[Any] = [SystemMessage(SYSTEM), UserMessage(QUESTION)]
            first = client.complete(messages=said, tools=[tool], model="gpt-4o-mini")
            asked = first.choices[0].message
            call = asked.tool_calls[0]
            result = _run_tool(factory, call.id, call.function.arguments)
            said += [asked, ToolMessage(result, tool_call_id=call.id)]
            client.complete(messages=said, tools=[tool], model="gpt-4o-mini")
    finally:
        server.close()


def _crewai(factory: SpanFactory, base_url: str) -> None:
    """A CrewAI crew of one agent and one task, under OpenLLMetry's CrewAI and OpenAI instrumentations (what
    Traceloop's SDK turns on); CrewAI's own telemetry off."""
    os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
    os.environ["CREWAI_TRACING_ENABLED"] = "false"
    from crewai import LLM, Agent, Crew, Task
    from crewai.tools import tool
    from opentelemetry.instrumentation.crewai import CrewAIInstrumentor
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    CrewAIInstrumentor().instrument(tracer_provider=factory.provider)
    OpenAIInstrumentor().instrument(tracer_provider=factory.provider)

    @tool("get_weather")
    def get_weather(city: str) -> dict:
        """Weather of a city."""
        return weather(city)

    llm = LLM(model="gpt-4o-mini", base_url=base_url, api_key="test")
    agent = Agent(
        role="weather agent", goal="Answer weather questions", backstory=SYSTEM, tools=[get_weather], llm=llm
    )
    task = Task(description=QUESTION, expected_output="The weather in the city", agent=agent)
    Crew(agents=[agent], tasks=[task]).kickoff()


def _langfuse(factory: SpanFactory, base_url: str, agent: bool = True) -> None:
    """The weather loop written as Langfuse's docs show it: `@observe` on the agent (`agent`: declared one, else
    a plain observation, the decorator's default) and on the tool, the model calls through Langfuse's OpenAI
    wrapper, the conversation named by `propagate_attributes(session_id=...)`; Langfuse's client on the
    recording's tracer provider (its own exporter pointed at a closed port)."""
    from langfuse import Langfuse, observe, propagate_attributes
    from langfuse.openai import OpenAI

    langfuse = Langfuse(
        public_key="pk-lf-test",
        secret_key="sk-lf-test",
        host="http://127.0.0.1:9",
        tracer_provider=factory.provider,
    )
    client: Any = OpenAI(base_url=base_url, api_key="test")

    @observe(as_type="tool", name="get_weather")
    def get_weather(city: str) -> dict:
        return weather(city)

    @observe(as_type="agent" if agent else "span", name="weather-agent")
    def answer(question: str) -> str:
        return _chat_loop(client, question, get_weather)

    with propagate_attributes(session_id="conv-langfuse-1", user_id="user-1"):
        answer(QUESTION)
    with contextlib.suppress(Exception):
        langfuse.flush()


def _logfire(factory: SpanFactory, base_url: str) -> None:
    """The weather loop under Logfire (Pydantic's): `logfire.instrument_openai()` on the client, the caller's
    work in a `logfire.span` naming the conversation, the tool in another; Logfire sending nowhere but the
    recording (`send_to_logfire=False`, the recording's processor added)."""
    import logfire
    from openai import OpenAI
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    logfire.configure(
        send_to_logfire=False,
        console=False,
        service_name="logfire-weather",
        service_version="1.0.0",
        additional_span_processors=[SimpleSpanProcessor(factory.exporter)],
    )
    client: Any = OpenAI(base_url=base_url, api_key="test")
    logfire.instrument_openai(client)

    def get_weather(city: str) -> dict:
        with logfire.span("get_weather", city=city):
            return weather(city)

    with logfire.span("weather agent", **{"gen_ai.conversation.id": "conv-logfire-1"}):
        _chat_loop(client, QUESTION, get_weather)
    logfire.force_flush()


def _chat_loop(client: Any, question: str, get_weather: Callable[..., Any]) -> str:
    """The weather loop on an OpenAI client: the model asks for the tool, `get_weather` runs it, the model
    answers with its result; the answer."""
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER_PARAMETERS}}]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": question},
    ]
    asked = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
    call = asked.choices[0].message.tool_calls[0]
    result = get_weather(**json.loads(call.function.arguments))
    messages += [
        asked.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)},
    ]
    final = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
    return str(final.choices[0].message.content)


def _mlflow_on(factory: SpanFactory) -> None:
    """MLflow Tracing on the global tracer provider (`MLFLOW_USE_DEFAULT_TRACER_PROVIDER=false`), the
    recording's, exporting by OTLP (to a closed port) as a team sending its traces to an OpenTelemetry backend
    configures it."""
    os.environ["MLFLOW_USE_DEFAULT_TRACER_PROVIDER"] = "false"
    os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "http://127.0.0.1:9/v1/traces"  # no tracking server
    os.environ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] = "http/protobuf"
    trace.set_tracer_provider(factory.provider)


def _mlflow(factory: SpanFactory, base_url: str) -> None:
    """The weather loop under MLflow Tracing (`_mlflow_on`): `mlflow.openai.autolog()`, `@mlflow.trace` on the
    agent (span type AGENT) and the tool (TOOL)."""
    _mlflow_on(factory)
    import mlflow
    from openai import OpenAI

    mlflow.openai.autolog()
    client: Any = OpenAI(base_url=base_url, api_key="test")

    @mlflow.trace(name="get_weather", span_type="TOOL")
    def get_weather(city: str) -> dict:
        return weather(city)

    @mlflow.trace(name="weather-agent", span_type="AGENT")
    def answer(question: str) -> str:
        return _chat_loop(client, question, get_weather)

    answer(QUESTION)


def _traceloop(factory: SpanFactory, base_url: str) -> None:
    """The weather loop under Traceloop's SDK (OpenLLMetry's entry point): `Traceloop.init` with the recording's
    exporter, `@agent` and `@tool` decorators, its OpenAI instrumentation, the session as an association
    property (`session_id`), as Traceloop's docs tag a conversation."""
    os.environ["TRACELOOP_TRACE_CONTENT"] = "true"
    os.environ["TRACELOOP_TELEMETRY"] = "false"
    from openai import OpenAI
    from traceloop.sdk import Traceloop
    from traceloop.sdk.decorators import agent, tool

    Traceloop.init(
        app_name="traceloop-weather", exporter=factory.exporter, disable_batch=True, telemetry_enabled=False
    )
    client: Any = OpenAI(base_url=base_url, api_key="test")

    @tool(name="get_weather")
    def get_weather(city: str) -> dict:
        return weather(city)

    @agent(name="weather-agent")
    def answer(question: str) -> str:
        return _chat_loop(client, question, get_weather)

    Traceloop.set_association_properties({"session_id": "conv-traceloop-1"})
    answer(QUESTION)


def _anthropic(factory: SpanFactory, base_url: str, openinference: bool = False, cache: bool = False) -> None:
    """`_weather_loop` on Anthropic's Messages API: the tool call a `tool_use` block, its result a `tool_result`
    block of the next user message."""
    from anthropic import Anthropic

    if openinference:
        from openinference.instrumentation.anthropic import AnthropicInstrumentor
    else:
        from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor
    AnthropicInstrumentor().instrument(tracer_provider=factory.provider)
    server = FakeEndpoint(cached_anthropic_reply if cache else anthropic_reply)
    client: Any = Anthropic(base_url=server.base_url, api_key="test")
    tools = [{"name": "get_weather", "description": "Weather of a city.", "input_schema": WEATHER_PARAMETERS}]
    try:
        with _agent_span(factory, "conv-anthropic-1"):
            said: list[Any] = [{"role": "user", "content": QUESTION}]
            ask = {"model": "claude-sonnet-4-5", "max_tokens": 256, "system": SYSTEM, "tools": tools}
            first = client.messages.create(messages=said, **ask)
            use = first.content[0]
            result = _run_tool(factory, use.id, json.dumps(use.input))
            said += [
                {
                    "role": "assistant",
                    "content": [block.model_dump(exclude_none=True) for block in first.content],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": use.id, "content": result}],
                },
            ]
            client.messages.create(messages=said, **ask)
    finally:
        server.close()


def _openai_responses(factory: SpanFactory, base_url: str) -> None:
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=factory.provider)
    _responses_loop(factory)


def _openllmetry_responses(factory: SpanFactory, base_url: str) -> None:
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=factory.provider)
    _responses_loop(factory)


def _streamed_chat(client: Any) -> Callable[..., Any]:
    """`client.chat.completions.create` streamed and read to its end, the chunks gathered into a completion."""
    from openai.lib.streaming.chat import ChatCompletionStreamState

    def chat(**request: Any) -> Any:
        state = ChatCompletionStreamState()
        for chunk in client.chat.completions.create(stream=True, **request):
            state.handle_chunk(chunk)
        return state.get_final_completion()

    return chat


def _openai_stream(factory: SpanFactory, base_url: str) -> None:
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=factory.provider)
    _weather_loop(factory, base_url, stream=True)


def _openllmetry(factory: SpanFactory, base_url: str, events: bool = False, stream: bool = False) -> None:
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor(use_attributes=not events).instrument(
        tracer_provider=factory.provider, logger_provider=factory.logger_provider
    )
    _weather_loop(factory, base_url, stream=stream)


def _litellm(
    factory: SpanFactory, base_url: str, env: dict[str, str] | None = None, joined: bool = True
) -> None:
    """The caller's loop through LiteLLM's SDK (`litellm.completion`, an OpenAI-compatible model), traced by
    LiteLLM's own OpenTelemetry callback (`env`: its settings); without `joined`, no span of the caller's around
    the calls and the tool run untraced (each call a trace of its own)."""
    os.environ.update(env or {})
    import litellm
    from litellm.integrations.opentelemetry import OpenTelemetry

    litellm.callbacks = [OpenTelemetry(tracer_provider=factory.provider)]
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER_PARAMETERS}}]

    def chat(messages: list[dict[str, Any]]) -> Any:
        return litellm.completion(
            model="openai/gpt-4o-mini", api_base=base_url, api_key="test", messages=messages, tools=tools
        )

    with _agent_span(factory, "conv-litellm-1") if joined else contextlib.nullcontext():
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": QUESTION},
        ]
        asked = chat(messages).choices[0].message
        call = asked.tool_calls[0]
        if joined:
            result = _run_tool(factory, call.id, call.function.arguments)
        else:
            result = json.dumps(weather(**json.loads(call.function.arguments)))
        messages += [
            asked.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": result},
        ]
        chat(messages)
    time.sleep(0.5)  # the callback logs from a thread of its own


def _bedrock(factory: SpanFactory, base_url: str, openinference: bool = False) -> None:
    """`_weather_loop` on Bedrock's Converse API (boto3), under OpenLLMetry's Bedrock instrumentation (or
    OpenInference's): the call a `toolUse` block, its result a `toolResult` block of the next user message."""
    import boto3

    if openinference:
        from openinference.instrumentation.bedrock import BedrockInstrumentor
    else:
        from opentelemetry.instrumentation.bedrock import BedrockInstrumentor

    BedrockInstrumentor().instrument(tracer_provider=factory.provider)
    server = FakeEndpoint(converse_reply)
    client: Any = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=server.base_url,
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    ask = {
        "modelId": "anthropic.claude-3-5-sonnet-20240620-v1:0",
        "system": [{"text": SYSTEM}],
        "toolConfig": {
            "tools": [{"toolSpec": {"name": "get_weather", "inputSchema": {"json": WEATHER_PARAMETERS}}}]
        },
    }
    try:
        with _agent_span(factory, "conv-bedrock-1"):
            said: list[Any] = [{"role": "user", "content": [{"text": QUESTION}]}]
            first = client.converse(messages=said, **ask)["output"]["message"]
            use = first["content"][0]["toolUse"]
            result = _run_tool(factory, use["toolUseId"], json.dumps(use["input"]))
            said += [
                first,
                {
                    "role": "user",
                    "content": [
                        {
                            "toolResult": {
                                "toolUseId": use["toolUseId"],
                                "content": [{"json": json.loads(result)}],
                            }
                        }
                    ],
                },
            ]
            client.converse(messages=said, **ask)
    finally:
        server.close()


def _agno(factory: SpanFactory, base_url: str) -> None:
    """An Agno `Agent` with one tool on its OpenAI chat model, under OpenInference's Agno instrumentation."""
    from agno.agent import Agent
    from agno.models.openai import OpenAIChat
    from openinference.instrumentation.agno import AgnoInstrumentor

    AgnoInstrumentor().instrument(tracer_provider=factory.provider)
    agent = Agent(
        name="weather-agent",
        model=OpenAIChat(id="gpt-4o-mini", base_url=base_url, api_key="test"),
        tools=[get_weather],
        instructions=SYSTEM,
        session_id="conv-agno-1",
    )
    agent.run(QUESTION)


def get_weather(city: str) -> str:
    """Weather of a city (Agno's tool: a function of the tool's name, its docstring the description).

    Args:
        city: the city.
    """
    return json.dumps(weather(city))


def _dspy(factory: SpanFactory, base_url: str) -> None:
    """DSPy's `ReAct` module with one tool, under OpenInference's DSPy and LiteLLM instrumentations (DSPy calls
    its models through LiteLLM)."""
    import dspy
    from openinference.instrumentation.dspy import DSPyInstrumentor
    from openinference.instrumentation.litellm import LiteLLMInstrumentor

    DSPyInstrumentor().instrument(tracer_provider=factory.provider)
    LiteLLMInstrumentor().instrument(tracer_provider=factory.provider)
    dspy.configure(lm=dspy.LM("openai/gpt-4o-mini", api_base=base_url, api_key="test", cache=False))
    react = dspy.ReAct("question -> answer", tools=[get_weather])
    react(question=QUESTION)


def _haystack(factory: SpanFactory, base_url: str) -> None:
    """Haystack's `Agent` component with one tool on its OpenAI chat generator, under OpenInference's Haystack
    instrumentation."""
    from haystack.components.agents import Agent
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.dataclasses import ChatMessage
    from haystack.tools import Tool
    from haystack.utils import Secret
    from openinference.instrumentation.haystack import HaystackInstrumentor

    HaystackInstrumentor().instrument(tracer_provider=factory.provider)
    tool = Tool(
        name="get_weather",
        description="Weather of a city.",
        parameters=WEATHER_PARAMETERS,
        function=lambda city: weather(city),
    )
    generator = OpenAIChatGenerator(
        model="gpt-4o-mini", api_base_url=base_url, api_key=Secret.from_token("test")
    )
    agent = Agent(chat_generator=generator, tools=[tool], system_prompt=SYSTEM)
    agent.warm_up()
    agent.run(messages=[ChatMessage.from_user(QUESTION)])


def _openinference_openai(factory: SpanFactory, base_url: str) -> None:
    from openinference.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=factory.provider)
    _weather_loop(factory, base_url)


def _adk(factory: SpanFactory, base_url: str, legacy: bool = False) -> None:
    if legacy:  # ADK's own attributes, as 1.x sends them
        os.environ["ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN"] = "1"
    else:
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    trace.set_tracer_provider(factory.provider)
    from google.adk.agents import (
        LlmAgent,
    )  # imported once the tracer provider is set: ADK takes the global one
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    async def run() -> None:
        model = LiteLlm(model="openai/gpt-4o-mini", api_base=base_url, api_key="test")
        agent = LlmAgent(name="weather_agent", model=model, instruction=SYSTEM, tools=[get_weather])
        runner = InMemoryRunner(agent=agent, app_name="weather")
        await runner.session_service.create_session(app_name="weather", user_id="u1", session_id="s-1")
        message = types.Content(role="user", parts=[types.Part(text=QUESTION)])
        async for _ in runner.run_async(user_id="u1", session_id="s-1", new_message=message):
            pass

    def get_weather(city: str) -> dict:
        """Weather of a city."""
        return weather(city)

    asyncio.run(run())


def _llama_index(factory: SpanFactory, base_url: str) -> None:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.llms.openai import OpenAI
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    LlamaIndexInstrumentor().instrument(tracer_provider=factory.provider)

    def get_weather(city: str) -> dict:
        """Weather of a city."""
        return weather(city)

    async def run() -> None:  # the agent's workflow starts in a running event loop
        llm = OpenAI(model="gpt-4o-mini", api_base=base_url, api_key="test")
        await FunctionAgent(tools=[get_weather], llm=llm, system_prompt=SYSTEM).run(QUESTION)

    asyncio.run(run())


def _smolagents(factory: SpanFactory, base_url: str) -> None:
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from smolagents import OpenAIServerModel, ToolCallingAgent
    from smolagents import tool as smol_tool

    SmolagentsInstrumentor().instrument(tracer_provider=factory.provider)

    @smol_tool
    def get_weather(city: str) -> dict:
        """Weather of a city.

        Args:
            city: the city
        """
        return weather(city)

    model = OpenAIServerModel(model_id="gpt-4o-mini", api_base=base_url, api_key="test")
    agent = ToolCallingAgent(
        tools=[get_weather], model=model, instructions=SYSTEM, max_steps=4, verbosity_level=0
    )
    agent.run(QUESTION)


def _google_genai(factory: SpanFactory, base_url: str, events: bool = False) -> None:
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "EVENT_ONLY" if events else "SPAN_ONLY"
    os.environ["OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT"] = "true" if events else "false"
    from google import genai
    from google.genai import types
    from opentelemetry.instrumentation.google_genai import GoogleGenAiSdkInstrumentor

    GoogleGenAiSdkInstrumentor().instrument(
        tracer_provider=factory.provider, logger_provider=factory.logger_provider
    )
    server = gemini_server()
    client = genai.Client(api_key="test", http_options=types.HttpOptions(base_url=server.base_url))
    config = types.GenerateContentConfig(
        tools=[weather],
        system_instruction=SYSTEM,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    question = types.Content(role="user", parts=[types.Part(text=QUESTION)])
    try:
        first = client.models.generate_content(model="gemini-2.0-flash", contents=[question], config=config)
        asked = first.candidates[0].content
        call = asked.parts[0].function_call
        answer = types.Part.from_function_response(name=call.name, response=weather(**call.args))
        contents = [question, asked, types.Content(role="user", parts=[answer])]
        client.models.generate_content(model="gemini-2.0-flash", contents=contents, config=config)
    finally:
        server.close()


def weather(city: str) -> dict:
    """Weather of a city."""
    return {"city": city, "temperature_c": 18, "sky": "cloudy"}


def weather_call(call_id: str | None = TOOL_CALL_ID, name: str = "get_weather") -> list[tuple[Any, ...]]:
    """The one tool call of every recorded run, as `calls_of` gives it: Paris's weather, its result, `call_id`."""
    return [(name, {"city": "Paris"}, weather("Paris"), call_id)]


def calls_of(calls: list[Any]) -> list[tuple[Any, ...]]:
    """Tool calls as (name, arguments, result, call id)."""
    return [(c.name, c.arguments, c.result, c.call_id) for c in calls]


SDKS = {
    "traceloop": _traceloop,
    "mlflow": _mlflow,
    "logfire": _logfire,
    "langfuse": _langfuse,
    "langfuse_span": lambda factory, base_url: _langfuse(factory, base_url, agent=False),
    "langgraph_langfuse": lambda factory, base_url: _langgraph(factory, base_url, langfuse=True),
    "langgraph_mlflow": lambda factory, base_url: _langgraph(factory, base_url, mlflow=True),
    "strands": _strands,
    "pydantic_ai": _pydantic_ai,
    "pydantic_ai_anthropic_cache": lambda factory, base_url: _pydantic_ai(factory, base_url, anthropic=True),
    "openai_agents": _openai_agents,
    "openai_agents_otel": lambda factory, base_url: _openai_agents(factory, base_url, official=True),
    # OpenLLMetry's instrumentation has the official one's module path: the virtualenv decides which is recorded
    "openai_agents_openllmetry": lambda factory, base_url: _openai_agents(factory, base_url, official=True),
    "openai_agents_responses": lambda factory, base_url: _openai_agents(factory, base_url, responses=True),
    "openai_agents_otel_responses": lambda factory, base_url: _openai_agents(
        factory, base_url, official=True, responses=True
    ),
    "openai_agents_otel_streamed": lambda factory, base_url: _openai_agents(
        factory, base_url, official=True, responses=True, stream=True
    ),
    "openai_agents_streamed": lambda factory, base_url: _openai_agents(
        factory, base_url, responses=True, stream=True
    ),
    "openai_agents_openllmetry_streamed": lambda factory, base_url: _openai_agents(
        factory, base_url, official=True, responses=True, stream=True
    ),
    "openai_agents_openllmetry_responses": lambda factory, base_url: _openai_agents(
        factory, base_url, official=True, responses=True
    ),
    "adk": _adk,
    "adk_legacy": lambda factory, base_url: _adk(factory, base_url, legacy=True),
    "llama_index": _llama_index,
    "smolagents": _smolagents,
    "google_genai": _google_genai,
    "google_genai_events": lambda factory, base_url: _google_genai(factory, base_url, events=True),
    "langgraph": _langgraph,
    "langgraph_openllmetry": lambda factory, base_url: _langgraph(factory, base_url, openllmetry=True),
    "langchain_agent": lambda factory, base_url: _langgraph(factory, base_url, create_agent=True),
    "langchain_agent_openllmetry": lambda factory, base_url: _langgraph(
        factory, base_url, openllmetry=True, create_agent=True
    ),
    "openai_events": _openai_events,
    "openai_v2_events": _openai_events,
    "openllmetry_events": lambda factory, base_url: _openllmetry(factory, base_url, events=True),
    "openai_stream": _openai_stream,
    "openai_responses": _openai_responses,
    "semantic_kernel": _semantic_kernel,
    "autogen": _autogen,
    "agent_framework": _agent_framework,
    "azure_ai_inference": _azure_ai_inference,
    "crewai": _crewai,
    "anthropic_openllmetry": _anthropic,
    "anthropic_openinference": lambda factory, base_url: _anthropic(factory, base_url, openinference=True),
    "openllmetry_responses": _openllmetry_responses,
    "openllmetry_stream": lambda factory, base_url: _openllmetry(factory, base_url, stream=True),
    "openllmetry_cache": _openllmetry,
    "litellm": _litellm,
    "openai_agents_handoff": _openai_agents_handoff,
    "openai_agents_mcp": _openai_agents_mcp,
    "openai_agents_otel_mcp": lambda factory, base_url: _openai_agents_mcp(factory, base_url, official=True),
    "openai_agents_otel_handoff": lambda factory, base_url: _openai_agents_handoff(
        factory, base_url, official=True
    ),
    # OpenLLMetry's installs into the official one's module path (a virtualenv of its own)
    "openai_agents_openllmetry_handoff": lambda factory, base_url: _openai_agents_handoff(
        factory, base_url, official=True
    ),
    "agno": _agno,
    "dspy": _dspy,
    "haystack": _haystack,
    "bedrock_openllmetry": _bedrock,
    "bedrock_openinference": lambda factory, base_url: _bedrock(factory, base_url, openinference=True),
    "litellm_semconv": lambda factory, base_url: _litellm(
        factory, base_url, {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}
    ),
    "litellm_traces": lambda factory, base_url: _litellm(factory, base_url, joined=False),
    "litellm_traces_semconv": lambda factory, base_url: _litellm(
        factory, base_url, {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}, joined=False
    ),
    "litellm_request_span": lambda factory, base_url: _litellm(
        factory, base_url, {"USE_OTEL_LITELLM_REQUEST_SPAN": "true"}
    ),
    "openinference_openai_cache": _openinference_openai,
    "anthropic_cache_openllmetry": lambda factory, base_url: _anthropic(factory, base_url, cache=True),
    "anthropic_cache_openinference": lambda factory, base_url: _anthropic(
        factory, base_url, openinference=True, cache=True
    ),
}


def main(sdk: str, out: Path) -> None:
    """Run the agent of `sdk` against the fake model and write its spans to `out`."""
    factory = SpanFactory(service=f"{sdk.replace('_', '-')}-weather", version="1.0.0")
    responders: dict[str, Callable[[dict[str, Any]], Reply | dict[str, Any]]] = {
        "strands": streamed,  # it streams, as LlamaIndex does
        "llama_index": streamed,
        "openai_stream": streamed,
        "openllmetry_stream": streamed,
        "smolagents": smolagents_reply,
        "semantic_kernel": named_tool_reply,
        "crewai": named_tool_reply,
        "agno": named_tool_reply,
        "dspy": dspy_reply,
        "openai_agents_handoff": handoff_reply,
        "openai_agents_otel_handoff": handoff_reply,
        "openai_agents_openllmetry_handoff": handoff_reply,
        "openllmetry_cache": cached_completion,
        "openinference_openai_cache": cached_completion,
    }
    responder = responders.get(sdk)
    with FakeOpenAI(responder) as server:
        SDKS[sdk](factory, server.base_url)
    out.write_bytes(factory.json(indent=1))
    if factory.logs():
        out.with_name(out.name.replace("_trace", "_logs")).write_bytes(factory.logs_json(indent=1))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
