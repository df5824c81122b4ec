"""A benchmark task's ground truth with a list field of another shape (a string, an object, a number) leaves the
task ungraded and says which field, rather than a policy read from the string's characters or the object's keys:
its transcripts are still imported. So do ground-truth arguments nested deeper than a configuration file may be."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from agentwatch.config import load_settings
from agentwatch.importers import write_policies
from agentwatch.importers.tau_bench import import_results
from tests.unit.test_importers import CANCEL, TAU2, _task

TAU: dict[str, Any] = {
    "task_id": 3,
    "trial": 0,
    "reward": 1.0,
    "info": {"task": {"actions": [{"name": "cancel_reservation", "kwargs": {"reservation_id": "R1"}}]}},
    "traj": [{"role": "user", "content": "Cancel R1."}, {"role": "assistant", "content": "Done."}],
}


def _tau2_with(**criteria: Any) -> dict[str, Any]:
    task = _task("t-1", **{"actions": [CANCEL], "communicate_info": ["R1"], **criteria})
    return {**TAU2, "tasks": [task], "simulations": TAU2["simulations"][:1]}


@pytest.mark.parametrize(
    ("criteria", "field"),
    [
        ({"communicate_info": "R1 cancelled"}, "communicate_info"),
        ({"actions": [{**CANCEL, "compare_args": "reservation_id"}]}, "compare_args"),
        ({"reward_basis": "DB"}, "reward_basis"),
        ({"actions": {"a1": CANCEL}}, "actions"),
        ({"actions": [CANCEL, "cancel_reservation"]}, "actions"),
        ({"actions": [CANCEL, {**CANCEL, "name": None}]}, "actions"),
    ],
)
def test_a_tau2_ground_truth_list_of_another_shape_leaves_the_task_ungraded(
    criteria: dict[str, Any], field: str
) -> None:
    """A `communicate_info` of "R1 cancelled" once required the outputs "R", "1", " ", …; a `compare_args` string
    compared no argument; `actions` as an object gave a policy in which no call had effects."""
    out = import_results(_tau2_with(**criteria), "a", "v", "p")
    assert len(out.lines) == 1 and out.errors == [] and out.policies == []
    assert out.ungraded["t-1"].startswith("its ground truth could not be read (TypeError: ")
    assert f"`{field}`" in out.ungraded["t-1"]


def test_a_tau2_ground_truth_of_lists_still_gives_its_policy() -> None:
    policy = import_results(_tau2_with(reward_basis=["DB", "COMMUNICATE"]), "a", "v", "p").policies[0]
    assert policy["outputs"] == ["R1"] and [t["name"] for t in policy["tools"]] == ["cancel_reservation"]


def test_a_ground_truth_argument_that_is_not_finite_leaves_its_task_ungraded() -> None:
    """A ground-truth argument of NaN (Python's json reads it) went into the policy, written `.nan`: NaN equals
    nothing, so no call could meet it and every conversation of the task failed on a missing write."""
    nan = {**CANCEL, "arguments": {"reservation_id": "R1", "amount": float("nan")}}
    out = import_results(_tau2_with(actions=[nan]), "a", "v", "p")
    assert len(out.lines) == 1 and out.policies == []
    assert out.ungraded["t-1"] == (
        "its ground truth could not be read (ValueError: an action of `actions` holds nan in its arguments at "
        "`amount`)"
    )
    tau = {**TAU, "info": {"task": {"actions": [{"name": "refund", "kwargs": {"amount": float("inf")}}]}}}
    old = import_results([tau], "a", "v", "p")
    assert old.policies == [] and "holds inf in its kwargs at `amount`" in old.ungraded["3"]


def test_a_tau2_task_whose_criteria_hold_a_field_of_a_fork_is_left_ungraded() -> None:
    """A fork rewarded task 8 by its own `acceptable_outcomes`, with `actions: null`: read as a task without ground
    truth (τ²-bench then scores its database part 1), the policy required nothing, and 4 of 4 real failures
    passed. Criteria holding a field τ²-bench's do not are rewarded by code this importer has not read."""
    outcomes = [{"actions": [CANCEL], "reward": 1.0}]
    out = import_results(_tau2_with(actions=None, acceptable_outcomes=outcomes), "a", "v", "p")
    assert len(out.lines) == 1 and out.policies == []
    assert out.ungraded["t-1"] == (
        "its evaluation criteria hold acceptable_outcomes, which τ²-bench's do not: its reward reads what this "
        "importer cannot"
    )
    empty = import_results(
        _tau2_with(acceptable_outcomes=None, notes=""), "a", "v", "p"
    )  # empty: nothing read
    assert len(empty.policies) == 1 and empty.ungraded == {}


@pytest.mark.parametrize(
    ("task", "field"),
    [
        ({"outputs": "R1 cancelled"}, "info.task.outputs"),
        ({"actions": {"name": "cancel_reservation"}}, "actions"),
        ({"actions": [{"kwargs": {"reservation_id": "R1"}}]}, "actions"),
    ],
)
def test_a_tau_bench_ground_truth_list_of_another_shape_leaves_the_task_ungraded(
    task: dict[str, Any], field: str
) -> None:
    entry = copy.deepcopy(TAU)
    entry["info"]["task"].update(task)
    out = import_results([entry], "a", "v", "p")
    assert len(out.lines) == 1 and out.errors == [] and out.policies == []
    assert out.ungraded["3"].startswith("its ground truth could not be read (TypeError: ")
    assert f"`{field}`" in out.ungraded["3"]


def test_a_tau_bench_log_without_the_task_still_reads_its_outputs_from_reward_info() -> None:
    entry = copy.deepcopy(TAU)
    entry["info"] = {
        "reward_info": {"actions": TAU["info"]["task"]["actions"], "info": {"outputs": {"R1": True}}}
    }
    assert import_results([entry], "a", "v", "p").policies[0]["outputs"] == ["R1"]


def _nested(levels: int) -> Any:
    value: Any = "R1"
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("levels", [26, 27, 600])
def test_ground_truth_arguments_nested_past_what_a_configuration_holds_leave_only_their_task_ungraded(
    levels: int, tmp_path: Path
) -> None:
    """Arguments 27 levels deep made a policies.yaml that `agentwatch score` refused whole (nested more than 32
    levels); 600 levels deep, writing it raised RecursionError. Now that task alone goes ungraded, saying why."""
    deep = copy.deepcopy(TAU)
    deep["info"]["task"]["actions"][0]["kwargs"] = {"reservation_id": _nested(levels)}
    out = import_results([deep, {**TAU, "task_id": 4}], "a", "v", "p")
    path = tmp_path / "policies.yaml"
    write_policies(path, out.policies, "policies")
    tasks = [p.task for p in load_settings(path).policies]
    if levels <= 26:
        assert tasks == ["3", "4"] and out.ungraded == {}
    else:
        assert tasks == ["4"]
        assert "arguments nested more than 27 levels deep" in out.ungraded["3"]
