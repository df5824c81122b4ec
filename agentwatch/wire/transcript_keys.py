"""Keys of a transcript line that no field reads: named with their line numbers, never silently dropped.

The transcript models ignore unknown keys (a newer writer may add fields), so a misspelt key (`outcom` for
`outcome`) would change what is graded without a word. `unknown_keys` walks a parsed line along the fields of
`Conversation` and returns the dotted path of every key no field reads, as the configuration names a wrong key
(`turns.0.tool_calls.1.argumnts`); `UnknownKeys` gathers them over a file for one warning per key.
"""

from __future__ import annotations

import difflib
import functools
import re
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass, field

from pydantic import BaseModel

from agentwatch.wire.schema import Conversation

MAX_LINES_KEPT = 5  # line numbers kept per key for the warning
_INDEX = re.compile(r"\.\d+(?=\.|$)")


def _models_in(annotation: object) -> tuple[type[BaseModel] | None, bool]:
    """The model an annotation holds (directly, optionally, or as list items), and whether in a list."""
    origin = typing.get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    if origin in (list, tuple):
        args = typing.get_args(annotation)
        inner = _models_in(args[0])[0] if args else None
        return inner, inner is not None
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found = _models_in(arg)
            if found[0] is not None:
                return found
    return None, False


@functools.cache
def _fields(model: type[BaseModel]) -> dict[str, tuple[type[BaseModel] | None, bool]]:
    """Every key a model reads (field names and aliases) -> the nested model of that field, if any."""
    out: dict[str, tuple[type[BaseModel] | None, bool]] = {}
    for name, info in model.model_fields.items():
        nested = _models_in(info.annotation)
        out[name] = nested
        if info.alias:
            out[info.alias] = nested
    return out


def _walk(obj: dict[str, object], model: type[BaseModel], prefix: str) -> Iterator[str]:
    known = _fields(model)
    for key, value in obj.items():
        path = f"{prefix}{key}"
        if key not in known:
            yield path
            continue
        nested, many = known[key]
        if nested is None:
            continue
        if many and isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    yield from _walk(item, nested, f"{path}.{i}.")
        elif not many and isinstance(value, dict):
            yield from _walk(value, nested, f"{path}.")


def unknown_keys(obj: dict[str, object], model: type[BaseModel] = Conversation) -> list[str]:
    """Dotted paths of the keys of `obj` that no field of `model` (or of its nested models) reads."""
    return list(_walk(obj, model, ""))


def key_pattern(path: str) -> str:
    """A key's path with list indices as `*`: `turns.3.outcom` -> `turns.*.outcom` (one warning for all)."""
    return _INDEX.sub(".*", path)


def suggestion(path: str, model: type[BaseModel] = Conversation) -> str | None:
    """The field a misspelt key probably meant (`outcom` -> `outcome`), looked up where the key is."""
    *parents, last = key_pattern(path).split(".")
    current: type[BaseModel] | None = model
    for part in parents:
        if part == "*" or current is None:
            continue
        current = _fields(current).get(part, (None, False))[0]
    if current is None:
        return None
    close = difflib.get_close_matches(last, list(_fields(current)), n=1, cutoff=0.75)
    return close[0] if close else None


def misspelt_required(obj: object, loc: tuple[int | str, ...]) -> str | None:
    """The key of `obj` that probably meant the required field at `loc`, which is missing
    (`converstion_id` for `conversation_id`); None when no key there is close to it."""
    *parents, name = loc
    node = obj
    for part in parents:
        if isinstance(node, dict) and isinstance(part, str):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return None
    if not isinstance(node, dict) or not isinstance(name, str):
        return None
    keys = [k for k in node if isinstance(k, str) and k != name]
    close = difflib.get_close_matches(name, keys, n=1, cutoff=0.75)
    return close[0] if close else None


@dataclass(slots=True)
class KeySeen:
    """Where an unknown key (pattern) was found: how many lines, and the first few (`file:line`)."""

    lines: int = 0
    first: list[str] = field(default_factory=list)


@dataclass(slots=True)
class UnknownKeys:
    """Unknown keys over the files read, by pattern, with the lines they were on."""

    seen: dict[str, KeySeen] = field(default_factory=dict)

    def add(self, where: str, keys: list[str]) -> None:
        """Record the unknown keys of one line (`where`: `file:line`; each pattern counted once per line)."""
        for pattern in dict.fromkeys(key_pattern(k) for k in keys):
            entry = self.seen.setdefault(pattern, KeySeen())
            entry.lines += 1
            if len(entry.first) < MAX_LINES_KEPT:
                entry.first.append(where)

    def counts(self) -> dict[str, int]:
        """Pattern -> lines that carried it, in first-seen order."""
        return {k: v.lines for k, v in self.seen.items()}

    def warnings(self) -> list[str]:
        """One line per unknown key: where, how often, and the field it probably meant."""
        out = []
        for pattern, entry in self.seen.items():
            where = ", ".join(entry.first)
            rest = entry.lines - len(entry.first)
            more = f" and {rest:,} more line(s)" if rest else ""
            meant = suggestion(pattern)
            hint = f"; did you mean `{meant}`?" if meant else ""
            out.append(f"unknown key `{pattern}` ignored (not a transcript field{hint}): {where}{more}")
        return out
