"""Structured values as logs carry them: JSON, or a Python literal where a logger wrote `repr(dict)`.

Some agents log tool arguments with `str(kwargs)` (`"{'order_id': '#W1', 'item_ids': ['1']}"`) rather than
JSON. Such text is read with `ast.literal_eval` — literals only: no names, calls or operators are evaluated,
never `eval` — after JSON failed, and only when it looks like an object or an array, is not too long and not too
deeply nested. The caller is told which way it was read, so it can say so in a note.
"""

from __future__ import annotations

import ast
import re
from typing import Any, Literal

from agentwatch.wire.json_text import value_of, without_lone_surrogates

MAX_LITERAL_CHARS = 1_000_000  # longer text stays text: parsing it is not worth the memory
MAX_LITERAL_DEPTH = 64  # brackets nested deeper stay text (the parser recurses)

ReadAs = Literal["json", "python", "text"]
_PYTHON_SURROGATE = re.compile(
    r"\\(?:u|U0000)[dD][89a-fA-F]"
)  # an escape a lone surrogate may be written with


def read_structured(text: str) -> tuple[Any, ReadAs]:
    """`text` parsed as a JSON or Python-literal object or array, and how; the text itself when it is neither."""
    stripped = text.strip()
    if stripped[:1] not in ("{", "["):
        return text, "text"
    try:
        return value_of(stripped), "json"
    except (ValueError, RecursionError):
        pass  # JSON nested past the parser's limit is past the literal's depth too: it stays text
    if len(stripped) > MAX_LITERAL_CHARS or _depth(stripped) > MAX_LITERAL_DEPTH:
        return text, "text"
    try:
        value = ast.literal_eval(stripped)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return text, "text"
    if not isinstance(value, (dict, list, tuple)):
        return text, "text"
    value = _jsonable(value)
    return (without_lone_surrogates(value) if _PYTHON_SURROGATE.search(stripped) else value), "python"


def _depth(text: str) -> int:
    """The deepest nesting of brackets in `text` (quotes not parsed: an upper bound is what is needed)."""
    depth = deepest = 0
    for ch in text:
        if ch in "[{(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]})":
            depth -= 1
    return deepest


def _jsonable(value: Any) -> Any:
    """A Python literal as the JSON value it stands for: tuples and sets as lists, keys as text."""
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):  # no order of its own: a stable one
        return [_jsonable(v) for v in sorted(value, key=repr)]
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, complex):
        return str(value)
    return value


def read_object_repr(text: str) -> tuple[str, dict[str, Any]] | None:
    """The class name and fields of an object logged as its Python repr with keyword fields
    (`ResponseFunctionToolCall(arguments='{}', call_id='c1', name='f')`, as pydantic and dataclasses write them),
    nested such reprs as dicts; None for anything else. Literals only: no name is looked up, nothing is called."""
    stripped = text.strip()
    if len(stripped) > MAX_LITERAL_CHARS or _depth(stripped) > MAX_LITERAL_DEPTH:
        return None
    try:
        node = ast.parse(stripped, mode="eval").body
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return None
    try:
        fields = _fields(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return node.func.id, fields


def read_python_value(text: str) -> Any:
    """A value logged as its Python repr (`str()` of a list of dicts, or of SDK objects: `Message(role='user',
    tool_calls=[ToolCall(id='c1')])`), objects as dicts of their keyword fields; None when it is no such repr.
    Literals only: no name is looked up, nothing is called."""
    stripped = text.strip()
    if len(stripped) > MAX_LITERAL_CHARS or _depth(stripped) > MAX_LITERAL_DEPTH:
        return None
    try:
        return _value_of(ast.parse(stripped, mode="eval").body)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _value_of(node: ast.expr) -> Any:
    """A literal node's value, a repr's call node as its keyword fields, at any depth; ValueError otherwise."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return _fields(node)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_value_of(item) for item in node.elts]
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise ValueError("** in a dict")
        return {_key(_value_of(k)): _value_of(v) for k, v in zip(node.keys, node.values, strict=True) if k}
    return _jsonable(ast.literal_eval(node))


def _key(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _fields(call: ast.Call) -> dict[str, Any]:
    """The keyword fields of a repr's call node, each a literal or a nested repr; ValueError otherwise."""
    if call.args or any(k.arg is None for k in call.keywords):
        raise ValueError("positional or ** fields")
    return {str(keyword.arg): _value_of(keyword.value) for keyword in call.keywords}
