"""Task policies: expectations kept in configuration (`policies:`) that grade every conversation of a task.

A section of the configuration that is also what the importers write
(`agentwatch import tau-bench` → `policies.yaml`). The graders are in `agentwatch.scorers.policy`.
"""

from __future__ import annotations

import functools
from typing import Any, Literal

import re2
from pydantic import Field, field_validator

from agentwatch.config.base import Detectors, Section
from agentwatch.wire.schema import ArgumentMode, Ending, ExtraCalls

# The keys of a constraint object; any other object is a plain (nested) value the argument must match.
CONSTRAINT_KEYS = frozenset({"regex", "from_input", "any"})

ArgumentConstraint = Any  # a plain value (equal), {"regex": str}, {"from_input": true}, {"any": true}


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a pattern it refuses is a ValueError naming the key, not a line on stderr


@functools.lru_cache(maxsize=1024)
def policy_pattern(text: str) -> Any:
    """A policy's `{regex}`, compiled by RE2: matching takes time linear in the text whatever the pattern (Python's
    backtracking `re` took minutes on `(a+)+b` against 32 a's, and the collector scores on one thread); re2.error
    for what RE2 does not take (backreferences, lookaround)."""
    return re2.compile(text, _RE2_OPTIONS)


def is_constraint(value: Any) -> bool:
    """Whether a policy argument value is a constraint object (one of `CONSTRAINT_KEYS`), not a value."""
    return isinstance(value, dict) and len(value) == 1 and next(iter(value)) in CONSTRAINT_KEYS


class PolicyTool(Section):
    """A tool the policy expects, with optional constraints on its arguments."""

    name: str = Field(min_length=1)
    arguments: dict[str, ArgumentConstraint] = Field(
        default_factory=dict,
        description="argument -> a value (equal; objects compare as subsets, lists in order), "
        "{regex: PATTERN} (full match), {from_input: true} (the value appears in the user's input of this "
        "conversation) or {any: true} (present)",
    )
    match: dict[str, ArgumentMode] = Field(
        default_factory=dict,
        description="argument -> exact | ignore | numeric | subset | unordered (docs/scoring.md, Arguments)",
    )
    required: bool | None = Field(
        default=None,
        description="whether the call must happen; null: only when the tool has effects (lookups and "
        "handoffs may be skipped)",
    )
    alternatives: list[str] = Field(
        default_factory=list,
        description="other tools whose call with these arguments also meets the expectation (the ground "
        "truth held the same arguments on several tools, of which the environment accepts one)",
    )
    replacements: list[tuple[str, str]] = Field(
        default_factory=list,
        description="pairs of list arguments read in parallel as replacements from -> to (item_ids, "
        "new_item_ids): compared as a multiset of pairs, a replacement of an element by itself left out "
        "(it changes nothing)",
    )

    @field_validator("arguments")
    @classmethod
    def _constraints(cls, v: dict[str, Any]) -> dict[str, Any]:
        for key, c in v.items():
            if not (isinstance(c, dict) and len(c) == 1 and CONSTRAINT_KEYS & c.keys()):
                continue  # a plain value; an object with other keys is a nested value
            if "regex" in c:
                try:
                    policy_pattern(str(c["regex"]))
                except re2.error as exc:
                    why = (
                        exc.args[0].decode(errors="replace")
                        if exc.args and isinstance(exc.args[0], bytes)
                        else exc
                    )
                    raise ValueError(
                        f"argument {key!r}: invalid regex {c['regex']!r} (RE2 syntax: no backreferences or "
                        f"lookaround): {why}"
                    ) from None
        return v


class TaskPolicy(Section):
    """Expectations kept in configuration: they grade every conversation of the matching agents and tasks."""

    id: str = Field(min_length=1, description="policy id, recorded on every score it graded")
    version: str = Field(default="1", min_length=1)
    agent: str = Field(default="*", description="agent name or shell-style glob")
    task: str = Field(default="*", description="task name or shell-style glob")
    tools: list[PolicyTool] = Field(
        default_factory=list, description="tool calls expected in the conversation"
    )
    order: Literal["any", "relative", "strict"] = Field(
        default="any",
        description="any: each expected call somewhere; relative: in this order, others may come between; "
        "strict: exactly these calls in this order",
    )
    extra_calls: ExtraCalls = Field(
        default="read_only",
        description="calls the policy does not list that are allowed when it lists `tools`: read_only "
        "(lookups and handoffs; a call with effects fails), none, any",
    )
    read_only_tools: list[str] = Field(
        default_factory=list,
        description="more read-only tools (names or globs) for this policy, beside scoring.read_only_tools",
    )
    refused_first: Literal["missing", "note"] = Field(
        default="missing",
        description="an expected call made exactly and refused by the environment before the agent changed "
        "anything: missing (the task was not done), or note (the expectations replay a ground truth on the "
        "same starting state, which the environment refuses too; `agentwatch import tau-bench` writes this)",
    )
    forbidden_tools: list[str] = Field(default_factory=list)
    grounding: list[str] = Field(
        default_factory=list, description="tools that must be called before the first answer"
    )
    outputs: list[str] = Field(
        default_factory=list, description="values some answer of the agent must contain"
    )
    end: Ending | None = Field(
        default=None, description="handoff: the conversation must hand off to a person; answer: it must not"
    )
    fail_on: Detectors = Field(
        default_factory=list,
        description="detectors whose finding fails a conversation this policy grades, beside "
        "scoring.failing_evidence (error, no_answer, loop, hallucination)",
    )
    max_tool_calls: int | None = Field(default=None, ge=0)
    max_turns: int | None = Field(default=None, ge=1)
    max_cost_usd: float | None = Field(default=None, gt=0)

    @property
    def ref(self) -> str:
        """`id@version`, as recorded on scores."""
        return f"{self.id}@{self.version}"

    @property
    def grades_calls(self) -> bool:
        """Whether the policy says which calls are expected (`tools`, even an empty list): only then are calls
        it does not list checked against `extra_calls`."""
        return bool(self.tools) or "tools" in self.model_fields_set
