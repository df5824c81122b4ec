"""A τ²-bench run whose simulations name other tasks than the ones they ran (a leaderboard submission that
numbered its simulations itself): each is graded on the task whose ground truth its reward checked, or not at
all, never on the ground truth of the task its `task_id` names."""

from __future__ import annotations

from typing import Any

from agentwatch.config import Settings
from agentwatch.importers.tau_bench import import_results
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import Conversation

INFO = {"environment_info": {"domain_name": "airline", "policy": "# Airline policy"}}


def _cancel(reservation: str) -> dict[str, Any]:
    return {
        "requestor": "assistant",
        "name": "cancel_reservation",
        "arguments": {"reservation_id": reservation},
    }


def _task(
    task_id: str, actions: list[dict[str, Any]] | None, outputs: list[str] | None = None
) -> dict[str, Any]:
    return {"id": task_id, "evaluation_criteria": {"actions": actions, "communicate_info": outputs or []}}


TASKS = [
    _task("0", [_cancel("R0")]),
    _task("1", [_cancel("R1")]),
    _task("2", [_cancel("R2")]),
    _task("3", [_cancel("R3")], ["kept"]),  # 3 and 4 alike in their actions, not in their outputs
    _task("4", [_cancel("R3")], ["gone"]),
    _task("5", None),  # no actions: nothing a reward's action checks could name
]


def _sim(
    task_id: str, made: str, checked: list[dict[str, Any]] | None, said: list[str] | None = None
) -> dict[str, Any]:
    """A simulation named `task_id` in which the agent cancels reservation `made` and says so; its reward
    records the actions it `checked` (and the outputs it looked for, `said`)."""
    reward: dict[str, Any] = {
        "reward": 1.0,
        "action_checks": None if checked is None else [{"action": a, "action_match": True} for a in checked],
    }
    if said is not None:
        reward["communicate_checks"] = [{"info": s, "met": True} for s in said]
    return {
        "id": f"s-{task_id}",
        "task_id": task_id,
        "trial": 0,
        "reward_info": reward,
        "messages": [
            {"role": "assistant", "content": "Hi! How can I help?"},
            {"role": "user", "content": f"Please cancel {made}."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c", **_cancel(made)}],
            },
            {"role": "tool", "id": "c", "content": '{"status": "cancelled"}'},
            {"role": "assistant", "content": f"{made} is cancelled; it is gone, nothing kept."},
            {"role": "user", "content": "###STOP###"},
        ],
    }


def _verdicts(document: dict[str, Any]) -> tuple[dict[str, bool | None], Any]:
    out = import_results(document, "a", "v", "run")
    scorer = ConversationScorer(Settings.model_validate({"policies": out.policies}), labels="ignore")
    convs = [Conversation.model_validate(line) for line in out.lines]
    return {str(c.task): scorer.score(c).passed for c in convs}, out


def test_simulations_named_by_another_task_are_graded_on_the_task_their_reward_checked() -> None:
    """Simulation "0" ran task 1 (its reward checked task 1's cancellation, which it made) and "1" ran task 0:
    each passes as the task it ran, where graded as named both failed on an effect nobody expected. One whose
    checked actions are those of two tasks is told apart by the outputs its reward looked for."""
    sims = [
        _sim("0", "R1", [_cancel("R1")]),
        _sim("1", "R0", [_cancel("R0")]),
        _sim("2", "R3", [_cancel("R3")], ["gone"]),
    ]
    verdicts, out = _verdicts({"info": INFO, "tasks": TASKS, "simulations": sims})
    assert verdicts == {"1": True, "0": True, "4": True}
    assert out.errors == []
    assert [p for p, _ in out.warnings] == ["simulation 0", "simulation 1", "simulation 2"]
    assert "the actions it checked are those of task '1': imported as that task" in out.warnings[0][1]


def test_a_simulation_whose_task_cannot_be_told_is_not_imported_when_others_were_misnamed() -> None:
    """In a run whose task ids were shown not to be the tasks run, a simulation whose reward recorded no
    action checks, or checked actions no single task of the file has, is reported and left out."""
    sims = [
        _sim("0", "R1", [_cancel("R1")]),
        _sim("2", "R2", None),  # named 2, nothing recorded to confirm it
        _sim("1", "R3", [_cancel("R3")]),  # tasks 3 and 4, no outputs recorded to choose
        _sim("5", "R9", [_cancel("R9")]),  # no task of the file
    ]
    verdicts, out = _verdicts({"info": INFO, "tasks": TASKS, "simulations": sims})
    assert verdicts == {"1": True}
    reasons = dict(out.errors)
    assert set(reasons) == {"simulation 1", "simulation 2", "simulation 3"}
    assert "nothing its reward recorded tells whether it ran task '2'" in reasons["simulation 1"]
    assert "those of tasks '3', '4' of the file" in reasons["simulation 2"]
    assert "those of no task of the file" in reasons["simulation 3"]


def test_a_run_whose_simulations_ran_the_tasks_they_name_imports_as_before() -> None:
    """Checked actions equal to the named task's (or to several tasks' including it), and simulations that
    recorded none, change nothing: no warning, every simulation imported under its own task id."""
    sims = [
        _sim("0", "R0", [_cancel("R0")]),
        _sim("3", "R3", [_cancel("R3")]),
        _sim("4", "R3", [_cancel("R3")]),
        _sim("2", "R2", None),
        _sim("5", "R5", []),
    ]
    out = import_results({"info": INFO, "tasks": TASKS, "simulations": sims}, "a", "v", "run")
    assert out.errors == [] and out.warnings == []
    assert [line["task"] for line in out.lines] == ["0", "3", "4", "2", "5"]


def test_a_few_simulations_checked_against_another_ground_truth_are_graded_as_named() -> None:
    """One simulation of four whose reward checked other actions than its task's (a task the benchmark changed
    after the run) is no misnumbered run: every simulation is imported under its own task id, that one with a
    warning, and none that recorded no check is left out."""
    sims = [
        _sim("0", "R0", [_cancel("R0")]),
        _sim("1", "R1", [_cancel("R1")]),
        _sim("3", "R3", [_cancel("R3")]),
        _sim("2", "R9", [_cancel("R9")]),  # checked a cancellation of R9: no task of this file has it
        _sim("5", "R5", None),
    ]
    out = import_results({"info": INFO, "tasks": TASKS, "simulations": sims}, "a", "v", "run")
    assert out.errors == []
    assert [line["task"] for line in out.lines] == ["0", "1", "3", "2", "5"]
    assert [p for p, _ in out.warnings] == ["simulation 3"]
    assert "graded on the file's task as named" in out.warnings[0][1]
