"""Which agents and tasks a policy or a sampling rule selects: a name or a shell-style glob."""

from __future__ import annotations

from fnmatch import fnmatchcase


def selects(pattern: str, name: str) -> bool:
    """Whether `pattern` selects `name`: equal to it, or a glob that matches it. A task id holding `[` is its own
    pattern too: as a glob, `[acceso]medico_1` is a set of one letter and never matched itself, and the policies
    an import wrote for such tasks graded none of their conversations."""
    return name == pattern or fnmatchcase(name, pattern)
