"""Rebuild a `Conversation` transcript from the spans of one conversation (DESIGN.md span conventions)."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError

from agentwatch import wire
from agentwatch.collector import conventions as cv
from agentwatch.collector.assembler import FinishedConversation
from agentwatch.collector.call_usage import nonneg_float
from agentwatch.collector.decode import SpanRecord
from agentwatch.collector.litellm_raw import give_back
from agentwatch.collector.messages import (
    ToolResponses,
    as_text,
    instructions_text,
    messages,
    system_text,
)
from agentwatch.collector.span_fragments import attach
from agentwatch.collector.span_tree import SpanForest, role_of
from agentwatch.collector.turns import AGENT, MODEL, Gaps, build_turn, to_time
from agentwatch.wire.json_text import value_of
from agentwatch.wire.schema import (
    MAX_ATTEMPT,
    Conversation,
    Expectation,
    Turn,
    attempt_number,
    instance_text,
    normalize_outcome,
)

log = logging.getLogger(__name__)

_OUTCOMES = wire.SCORE_OUTCOMES


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
    """Conversation-level values (agent/version from turn spans first, then from agent spans: instrumentations
    put a default agent name on model and tool spans; latest outcome) and `agentwatch.tag.*`."""
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
            elif concept in ("agent", "version"):  # turn spans, then other agent spans, then any span
                where = 0 if span.span_id in turn_ids else 1 if role_of(span) == AGENT else 2
                order = (where, position * 8 + rank)
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
    attempt = attempt_number(value)
    if attempt is None:
        notes.append(
            f"{cv.ATTEMPT_KEYS[0]} {_shown(value)} ignored: not an integer from 0 to {MAX_ATTEMPT:,} in ASCII digits"
        )
    return attempt


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
        if span.parent_span_id is not None and role_of(span) != AGENT:
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
    forest = SpanForest(spans, [])
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
        return Expectation.model_validate(value_of(raw) if isinstance(raw, str) else raw)
    except (ValueError, RecursionError) as exc:  # ValidationError is a ValueError
        first_line = str(exc).splitlines()[0][:160]
        notes.append(f"{cv.CONVERSATION_EXPECTED_KEYS[0]} ignored, not a valid expectation ({first_line})")
        return None


def _system_from_models(forest: SpanForest) -> str | None:
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
    spans, orphans = attach(spans)
    give_back(spans)
    if orphans:
        notes.append(f"{orphans} message record(s) of spans not in this conversation left out")
    if not spans:
        return Conversation(
            conversation_id=conversation_id or "unknown", incomplete=incomplete, notes=["no spans"]
        )
    forest = SpanForest(spans, notes)
    gaps = Gaps()
    roles = forest.roles
    responses = ToolResponses(lambda: [s for s in forest.spans.values() if roles[s.span_id] == MODEL])
    turns: list[Turn | dict[str, Any]] = []
    for index, span in enumerate(forest.turns):
        try:
            members = forest.members.get(span.span_id, [])
            fields = build_turn(span, members, roles, index, gaps, responses, forest.ends.get(span.span_id))
            turns.append(Turn.model_validate(fields) if per_turn else fields)
        except (
            ValidationError,
            ValueError,
            TypeError,
        ) as exc:  # defensive: a malformed span never stops the rest
            log.debug("turn %d of %s not rebuilt: %s", index, conversation_id, exc)
            gaps.other.append(f"turn {index}: could not be rebuilt ({str(exc).splitlines()[0][:160]})")
            turns.append(
                {"error": "collector: turn could not be rebuilt", "started_at": to_time(span.start_ns)}
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
    budget = nonneg_float(budget_raw)
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
            "ended_at": to_time(max(s.end_ns for s in ordered)),
            "incomplete": incomplete,
            "not_captured": gaps.not_captured(len(forest.turns)),
            "notes": notes,
        }
    )
