"""`@trace`: one span per call of a function, coroutine, generator or async generator."""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable
from contextvars import Token
from typing import Any, TypeVar, cast, overload

from opentelemetry import context as context_api
from opentelemetry import trace as otel_trace
from opentelemetry.context import Context
from opentelemetry.trace import Span

from agentwatch.sdk.context import TURN_KEY
from agentwatch.sdk.runtime import RUNTIME
from agentwatch.sdk.spans import MAX_STREAM_ITEMS, SpanSpec, fail, finish, start

F = TypeVar("F", bound=Callable[..., Any])

_attach = context_api.attach
_detach = context_api.detach
_in_context = otel_trace.set_span_in_context


@overload
def trace(fn: F) -> F: ...


@overload
def trace(
    fn: str | None = None,
    *,
    kind: str = "chain",
    name: str | None = None,
    capture_input: bool = True,
    capture_output: bool = True,
    model: str | None = None,
    read_only: bool | None = None,
) -> Callable[[F], F]: ...


def trace(
    fn: Any = None,
    *,
    kind: str = "chain",
    name: str | None = None,
    capture_input: bool = True,
    capture_output: bool = True,
    model: str | None = None,
    read_only: bool | None = None,
) -> Any:
    """Trace every call of the decorated function as an OpenTelemetry GenAI span (bare or with options).

    kind: "agent" (one turn), "tool", "llm" (a model call) or "chain" (anything else). `@trace("name")`
    is short for `@trace(name="name")`. `read_only` (tools only): True for a tool that changes nothing (a
    lookup), False for one with effects; unset, the graders decide by the tool's name.
    """
    if isinstance(fn, str):
        name, fn = fn, None

    def decorate(func: F) -> F:
        # @trace above @staticmethod / @classmethod (an order as common as the other): trace the function inside
        if isinstance(func, staticmethod):
            return cast(F, staticmethod(decorate(func.__func__)))
        if isinstance(func, classmethod):
            return cast(F, classmethod(decorate(func.__func__)))
        spec = SpanSpec.of(func, kind, name, capture_input, capture_output, model, read_only)
        # Each wrapper keeps the wrapped function's signature (functools.wraps): the decorated name has its type.
        if inspect.isasyncgenfunction(func):
            return cast(F, _wrap_async_generator(func, spec))
        if inspect.isgeneratorfunction(func):
            return cast(F, _wrap_generator(func, spec))
        if inspect.iscoroutinefunction(func):
            return cast(F, _wrap_coroutine(func, spec))
        return cast(F, _wrap_function(func, spec))

    if fn is None:
        return decorate
    return decorate(fn)


class _Running:
    """Makes the span current while the wrapped code runs; an exception escaping that code fails and ends it.

    StopIteration and StopAsyncIteration are how a generator finishes, not failures: they pass through.
    """

    __slots__ = ("ctx", "span", "spec", "token")

    def __init__(self, spec: SpanSpec, span: Span) -> None:
        self.spec = spec
        self.span = span
        ctx = _in_context(span)
        # A turn marks itself in the context: `conversation.expect()`/`end()` find it though turns run at once
        self.ctx = context_api.set_value(TURN_KEY, span, ctx) if spec.kind == "agent" else ctx
        self.token: Token[Context] | None = None

    def __enter__(self) -> None:
        self.token = _attach(self.ctx)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if self.token is not None:
            _detach(self.token)
        if exc is not None and not isinstance(exc, (StopIteration, StopAsyncIteration)):
            fail(self.spec, self.span, exc)


def _wrap_function(func: Callable[..., Any], spec: SpanSpec) -> Callable[..., Any]:
    @functools.wraps(func)
    def traced(*args: Any, **kwargs: Any) -> Any:
        span = start(spec, args, kwargs)
        if span is None:
            return func(*args, **kwargs)
        with _Running(spec, span):
            result = func(*args, **kwargs)
        finish(spec, span, result)
        return result

    return traced


def _wrap_coroutine(func: Callable[..., Any], spec: SpanSpec) -> Callable[..., Any]:
    @functools.wraps(func)
    async def traced(*args: Any, **kwargs: Any) -> Any:
        span = start(spec, args, kwargs)
        if span is None:
            return await func(*args, **kwargs)
        with _Running(spec, span):
            result = await func(*args, **kwargs)
        finish(spec, span, result)
        return result

    return traced


class _Kept:
    """The items of a stream kept for its span's output: at most `MAX_STREAM_ITEMS`, and no more once they hold
    four times what the output keeps (400 chunks of 1 MiB were all held until the stream ended)."""

    __slots__ = ("held", "items")

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.held = 0  # characters or bytes of the items kept (64 counted for any other item)

    def add(self, item: Any) -> None:
        """Keep `item` while there is room."""
        if len(self.items) >= MAX_STREAM_ITEMS or self.held > 4 * RUNTIME.capture.max_bytes:
            return
        self.items.append(item)
        try:
            self.held += len(item) if isinstance(item, (str, bytes, bytearray)) else 64
        except Exception:  # noqa: BLE001 - a str whose __len__ fails: the agent's object, not the agent's crash
            self.held += 64


def _wrap_generator(func: Callable[..., Any], spec: SpanSpec) -> Callable[..., Any]:
    """The span starts at the first `next()` and ends when the generator is exhausted, fails or is closed.

    The span is the current span only while the generator's own code runs, never between its yields.
    """

    @functools.wraps(func)
    def traced(*args: Any, **kwargs: Any) -> Any:
        gen = func(*args, **kwargs)
        span = start(spec, args, kwargs)
        if span is None:
            return (yield from gen)
        running = _Running(spec, span)
        kept = _Kept()
        step: Callable[[Any], Any] = gen.send
        arg: Any = None
        while True:
            try:
                with running:
                    item = step(arg)
            except StopIteration as stop:
                finish(spec, span, kept.items, streamed=True)
                return stop.value
            kept.add(item)
            try:
                arg = yield item
                step = gen.send
            except GeneratorExit:
                with running:
                    gen.close()
                finish(spec, span, kept.items, streamed=True)
                raise
            except BaseException as exc:  # noqa: BLE001 - thrown into us: passed on to the wrapped generator
                step, arg = gen.throw, exc

    return traced


def _wrap_async_generator(func: Callable[..., Any], spec: SpanSpec) -> Callable[..., Any]:
    """As `_wrap_generator`, for async generators."""

    @functools.wraps(func)
    async def traced(*args: Any, **kwargs: Any) -> Any:
        agen = func(*args, **kwargs)
        span = start(spec, args, kwargs)
        # Untraced (the span could not start), the stream is still passed on whole, as `yield from` does for a
        # generator: an `async for` here lost what `asend()` and `athrow()` gave and never closed `agen`.
        running = _Running(spec, span) if span is not None else contextlib.nullcontext()
        kept = _Kept()
        step: Callable[[Any], Any] = agen.asend
        arg: Any = None
        while True:
            try:
                with running:
                    item = await step(arg)
            except StopAsyncIteration:
                if span is not None:
                    finish(spec, span, kept.items, streamed=True)
                return
            if span is not None:
                kept.add(item)
            try:
                arg = yield item
                step = agen.asend
            except GeneratorExit:
                with running:
                    await agen.aclose()
                if span is not None:
                    finish(spec, span, kept.items, streamed=True)
                raise
            except BaseException as exc:  # noqa: BLE001 - passed on to the wrapped generator
                step, arg = agen.athrow, exc

    return traced
