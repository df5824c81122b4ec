"""The spans of one conversation as a forest: de-duplicated by id, each span's role (agent, tool, model,
other) read from its attributes, the turns found and every span assigned to at most one turn."""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from agentwatch.collector import conventions as cv
from agentwatch.collector.decode import SpanRecord
from agentwatch.collector.messages import answers_calls_of, may_ask_for_tools
from agentwatch.collector.turns import AGENT, MODEL, OTHER, START_ORDER, TOOL

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


def role_of(span: SpanRecord) -> str:
    """The span's role: its GenAI operation, else its OpenInference kind, else a guess from its name and keys."""
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


_CONTENT_KEYS = cv.INPUT_MESSAGES_KEYS + cv.OUTPUT_MESSAGES_KEYS + cv.INPUT_VALUE_KEYS + cv.OUTPUT_VALUE_KEYS


def setup_only(spans: list[SpanRecord]) -> bool:
    """Whether the spans only set an agent up (`create_agent`, embeddings) and run none: no agent, tool or model
    span among them, nothing said on the others. Such a trace is no conversation."""
    setup = False
    for span in spans:
        op, kind = span.attrs.get(cv.OPERATION_KEY), span.attrs.get(cv.OPENINFERENCE_KIND_KEY)
        if (isinstance(op, str) and op in cv.SETUP_OPERATIONS) or (
            isinstance(kind, str) and kind.upper() in cv.SETUP_KINDS
        ):
            setup = True
        elif role_of(span) != OTHER or cv.first(span.attrs, _CONTENT_KEYS) is not None:
            return False
    return setup


def _is_handoff(span: SpanRecord) -> bool:
    """Whether a span is an agent handing the conversation off to another agent."""
    return span.attrs.get(cv.OPERATION_KEY) == cv.HANDOFF_OPERATION or span.name.startswith(cv.HANDOFF_SPAN)


def _first_model(spans: list[SpanRecord], roles: dict[str, str]) -> SpanRecord | None:
    """The model call among `spans` that starts first."""
    models = [s for s in spans if roles[s.span_id] == MODEL]
    return min(models, key=START_ORDER) if models else None


def _last_model(spans: list[SpanRecord], roles: dict[str, str]) -> SpanRecord | None:
    """The model call among `spans` that starts last."""
    models = [s for s in spans if roles[s.span_id] == MODEL]
    return max(models, key=START_ORDER) if models else None


class SpanForest:
    """Spans de-duplicated by id, with turns found and every span assigned to at most one turn."""

    def __init__(self, spans: list[SpanRecord], notes: list[str]) -> None:
        ordered = sorted(spans, key=START_ORDER)
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
        talks = False  # whether a model call logged its output messages: without, no tool loop can be joined
        for sid, span in spans_by_id.items():
            role = roles[sid] = role_of(span)
            if role == MODEL and not talks:
                talks = cv.OUTPUT_MESSAGES_KEYS[0] in span.attrs
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
        self.ends: dict[str, int] = {}  # the end of a turn joined from several steps, by its first span's id
        self.loose: dict[str, list[SpanRecord]] = {}  # spans of no turn in a trace with agent spans, by trace
        self._loose_starts: dict[str, list[int]] = {}  # their start times once sorted, by trace
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
        self.turns.sort(key=START_ORDER)
        if talks and len(self.turns) > 1:
            self._join_tool_loops()
        if len(self.turns) > 1:
            self._join_handoffs()

    def _join_tool_loops(self) -> None:
        """Join turns that are steps of one tool loop: a step whose model call is given the result of a tool the
        previous step's last model call asked for continues that step's turn. Without agent spans every model
        call is a trace root; a graph (LangGraph under OpenInference) makes each run of its "agent" node an
        agent span, with the tool node beside them."""
        roles, members = self.roles, self.members
        joined: list[SpanRecord] = []
        # the last model call of the last turn kept, the steps joined to it included
        asked: SpanRecord | None = None
        for turn in self.turns:
            role = roles[turn.span_id]
            own = members[turn.span_id]
            last = turn if role == MODEL else _last_model(own, roles) if role == AGENT else None
            previous = joined[-1] if joined else None
            if (
                previous is not None
                and asked is not None
                and role in (MODEL, AGENT)
                and roles[previous.span_id] == role
                and (role == MODEL or previous.trace_id == turn.trace_id)  # a graph run's steps: one trace
                and may_ask_for_tools(asked)
            ):
                first = turn if role == MODEL else _first_model(own, roles)
                if first is not None and answers_calls_of(asked, first):
                    between = self._loose_between(previous, turn) if role == AGENT else []
                    members[previous.span_id] += [*between, turn, *members.pop(turn.span_id)]
                    end = self.ends.get(previous.span_id, previous.end_ns)
                    self.ends[previous.span_id] = max(end, turn.end_ns)
                    asked = last or asked
                    continue
            joined.append(turn)
            asked = last
        self.turns = joined

    def _join_handoffs(self) -> None:
        """Join an agent's turn to the one before it in its trace when that one handed the conversation off to
        it (a span of operation `handoff` in it, as OpenLLMetry logs the OpenAI Agents SDK's handoffs, or
        OpenInference's `handoff to <agent>` TOOL span): the agent handed to goes on with the same request."""
        roles, members = self.roles, self.members
        joined: list[SpanRecord] = []
        for turn in self.turns:
            previous = joined[-1] if joined else None
            if (
                previous is not None
                and roles[turn.span_id] == AGENT == roles[previous.span_id]
                and previous.trace_id == turn.trace_id
                and any(_is_handoff(s) for s in members[previous.span_id])
            ):
                between = self._loose_between(previous, turn)
                members[previous.span_id] += [*between, turn, *members.pop(turn.span_id)]
                self.ends[previous.span_id] = max(
                    self.ends.get(previous.span_id, previous.end_ns), turn.end_ns
                )
                continue
            joined.append(turn)
        self.turns = joined

    def _loose_between(self, earlier: SpanRecord, later: SpanRecord) -> list[SpanRecord]:
        """The spans of the trace of two joined agent turns that belong to no turn and start between them."""
        loose = self.loose.get(earlier.trace_id)
        if not loose:
            return []
        starts = self._loose_starts.get(earlier.trace_id)
        if starts is None:  # sorted once a trace: a hostile trace of thousands of steps stays linear
            loose.sort(key=START_ORDER)
            starts = self._loose_starts[earlier.trace_id] = [s.start_ns for s in loose]
        lo = bisect_left(starts, earlier.start_ns)
        hi = bisect_right(starts, later.end_ns, lo)
        found = loose[lo:hi]
        if found:
            del loose[lo:hi], starts[lo:hi]
            self.outside -= sum(1 for s in found if self.roles[s.span_id] in (TOOL, MODEL))
        return found

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
                self.loose.setdefault(span.trace_id, []).append(span)
