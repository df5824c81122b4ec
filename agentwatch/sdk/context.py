"""The conversation context: which conversation the code is running in, and its per-turn annotations.

`with conversation(...)` (or `async with`) puts a `ConversationState` in a context variable. `@trace` and the
marker spans stamp the conversation's attributes on the spans they create and track its turns themselves, with
or without `configure()`; the `ConversationSpanProcessor` does the same for spans of other instrumentations. `asyncio` tasks inherit it; threads do not (use `bind_context`).
"""

from __future__ import annotations

import contextvars
import functools
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, ParamSpec, Self, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import NonRecordingSpan, Span, SpanContext

from agentwatch.sdk.lenient import read_attempt, read_budget, read_name, read_tags, text_or_none
from agentwatch.sdk.runtime import RUNTIME
from agentwatch.wire import attributes as A

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

AttributeValue = str | bool | int | float


@dataclass(slots=True)
class ConversationState:
    """One conversation as seen from inside the agent process."""

    id: str
    task: str | None = None
    instance: str | None = None
    attempt: int | None = None
    agent: str | None = None
    version: str | None = None
    user: str | None = None
    budget_usd: float | None = None
    tags: dict[str, str] = field(default_factory=dict)
    attributes: dict[str, AttributeValue] = field(default_factory=dict)
    open_turns: list[Span] = field(default_factory=list)
    last_turn: SpanContext | None = None
    pending: dict[str, AttributeValue] = field(default_factory=dict)
    expected: str | None = None  # the conversation's expectation (JSON), stamped on every later turn

    def __post_init__(self) -> None:
        attrs: dict[str, AttributeValue] = {A.CONVERSATION_ID: self.id}
        if self.task is not None:
            attrs[A.TASK] = self.task
        if self.instance is not None:
            attrs[A.TASK_INSTANCE] = self.instance
        if self.attempt is not None:
            attrs[A.ATTEMPT] = self.attempt
        if self.user is not None:
            attrs[A.USER_ID] = self.user
        if self.budget_usd is not None:
            attrs[A.BUDGET_USD] = float(self.budget_usd)
        for key, value in self.tags.items():
            attrs[f"agentwatch.tag.{key}"] = str(value)
        self.attributes = attrs

    def stamp(
        self, attrs: Mapping[str, Any], agent: str | None, version: str | None
    ) -> dict[str, AttributeValue]:
        """The attributes this conversation adds to a span that has attrs: its own, plus agent and version."""
        out = dict(self.attributes)
        agent = self.agent or agent
        if agent is not None and A.AGENT_NAME not in attrs:
            out[A.AGENT_NAME] = agent
        version = self.version or version
        if version is not None and A.AGENT_VERSION not in attrs:
            out[A.AGENT_VERSION] = version
        return out

    def start_turn(self, span: Span) -> None:
        """Track an `invoke_agent` span as the current turn and give it the expectations set between turns."""
        if len(self.open_turns) >= 8:  # turns ended in another context were never removed
            self.open_turns[:] = [t for t in self.open_turns if t.is_recording()]
        self.open_turns.append(span)
        self.last_turn = span.get_span_context()
        if self.pending:
            span.set_attributes(self.pending)
            self.pending.clear()
        if self.expected is not None:
            span.set_attribute(A.CONVERSATION_EXPECTED, self.expected)

    def end_turn(self, span_id: int) -> None:
        """Forget a finished turn."""
        if self.open_turns:
            self.open_turns[:] = [t for t in self.open_turns if t.get_span_context().span_id != span_id]

    def current_turn(self) -> Span | None:
        """The open `invoke_agent` span of this conversation the calling code runs in, if any.

        Turns run at once (`asyncio.gather`) are told apart by the caller's OpenTelemetry context: its current
        span, that span's parent, or the turn `@trace` marked in it; else the innermost open turn.
        """
        open_turns = self.open_turns
        if not open_turns:
            return None
        here = otel_trace.get_current_span()
        parent = getattr(here, "parent", None)  # an SDK span's parent context; None on other spans
        parent_id = parent.span_id if isinstance(parent, SpanContext) else None
        marked = otel_context.get_value(TURN_KEY)
        for wanted in (here, parent_id, marked):
            for span in open_turns:
                if (span is wanted or span.get_span_context().span_id == wanted) and span.is_recording():
                    return span
        for span in reversed(open_turns):
            if span.is_recording():
                return span
        return None


