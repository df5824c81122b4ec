"""Rebuild a `Conversation` transcript from the spans of one conversation (DESIGN.md span conventions)."""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any

from pydantic import ValidationError
from pydantic_core import from_json

from agentwatch import wire
from agentwatch.collector import conventions as cv
from agentwatch.collector.assembler import FinishedConversation
from agentwatch.collector.decode import SpanRecord
from agentwatch.collector.messages import (
    as_text,
    instructions_text,
    json_or_text,
    last_user_text,
    messages,
    output_text,
    system_text,
    tools_from_messages,
)
from agentwatch.wire import attributes as A
from agentwatch.wire.schema import (
    MAX_ATTEMPT,
    MAX_COST_USD_PER_CALL,
    MAX_COST_USD_PER_TURN,
    MAX_TOKENS_PER_CALL,
    Conversation,
    Expectation,
    Turn,
    instance_text,
    normalize_outcome,
)

log = logging.getLogger(__name__)

AGENT, TOOL, MODEL, OTHER = "agent", "tool", "model", "other"
_START_ORDER = attrgetter("start_ns", "span_id")  # spans in start order, ties by id
_EXACT = 2**53  # integers a float holds exactly
_OUTCOMES = wire.SCORE_OUTCOMES


# --------------------------------------------------------------------------- small readers


_OP_ROLE = {
    **dict.fromkeys(cv.AGENT_OPERATIONS, "agent"),
    **dict.fromkeys(cv.TOOL_OPERATIONS, "tool"),
    **dict.fromkeys(cv.MODEL_OPERATIONS, "model"),
}
_KIND_ROLE = {
    **dict.fromkeys(cv.AGENT_KINDS, "agent"),
    **dict.fromkeys(cv.TOOL_KINDS, "tool"),
    **dict.fromkeys(cv.MODEL_KINDS, "model"),
}


_MODEL_HINT_KEYS = cv.MODEL_KEYS + cv.INPUT_TOKEN_KEYS + cv.OUTPUT_TOKEN_KEYS


def _role(span: SpanRecord) -> str:
    attrs = span.attrs
    op = attrs.get(cv.OPERATION_KEY)
    if type(op) is str:
        role = _OP_ROLE.get(op)
        if role is not None:  # the common case: a GenAI operation name
            return role
    else:
        op = op if isinstance(op, str) else None
    kind = attrs.get(cv.OPENINFERENCE_KIND_KEY)
    kind = kind.upper() if isinstance(kind, str) else None
    role = _KIND_ROLE.get(kind) if kind is not None else None
    if role is not None:
        return role
    if op is None and kind is None:
        if span.name.startswith("invoke_agent"):
            return AGENT
        if span.name.startswith("execute_tool") or cv.first(attrs, cv.TOOL_NAME_KEYS[:1]) is not None:
            return TOOL
        if cv.first(attrs, _MODEL_HINT_KEYS) is not None:
            return MODEL
    return OTHER


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


def _nonneg_float(value: Any) -> float | None:
    """A finite non-negative number, else None."""
    if value is None:  # the common absent case, without raising
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if 0 <= number < float("inf") else None


