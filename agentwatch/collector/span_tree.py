"""The spans of one conversation as a forest: de-duplicated by id, each span's role (agent, tool, model,
other) read from its attributes, the turns found and every span assigned to at most one turn."""

from __future__ import annotations

from agentwatch.collector import conventions as cv
from agentwatch.collector.decode import SpanRecord
from agentwatch.collector.messages import answers_calls_of
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
        for sid, span in spans_by_id.items():
            roles[sid] = role_of(span)
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
        self.turns.sort(key=START_ORDER)
        self._join_tool_loops()

    def _join_tool_loops(self) -> None:
        """Join turns that are model calls of one tool loop: without agent spans every model call is a trace
        root, and a call given the result of a tool the previous one asked for continues its turn."""
        roles, members = self.roles, self.members
        joined: list[SpanRecord] = []
        step: SpanRecord | None = None  # the latest model call of the last turn kept, if that turn is one
        for turn in self.turns:
            if roles[turn.span_id] != MODEL:
                joined.append(turn)
                step = None
                continue
            if step is not None and answers_calls_of(step, turn):
                members[joined[-1].span_id] += [turn, *members.pop(turn.span_id)]
            else:
                joined.append(turn)
            step = turn
        self.turns = joined

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