# The turn a `@trace(kind="agent")` call runs, in the OpenTelemetry context of its code and of the spans under it.
TURN_KEY = otel_context.create_key("agentwatch.turn")

_CURRENT: contextvars.ContextVar[ConversationState | None] = contextvars.ContextVar(
    "agentwatch_conversation", default=None
)


def current_conversation() -> ConversationState | None:
    """The conversation the calling code runs in, or None."""
    return _CURRENT.get()


class conversation:
    """Context manager (sync and async) marking the code inside as one conversation.

    `conversation.end()`, `conversation.expect(...)` and `conversation.label(...)` act on the current
    conversation (the innermost one entered in this context). `instance` and `attempt` say which attempt at
    which task instance this conversation is (a replayed request, a benchmark task's trial): conversations of
    the same task and instance are the repeated attempts pass^k is about.
    """

    __slots__ = ("_tokens", "state")

    def __init__(
        self,
        id: str | None = None,
        task: str | None = None,
        agent: str | None = None,
        version: str | None = None,
        user: str | None = None,
        budget_usd: float | None = None,
        tags: Mapping[str, str] | None = None,
        instance: str | int | None = None,
        attempt: int | None = None,
    ) -> None:
        self.state = ConversationState(
            id=read_name("the conversation id", id) or uuid.uuid4().hex,
            task=read_name("task", task),
            instance=read_name("instance", instance) or None,
            attempt=read_attempt(attempt),
            agent=read_name("agent", agent),
            version=read_name("version", version),
            user=read_name("user", user),
            budget_usd=read_budget(budget_usd),
            tags=read_tags(tags),
        )
        self._tokens: list[contextvars.Token[ConversationState | None]] = []

    @property
    def id(self) -> str:
        """The conversation id (generated when not given)."""
        return self.state.id

    def __enter__(self) -> Self:
        self._tokens.append(_CURRENT.set(self.state))
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # One object entered by several tasks at once holds a token of each, interleaved: reset the latest one
        # made in this context (the last token popped belonged to the other task, and both stayed "in" it).
        for i in range(len(self._tokens) - 1, -1, -1):
            try:
                _CURRENT.reset(self._tokens[i])
            except (ValueError, RuntimeError):  # made in another context (another task's), or used
                continue
            del self._tokens[i]
            return
        if self._tokens:
            log.debug("conversation %s exited in a different context", self.state.id)

    async def __aenter__(self) -> Self:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    @staticmethod
    def current() -> ConversationState | None:
        """The current conversation's state, or None outside any conversation."""
        return _CURRENT.get()

    @staticmethod
    def end() -> bool:
        """Mark the current turn as the conversation's last (or, between turns, emit an end marker span)."""
        return _annotate(A.CONVERSATION_END, True, marker="agentwatch.conversation.end")

    @staticmethod
    def expect(
        tools: Iterable[Any] | None = None,
        *,
        sequence_matters: bool = True,
        uses_tool_results: bool | None = None,
        forbidden_tools: Iterable[str] | None = None,
        reference_answer: str | None = None,
        outputs: Iterable[str] | None = None,
        end: str | None = None,
        extra_calls: str = "read_only",
        scope: str = "turn",
    ) -> bool:
        """Attach an expectation to the current turn (or to the next turn when called between turns), or, with
        `scope="conversation"`, to the whole conversation: its calls are then matched anywhere in it.

        `tools` items are a name, a `(name, arguments)` pair or a mapping `{"name", "arguments", "match",
        "required"}`; arguments None means they are not checked. `outputs`: values some answer must state;
        `end`: "handoff" or "answer"; `extra_calls`: "read_only", "none" or "any" (docs/scoring.md).
        """
        state = _CURRENT.get()
        if state is None:
            log.warning("conversation.expect() called outside a conversation; ignored")
            return False
        try:
            if scope not in ("turn", "conversation"):
                raise ValueError(f"scope must be 'turn' or 'conversation', got {scope!r}")
            if end not in (None, "handoff", "answer") or extra_calls not in ("read_only", "none", "any"):
                raise ValueError(f"end={end!r} / extra_calls={extra_calls!r} not understood")
            expected = {
                "tools": [_expected_tool(t) for t in (tools or [])],
                "sequence_matters": bool(sequence_matters),
                "uses_tool_results": uses_tool_results,
                "forbidden_tools": [str(t) for t in (forbidden_tools or [])],
                "reference_answer": reference_answer,
            }
            if outputs:
                expected["outputs"] = [str(o) for o in outputs]
            if end is not None:
                expected["end"] = end
            if extra_calls != "read_only":
                expected["extra_calls"] = extra_calls
            reference = None if reference_answer is None else str(reference_answer)
        except Exception as exc:  # noqa: BLE001 - a value with no text (its __str__ failed), as an invalid one
            log.warning("conversation.expect(): invalid expectation ignored: %r", exc)
            return False
        if scope == "conversation":
            state.expected = RUNTIME.capture.dumps(expected)
            return _annotate(
                A.CONVERSATION_EXPECTED, state.expected, marker="agentwatch.expect", before_turns=False
            )
        attrs: dict[str, AttributeValue] = {A.EXPECTED: RUNTIME.capture.dumps(expected)}
        if reference is not None:
            attrs[A.REFERENCE_ANSWER] = RUNTIME.capture.text(reference)
        turn = state.current_turn()
        if turn is not None:
            turn.set_attributes(attrs)
        else:
            state.pending.update(attrs)
        return True

    @staticmethod
    def label(outcome: str, *, conversation_id: str | None = None) -> bool:
        """Record a human or feedback outcome label (`complete`, `partial_correct`, ...) for a conversation."""
        text = text_or_none("the outcome", outcome)
        value = (text or "").strip().lower().replace("-", "_").replace(" ", "_")
        if value not in A.OUTCOMES:
            log.warning(
                "conversation.label(%r): unknown outcome, expected one of %s", outcome, sorted(A.OUTCOMES)
            )
            return False
        current = _CURRENT.get()
        other = read_name("the conversation id", conversation_id)
        if conversation_id is not None and (current is None or current.id != other):
            if other is None:
                return False
            attrs: dict[str, AttributeValue] = {A.OUTCOME: value, A.CONVERSATION_ID: other}
            # An empty context: no current conversation to stamp over the id given, no parent span.
            contextvars.Context().run(_marker_span, "agentwatch.label", attrs, None)
            return True
        return _annotate(A.OUTCOME, value, marker="agentwatch.label")


