"""What a turn's model calls used: each model span's tokens (prompt-cache tokens among its input), model and
reported cost as `Usage` fields, the calls a framework logs twice counted once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentwatch.collector import conventions as cv
from agentwatch.collector.decode import SpanRecord
from agentwatch.wire.schema import MAX_COST_USD_PER_CALL, MAX_TOKENS_PER_CALL

if TYPE_CHECKING:
    from agentwatch.collector.turns import Gaps

_EXACT = 2**53  # integers a float holds exactly
_CACHE_KEYS = frozenset(cv.CACHE_READ_KEYS + cv.CACHE_WRITE_KEYS)


def _nonneg_int(value: Any) -> int:
    """A token count: a number, truncated, not below 0; 0 when absent or not a number."""
    if value is None:  # the common absent case, without raising
        return 0
    if type(value) is int and -_EXACT < value < _EXACT:  # exactly what int(float(value)) gives
        return max(0, value)
    try:
        number = int(float(value))
    except (TypeError, ValueError, OverflowError):
        return 0
    return max(0, number)


def nonneg_float(value: Any) -> float | None:
    """A finite non-negative number, else None."""
    if value is None:  # the common absent case, without raising
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if 0 <= number < float("inf") else None


def calls_usage(
    models: list[SpanRecord], spans: list[SpanRecord], index: int, gaps: Gaps
) -> list[dict[str, Any]]:
    """The `Usage` fields of a turn's model calls (`spans`: all the turn's). A model span around another that
    reports tokens is left out (`_wrappers`). A model span that reports nothing of a call (no tokens, cost,
    output or error) before a later call of the same model that reports something is a step that prepared it
    (LlamaIndex's `_prepare_chat_with_tools` is an LLM span): left out, or the turn's cost would be unknown for
    it."""
    found = [(m, u) for m in models if (u := _usage(m, index, gaps)) is not None]
    if len(found) < 2:
        return [u for _, u in found]
    wrappers = _wrappers(found, spans) if _overlap(found) else None
    if wrappers:
        found = [(m, u) for m, u in found if m.span_id not in wrappers]
    if all(u["input_tokens"] or u["output_tokens"] for _, u in found):  # the usual case: every call counted
        return [u for _, u in found]
    kept = []
    reported_later: set[Any] = set()  # the models of the calls after the one looked at that report something
    for span, u in found[::-1]:  # not reversed(): mypyc 2.4 stops with an internal error on it here
        silent = (
            u["input_tokens"] == u["output_tokens"] == 0
            and u["cost_usd"] is None
            and span.status_error is None
            and cv.first(span.attrs, cv.OUTPUT_MESSAGES_KEYS) is None
        )
        if not silent:
            reported_later.add(u["model"])
            kept.append(u)
        elif u["model"] not in reported_later:
            kept.append(u)
    kept.reverse()
    return kept


def _overlap(found: list[tuple[SpanRecord, dict[str, Any]]]) -> bool:
    """Whether a model span starts before an earlier one ends (`found` in start order): what a span around another
    needs; calls one after another, the usual case, have no wrapper to look for."""
    end = 0
    for span, _ in found:
        if span.start_ns < end:
            return True
        end = max(end, span.end_ns)
    return False


def _wrappers(found: list[tuple[SpanRecord, dict[str, Any]]], spans: list[SpanRecord]) -> set[str]:
    """The model spans above a model span that reports tokens (`spans`: the turn's, its own span first, to walk
    up through): a framework's span around the call its client's instrumentation logs too (ADK's `call_llm`
    around `generate_content`, LangChain's around OpenAI's), whose tokens are that call's, counted once."""
    models = {m.span_id for m, _ in found}
    top = spans[0].span_id
    by_id: dict[str, SpanRecord] | None = None  # made when a call is not right below the turn's span
    wrappers: set[str] = set()
    for span, u in found:
        if not (u["input_tokens"] or u["output_tokens"]) or span.parent_span_id is None:
            continue
        if span.parent_span_id == top:  # right below the turn's span: a wrapper only if that is a call too
            if top in models:
                wrappers.add(top)
            continue
        if by_id is None:
            by_id = {s.span_id: s for s in spans}
        parent = by_id.get(span.parent_span_id) if span.parent_span_id else None
        for _ in range(len(by_id)):  # bounded: parent ids may cycle
            if parent is None:
                break
            if parent.span_id in models:
                wrappers.add(parent.span_id)
            parent = by_id.get(parent.parent_span_id) if parent.parent_span_id else None
    return wrappers


def _usage(span: SpanRecord, index: int, gaps: Gaps) -> dict[str, Any] | None:
    """The `Usage` fields of a model span, None if it reports nothing. Counts and costs past the plausibility
    caps are dropped with a note (the call's cost is then unknown, never absurd)."""
    attrs = span.attrs
    first = cv.first
    model = first(attrs, cv.MODEL_KEYS)
    tin = first(attrs, cv.INPUT_TOKEN_KEYS)
    tout = first(attrs, cv.OUTPUT_TOKEN_KEYS)
    cost = nonneg_float(first(attrs, cv.COST_KEYS))
    if model is None and tin is None and tout is None and cost is None:
        return None
    tokens_in, tokens_out = _nonneg_int(tin), _nonneg_int(tout)
    cached = _cached(attrs, tokens_in, tokens_out) if tin is not None else None
    if cached is not None:
        tokens_in = cached[2]
    if tokens_in > MAX_TOKENS_PER_CALL or tokens_out > MAX_TOKENS_PER_CALL:
        gaps.turns[f"token counts over {MAX_TOKENS_PER_CALL:,} a call ignored (implausible)"].append(index)
        tokens_in = tokens_out = 0
        cached = None
    if cost is not None and cost > MAX_COST_USD_PER_CALL:
        gaps.turns[f"a model call's cost over {MAX_COST_USD_PER_CALL:,.0f} USD ignored (implausible)"].append(
            index
        )
        cost = None
    usage = {
        "model": None if model is None else str(model),
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cost_usd": cost,
    }
    if cached is not None:
        usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"] = cached[0], cached[1]
    return usage


def _cached(attrs: dict[str, Any], tokens_in: int, tokens_out: int) -> tuple[int, int, int] | None:
    """(cache read, cache write, input tokens counting them) of a model span that reports prompt-cache tokens,
    else None. The conventions count cached tokens in the input tokens, as the instrumentations of OpenAI,
    Anthropic (which adds them to Anthropic's own count), Strands and Pydantic AI do; a source that does not is
    told by its cached tokens outnumbering its input, or by a total that counts them apart."""
    if _CACHE_KEYS.isdisjoint(attrs):  # most spans: one walk of the span's keys, in C
        return None
    read = _nonneg_int(cv.first(attrs, cv.CACHE_READ_KEYS))
    write = _nonneg_int(cv.first(attrs, cv.CACHE_WRITE_KEYS))
    if not (read or write):
        return None
    apart = read + write > tokens_in or _nonneg_int(cv.first(attrs, cv.TOTAL_TOKEN_KEYS)) == (
        tokens_in + tokens_out + read + write
    )
    return read, write, tokens_in + read + write if apart else tokens_in
