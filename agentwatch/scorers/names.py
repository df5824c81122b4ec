"""Tool-name normalisation: `functions.Get-Order`, `get order`, `getOrder` and `get_order` compare equal."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Protocol

from agentwatch.config import NameNormalization

_SEPARATORS = re.compile(r"[-\s._]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


class Named(Protocol):
    """Anything with a tool name: a `ToolCall`, an `ExpectedTool`."""

    name: str


class NameNormalizer:
    """Map a tool name to its canonical form per `scoring.names`; results are cached."""

    __slots__ = ("_cache", "_case_insensitive", "_prefixes", "_unify")

    def __init__(self, config: NameNormalization | None = None) -> None:
        config = config or NameNormalization()
        self._case_insensitive = config.case_insensitive
        self._unify = config.unify_separators
        prefixes = [p.lower() if config.case_insensitive else p for p in config.strip_prefixes if p]
        self._prefixes = tuple(sorted(set(prefixes), key=len, reverse=True))
        self._cache: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        """Canonical form of one tool name."""
        out = self._cache.get(name)
        if out is None:
            out = self._normalise(name)
            if len(self._cache) < 65_536:
                self._cache[name] = out
        return out

    def all(self, names: Iterable[str]) -> list[str]:
        """Canonical forms of several names."""
        return [self(n) for n in names]

    def of(self, named: Sequence[Named]) -> list[str]:
        """Canonical forms of the names of tool calls or expected tools."""
        return self.all([item.name for item in named])

    def _normalise(self, name: str) -> str:
        s = name.strip()
        folded = s.lower() if self._case_insensitive else s  # prefixes are compared folded, cut from `s`
        stripped = True
        while stripped:  # "functions.tools.x" loses both prefixes
            stripped = False
            for prefix in self._prefixes:
                if folded.startswith(prefix) and len(folded) > len(prefix):
                    s, folded = s[len(prefix) :], folded[len(prefix) :]
                    stripped = True
                    break
        if self._unify:  # a camelCase word boundary is a separator too: getOrder is get_order
            s = _CAMEL.sub("_", s)
        if self._case_insensitive:
            s = s.lower()
        if self._unify:
            s = _SEPARATORS.sub("_", s).strip("_")
        return s
