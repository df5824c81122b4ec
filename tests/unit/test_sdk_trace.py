"""`@trace` in every form: bare, with options, sync, async, generators, methods, nesting, errors, kinds."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest
from opentelemetry.trace import StatusCode

from agentwatch import record_usage, trace
from tests.support.sdk import attr_json, by_name, sdk_provider, spans  # noqa: F401
from tests.support.spans import attrs


def test_bare_decorator_makes_a_chain_span_with_input_and_output(spans):  # noqa: F811
    @trace
    def add(a, b=10):
        return a + b

    assert add(1, b=2) == 3
    (span,) = spans.get_finished_spans()
    assert span.name == "add"
    assert "gen_ai.operation.name" not in span.attributes
    assert json.loads(span.attributes["input.value"]) == {"a": 1, "b": 2}
    assert span.attributes["output.value"] == "3"
    assert span.status.status_code is StatusCode.UNSET


def test_decorator_with_arguments_and_positional_name(spans):  # noqa: F811
    @trace(name="renamed", capture_output=False)
    def f(x):
        return x

    @trace("short")
    def g(x):
        return x

    f(1), g(2)
    got = by_name(spans)
    assert set(got) == {"renamed", "short"}
    assert "output.value" not in attrs(got["renamed"])
    assert attrs(got["short"])["output.value"] == "2"


def test_tool_span_follows_genai_conventions(spans):  # noqa: F811
    @trace(kind="tool")
    def get_weather(city: str, units: str = "metric"):
        return {"city": city, "temp": 21}

    get_weather("Paris")
    (span,) = spans.get_finished_spans()
    assert span.name == "execute_tool get_weather"
    a = span.attributes
    assert a["gen_ai.operation.name"] == "execute_tool"
    assert a["gen_ai.tool.name"] == "get_weather"
    assert a["gen_ai.tool.call.id"].startswith("call_")
    assert json.loads(a["gen_ai.tool.call.arguments"]) == {"city": "Paris"}
    assert json.loads(a["gen_ai.tool.call.result"]) == {"city": "Paris", "temp": 21}


def test_tool_call_id_argument_is_used_and_not_captured(spans):  # noqa: F811
    @trace(kind="tool")
    def search(query, tool_call_id=None):
        return [query]

    search("x", tool_call_id="call_abc")
    search("y")
    first, second = spans.get_finished_spans()
    assert first.attributes["gen_ai.tool.call.id"] == "call_abc"
    assert json.loads(first.attributes["gen_ai.tool.call.arguments"]) == {"query": "x"}
    assert second.attributes["gen_ai.tool.call.id"] != "call_abc"


def test_agent_span_has_messages(spans):  # noqa: F811
    @trace(kind="agent", name="helper")
    def answer(question):
        return "forty-two"

    answer("what is the answer?")
    (span,) = spans.get_finished_spans()
    assert span.name == "invoke_agent helper"
    assert span.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert span.attributes["gen_ai.agent.name"] == "helper"
    assert attr_json(span, "gen_ai.input.messages") == [
        {"role": "user", "parts": [{"type": "text", "content": "what is the answer?"}]}
    ]
    assert attr_json(span, "gen_ai.output.messages") == [
        {"role": "assistant", "parts": [{"type": "text", "content": "forty-two"}]}
    ]


def test_llm_span_reads_openai_style_usage_from_object_and_dict(spans):  # noqa: F811
    @trace(kind="llm")
    def call_object(messages, model="gpt-4o-mini"):
        return SimpleNamespace(
            model="gpt-4o-mini-2024-07-18",
            usage=SimpleNamespace(prompt_tokens=12, completion_tokens=5),
            choices=[
                SimpleNamespace(message=SimpleNamespace(content="hi", tool_calls=None), finish_reason="stop")
            ],
        )

    @trace(kind="llm", model="claude-x")
    def call_dict(prompt):
        return {"model": "claude-x-1", "usage": {"input_tokens": 7, "output_tokens": 3}}

    call_object([{"role": "user", "content": "hello"}])
    call_dict("hey")
    got = by_name(spans)
    a = attrs(got["chat gpt-4o-mini"])
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.request.model"] == "gpt-4o-mini"
    assert a["gen_ai.response.model"] == "gpt-4o-mini-2024-07-18"
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (12, 5)
    assert attr_json(got["chat gpt-4o-mini"], "gen_ai.input.messages") == [
        {"role": "user", "parts": [{"type": "text", "content": "hello"}]}
    ]
    out = attr_json(got["chat gpt-4o-mini"], "gen_ai.output.messages")
    assert out[0]["parts"] == [{"type": "text", "content": "hi"}] and out[0]["finish_reason"] == "stop"
    b = attrs(got["chat claude-x"])
    assert (b["gen_ai.usage.input_tokens"], b["gen_ai.usage.output_tokens"]) == (7, 3)


def test_record_usage_inside_llm_span(spans):  # noqa: F811
    @trace(kind="llm")
    def call(prompt):
        record_usage(model="m-1", input_tokens=100, output_tokens=20, cost_usd=0.0015)
        return "text"

    call("p")
    assert not record_usage(model="outside")  # no recording span: ignored, no error
    (span,) = spans.get_finished_spans()
    assert span.name == "chat m-1"
    a = span.attributes
    assert (a["gen_ai.response.model"], a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (
        "m-1",
        100,
        20,
    )
    assert a["agentwatch.cost.usd"] == pytest.approx(0.0015)


def test_nesting_makes_parent_child_spans(spans):  # noqa: F811
    @trace(kind="tool")
    def inner(x):
        return x * 2

    @trace(kind="agent", name="outer")
    def outer(x):
        return inner(x) + inner(x + 1)

    outer(1)
    finished = spans.get_finished_spans()
    root = next(s for s in finished if s.name == "invoke_agent outer")
    children = [s for s in finished if s.name == "execute_tool inner"]
    assert len(children) == 2
    assert root.parent is None
    for child in children:
        assert child.parent.span_id == root.context.span_id
        assert child.context.trace_id == root.context.trace_id


def test_exception_sets_error_records_one_event_and_reraises_unchanged(spans):  # noqa: F811
    class Boom(RuntimeError):
        pass

    original = Boom("bad thing")

    @trace(kind="tool")
    def explode():
        raise original

    with pytest.raises(Boom) as info:
        explode()
    assert info.value is original
    (span,) = spans.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "Boom"
    events = [e for e in span.events if e.name == "exception"]
    assert len(events) == 1
    assert events[0].attributes["exception.message"] == "bad thing"
    assert "gen_ai.tool.call.result" not in span.attributes


def test_methods_do_not_capture_self_or_cls(spans):  # noqa: F811
    class Agent:
        factor = 3

        @trace(kind="tool")
        def scale(self, x):
            return x * self.factor

        @classmethod
        @trace(kind="tool")
        def make(cls, n):
            return n

    Agent().scale(2)
    Agent.make(5)
    got = by_name(spans)
    assert attr_json(got["execute_tool scale"], "gen_ai.tool.call.arguments") == {"x": 2}
    assert attr_json(got["execute_tool make"], "gen_ai.tool.call.arguments") == {"n": 5}


def test_varargs_and_kwargs_are_bound(spans):  # noqa: F811
    @trace
    def f(a, *rest, **extra):
        return len(rest)

    f(1, 2, 3, flag=True)
    (span,) = spans.get_finished_spans()
    assert json.loads(span.attributes["input.value"]) == {"a": 1, "rest": [2, 3], "flag": True}


def test_coroutine(spans):  # noqa: F811
    @trace(kind="tool")
    async def fetch(url):
        await asyncio.sleep(0)
        return {"url": url}

    @trace(kind="agent", name="async-agent")
    async def run():
        return (await fetch("a"))["url"] + (await fetch("b"))["url"]

    assert asyncio.run(run()) == "ab"
    finished = spans.get_finished_spans()
    root = next(s for s in finished if s.name == "invoke_agent async-agent")
    tools = [s for s in finished if s.name == "execute_tool fetch"]
    assert [json.loads(t.attributes["gen_ai.tool.call.result"]) for t in tools] == [
        {"url": "a"},
        {"url": "b"},
    ]
    assert all(t.parent.span_id == root.context.span_id for t in tools)


def test_async_exception(spans):  # noqa: F811
    @trace
    async def bad():
        raise KeyError("k")

    with pytest.raises(KeyError):
        asyncio.run(bad())
    (span,) = spans.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR and span.attributes["error.type"] == "KeyError"


def test_generator_span_ends_when_exhausted_and_output_is_what_it_yielded(spans):  # noqa: F811
    @trace(kind="tool")
    def child():
        return 1

    @trace(kind="agent", name="streamer")
    def stream(n):
        for i in range(n):
            child()
            yield f"tok{i} "

    gen = stream(3)
    assert spans.get_finished_spans() == ()  # nothing runs before iteration
    first = next(gen)
    assert first == "tok0 "
    assert [s.name for s in spans.get_finished_spans()] == ["execute_tool child"]
    rest = list(gen)
    assert rest == ["tok1 ", "tok2 "]
    got = [s for s in spans.get_finished_spans() if s.name == "invoke_agent streamer"]
    assert len(got) == 1
    out = json.loads(got[0].attributes["gen_ai.output.messages"])
    assert out[0]["parts"][0]["content"] == "tok0 tok1 tok2 "
    children = [s for s in spans.get_finished_spans() if s.name == "execute_tool child"]
    assert all(c.parent.span_id == got[0].context.span_id for c in children)


def test_generator_span_is_not_current_between_yields(spans):  # noqa: F811
    @trace
    def numbers():
        yield 1
        yield 2

    @trace
    def unrelated():
        return None

    gen = numbers()
    next(gen)
    unrelated()  # runs while the generator is suspended: must not become its child
    list(gen)
    got = by_name(spans)
    assert got["unrelated"].parent is None
    assert attr_json(got["numbers"], "output.value") == [1, 2]


def test_generator_closed_early_ends_span_with_partial_output(spans):  # noqa: F811
    cleaned = []

    @trace
    def numbers():
        try:
            yield from range(100)
        finally:
            cleaned.append(True)

    gen = numbers()
    assert next(gen) == 0 and next(gen) == 1
    gen.close()
    assert cleaned == [True]
    (span,) = spans.get_finished_spans()
    assert json.loads(span.attributes["output.value"]) == [0, 1]
    assert span.status.status_code is StatusCode.UNSET


def test_generator_send_and_throw_pass_through(spans):  # noqa: F811
    @trace
    def echo():
        received: list[object] = []
        try:
            while True:
                received.append((yield len(received)))
        except ValueError:
            yield ("caught", received)

    gen = echo()
    assert next(gen) == 0
    assert gen.send("a") == 1
    assert gen.throw(ValueError("x")) == ("caught", ["a"])
    gen.close()
    (span,) = spans.get_finished_spans()
    assert span.status.status_code is StatusCode.UNSET


def test_generator_error_marks_span(spans):  # noqa: F811
    @trace
    def broken():
        yield 1
        raise OSError("disk")

    with pytest.raises(OSError):
        list(broken())
    (span,) = spans.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR and span.attributes["error.type"] == "OSError"


def test_async_generator(spans):  # noqa: F811
    @trace(kind="llm", model="m")
    async def stream():
        for word in ("a", "b", "c"):
            await asyncio.sleep(0)
            yield word

    async def consume(limit):
        out = []
        agen = stream()
        async for item in agen:
            out.append(item)
            if len(out) == limit:
                await agen.aclose()
                break
        return out

    assert asyncio.run(consume(10)) == ["a", "b", "c"]
    assert asyncio.run(consume(2)) == ["a", "b"]
    full, partial = spans.get_finished_spans()
    assert json.loads(full.attributes["gen_ai.output.messages"])[0]["parts"][0]["content"] == "abc"
    assert json.loads(partial.attributes["gen_ai.output.messages"])[0]["parts"][0]["content"] == "ab"


def test_unknown_kind_is_rejected_at_decoration_time():
    with pytest.raises(ValueError, match="kind"):
        trace(kind="robot")(lambda: None)


def test_tracing_failure_never_reaches_the_agent(spans, monkeypatch):  # noqa: F811
    from agentwatch.sdk import runtime

    class BrokenTracer:
        def start_span(self, *a, **k):
            raise RuntimeError("tracer broken")

    monkeypatch.setattr(runtime.RUNTIME, "tracer", BrokenTracer())

    @trace
    def f(x):
        return x + 1

    assert f(1) == 2

    class Unserialisable:
        def __repr__(self):
            raise RuntimeError("no repr")

    monkeypatch.undo()

    @trace
    def g(x):
        return Unserialisable()

    assert isinstance(g(Unserialisable()), Unserialisable)
    (span,) = spans.get_finished_spans()
    assert span.attributes["input.value"] == '{"x":"<Unserialisable>"}'


def test_a_stream_item_whose_len_fails_never_reaches_the_agent(spans):  # noqa: F811
    """The items a traced generator keeps for its output are measured with `len()`: a str whose `__len__`
    raised made the consumer's `next()` raise (and the span never ended)."""

    class Chunk(str):
        def __len__(self) -> int:
            raise RuntimeError("no length")

    @trace(kind="llm", model="m")
    def stream():
        yield Chunk("hel")
        yield "lo"

    assert list(stream()) == ["hel", "lo"]
    (span,) = spans.get_finished_spans()
    assert json.loads(span.attributes["gen_ai.output.messages"])[0]["parts"][0]["content"] == "hello"


