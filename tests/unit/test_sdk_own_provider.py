"""`@trace` and `conversation()` under a TracerProvider the application set up itself, without `configure()`.

Each case runs in a fresh interpreter: the global TracerProvider can be set once per process.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

NO_CONFIGURE_AGENT = """
import sys
from opentelemetry import trace as otel_trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentwatch import conversation, trace

memory = InMemorySpanExporter()
provider = TracerProvider()  # no ConversationSpanProcessor, no configure()
provider.add_span_processor(SimpleSpanProcessor(memory))
otel_trace.set_tracer_provider(provider)


@trace(kind="tool")
def get_weather(city):
    return {"city": city, "celsius": 18}


@trace(kind="agent", name="travel-agent")
def answer(question):
    if "tomorrow" in question:
        conversation.expect([], reference_answer="19 C")  # inside the turn: this turn
    return f"{get_weather('Paris')['celsius']} C"


with conversation(id="c-7", task="travel", user="u-1", tags={"tier": "gold"}):
    conversation.expect([("get_weather", {"city": "Paris"})])  # between turns: the next turn
    answer("Weather in Paris?")
    answer("And tomorrow?")
    assert conversation.end()
open(sys.argv[1], "wb").write(encode_spans(memory.get_finished_spans()).SerializeToString())
"""


def test_two_turns_without_configure_rebuild_as_one_conversation_with_expectations(tmp_path: Path) -> None:
    from agentwatch.collector.otlp_files import group_by_conversation, read_otlp_files
    from agentwatch.collector.reconstruct import build_conversation

    out = tmp_path / "spans.pb"
    run = subprocess.run(
        [sys.executable, "-c", NO_CONFIGURE_AGENT, str(out)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    read = read_otlp_files([out])
    assert len(read.spans) == 5 and not read.problems  # 2 turns, 2 tools, 1 end marker
    groups = group_by_conversation(read.spans)
    assert list(groups) == ["c-7"]
    conv = build_conversation(groups["c-7"])
    assert conv.conversation_id == "c-7" and conv.task == "travel" and conv.tags == {"tier": "gold"}
    assert conv.agent == "travel-agent"
    assert [t.input for t in conv.turns] == ["Weather in Paris?", "And tomorrow?"]
    first, second = (t.expected for t in conv.turns)
    assert first is not None and [(c.name, c.arguments) for c in first.tools] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert second is not None and second.reference_answer == "19 C" and second.tools == []
    assert conv.ended_at is not None  # the end marker was emitted, under the last turn


def _docs_snippet() -> str:
    text = (ROOT / "docs" / "sdk.md").read_text(encoding="utf-8")
    found = re.search(
        r"<!-- tests/unit/test_sdk_own_provider.py runs this block -->\n```python\n(.*?)```", text, re.DOTALL
    )
    assert found, "the 'Bring your own TracerProvider' snippet is missing from docs/sdk.md"
    return found.group(1)


def _console_spans(stdout: str) -> list[dict]:
    """The JSON objects ConsoleSpanExporter printed, one per span."""
    decoder, spans, i = json.JSONDecoder(), [], 0
    while (i := stdout.find("{", i)) >= 0:
        span, i = decoder.raw_decode(stdout, i)
        spans.append(span)
    return spans


def test_bring_your_own_provider_snippet_in_the_docs_stamps_every_span() -> None:
    run = subprocess.run(
        [sys.executable, "-c", _docs_snippet()], capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stderr
    spans = _console_spans(run.stdout)
    names = sorted(s["name"] for s in spans)
    assert names == sorted(
        ["invoke_agent travel-agent"] * 2
        + ["execute_tool get_weather"] * 2
        + ["GET /weather"] * 2
        + ["agentwatch.conversation.end"]
    )
    for s in spans:  # ours stamped by @trace itself, the foreign ones by ConversationSpanProcessor
        a = s["attributes"]
        assert (
            a["gen_ai.conversation.id"] == "c-42"
            and a["agentwatch.task"] == "travel"
            and a["user.id"] == "u-7"
        )
        if s["name"].startswith(
            ("invoke_agent", "GET")
        ):  # the turn names its agent; the processor knows it too
            assert a["gen_ai.agent.name"] == "travel-agent", s["name"]
    turns = sorted(
        (s for s in spans if s["name"] == "invoke_agent travel-agent"), key=lambda s: s["start_time"]
    )
    assert json.loads(turns[0]["attributes"]["agentwatch.expected"])["tools"] == [
        {"name": "get_weather", "arguments": None}
    ]
    assert "agentwatch.expected" not in turns[1]["attributes"]
    (marker,) = (s for s in spans if s["name"] == "agentwatch.conversation.end")
    assert marker["parent_id"] == turns[1]["context"]["span_id"]
