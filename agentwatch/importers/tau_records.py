"""The shapes the τ-bench importer reads either benchmark's results into (`importers.tau_bench`): what an import
produced (`Imported`), a task's ground truth as the policy writer takes it (`Truth`), and what reading a record
of unexpected shape raises (`UNREADABLE`, said by `reason_of`): that record's error alone, the rest imported."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentwatch.importers.finite_values import non_finite
from agentwatch.importers.policy_writer import Calls


@dataclass(slots=True)
class Imported:
    """What an import produced: transcript lines (with keys the schema may not know yet, e.g. `attempt`),
    policies, and the records that could not be read (position, reason)."""

    lines: list[dict[str, Any]] = field(default_factory=list)
    policies: list[dict[str, Any]] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)  # records imported, with something to say
    format: str = ""
    ungraded: dict[str, str] = field(default_factory=dict)  # task -> why it has no policy
    domain: str | None = None  # the standard environment the ground truth's tools are of (`tau_domains`)
    # graded as tau2-bench graded its environment before 1.0.1, which recorded every discoverable tool's call
    # (`tau_versions`): the run's commit is one of those, and its environment is one that grading differed on
    formerly: bool = False
    # the expected writes the environment refuses from its starting database, left not required ("task T: tool")
    refused: list[str] = field(default_factory=list)


# What reading a record of unexpected shape raises (a number where an object was, a string where a list was):
# the record is reported with its position and the rest imported.
UNREADABLE = (KeyError, TypeError, AttributeError, ValueError)


def reason_of(exc: Exception) -> str:
    """What an unreadable record raised, as its error says it (the message cut at 200 characters)."""
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def json_object(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one (a field of the wrong shape reads as absent)."""
    return value if isinstance(value, dict) else {}


def json_list(value: Any, what: str) -> list[Any]:
    """`value` when it is a JSON array, an empty one when absent (null); TypeError otherwise. A ground truth's
    list read as it came made a `communicate_info` of "R1" the outputs "R" and "1", and its actions given as an
    object a task in which no call had effects: the task is left ungraded instead (`read_truth`)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise TypeError(f"`{what}` is not a list: {str(value)[:40]!r}")
    return value


def truth_action(action: Any, what: str) -> dict[str, Any]:
    """A ground-truth action: an object naming its tool; TypeError otherwise (left out, the policy would hold
    the agent's matching call unexpected)."""
    if not isinstance(action, dict) or not isinstance(action.get("name"), str) or not action["name"]:
        raise TypeError(f"an action of `{what}` is not an object naming its tool: {str(action)[:40]!r}")
    for field_name in ("arguments", "kwargs"):  # τ²-bench's and τ-bench's
        found = non_finite(action.get(field_name))
        if found is not None:  # NaN equals nothing: no call could meet it, and YAML would write it `.nan`
            where = f" at `{found[0]}`" if found[0] else ""
            raise ValueError(f"an action of `{what}` holds {found[1]} in its {field_name}{where}")
    return action


@dataclass(slots=True)
class Truth:
    """A task's ground truth as the policy writer takes it; `actions` None (and `ungraded` saying why): none."""

    actions: list[dict[str, Any]] | None
    outputs: list[Any] = field(default_factory=list)
    compare: dict[int, list[str]] = field(default_factory=dict)
    ungraded: str | None = None
    calls: Calls = "effects"  # which calls the reward requires (`PolicyWriter.policy`)
    final_state: bool = True  # whether the reward reads the state the calls leave
    given: list[dict[str, Any]] = field(default_factory=list)  # the agent's calls of the starting history
    # the actions the environment records whatever their kind (`discoverable_tools`)
    logged: frozenset[int] = frozenset()


def read_truth(read: Callable[[dict[str, Any]], Truth], source: dict[str, Any]) -> Truth:
    """`read(source)`, or no ground truth when it is not of the shape read: the transcript is kept, ungraded."""
    try:
        return read(source)
    except UNREADABLE as exc:
        return Truth(None, ungraded=f"its ground truth could not be read ({reason_of(exc)})")
