"""How one traced call becomes a span: name and attributes per kind at start, output and errors at the end.

`start` and `finish`/`fail` never raise: a failure inside tracing is logged and the agent's call goes on.
"""

from __future__ import annotations

import inspect
import logging
import random
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from opentelemetry.trace import Span, Status, StatusCode

from agentwatch.sdk import genai
from agentwatch.sdk.context import _CURRENT
from agentwatch.sdk.runtime import RUNTIME
from agentwatch.wire import attributes as A

log = logging.getLogger(__name__)

KINDS = ("agent", "tool", "llm", "chain")
MAX_STREAM_ITEMS = 1000
_CALL_ID_ARG = "tool_call_id"
_BOUND_KINDS = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


@dataclass(slots=True)
class SpanSpec:
    """What `@trace` decided at decoration time about the spans of one function."""

    kind: str
    name: str
    explicit_name: bool
    capture_input: bool
    capture_output: bool
    model: str | None
    positional: tuple[str, ...]
    drop_first: bool
    signature: inspect.Signature | None
    static_attrs: dict[str, Any]
    span_name: str

    @classmethod
    def of(
        cls,
        fn: Callable[..., Any],
        kind: str,
        name: str | None,
        capture_input: bool,
        capture_output: bool,
        model: str | None,
        read_only: bool | None = None,
    ) -> SpanSpec:
        """Inspect fn once: span name, fixed attributes, and how to bind its arguments."""
        if kind not in KINDS:
            raise ValueError(f"@trace kind must be one of {KINDS}, got {kind!r}")
        if read_only is not None and kind != "tool":
            raise ValueError(f"@trace(read_only=...) applies to kind='tool', not {kind!r}")
        try:
            signature: inspect.Signature | None = inspect.signature(fn)
        except (TypeError, ValueError):
            signature = None
        params = list(signature.parameters.values()) if signature else []
        positional = tuple(p.name for p in params if p.kind in _BOUND_KINDS)
        drop_first = bool(positional) and positional[0] in ("self", "cls")
        label = name or getattr(fn, "__name__", None) or "call"
        default_model = signature.parameters.get("model") if signature else None
        if model is None and default_model is not None and isinstance(default_model.default, str):
            model = default_model.default  # a `model="..."` default names the model when the call omits it
        static: dict[str, Any] = {}
        span_name = label
        if kind == "tool":
            static = {A.OPERATION: A.EXECUTE_TOOL, A.TOOL_NAME: label}
            if read_only is not None:
                static[A.TOOL_READ_ONLY] = bool(read_only)
            span_name = f"{A.EXECUTE_TOOL} {label}"
        elif kind == "llm":
            static = {A.OPERATION: A.CHAT}
            span_name = name or (f"{A.CHAT} {model}" if model else A.CHAT)
        elif kind == "agent":
            static = {A.OPERATION: A.INVOKE_AGENT}
            span_name = f"{A.INVOKE_AGENT} {label}"
        return cls(
            kind,
            label,
            name is not None,
            capture_input,
            capture_output,
            model,
            positional,
            drop_first,
            signature,
            static,
            span_name,
        )

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments by parameter name, without self/cls."""
        names = self.positional
        if len(args) <= len(names):
            bound = dict(zip(names, args, strict=False))  # fewer arguments than parameters
            if kwargs:
                bound.update(kwargs)
        elif self.signature is not None:
            try:
                ba = self.signature.bind_partial(*args, **kwargs)
            except TypeError:
                bound = {"args": list(args), **kwargs}
            else:
                bound = {}
                for key, value in ba.arguments.items():
                    kind = self.signature.parameters[key].kind
                    if kind is inspect.Parameter.VAR_KEYWORD:
                        bound.update(value)
                    else:
                        bound[key] = value
        else:
            bound = {"args": list(args), **kwargs}
        if self.drop_first:
            bound.pop(names[0], None)
        return bound


def new_call_id() -> str:
    """A fresh tool call id."""
    return f"call_{random.getrandbits(64):016x}"


def start(spec: SpanSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Span | None:
    """Start the span of one call (as a child of the current span), or None if tracing failed."""
    try:
        capture = RUNTIME.capture
        content = capture.enabled and spec.capture_input
        attrs = dict(spec.static_attrs)
        name = spec.span_name
        kind = spec.kind
        state = _CURRENT.get()
        bound = spec.bind(args, kwargs) if content or kind != "chain" else {}
        if kind == "tool":
            call_id = bound.pop(_CALL_ID_ARG, None) or kwargs.get(_CALL_ID_ARG)
            attrs[A.TOOL_CALL_ID] = str(call_id) if call_id else new_call_id()
            if content:
                attrs[A.TOOL_ARGUMENTS] = capture.dumps(bound)
        elif kind == "agent":
            agent = spec.name
            version = RUNTIME.version
            if state is not None:
                version = state.version or version
                if not spec.explicit_name:
                    agent = state.agent or RUNTIME.agent or agent
            elif not spec.explicit_name:
                agent = RUNTIME.agent or agent
            name = f"{A.INVOKE_AGENT} {agent}"
            attrs[A.AGENT_NAME] = agent
            if version is not None:
                attrs[A.AGENT_VERSION] = version
            if content:
                named = capture.without_secret_names(bound)  # one argument is sent as text, without its name
                attrs[A.INPUT_MESSAGES] = capture.dumps_plain(genai.user_message(named, capture.dumps))
        elif kind == "llm":
            model = bound.get("model")
            model = model if isinstance(model, str) else spec.model
            if model is not None:
                attrs[A.REQUEST_MODEL] = model
                if not spec.explicit_name:
                    name = f"{A.CHAT} {model}"
            if content:
                named = capture.without_secret_names(bound)
                attrs[A.INPUT_MESSAGES] = capture.dumps_plain(genai.chat_input(named, capture.dumps))
        elif content:
            attrs[A.INPUT_VALUE] = capture.dumps(bound)
        if state is None:
            return RUNTIME.get_tracer().start_span(name, attributes=attrs)
        attrs.update(state.stamp(attrs, RUNTIME.agent, RUNTIME.version))
        span = RUNTIME.get_tracer().start_span(name, attributes=attrs)
        if kind == "agent":
            state.start_turn(span)
        return span
    except Exception:
        log.exception("agentwatch could not start a span for %s", spec.name)
        return None


def finish(spec: SpanSpec, span: Span, result: Any, streamed: bool = False) -> None:
    """Record the call's output on its span and end it."""
    try:
        if streamed:
            result = _stream_output(spec, result)
        capture = RUNTIME.capture
        content = capture.enabled and spec.capture_output
        kind = spec.kind
        if kind == "llm":
            _record_model_output(spec, span, result, content, capture)
        elif content:
            if kind == "tool":
                span.set_attribute(A.TOOL_RESULT, capture.dumps(result))
            elif kind == "agent":
                span.set_attribute(
                    A.OUTPUT_MESSAGES, capture.dumps_plain(genai.assistant_message(result, capture.dumps))
                )
            else:
                span.set_attribute(
                    A.OUTPUT_VALUE,
                    genai.text_of(result, capture.dumps)
                    if not isinstance(result, str)
                    else capture.text(result),
                )
    except Exception:
        log.exception("agentwatch could not record the output of %s", spec.name)
    finally:
        end(spec, span)


