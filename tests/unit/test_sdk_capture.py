"""Captured values: JSON, secret redaction, size cap with a marker, content capture switch, configure options."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentwatch import configure, conversation, shutdown, trace
from agentwatch.sdk.capture import REDACTED, TRUNCATION_MARKER, Capture, content_capture_from_env
from tests.support.sdk import attr_json, sdk_provider, spans  # noqa: F401
from tests.support.spans import attrs


def test_redaction_by_key_name_at_any_depth():
    c = Capture()
    value = {
        "user": "ann",
        "password": "p",
        "headers": {"Authorization": "Bearer x", "X-Api-Key": "k", "accept": "json"},
        "items": [{"accessToken": "t", "client_secret": "s", "max_tokens": 5, "input_tokens": 3}],
        "tokenizer": "bpe",
    }
    got = json.loads(c.dumps(value))
    assert got == {
        "user": "ann",
        "password": REDACTED,
        "headers": {"Authorization": REDACTED, "X-Api-Key": REDACTED, "accept": "json"},
        "items": [{"accessToken": REDACTED, "client_secret": REDACTED, "max_tokens": 5, "input_tokens": 3}],
        "tokenizer": "bpe",
    }


def test_redaction_keys_are_configurable():
    c = Capture(redact_keys=["ssn"])
    assert json.loads(c.dumps({"ssn": "1", "password": "p"})) == {"ssn": REDACTED, "password": "p"}


def test_size_cap_keeps_json_valid_and_marks_truncation():
    c = Capture(max_bytes=1024)
    big = {"text": "é" * 5000, "n": 1}
    out = c.dumps(big)
    assert len(out.encode("utf-8")) <= 1024
    decoded = json.loads(out)
    assert decoded["n"] == 1
    assert decoded["text"].endswith(TRUNCATION_MARKER)
    assert decoded["text"].startswith("é" * 100)


def test_size_cap_on_plain_text_and_unshrinkable_values():
    c = Capture(max_bytes=256)
    text = c.text("x" * 10_000)
    assert len(text.encode()) <= 256 and text.endswith(TRUNCATION_MARKER)
    many_keys = {f"k{i}": i for i in range(500)}  # no long string to cut: raw cut with the marker
    out = c.dumps(many_keys)
    assert len(out.encode()) <= 256 and out.endswith(TRUNCATION_MARKER)
    assert c.dumps({"small": 1}) == '{"small":1}'


def test_default_cap_is_8_kib_per_attribute(spans):  # noqa: F811
    @trace(kind="tool")
    def echo(payload):
        return payload

    echo("z" * 20_000)
    (span,) = spans.get_finished_spans()
    for key in ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result"):
        value = span.attributes[key]
        assert len(value.encode()) <= 8192
        assert TRUNCATION_MARKER in value


def test_agent_messages_stay_valid_json_when_truncated(spans):  # noqa: F811
    @trace(kind="agent", name="big")
    def turn(q):
        return "a" * 50_000

    turn("q" * 50_000)
    (span,) = spans.get_finished_spans()
    for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
        assert len(span.attributes[key].encode()) <= 8192
        content = attr_json(span, key)[0]["parts"][0]["content"]
        assert content.endswith(TRUNCATION_MARKER)


def test_objects_are_serialised_sensibly():
    @dataclasses.dataclass
    class Point:
        x: int
        secret: str

    class Model:
        def model_dump(self, mode="python"):
            return {"a": 1, "token": "t"}

    c = Capture()
    got = json.loads(c.dumps({"p": Point(1, "s"), "m": Model(), "b": b"\x00\x01", "s": {3}}))
    assert got == {
        "p": {"x": 1, "secret": REDACTED},
        "m": {"a": 1, "token": REDACTED},
        "b": "<2 bytes>",
        "s": [3],
    }
    cyclic: list = []
    cyclic.append(cyclic)
    assert c.dumps(cyclic) == '["[cycle]"]'
    deep: list = []
    for _ in range(40):
        deep = [deep]
    assert "too deep" in c.dumps(deep)


def test_a_value_holding_itself_twice_or_a_million_rows_costs_what_is_kept() -> None:
    """`d["a"] = d; d["b"] = d` passed to a traced tool never returned (2^33 paths to depth 32), and 100,000
    rows took 3.2 s on the agent's thread to keep 8 KiB. A container met again inside itself is "[cycle]", a
    repeat elsewhere (a shared sub-object) is copied again; the copy stops, marked, where its JSON would pass
    the bound. Counted in container visits, not timed."""
    c = Capture()
    twice: dict = {}
    twice["a"] = twice
    twice["b"] = twice
    assert json.loads(c.dumps(twice)) == {"a": "[cycle]", "b": "[cycle]"}
    shared = {"x": 1}
    assert json.loads(c.dumps([shared, shared])) == [{"x": 1}, {"x": 1}]
    visits = 0

    class Counted(dict):
        def items(self):
            nonlocal visits
            visits += 1
            return super().items()

    rows = [Counted(id=i, email=f"user{i}@example.com", note="delivered on time") for i in range(100_000)]
    text = c.dumps(rows)
    assert len(text.encode()) <= c.max_bytes and TRUNCATION_MARKER in text
    assert visits < 300  # the rows that fit 8 KiB, not 100,000


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, True),
        ({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "NO_CONTENT"}, False),
        ({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "false"}, False),
        ({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}, True),
        ({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}, True),
        (
            {
                "AGENTWATCH_CAPTURE_CONTENT": "off",
                "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
            },
            False,
        ),
    ],
)
def test_content_capture_switch_from_environment(env, expected):
    assert content_capture_from_env(env) is expected


def test_content_capture_off_keeps_structure_and_drops_content(monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "NO_CONTENT")
    exporter = InMemorySpanExporter()
    configure(exporter, tracer_provider=TracerProvider(), batch=False)
    try:

        @trace(kind="tool")
        def tool(x):
            return x

        @trace(kind="agent", name="quiet")
        def turn(q):
            conversation.expect(["tool"])
            return tool(q)

        with conversation(id="q"):
            turn("private text")
        tool_span, turn_span = exporter.get_finished_spans()
    finally:
        shutdown()
    assert attrs(tool_span)["gen_ai.tool.name"] == "tool"
    call_id = attrs(tool_span)["gen_ai.tool.call.id"]
    assert isinstance(call_id, str) and call_id.startswith("call_")
    for span in (tool_span, turn_span):
        for value in attrs(span).values():
            assert "private text" not in str(value)
    assert "gen_ai.input.messages" not in attrs(turn_span)
    assert "gen_ai.tool.call.arguments" not in attrs(tool_span)
    assert "agentwatch.expected" in attrs(turn_span)  # expectations are not user content


def test_configure_options_and_environment(monkeypatch):
    monkeypatch.setenv("AGENTWATCH_MAX_ATTRIBUTE_BYTES", "300")
    monkeypatch.setenv("AGENTWATCH_REDACT_KEYS", "pin, cvv")
    exporter = InMemorySpanExporter()
    configure(exporter, tracer_provider=TracerProvider(), batch=False, agent="env-agent", version="3")
    try:

        @trace(kind="tool")
        def pay(pin, note, password):
            return None

        @trace(kind="agent")
        def turn():
            return pay("1234", "n" * 1000, "visible")

        turn()
        pay_span, turn_span = exporter.get_finished_spans()
    finally:
        shutdown()
    args = attrs(pay_span)["gen_ai.tool.call.arguments"]
    assert isinstance(args, str) and len(args.encode()) <= 300
    decoded = json.loads(args)
    assert decoded["pin"] == REDACTED and decoded["password"] == "visible"
    assert turn_span.name == "invoke_agent env-agent"
    assert attrs(turn_span)["gen_ai.agent.version"] == "3"
    monkeypatch.setenv("AGENTWATCH_MAX_ATTRIBUTE_BYTES", "lots")
    with pytest.raises(ValueError, match="AGENTWATCH_MAX_ATTRIBUTE_BYTES"):
        configure("memory", tracer_provider=TracerProvider())
    monkeypatch.delenv("AGENTWATCH_MAX_ATTRIBUTE_BYTES")
    with pytest.raises(ValueError, match="unknown exporter"):
        configure("carrier-pigeon", tracer_provider=TracerProvider())


def test_configure_composes_with_a_provider_and_replaces_its_own_processors():
    provider = TracerProvider()
    theirs = InMemorySpanExporter()
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider.add_span_processor(SimpleSpanProcessor(theirs))
    first = configure("memory", tracer_provider=provider, batch=False)
    second = configure("memory", tracer_provider=provider, batch=False)
    try:

        @trace
        def f():
            return 1

        with conversation(id="compose"):
            f()
            provider.get_tracer("app").start_span("app span").end()
    finally:
        shutdown()
    assert len(theirs.get_finished_spans()) == 2  # the application's own exporter still gets everything
    assert first.exporter.get_finished_spans() == ()  # replaced, not duplicated
    ours = second.exporter.get_finished_spans()
    assert [s.name for s in ours] == ["f", "app span"]
    assert all(s.attributes["gen_ai.conversation.id"] == "compose" for s in ours)
    assert not second.owns_provider


def test_a_value_serialised_as_it_is_gives_what_the_redacted_copy_gives():
    """Plain dicts of decided keys and short values skip the redacted copy: on repeats (keys decided by then),
    every dict gives the same JSON as its redacted copy, secrets by key or by shape still redacted."""
    rng = random.Random(11)
    keys = ["city", "units", "password", "api_key", "order_id", "note", "Authorization", "n"]
    values = [
        0,
        2.5,
        True,
        None,
        "Paris",
        "PIN12",
        "short",
        "Bearer abcdefghijklmnop",
        "x" * 40,
        [1],
        {"token": "t"},
    ]
    for redact_values, patterns in ((True, None), (False, None), (True, {"pin": r"PIN\d{2}"})):
        c = Capture(redact_values=redact_values, value_patterns=patterns)
        for _ in range(400):
            value = {k: rng.choice(values) for k in rng.sample(keys, rng.randrange(0, 5))}
            expected = json.dumps(c.sanitize(value), ensure_ascii=False, separators=(",", ":"))
            assert c.dumps(value) == expected
            if "password" in value:
                assert json.loads(c.dumps(value))["password"] == REDACTED
            if redact_values and patterns is None and "Bearer abcdefghijklmnop" in value.values():
                assert "abcdefghijklmnop" not in c.dumps(value)
            if patterns is not None and "PIN12" in value.values():
                assert "PIN12" not in c.dumps(value)


def test_tool_call_arguments_nested_deeper_than_the_json_decoder_are_kept_as_text() -> None:
    """A model's tool call arguments nested past the decoder's depth stay the text the model wrote, where the
    decoder's RecursionError lost the model span's output."""
    from agentwatch.sdk.genai import chat_output

    deep = "[" * 100_000
    reply = {
        "choices": [
            {
                "message": {
                    "content": None,
                    "tool_calls": [{"id": "1", "function": {"name": "f", "arguments": deep}}],
                }
            }
        ]
    }
    parts = chat_output(reply, json.dumps)[0]["parts"]
    assert parts == [{"type": "tool_call", "id": "1", "name": "f", "arguments": deep}]


def test_names_that_hid_a_secret_are_read() -> None:
    """A NamedTuple's fields went out as a list (their names, which say `password`, lost), a token used as a
    dict key went out as it was (keys were never searched, a second time by the fast path either), and an
    agent's one argument was sent as text without the name that said `api_key`."""
    from typing import NamedTuple

    class Creds(NamedTuple):
        user: str
        password: str

    c = Capture()
    assert json.loads(c.dumps({"creds": Creds("app", "hunter2")})) == {
        "creds": {"user": "app", "password": REDACTED}
    }
    token = "ghp_" + "a1B2c3D4e5" * 4
    for _ in range(2):
        assert token not in c.dumps({token: 100})
    assert c.without_secret_names({"api_key": "abcd-1234-efgh", "question": "hi"}) == {
        "api_key": REDACTED,
        "question": "hi",
    }
    plain = {"question": "hi"}
    assert c.without_secret_names(plain) is plain
