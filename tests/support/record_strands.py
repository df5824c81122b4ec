"""Record the spans a real Strands agent sends, for `tests/unit/test_recorded_traces.py`.

Strands (`strands-agents`, AWS's agent SDK) logs messages as span events, in Bedrock's content-block shape. It is
not a test dependency (it pins its own OpenAI and OpenTelemetry versions); this script runs where it is
installed, beside agentwatch:

    python -m venv /tmp/strands && /tmp/strands/bin/pip install "strands-agents[openai]" -e .
    /tmp/strands/bin/python -m tests.support.record_strands tests/data/strands_trace.json

It runs one agent (OpenAI model provider, one tool) against the fake model of `tests.support.fake_openai`,
streamed as Strands asks for it, and writes the finished spans as OTLP/JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from opentelemetry import trace

from tests.support.fake_openai import FakeOpenAI, Reply, completion
from tests.support.spans import SpanFactory

SYSTEM = "You answer weather questions."
QUESTION = "What is the weather in Paris?"


def streamed(request: dict[str, Any]) -> Reply:
    """The fake model's completion as server-sent chunks: role and content or tool calls, the finish, usage."""
    body = completion(request)
    message = body["choices"][0]["message"]
    delta: dict[str, Any] = {"role": "assistant"}
    if message.get("content"):
        delta["content"] = message["content"]
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
    base = {
        "id": body["id"],
        "object": "chat.completion.chunk",
        "created": body["created"],
        "model": body["model"],
    }
    finish = body["choices"][0]["finish_reason"]
    chunks = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {**base, "choices": [], "usage": body["usage"]},
    ]
    text = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    return Reply(body=text, headers={"Content-Type": "text/event-stream"})


def main(out: Path) -> None:
    """Run the agent once and write its spans to `out`."""
    factory = SpanFactory(service="strands-weather", version="1.0.0")
    trace.set_tracer_provider(factory.provider)
    from strands import Agent, tool  # imported once the tracer provider is set: Strands takes the global one
    from strands.models.openai import OpenAIModel

    @tool
    def get_weather(city: str) -> dict:
        """Weather of a city."""
        return {"city": city, "temperature_c": 18, "sky": "cloudy"}

    with FakeOpenAI(streamed) as server:
        model = OpenAIModel(
            client_args={"base_url": server.base_url, "api_key": "test"}, model_id="gpt-4o-mini"
        )
        agent = Agent(model=model, tools=[get_weather], system_prompt=SYSTEM, callback_handler=None)
        agent(QUESTION)
    out.write_bytes(factory.json(indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
