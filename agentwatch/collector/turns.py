"""One turn of a rebuilt conversation from its spans: the agent span, its tool calls, model usage and cost,
the expectation it carries, and the capture gaps noted on the way."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any

from agentwatch.collector import conventions as cv
from agentwatch.collector.call_matching import from_model_messages
from agentwatch.collector.call_usage import calls_usage, nonneg_float
from agentwatch.collector.chain_values import is_body, langchain_tool_message, state_text, value_text
from agentwatch.collector.decode import SpanRecord
from agentwatch.collector.foreign_messages import ENCODE, tool_value
from agentwatch.collector.messages import (
    ToolResponses,
    as_text,
    calls_before,
    json_or_text,
    last_user_text,
    messages,
    output_text,
    tools_from_messages,
)
from agentwatch.wire import attributes as A
from agentwatch.wire.json_text import value_of
from agentwatch.wire.schema import (
    MAX_COST_USD_PER_TURN,
    Expectation,
)

AGENT, TOOL, MODEL, OTHER = "agent", "tool", "model", "other"  # the roles of spans
START_ORDER = attrgetter("start_ns", "span_id")  # spans in start order, ties by id


def to_time(ns: int) -> datetime | None:
    """A span time (Unix nanoseconds) as a UTC datetime; None when unset or out of range."""
    if ns <= 0:
        return None
    try:
        return datetime.fromtimestamp(ns / 1e9, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


NO_INPUT = "no user input captured"
WRITTEN_OVER = (
    "LiteLLM's OpenTelemetry callback wrote a model call over the caller's span, the turn's other calls unseen "
    "(set USE_OTEL_LITELLM_REQUEST_SPAN=true for a span per call)"
)
NO_ANSWER = "no answer text captured (content capture off?)"
NO_ARGUMENTS = "tool arguments not captured (content capture off?)"
NO_RESULT = "tool result not captured"
EARLIER_CALLS = (
    "tool calls of earlier steps taken from the first model call's input (its steps in other traces)"
)


class Gaps:
    """What could not be seen, counted per kind, turned into notes at the end."""

    def __init__(self) -> None:
        self.turns: dict[str, list[int]] = defaultdict(list)
        self.counts: dict[str, int] = defaultdict(int)
        self.other: list[str] = []
        self.calls = 0  # tool calls seen, and those that did not fail
        self.ok_calls = 0
        self.outputs_unlogged = 0  # turns without an answer that went unseen (see `not_captured`)
        self.steps_unseen = 0  # of them, turns whose loop went on out of sight

    def not_captured(self, turns: int) -> list[str]:
        """The kinds of content no span of the conversation carried (`Conversation.not_captured`): `messages`
        when no turn had its input or its answer, `answers` when a turn without an answer had its last model
        call log its request but nothing it returned (the answer went unseen, as a source that logs some calls'
        outputs and not others shows), or was made of bare model calls ending on a tool call whose result the
        conversation does not hold (`_asked_out_of_sight`: then `steps` too, what the agent did next went
        unseen), `arguments` / `results` when no tool call had them."""
        out = []
        if turns and len(self.turns.get(NO_INPUT, ())) == turns == len(self.turns.get(NO_ANSWER, ())):
            out.append("messages")
        elif self.outputs_unlogged:
            out.append("answers")
        if self.calls and self.counts.get(NO_ARGUMENTS, 0) == self.calls:
            out.append("arguments")
        if self.ok_calls and self.counts.get(NO_RESULT, 0) == self.ok_calls:
            out.append("results")
        if self.steps_unseen:
            out.append("steps")
        return out

    def notes(self) -> list[str]:
        """The gaps as notes: per kind, the turns or the number of tool calls it concerns."""
        out = []
        for what, turns in self.turns.items():
            listed = ", ".join(str(t) for t in turns[:20]) + (", …" if len(turns) > 20 else "")
            out.append(f"{what} for turn(s) {listed}")
        out.extend(f"{what} for {n} tool call(s)" for what, n in self.counts.items())
        return out + self.other


def _tool_from_span(span: SpanRecord) -> dict[str, Any]:
    """The `ToolCall` fields of an execute_tool / TOOL span."""
    attrs = span.attrs
    first = cv.first
    name = first(attrs, cv.TOOL_NAME_KEYS)
    if name is None:  # the span's name: the conventions' `execute_tool <name>`, DSPy's `<name>.__call__`
        name = span.name.removeprefix("execute_tool ").removesuffix(".__call__")
    args = first(attrs, cv.TOOL_ARGUMENTS_KEYS)
    result = first(attrs, cv.TOOL_RESULT_KEYS)
    call_id = first(attrs, cv.TOOL_CALL_ID_KEYS)
    if cv.OPENINFERENCE_KIND_KEY in attrs and attrs[cv.OPENINFERENCE_KIND_KEY] is not None:
        if args is None:
            args = _keyword_arguments(json_or_text(first(attrs, cv.INPUT_VALUE_KEYS)))
        if result is None:
            result = first(attrs, cv.OUTPUT_VALUE_KEYS)
            message = langchain_tool_message(result)  # LangChain's tools return a ToolMessage: its content
            if message is not None:
                result, call_id = message[0], call_id if call_id is not None else message[1]
            else:
                result = _raw_output(json_or_text(result))
    if args is None and cv.TOOL_PARAMETERS_KEY in attrs:
        args = _not_a_schema(json_or_text(attrs[cv.TOOL_PARAMETERS_KEY]))
    arguments, value, logged_id = _callback_record(json_or_text(args), json_or_text(result))
    value = tool_value(value)
    if call_id is None:
        call_id = logged_id
    return {
        "name": (name if type(name) is str else str(name)) or "unknown",
        "arguments": arguments,
        "result": value,
        "error": span.status_error,
        "call_id": None if call_id is None else str(call_id),
        "read_only": _handed_off(span.name, _flag(first(attrs, cv.TOOL_READ_ONLY_KEYS))),
    }


def _handed_off(name: str, read_only: bool | None) -> bool | None:
    """A tool span's read-only flag: as it says, else true for the OpenAI Agents SDK's handoff under OpenInference
    (a TOOL span `handoff to <agent>`): one agent passing the conversation to another changes nothing outside."""
    if read_only is None and name.startswith(cv.HANDOFF_SPAN):
        return True
    return read_only


def _outputs_unlogged(models: list[SpanRecord]) -> bool:
    """Whether a turn's last model call (`models` in start order) logged what it was sent but nothing it
    returned, without failing: its answer went unseen rather than missing (a call returns something, if only an
    empty message, unless it fails; an agent that failed before answering has a failed call, or none)."""
    if not models:
        return False
    last = models[-1]
    return (
        last.status_error is None
        and cv.first(last.attrs, cv.OUTPUT_MESSAGES_KEYS) is None
        and cv.first(last.attrs, cv.INPUT_MESSAGES_KEYS) is not None
    )


def _written_over(span: SpanRecord, members: list[SpanRecord]) -> bool:
    """Whether LiteLLM's OpenTelemetry callback wrote a model call over the turn's own span, something below it:
    with a span current, the callback sets the call's attributes on that span rather than opening one of its
    own, each call over the last, and a call that ends after the span is lost; what the span holds is one of
    the turn's calls, not necessarily its last, and the others went unseen."""
    return bool(members) and cv.LITELLM_CALL_KEY in span.attrs and span.name != cv.LITELLM_SPAN_NAME