def _expected_tool(item: Any) -> dict[str, Any]:
    if isinstance(item, str):
        return {"name": item, "arguments": None}
    if isinstance(item, Mapping):
        if "name" not in item:
            raise ValueError(f"expected tool {item!r} has no 'name'")
        tool = {"name": str(item["name"]), "arguments": item.get("arguments")}
        for key in ("match", "required"):
            if item.get(key) is not None:
                tool[key] = item[key]
        return tool
    if isinstance(item, (tuple, list)) and len(item) == 2:
        return {"name": str(item[0]), "arguments": item[1]}
    raise TypeError(f"expected tool must be a name, (name, arguments) or mapping, got {item!r}")


def _annotate(key: str, value: AttributeValue, *, marker: str, before_turns: bool = True) -> bool:
    """Set key on the current turn span; between turns, on a marker span under the last turn (before the first
    turn too, unless `before_turns` is False: the first turn will carry it)."""
    state = _CURRENT.get()
    if state is None:
        log.warning("%s called outside a conversation; ignored", marker)
        return False
    turn = state.current_turn()
    if turn is not None:
        turn.set_attribute(key, value)
    elif before_turns or state.last_turn is not None:
        _marker_span(marker, {key: value}, state.last_turn)
    return True


def _marker_span(name: str, attrs: dict[str, AttributeValue], parent: SpanContext | None) -> None:
    """A zero-length span carrying attrs; a child of the last turn when there was one."""
    ctx = otel_trace.set_span_in_context(NonRecordingSpan(parent)) if parent is not None else None
    state = _CURRENT.get()
    try:
        if state is not None:
            attrs = {**attrs, **state.stamp(attrs, RUNTIME.agent, RUNTIME.version)}
        span = RUNTIME.get_tracer().start_span(name, context=ctx, attributes={**attrs, A.MARKER: True})
        span.end()
    except Exception:
        log.exception("could not emit the %s span", name)


def bind_context(fn: Callable[P, R]) -> Callable[P, R]:
    """fn bound to the caller's context (conversation and parent span), for running in another thread."""
    ctx = contextvars.copy_context()

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return ctx.copy().run(fn, *args, **kwargs)

    return run
