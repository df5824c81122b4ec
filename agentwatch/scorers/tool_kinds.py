"""What a tool call does to the world: nothing (read-only), hand the conversation to a person, or effects.

A call is read-only when the agent says so (`ToolCall.read_only`, the SDK's `@trace(kind="tool",
read_only=True)`), else when its normalised name matches `scoring.read_only_tools` (or a policy's own
`read_only_tools`) and no `!` pattern of those lists (`!check_in*`: checking a guest in books); a handoff when
its name matches `scoring.handoff_tools`; otherwise it has effects.
`read_only: false` on a call makes it an effect whatever its name.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

from agentwatch.scorers.names import NameNormalizer
from agentwatch.wire.schema import ToolCall

READ_ONLY, HANDOFF, EFFECT = "read_only", "handoff", "effect"


class ToolKinds:
    """Classifies tool calls by the configured name patterns (normalised like tool names); results cached."""

    __slots__ = ("_cache", "_extended", "_handoff", "_names", "_not_read_only", "_read_only", "_patterns")

    def __init__(self, names: NameNormalizer, read_only: Sequence[str], handoff: Sequence[str]) -> None:
        self._names = names
        self._patterns = tuple(p for p in read_only if p)
        self._read_only = tuple(dict.fromkeys(names(p) for p in self._patterns if not p.startswith("!")))
        self._not_read_only = tuple(
            dict.fromkeys(names(p[1:]) for p in self._patterns if p.startswith("!") and p[1:])
        )
        self._handoff = tuple(dict.fromkeys(names(p) for p in handoff if p))
        self._cache: dict[str, str] = {}
        self._extended: dict[tuple[str, ...], ToolKinds] = {}

    def of_name(self, name: str) -> str:
        """The kind of a tool by its normalised name alone."""
        kind = self._cache.get(name)
        if kind is None:
            if any(fnmatchcase(name, p) for p in self._handoff):
                kind = HANDOFF
            elif any(fnmatchcase(name, p) for p in self._read_only) and not any(
                fnmatchcase(name, p) for p in self._not_read_only
            ):
                kind = READ_ONLY
            else:
                kind = EFFECT
            if len(self._cache) < 65_536:
                self._cache[name] = kind
        return kind

    def of(self, call: ToolCall, name: str) -> str:
        """The kind of one call (`name`: its normalised name); the call's own `read_only` flag wins."""
        flag = call.read_only
        if flag is None:
            return self.of_name(name)
        if not flag:
            return EFFECT
        return HANDOFF if self.of_name(name) == HANDOFF else READ_ONLY

    def is_handoff(self, call: ToolCall, name: str) -> bool:
        """Whether the call hands the conversation to a person."""
        return self.of(call, name) == HANDOFF

    def extended(self, read_only: Sequence[str]) -> ToolKinds:
        """These kinds with more read-only patterns (a policy's own), built once per pattern list."""
        if not read_only:
            return self
        key = tuple(read_only)
        kinds = self._extended.get(key)
        if kinds is None:
            kinds = ToolKinds(self._names, (*self._patterns, *read_only), self._handoff)
            if len(self._extended) < 1024:
                self._extended[key] = kinds
        return kinds