def test_an_untraced_async_generator_still_passes_asend_athrow_and_aclose_through(spans, monkeypatch):  # noqa: F811
    """When its span cannot start, the wrapper fell back to `async for item in agen: yield item`: what
    `asend()` gave became None, an exception thrown in with `athrow()` was raised in the wrapper instead of the
    wrapped generator, and `aclose()` left the wrapped generator open (its `finally` did not run)."""
    from agentwatch.sdk import runtime

    class BrokenTracer:
        def start_span(self, *a, **k):
            raise RuntimeError("tracer broken")

    monkeypatch.setattr(runtime.RUNTIME, "tracer", BrokenTracer())
    closed: list[bool] = []

    @trace
    async def echo():
        received: list[object] = []
        try:
            while True:
                try:
                    received.append((yield len(received)))
                except ValueError:
                    yield ("caught", received)
        finally:
            closed.append(True)

    async def drive():
        agen = echo()
        first = await agen.__anext__()
        second = await agen.asend("a")
        caught = await agen.athrow(ValueError("x"))
        await agen.aclose()
        return first, second, caught

    assert asyncio.run(drive()) == (0, 1, ("caught", ["a"]))
    assert closed == [True]
    assert spans.get_finished_spans() == ()


def test_a_huge_exception_message_is_bounded_like_any_captured_text(spans):  # noqa: F811
    """The message of a failed call went out whole: 1,000,000 characters in `exception.message` with
    `redact_values=False`, 9,216 with it (the redaction's scan margin) for an 8 KiB cap; the stack trace was
    cut in characters, not in UTF-8 bytes."""
    from opentelemetry.sdk.trace import TracerProvider

    from agentwatch import configure

    for redact_values in (False, True):
        memory = configure(
            "memory", tracer_provider=TracerProvider(), batch=False, redact_values=redact_values
        )
        exporter = memory.exporter

        @trace
        def boom():
            raise RuntimeError("é" * 1_000_000)

        with pytest.raises(RuntimeError) as raised:
            boom()
        assert len(str(raised.value)) == 1_000_000  # the agent's exception is unchanged
        (span,) = exporter.get_finished_spans()
        (event,) = span.events
        for key in ("exception.message", "exception.stacktrace"):
            assert len(event.attributes[key].encode("utf-8")) <= 8192, (redact_values, key)
        assert event.attributes["exception.message"].startswith("éé")
        assert event.attributes["exception.stacktrace"].endswith("éé\n")