STACK_FRAMES = 30


def fail(spec: SpanSpec, span: Span, exc: BaseException) -> None:
    """Mark the span as failed by exc (status ERROR, error.type, one exception event) and end it."""
    try:
        capture = RUNTIME.capture
        redact = capture.redact_text  # an exception's text may carry a secret (a URL with a password)
        message = capture.text(str(exc))  # redacted and bounded: a 1 MB message went out whole
        span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {message}"[:1024]))
        span.set_attribute(A.ERROR_TYPE, type(exc).__name__)
        # The innermost frames, and the tail of the text: each traced level of a recursion formatted the whole
        # traceback, twice (here and in the SDK's record_exception, which formats it whatever it is given: the
        # event is added here instead), so an exception at depth 400 took 8 s to surface; and a cut from the top
        # lost the exception's own line.
        stack = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-STACK_FRAMES))
        keep = capture.max_bytes - 3  # the bound is in UTF-8 bytes, the "…" marker's 3 included
        if len(stack) > keep // 4:
            tail = stack.encode("utf-8")
            if len(tail) > keep:
                stack = "…" + tail[-keep:].decode("utf-8", errors="ignore")
        kind = type(exc)
        module = kind.__module__
        span.add_event(
            "exception",
            attributes={
                "exception.type": f"{module}.{kind.__qualname__}"
                if module and module != "builtins"
                else kind.__qualname__,
                "exception.message": message,
                "exception.stacktrace": redact(stack),
                "exception.escaped": "False",
            },
        )
    except Exception:
        log.exception("agentwatch could not record an exception")
    finally:
        end(spec, span)


def end(spec: SpanSpec, span: Span) -> None:
    """End the span; a turn is no longer the conversation's current one."""
    span.end()
    if spec.kind == "agent":
        state = _CURRENT.get()
        if state is not None:
            state.end_turn(span.get_span_context().span_id)


def _stream_output(spec: SpanSpec, items: list[Any]) -> Any:
    """What a generator yielded: joined text for agents and models streaming strings, else the list."""
    if spec.kind in ("agent", "llm") and items and all(isinstance(i, str) for i in items):
        return "".join(items)
    return items


def _record_model_output(spec: SpanSpec, span: Span, result: Any, content: bool, capture: Any) -> None:
    usage = genai.usage_of(result)
    if usage is not None:
        if usage.model:
            span.set_attribute(A.RESPONSE_MODEL, usage.model)
            attrs = getattr(span, "attributes", None) or {}
            if not spec.explicit_name and A.REQUEST_MODEL not in attrs:
                span.update_name(f"{A.CHAT} {usage.model}")
        if usage.input_tokens is not None:
            span.set_attribute(A.INPUT_TOKENS, usage.input_tokens)
        if usage.output_tokens is not None:
            span.set_attribute(A.OUTPUT_TOKENS, usage.output_tokens)
        if usage.cache_read_input_tokens:
            span.set_attribute(A.CACHE_READ_INPUT_TOKENS, usage.cache_read_input_tokens)
        if usage.cache_creation_input_tokens:
            span.set_attribute(A.CACHE_CREATION_INPUT_TOKENS, usage.cache_creation_input_tokens)
    if content:
        span.set_attribute(A.OUTPUT_MESSAGES, capture.dumps_plain(genai.chat_output(result, capture.dumps)))