def _asked_out_of_sight(calls: list[dict[str, Any]], last: list[dict] | None) -> bool:
    """Whether bare model calls (no agent span around them) end asking for a tool whose result no span of the
    conversation holds: a loop the caller runs went on out of sight (each call its own trace when nothing joins
    them), so the answer went unseen rather than missing. Without calls read, the last output message (`last`)
    saying the model stopped to call tools is that too (LiteLLM logs the finish reason, not the calls)."""
    if not calls:
        return last is not None and len(last) > 0 and str(last[-1].get("finish_reason")) in _TOOL_STOPS
    return "result" not in calls[-1] and calls[-1].get("error") is None


_TOOL_STOPS = frozenset({"tool_calls", "tool_call", "tool_use", "function_call"})  # OpenAI, Anthropic, older


def _callback_record(args: Any, result: Any) -> tuple[Any, Any, str | None]:
    """A tool span's arguments, result and call id where they are a LangChain callback's whole input and output,
    as OpenLLMetry logs them (`{"input_str", "inputs", "kwargs": {"tool_call_id"}, "tags", "metadata"}` and
    `{"output": <ToolMessage>, "kwargs"}`): the `inputs`, the message's content and id; other values as they are."""
    call_id = None
    if isinstance(args, dict) and "input_str" in args and isinstance(args.get("inputs"), dict):
        kwargs = args.get("kwargs")
        if isinstance(kwargs, dict) and kwargs.get("tool_call_id") is not None:
            call_id = str(kwargs["tool_call_id"])
        args = args["inputs"]
    if isinstance(result, dict) and "output" in result and set(result) <= {"output", "kwargs"}:
        output = result["output"]
        message = langchain_tool_message(ENCODE(output) if isinstance(output, dict) else output)
        if message is None:
            result = output
        else:
            result, call_id = message[0], call_id or message[1]
    return args, result, call_id


