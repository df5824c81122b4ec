"""A small instrumented agent: two turns of a travel assistant, with tool calls and one failing tool.

Run it against a Kafka broker (spans go to the `agentwatch.spans` topic by default):

    python examples/instrumented_agent.py --bootstrap-servers 127.0.0.1:9092

or print the spans instead: `python examples/instrumented_agent.py --exporter console`.
The "model" here is a stand-in that needs no network; in a real agent `think` would call an LLM API.
"""

from __future__ import annotations

import argparse
import logging
import uuid

from agentwatch import configure, conversation, record_usage, shutdown, trace

AGENT = "travel-agent"
VERSION = "1.0.0"


class ToolError(RuntimeError):
    """A tool failed."""


@trace(kind="tool")
def get_weather(city: str) -> dict:
    """Current weather of a city (canned)."""
    return {"city": city, "celsius": 18, "sky": "cloudy"}


@trace(kind="tool")
def to_fahrenheit(celsius: float) -> float:
    """Convert Celsius to Fahrenheit."""
    return celsius * 9 / 5 + 32


@trace(kind="tool")
def book_flight(destination: str, api_key: str) -> dict:
    """Book a flight; the booking service is down today. (`api_key` is redacted from the spans.)"""
    raise ToolError(f"booking service unavailable for {destination}")


@trace(kind="llm")
def think(messages: list[dict], model: str = "fake-model-1") -> str:
    """A stand-in for a model call; reports its token usage like a real client would."""
    record_usage(model=model, input_tokens=12 * len(messages), output_tokens=8, cost_usd=0.0001)
    return f"plan: answer {messages[-1]['content']!r}"


@trace(kind="agent")
def answer(question: str) -> str:
    """One turn: think, call tools, answer."""
    think([{"role": "user", "content": question}])
    if "weather" in question.lower():
        weather = get_weather("Paris")
        fahrenheit = to_fahrenheit(weather["celsius"])
        return f"It is {fahrenheit:.0f}°F and {weather['sky']} in Paris."
    try:
        booking = book_flight("Paris", api_key="sk-demo-not-a-real-key")
    except ToolError:
        return "Sorry, I could not book the flight: the booking service is unavailable."
    return f"Booked: {booking}"


def run_conversation(conversation_id: str | None = None) -> str:
    """Two turns of one conversation, each with an expectation; returns the conversation id."""
    with conversation(
        id=conversation_id or uuid.uuid4().hex, task="travel", agent=AGENT, version=VERSION, user="demo-user"
    ) as conv:
        conversation.expect(
            [("get_weather", {"city": "Paris"}), ("to_fahrenheit", None)],
            reference_answer="It is 64°F and cloudy in Paris.",
        )
        print(answer("What's the weather in Paris, in Fahrenheit?"))
        conversation.expect(["book_flight"], forbidden_tools=["cancel_flight"])
        print(answer("Book me a flight to Paris."))
        conversation.end()  # between turns: emits a small end-marker span under the last turn
    return conv.id


def main(argv: list[str] | None = None) -> None:
    """Configure the SDK from the command line, run one conversation, flush."""
    parser = argparse.ArgumentParser(description="agentwatch example agent")
    parser.add_argument("--exporter", default="kafka", choices=["kafka", "otlp", "console", "memory"])
    parser.add_argument("--bootstrap-servers", default=None)
    parser.add_argument("--topic", default=None)
    parser.add_argument("--conversation-id", default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    configure(
        args.exporter,
        agent=AGENT,
        version=VERSION,
        bootstrap_servers=args.bootstrap_servers,
        topic=args.topic,
    )
    conversation_id = run_conversation(args.conversation_id)
    shutdown()
    print(f"conversation_id={conversation_id}")


if __name__ == "__main__":
    main()