def _time(ns: int) -> datetime | None:
    if ns <= 0:
        return None
    try:
        return datetime.fromtimestamp(ns / 1e9, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


# --------------------------------------------------------------------------- the span tree


class _Forest:
    """Spans de-duplicated by id, with turns found and every span assigned to at most one turn."""

    def __init__(self, spans: list[SpanRecord], notes: list[str]) -> None:
        ordered = sorted(spans, key=_START_ORDER)
        self.spans: dict[str, SpanRecord] = {}
        for span in ordered:
            self.spans.setdefault(span.span_id, span)
        if len(self.spans) < len(ordered):
            notes.append(f"{len(ordered) - len(self.spans)} duplicate span id(s) ignored")
        children: dict[str, list[SpanRecord]] = {}
        roots: list[SpanRecord] = []
        self.roles: dict[str, str] = {}
        missing = 0
        spans_by_id, roles = self.spans, self.roles
        for sid, span in spans_by_id.items():
            roles[sid] = _role(span)
            parent = span.parent_span_id
            if parent and parent != sid and parent in spans_by_id:
                below = children.get(parent)
                if below is None:
                    children[parent] = [span]
                else:
                    below.append(span)
            else:
                missing += bool(parent) and parent != sid
                roots.append(span)
        if missing:
            notes.append(f"{missing} span(s) whose parent was not seen treated as roots")
        self.turns: list[SpanRecord] = []
        self.members: dict[str, list[SpanRecord]] = {}
        self.outside = 0
        visited: set[str] = set()
        for root in roots:
            self._walk(root, children, visited)
        broken = 0
        if len(visited) < len(self.spans):  # what is left hangs off parent-id cycles
            for span in self.spans.values():
                if span.span_id not in visited:
                    broken += 1
                    self._walk(span, children, visited)
            notes.append(f"parent-id cycle(s) broken at {broken} span(s)")
        self.turns.sort(key=_START_ORDER)

    def _walk(self, root: SpanRecord, children: dict[str, list[SpanRecord]], visited: set[str]) -> None:
        """Depth-first over one tree (iterative): outermost agent spans are turns, else the root is."""
        tree: list[tuple[SpanRecord, SpanRecord | None]] = []
        stack: list[tuple[SpanRecord, SpanRecord | None]] = [(root, None)]
        has_agent = False
        roles = self.roles
        while stack:
            span, owner = stack.pop()
            sid = span.span_id
            if sid in visited:
                continue
            visited.add(sid)
            if owner is None and roles[sid] == AGENT:
                owner = span
                has_agent = True
            tree.append((span, owner))
            below = children.get(sid)
            if below:
                for child in reversed(below):
                    if child.span_id not in visited:
                        stack.append((child, owner))
        if not has_agent:
            tree = [(span, root) for span, _ in tree]
        members = self.members
        for span, owner in tree:
            if owner is span:
                self.turns.append(span)
                members[span.span_id] = []
            elif owner is not None:
                members[owner.span_id].append(span)
            else:
                self.outside += roles[span.span_id] in (TOOL, MODEL)


# --------------------------------------------------------------------------- turns


class _Gaps:
    """What could not be seen, counted per kind, turned into notes at the end."""

    def __init__(self) -> None:
        self.turns: dict[str, list[int]] = defaultdict(list)
        self.counts: dict[str, int] = defaultdict(int)
        self.other: list[str] = []

    def notes(self) -> list[str]:
        out = []
        for what, turns in self.turns.items():
            listed = ", ".join(str(t) for t in turns[:20]) + (", …" if len(turns) > 20 else "")
            out.append(f"{what} for turn(s) {listed}")
        out.extend(f"{what} for {n} tool call(s)" for what, n in self.counts.items())
        return out + self.other


def _tool_from_span(span: SpanRecord, gaps: _Gaps) -> dict[str, Any]:
    """The `ToolCall` fields of an execute_tool / TOOL span."""
    attrs = span.attrs
    first = cv.first
    name = first(attrs, cv.TOOL_NAME_KEYS)
    if name is None:
        name = span.name.removeprefix("execute_tool ")
    args = first(attrs, cv.TOOL_ARGUMENTS_KEYS)
    result = first(attrs, cv.TOOL_RESULT_KEYS)
    if cv.OPENINFERENCE_KIND_KEY in attrs and attrs[cv.OPENINFERENCE_KIND_KEY] is not None:
        args = args if args is not None else first(attrs, cv.INPUT_VALUE_KEYS)
        result = result if result is not None else first(attrs, cv.OUTPUT_VALUE_KEYS)
    if args is None:
        gaps.counts["tool arguments not captured (content capture off?)"] += 1
    if result is None and span.status_error is None:
        gaps.counts["tool result not captured"] += 1
    call_id = first(attrs, cv.TOOL_CALL_ID_KEYS)
    return {
        "name": (name if type(name) is str else str(name)) or "unknown",
        "arguments": json_or_text(args),
        "result": json_or_text(result),
        "error": span.status_error,
        "call_id": None if call_id is None else str(call_id),
        "read_only": _flag(first(attrs, cv.TOOL_READ_ONLY_KEYS)),
    }


def _flag(value: Any) -> bool | None:
    """A boolean attribute (also written as "true"/"false"); None when absent or not a boolean."""
    if isinstance(value, bool) or value is None:
        return value
    text = str(value).strip().lower()
    return True if text == "true" else False if text == "false" else None


def _usage(span: SpanRecord, index: int, gaps: _Gaps) -> dict[str, Any] | None:
    """The `Usage` fields of a model span, None if it reports nothing. Counts and costs past the plausibility
    caps are dropped with a note (the call's cost is then unknown, never absurd)."""
    attrs = span.attrs
    first = cv.first
    model = first(attrs, cv.MODEL_KEYS)
    tin = first(attrs, cv.INPUT_TOKEN_KEYS)
    tout = first(attrs, cv.OUTPUT_TOKEN_KEYS)
    cost = _nonneg_float(first(attrs, cv.COST_KEYS))
    if model is None and tin is None and tout is None and cost is None:
        return None
    tokens_in, tokens_out = _nonneg_int(tin), _nonneg_int(tout)
    if tokens_in > MAX_TOKENS_PER_CALL or tokens_out > MAX_TOKENS_PER_CALL:
        gaps.turns[f"token counts over {MAX_TOKENS_PER_CALL:,} a call ignored (implausible)"].append(index)
        tokens_in = tokens_out = 0
    if cost is not None and cost > MAX_COST_USD_PER_CALL:
        gaps.turns[f"a model call's cost over {MAX_COST_USD_PER_CALL:,.0f} USD ignored (implausible)"].append(
            index
        )
        cost = None
    return {
        "model": None if model is None else str(model),
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cost_usd": cost,
    }


def _turn_cost(span: SpanRecord, index: int, gaps: _Gaps) -> float | None:
    """`agentwatch.cost.usd` of a turn span, None past the plausibility cap (noted)."""
    cost = _nonneg_float(span.attrs.get(A.COST_USD))
    if cost is not None and cost > MAX_COST_USD_PER_TURN:
        gaps.turns[f"a turn's cost over {MAX_COST_USD_PER_TURN:,.0f} USD ignored (implausible)"].append(index)
        return None
    return cost


def _expectation(span: SpanRecord, members: list[SpanRecord], index: int, gaps: _Gaps) -> Expectation | None:
    raw = cv.first(span.attrs, cv.EXPECTED_KEYS)
    reference = cv.first(span.attrs, cv.REFERENCE_ANSWER_KEYS)
    if raw is None and reference is None:  # else look below the turn span (trace roots without agent spans)
        for s in members:
            raw = raw if raw is not None else cv.first(s.attrs, cv.EXPECTED_KEYS)
            reference = reference if reference is not None else cv.first(s.attrs, cv.REFERENCE_ANSWER_KEYS)
    expected = None
    if raw is not None:
        try:
            value = from_json(raw) if isinstance(raw, str) else raw
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


def _turn(
    span: SpanRecord, members: list[SpanRecord], roles: dict[str, str], index: int, gaps: _Gaps
) -> dict[str, Any]:
    """The `Turn` fields of one turn span and the spans below it."""
    members.sort(key=_START_ORDER)
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
    user = last_user_text(messages(cv.first(attrs, cv.INPUT_MESSAGES_KEYS))) or as_text(
        cv.first(attrs, cv.INPUT_VALUE_KEYS)
    )
    for model in models:
        if user is not None:
            break
        user = last_user_text(messages(cv.first(model.attrs, cv.INPUT_MESSAGES_KEYS)))
    answer = output_text(messages(cv.first(attrs, cv.OUTPUT_MESSAGES_KEYS))) or as_text(
        cv.first(attrs, cv.OUTPUT_VALUE_KEYS)
    )
    if answer is None and models:
        answer = output_text(messages(cv.first(models[-1].attrs, cv.OUTPUT_MESSAGES_KEYS)))
    if user is None:
        gaps.turns["no user input captured"].append(index)
    if answer is None:
        gaps.turns["no answer text captured (content capture off?)"].append(index)
    if tools:
        tool_calls = [_tool_from_span(s, gaps) for s in tools]
    else:
        tool_calls, missing = tools_from_messages(models)
        if missing:
            gaps.counts["tool result not captured"] += missing
        if tool_calls:
            gaps.turns["tool calls taken from model output messages (no execute_tool spans)"].append(index)
    usage = [u for u in (_usage(m, index, gaps) for m in models) if u is not None]
    duration = (span.end_ns - span.start_ns) / 1e6 if span.end_ns >= span.start_ns > 0 else None
    return {
        "input": user,
        "answer": answer,
        "tool_calls": tool_calls,
        "expected": _expectation(span, members, index, gaps),
        "usage": usage,
        "cost_usd": _turn_cost(span, index, gaps) if own_role != MODEL else None,
        "duration_ms": duration,
        "error": span.status_error,
        "started_at": _time(span.start_ns),
    }


# --------------------------------------------------------------------------- the conversation


# concept -> keys, in priority order; the outcome is the last label seen (feedback may come late)
_CONVERSATION_KEYS = {
    "agent": cv.AGENT_KEYS,
    "version": cv.VERSION_KEYS,
    "task": cv.TASK_KEYS,
    "instance": cv.TASK_INSTANCE_KEYS,
    "attempt": cv.ATTEMPT_KEYS,
    "budget": cv.BUDGET_KEYS,
    "outcome": cv.OUTCOME_KEYS,
    "expected": cv.CONVERSATION_EXPECTED_KEYS,
    "system": cv.SYSTEM_KEYS,
}
_LATEST_WINS = frozenset({"outcome", "expected"})  # set again later (a label, a revised expectation)
_KEY_CONCEPT = {
    key: (concept, rank) for concept, keys in _CONVERSATION_KEYS.items() for rank, key in enumerate(keys)
}
_CONCEPT_KEY_SET = frozenset(_KEY_CONCEPT)


def _conversation_attributes(
    ordered: list[SpanRecord], turns: list[SpanRecord]
) -> tuple[dict[str, Any], dict[str, str]]:
    """Conversation-level values (agent/version from turn spans first; latest outcome) and `agentwatch.tag.*`."""
    found: dict[str, tuple[int, int, Any]] = {}  # concept -> (span preference, order, value)
    tags: dict[str, str] = {}
    turn_ids = {s.span_id for s in turns}
    prefix, cut = cv.TAG_PREFIX, len(cv.TAG_PREFIX)
    key_concept = _KEY_CONCEPT
    concept_keys = _CONCEPT_KEY_SET
    needed = cv.NEEDED_KEYS
    for position, span in enumerate(ordered):
        attrs = span.attrs
        for key in concept_keys.intersection(attrs):  # most spans hold one or two of these keys, or none
            value = attrs[key]
            if value is None or value == "":
                continue
            concept, rank = key_concept[key]
            if concept in _LATEST_WINS:
                order = (0, -position)  # the latest label or expectation wins
            elif concept in ("agent", "version"):
                order = (0 if span.span_id in turn_ids else 1, position * 8 + rank)
            else:
                order = (0, position * 8 + rank)
            old = found.get(concept)
            if old is None or order < old[:2]:
                found[concept] = (*order, value)
        if attrs.keys() <= needed:  # the decoder keeps only needed keys and tags: no tag here
            continue
        for key, value in attrs.items():
            if key.startswith(prefix) and len(key) > cut and value is not None and key not in needed:
                tags[key[cut:]] = as_text(value) or ""
    return {concept: entry[2] for concept, entry in found.items()}, tags


def _attempt(value: Any, notes: list[str]) -> int | None:
    """`agentwatch.attempt` as an integer from 0 to MAX_ATTEMPT (ASCII digits when a string); anything else is
    noted and ignored, never an error: the conversation keeps its identity (agent, version, task)."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_ATTEMPT:
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.isascii() and text.isdigit() and len(text) <= 7 and int(text) <= MAX_ATTEMPT:
            return int(text)
    notes.append(
        f"{cv.ATTEMPT_KEYS[0]} {_shown(value)} ignored: not an integer from 0 to {MAX_ATTEMPT:,} in ASCII digits"
    )
    return None


def _shown(value: Any) -> str:
    """A short repr of an attribute value for a note (an integer too long to print is described instead)."""
    if isinstance(value, int) and value.bit_length() > 128:
        return f"<an integer of {value.bit_length()} bits>"
    text = value if isinstance(value, str) else str(value)
    return repr(text[:40] + ("…" if len(text) > 40 else ""))


def _agent_of(span: SpanRecord) -> str | None:
    agent = cv.first(span.attrs, cv.AGENT_KEYS)
    if agent is None:
        agent = cv.first(span.resource, cv.RESOURCE_AGENT_KEYS)
    return None if agent is None else str(agent)


def split_by_agent(finished: FinishedConversation) -> list[FinishedConversation]:
    """One finished conversation per agent when its turns belong to several agents (a conversation's identity
    is (agent, conversation id): two agents may reuse the same ids). Each part holds the spans under its turns;
    a span under no turn goes with a turn of its trace, else with the first turn. One agent: `[finished]`."""
    spans = finished.spans
    first_agent = None
    for span in spans:  # the usual case, one agent on all turn candidates, without building the span forest
        if span.parent_span_id is not None and _role(span) != AGENT:
            continue
        agent = _agent_of(span)
        if agent is None:
            continue
        if first_agent is None:
            first_agent = agent
        elif agent != first_agent:
            break
    else:
        return [finished]
    forest = _Forest(spans, [])
    if not forest.turns:
        return [finished]
    groups: dict[str, list[SpanRecord]] = {}
    by_span: dict[str, str] = {}
    by_trace: dict[str, str] = {}
    for turn in forest.turns:
        agent = _agent_of(turn) or "unknown"
        group = groups.setdefault(agent, [])
        group.append(turn)
        by_span[turn.span_id] = agent
        by_trace.setdefault(turn.trace_id, agent)
        for member in forest.members.get(turn.span_id, []):
            group.append(member)
            by_span[member.span_id] = agent
    if len(groups) < 2:
        return [finished]
    default = _agent_of(forest.turns[0]) or "unknown"
    for span in forest.spans.values():
        if span.span_id not in by_span:
            groups[by_trace.get(span.trace_id, default)].append(span)
    return [
        FinishedConversation(
            finished.conversation_id,
            finished.partition,
            group,
            finished.reason,
            finished.incomplete,
            finished.min_offset,
            finished.nbytes * len(group) // max(1, len(spans)),
        )
        for group in groups.values()
    ]


def _conversation_expectation(raw: Any, notes: list[str]) -> Expectation | None:
    """The conversation's expectation from `agentwatch.conversation.expected`; an invalid one is a note."""
    if raw is None:
        return None
    try:
        return Expectation.model_validate(from_json(raw) if isinstance(raw, str) else raw)
    except (ValueError, RecursionError) as exc:  # ValidationError is a ValueError
        first_line = str(exc).splitlines()[0][:160]
        notes.append(f"{cv.CONVERSATION_EXPECTED_KEYS[0]} ignored, not a valid expectation ({first_line})")
        return None


def _system_from_models(forest: _Forest) -> str | None:
    """The system messages of the first model call that shows its input messages (no system_instructions):
    one model call is read, the others carry the same instructions."""
    for span in forest.spans.values():
        if forest.roles[span.span_id] == MODEL:
            raw = cv.first(span.attrs, cv.INPUT_MESSAGES_KEYS)
            if raw is not None:
                return system_text(messages(raw))
    return None


def build_conversation(
    finished: FinishedConversation | list[SpanRecord], *, incomplete: bool = False
) -> Conversation:
    """Rebuild the transcript of one conversation from its spans; what could not be seen goes to `notes`."""
    try:
        return _build(finished, incomplete, per_turn=False)
    except ValidationError:  # some turn does not validate: again, validating turn by turn to isolate it
        return _build(finished, incomplete, per_turn=True)


def _build(
    finished: FinishedConversation | list[SpanRecord], incomplete: bool, per_turn: bool
) -> Conversation:
    """The conversation, validated in one go (fields as dicts), or with `per_turn` each turn on its own."""
    if isinstance(finished, FinishedConversation):
        spans, incomplete = finished.spans, incomplete or finished.incomplete
        conversation_id = finished.conversation_id
        early = {
            "cap": "finished early: open-conversation cap reached",
            "budget": "finished early: open conversations over the collector's byte budget",
            "age": "finished early: open longer than the collector's maximum age",
            "shutdown": "finished early: shutdown",
        }
        notes = [early[finished.reason]] if finished.reason in early else []
    else:
        spans = list(finished)
        conversation_id = spans[0].conversation_id if spans else ""
        notes = []
    if not spans:
        return Conversation(
            conversation_id=conversation_id or "unknown", incomplete=incomplete, notes=["no spans"]
        )
    forest = _Forest(spans, notes)
    gaps = _Gaps()
    turns: list[Turn | dict[str, Any]] = []
    for index, span in enumerate(forest.turns):
        try:
            fields = _turn(span, forest.members.get(span.span_id, []), forest.roles, index, gaps)
            turns.append(Turn.model_validate(fields) if per_turn else fields)
        except (
            ValidationError,
            ValueError,
            TypeError,
        ) as exc:  # defensive: a malformed span never stops the rest
            log.debug("turn %d of %s not rebuilt: %s", index, conversation_id, exc)
            gaps.other.append(f"turn {index}: could not be rebuilt ({str(exc).splitlines()[0][:160]})")
            turns.append(
                {"error": "collector: turn could not be rebuilt", "started_at": _time(span.start_ns)}
            )
    if forest.outside:
        notes.append(f"{forest.outside} tool/model span(s) outside any invoke_agent span ignored")
    notes.extend(gaps.notes())
    ordered = list(forest.spans.values())
    found, tags = _conversation_attributes(ordered, forest.turns)
    agent = found.get("agent") or cv.first(ordered[0].resource, cv.RESOURCE_AGENT_KEYS)
    version = found.get("version") or cv.first(ordered[0].resource, cv.RESOURCE_VERSION_KEYS)
    task = found.get("task")
    budget_raw = found.get("budget")
    budget = _nonneg_float(budget_raw)
    if budget_raw is not None and budget is None:
        notes.append(f"agentwatch.budget.usd {str(budget_raw)[:40]!r} ignored: not a non-negative number")
    instance = found.get("instance")
    attempt = _attempt(found.get("attempt"), notes)
    outcome = found.get("outcome")
    if outcome is not None and (not isinstance(outcome, str) or normalize_outcome(outcome) not in _OUTCOMES):
        notes.append(f"agentwatch.outcome {str(outcome)[:40]!r} ignored: not an outcome class")
        outcome = None
    expected = _conversation_expectation(found.get("expected"), notes)
    system = instructions_text(found.get("system")) or _system_from_models(forest)
    return Conversation.model_validate(
        {
            "conversation_id": conversation_id or ordered[0].trace_id,
            "agent": str(agent) if agent else "unknown",
            "version": str(version) if version else "unknown",
            "task": str(task) if task else "default",
            "instance": instance_text(instance) if isinstance(instance, str | int) else None,
            "attempt": attempt,
            "tags": tags,
            "budget_usd": budget,
            "outcome": None if outcome is None else normalize_outcome(outcome),
            "system": system,
            "expected": expected,
            "turns": turns,
            "ended_at": _time(max(s.end_ns for s in ordered)),
            "incomplete": incomplete,
            "notes": notes,
        }
    )