def _keyword_arguments(value: Any) -> Any:
    """A tool span's `input.value` as the call's arguments: the keyword arguments of a logged Python call
    (`{"args": [], "kwargs": {...}}` and flags beside them, as LlamaIndex's and smolagents' tools log it)."""
    if isinstance(value, dict) and isinstance(value.get("kwargs"), dict) and not value.get("args"):
        others = (v for k, v in value.items() if k not in ("args", "kwargs"))
        if all(v is None or isinstance(v, (bool, int, float, str)) for v in others):
            return value["kwargs"]
    return value


def _raw_output(value: Any) -> Any:
    """A tool span's `output.value` as the call's result: a LlamaIndex `ToolOutput` gives what the tool returned."""
    if isinstance(value, dict) and "raw_output" in value and "tool_name" in value:
        return json_or_text(value["raw_output"])
    return value


def _not_a_schema(value: Any) -> Any:
    """A tool's `tool.parameters` as its call's arguments, unless it is the JSON schema OpenInference puts there."""
    if isinstance(value, dict) and (
        "$schema" in value or (isinstance(value.get("properties"), dict) and value.get("type") == "object")
    ):
        return None
    return value


def _flag(value: Any) -> bool | None:
    """A boolean attribute (also written as "true"/"false"); None when absent or not a boolean."""
    if isinstance(value, bool) or value is None:
        return value
    text = str(value).strip().lower()
    return True if text == "true" else False if text == "false" else None


def _last_answer(models: list[SpanRecord]) -> tuple[str | None, list[dict] | None]:
    """The text and output messages of the last model call (`models` in start order), or of a span around it
    that logged them where the call's own span did not (ADK's `call_llm` around `generate_content`)."""
    final = models[-1]
    last = None
    for model in reversed(models):
        if model.end_ns < final.start_ns:  # ended before the last call began: an earlier call
            break
        last = messages(cv.first(model.attrs, cv.OUTPUT_MESSAGES_KEYS))
        if last:
            break
    return output_text(last), last


def _turn_cost(span: SpanRecord, index: int, gaps: Gaps) -> float | None:
    """`agentwatch.cost.usd` of a turn span, None past the plausibility cap (noted)."""
    cost = nonneg_float(span.attrs.get(A.COST_USD))
    if cost is not None and cost > MAX_COST_USD_PER_TURN:
        gaps.turns[f"a turn's cost over {MAX_COST_USD_PER_TURN:,.0f} USD ignored (implausible)"].append(index)
        return None
    return cost


def _expectation(span: SpanRecord, members: list[SpanRecord], index: int, gaps: Gaps) -> Expectation | None:
    raw = cv.first(span.attrs, cv.EXPECTED_KEYS)
    reference = cv.first(span.attrs, cv.REFERENCE_ANSWER_KEYS)
    if raw is None and reference is None:  # else look below the turn span (trace roots without agent spans)
        for s in members:
            raw = raw if raw is not None else cv.first(s.attrs, cv.EXPECTED_KEYS)
            reference = reference if reference is not None else cv.first(s.attrs, cv.REFERENCE_ANSWER_KEYS)
    expected = None
    if raw is not None:
        try:
            value = value_of(raw) if isinstance(raw, str) else raw
            expected = Expectation.model_validate(value)
        except (ValueError, RecursionError) as exc:  # ValidationError is a ValueError
            first_line = str(exc).splitlines()[0][:160]
            gaps.other.append(
                f"turn {index}: agentwatch.expected ignored, not a valid expectation ({first_line})"
            )
    if reference is not None:
        expected = expected or Expectation()
        if expected.reference_answer is None:
            expected.reference_answer = as_text(reference)
    return expected


def build_turn(
    span: SpanRecord,
    members: list[SpanRecord],
    roles: dict[str, str],
    index: int,
    gaps: Gaps,
    responses: ToolResponses | None = None,
    end_ns: int | None = None,
) -> dict[str, Any]:
    """The `Turn` fields of one turn span and the spans below it (`responses`: the tool results given to the
    conversation's model calls, for calls read from model messages; `end_ns`: the end of a turn joined from the
    steps of one tool loop, if not the span's)."""
    members.sort(key=START_ORDER)
    tools: list[SpanRecord] = []
    models: list[SpanRecord] = []
    for member in members:
        role = roles[member.span_id]
        if role == TOOL:
            tools.append(member)
        elif role == MODEL:
            models.append(member)
    own_role = roles[span.span_id]
    if own_role == MODEL:
        models.insert(0, span)
    attrs = span.attrs
    # `input.value` / `output.value` only where the span carries no messages: on a model span they are the
    # request's and the response's JSON bodies, not what the user said or the agent answered
    found = messages(cv.first(attrs, cv.INPUT_MESSAGES_KEYS))
    user = None
    if found and own_role != MODEL and cv.INPUT_VALUE_KEYS[0] in attrs:
        # a chain's messages state holds the whole thread; the messages OpenInference logs beside it on chain and
        # agent spans, only its first message
        user = state_text(attrs[cv.INPUT_VALUE_KEYS[0]], True)
    body = None  # a chain's input or output that is a body, not text said: kept where the models say nothing
    if user is None:
        user = last_user_text(found) if found else value_text(cv.first(attrs, cv.INPUT_VALUE_KEYS), True)
        if user is not None and not found and models and is_body(user):
            body, user = user, None
    for model in models:
        if user is not None:
            break
        user = last_user_text(messages(cv.first(model.attrs, cv.INPUT_MESSAGES_KEYS)))
    user = user if user is not None else body
    found = messages(cv.first(attrs, cv.OUTPUT_MESSAGES_KEYS))
    answer = output_text(found) if found else value_text(cv.first(attrs, cv.OUTPUT_VALUE_KEYS), False)
    body = None
    if answer is not None and not found and models and is_body(answer):
        body, answer = answer, None
    if answer is None and models:
        answer, last = _last_answer(models)
        found = found or last
    answer = answer if answer is not None else body
    if user is None:
        gaps.turns[NO_INPUT].append(index)
    if answer is None and not found:  # output messages without text: no answer was given, none went unseen
        gaps.turns[NO_ANSWER].append(index)
        if _outputs_unlogged(models):
            gaps.outputs_unlogged += 1
    if tools:
        tool_calls = [_tool_from_span(s) for s in tools]
        if models:
            from_model_messages(tool_calls, models, responses)
        for call in tool_calls:
            gaps.calls += 1
            if call["arguments"] is None:
                gaps.counts[NO_ARGUMENTS] += 1
            if call["error"] is None:
                gaps.ok_calls += 1
                if call["result"] is None:
                    gaps.counts[NO_RESULT] += 1
    else:
        tool_calls, missing = tools_from_messages(models, responses)
        if own_role == MODEL and models:  # bare model calls: steps before them may be traces of their own
            earlier = calls_before(models[0], {c["call_id"] for c in tool_calls})
            if earlier:
                gaps.turns[EARLIER_CALLS].append(index)
                missing += sum(1 for c in earlier if "result" not in c)
                tool_calls = earlier + tool_calls
        gaps.calls += len(tool_calls)  # their arguments were in the messages
        gaps.ok_calls += sum(1 for c in tool_calls if c.get("error") is None)
        if missing:
            gaps.counts[NO_RESULT] += missing
        if answer is None and own_role == MODEL and _asked_out_of_sight(tool_calls, found):
            gaps.outputs_unlogged += 1
            gaps.steps_unseen += 1
        if tool_calls:
            gaps.turns["tool calls taken from model output messages (no execute_tool spans)"].append(index)
    usage = calls_usage(models, [span, *members], index, gaps)
    if _written_over(span, members):
        gaps.turns[WRITTEN_OVER].append(index)
        if answer is None:  # the call written was not the last: what the agent said last went unseen
            gaps.outputs_unlogged += 1
            gaps.steps_unseen += 1
        usage.append({"model": None, "input_tokens": 0, "output_tokens": 0, "cost_usd": None})  # calls unseen
    end = span.end_ns if end_ns is None else end_ns
    duration = (end - span.start_ns) / 1e6 if end >= span.start_ns > 0 else None
    return {
        "input": user,
        "answer": answer,
        "tool_calls": tool_calls,
        "expected": _expectation(span, members, index, gaps),
        "usage": usage,
        "cost_usd": _turn_cost(span, index, gaps) if own_role != MODEL else None,
        "duration_ms": duration,
        "error": span.status_error,
        "started_at": to_time(span.start_ns),
    }
