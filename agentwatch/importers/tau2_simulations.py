"""τ²-bench results → the records `importers.tau_bench` imports: each simulation with its messages, its reward,
the agent's policy as its system prompt and its task's ground truth (`Truth`), or none where the task's reward
checks what a policy cannot (`unchecked_basis`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from agentwatch.importers.discoverable_tools import DISPATCHER, named_call, read_messages
from agentwatch.importers.policy_writer import Calls
from agentwatch.importers.results_files import SavedRun
from agentwatch.importers.tau_records import (
    UNREADABLE,
    Imported,
    Truth,
    json_list,
    json_object,
    read_truth,
    reason_of,
    truth_action,
)
from agentwatch.importers.tau_versions import records_every_discoverable_call

# τ²-bench's reward is the product of the parts its task's `reward_basis` names (default: the final database
# state and the required outputs, as τ-bench's).
DEFAULT_BASIS = ("DB", "COMMUNICATE")
# the fields of τ²-bench's `EvaluationCriteria` (src/tau2/data_model/tasks.py): a task holding another (a fork's
# own, such as `acceptable_outcomes`) is rewarded by code this importer has not read
CRITERIA_FIELDS = frozenset(
    {"actions", "env_assertions", "communicate_info", "nl_assertions", "reward_basis"}
)


def unchecked_basis(criteria: dict[str, Any]) -> str | None:
    """Why a policy from a τ²-bench task's ground truth cannot decide its reward (the parts of `reward_basis` it
    does not check), or None when it can: a part with nothing to check (no assertions, no actions) is 1."""
    basis = json_list(criteria.get("reward_basis"), "reward_basis") or DEFAULT_BASIS
    actions = [truth_action(a, "actions") for a in json_list(criteria.get("actions"), "actions")]
    why: list[str] = []
    for part in dict.fromkeys(str(p) for p in basis):
        if part == "DB":
            if any(a.get("requestor", "assistant") != "assistant" for a in actions):
                why.append(
                    "its final state (DB) includes the user's own actions, which are not the agent's calls"
                )
        elif part == "COMMUNICATE":
            continue
        elif part == "ENV_ASSERTION":
            if criteria.get("env_assertions"):
                why.append(
                    "its reward checks assertions on the environment (ENV_ASSERTION) no transcript shows"
                )
        elif part == "NL_ASSERTION":
            if criteria.get("nl_assertions"):
                why.append("its reward includes assertions an LLM judges (NL_ASSERTION)")
        elif part == "ACTION":
            if any(a.get("requestor", "assistant") != "assistant" for a in actions):
                why.append("its reward requires the user's own calls too (ACTION), which are not the agent's")
        else:
            why.append(f"its reward basis names {part[:40]!r}, which this importer does not know")
    unknown = sorted(str(key)[:40] for key, value in criteria.items() if key not in CRITERIA_FIELDS and value)
    if unknown:
        why.append(
            f"its evaluation criteria hold {', '.join(unknown[:3])}, which τ²-bench's do not: its reward reads what "
            "this importer cannot"
        )
    return "; ".join(why) or None


def tau2_records(document: dict[str, Any] | SavedRun, out: Imported) -> Iterator[tuple[str, dict[str, Any]]]:
    """τ²-bench simulations as (position, record), with their task's ground truth and the agent's policy; a
    simulation that cannot be read is reported at its position (its index, or its file)."""
    if isinstance(document, SavedRun):
        meta, simulations = document.meta, document.simulations
        out.errors.extend(document.errors)
    else:
        meta = document
        simulations = [(f"simulation {i}", sim) for i, sim in enumerate(document["simulations"])]
    info = json_object(meta.get("info"))
    system = json_object(info.get("environment_info")).get("policy")
    out.formerly = records_every_discoverable_call(info.get("git_commit"))
    tasks: dict[str, dict[str, Any]] = {}
    raw_tasks = meta.get("tasks")
    for task in raw_tasks if isinstance(raw_tasks, list) else []:
        if isinstance(task, dict) and "id" in task:
            tasks[str(task["id"])] = task
    checked = _checked_tasks(simulations, tasks)
    misnamed = sum(1 for named, ran in checked.values() if named not in ran)
    if misnamed * 2 <= len(checked):
        # a few simulations checked against another ground truth than their task's in the file (a task the
        # benchmark changed since the run) is no misnumbered run: each is graded on its task, as named
        for where, (stated, checked_as) in checked.items():
            if stated not in checked_as:
                out.warnings.append((where, _other_truth(stated)))
        misnamed = 0
    for position, sim in simulations:
        if not isinstance(sim, dict) or not isinstance(sim.get("messages"), list):
            out.errors.append((position, "no `messages` list (full-duplex runs keep only ticks)"))
            continue
        task_id = str(sim.get("task_id"))
        if misnamed:
            named, ran = checked.get(position, (task_id, None))
            if ran is None or (named not in ran and len(ran) != 1):
                out.errors.append((position, _unknown_task(named, ran, misnamed)))
                continue
            if named not in ran:
                out.warnings.append(
                    (
                        position,
                        f"its `task_id` {named[:40]!r} names a task whose ground truth its reward did not check; "
                        f"the actions it checked are those of task {ran[0][:40]!r}: imported as that task",
                    )
                )
                sim = {**sim, "task_id": ran[0]}
                task_id = ran[0]
        try:
            record = _tau2_record(sim, tasks.get(task_id, {}), system)
        except UNREADABLE as exc:
            out.errors.append((position, reason_of(exc)))
            continue
        yield position, record


def _action_keys(actions: Any) -> list[str] | None:
    """Ground-truth actions as a sorted list of comparable keys (tool and arguments), or None when they are
    not a list of objects naming their tool."""
    if not isinstance(actions, list):
        return None
    keys = []
    for action in actions:
        if not isinstance(action, dict) or not isinstance(action.get("name"), str):
            return None
        keys.append(json.dumps([action["name"], action.get("arguments") or {}], sort_keys=True, default=str))
    return sorted(keys)


def _checked_tasks(
    simulations: list[tuple[str, Any]], tasks: dict[str, dict[str, Any]]
) -> dict[str, tuple[str, list[str]]]:
    """For each simulation whose reward records the ground-truth actions it checked (τ²-bench's
    `reward_info.action_checks`, one for each of its task's actions) and whose `task_id` is a task of the file:
    (that task id, the ids of the tasks whose actions those are). A run whose simulations name other tasks than
    the ones they ran (a leaderboard submission numbering its simulations itself) would be graded on another
    task's ground truth than its reward."""
    by_actions: dict[str, list[str]] = {}
    for task_id, task in tasks.items():
        keys = _action_keys(json_object(task.get("evaluation_criteria")).get("actions") or [])
        if keys is not None:
            by_actions.setdefault(json.dumps(keys), []).append(task_id)
    found: dict[str, tuple[str, list[str]]] = {}
    for position, sim in simulations:
        if not isinstance(sim, dict) or str(sim.get("task_id")) not in tasks:
            continue
        checks = json_object(sim.get("reward_info")).get("action_checks")
        if not isinstance(checks, list):
            continue  # no check recorded (a task without actions, or a version that keeps none): nothing to compare
        keys = _action_keys([json_object(check).get("action") for check in checks])
        if keys is None:
            continue
        ran = by_actions.get(json.dumps(keys), [])
        stated = json_object(sim.get("reward_info")).get("communicate_checks")
        if len(ran) > 1 and isinstance(stated, list):  # tasks alike in their actions differ in their outputs
            outputs = sorted(str(json_object(check).get("info")) for check in stated)
            ran = [t for t in ran if _outputs(tasks[t]) == outputs] or ran
        found[position] = (str(sim["task_id"]), ran)
    return found


def _outputs(task: dict[str, Any]) -> list[str]:
    """A τ²-bench task's required outputs (`communicate_info`) as sorted text."""
    info = json_object(task.get("evaluation_criteria")).get("communicate_info")
    return sorted(str(i) for i in info) if isinstance(info, list) else []


def _other_truth(named: str) -> str:
    """Why a simulation of a run numbered as it ran is graded on a ground truth its reward did not check."""
    return (
        f"its reward checked other actions than the ground truth of task {named[:40]!r} in this file (a task "
        "changed since the run?): graded on the file's task as named"
    )


def _unknown_task(named: str, ran: list[str] | None, misnamed: int) -> str:
    """Why a simulation of a run whose task ids are not the tasks its simulations ran is not imported."""
    if ran is None:
        return (
            f"not imported: {misnamed} simulation(s) of this run were rewarded on another task's ground truth "
            f"than their `task_id` names, and nothing its reward recorded tells whether it ran task {named[:40]!r}"
        )
    which = "no task" if not ran else "tasks " + ", ".join(repr(t[:40]) for t in ran[:5])
    return (
        f"not imported: its `task_id` {named[:40]!r} names a task whose ground truth its reward did not check, "
        f"and the actions it checked are those of {which} of the file"
    )


def _tau2_truth(task: dict[str, Any]) -> Truth:
    """The ground truth of a τ²-bench task (empty: not in the file): the agent's actions (with `compare_args`)
    and `communicate_info`; none where its reward checks what a policy cannot (`unchecked_basis`)."""
    raw_criteria = task.get("evaluation_criteria")
    if not task:
        return Truth(None, ungraded="the task is not in the file's `tasks` (give the benchmark's: `--tasks`)")
    if not isinstance(raw_criteria, dict):
        return Truth(
            None, ungraded="the task has no evaluation criteria (τ²-bench rewards it 1 whatever happens)"
        )
    unchecked = unchecked_basis(raw_criteria)
    if unchecked is not None:
        return Truth(None, ungraded=unchecked)
    actions: list[dict[str, Any]] = []
    compare: dict[int, list[str]] = {}
    logged: set[int] = set()
    for action in raw_criteria.get("actions") or []:  # a list of named objects (`unchecked_basis`)
        if action.get("requestor", "assistant") != "assistant":
            continue  # the user's own actions (dual control) are not the agent's to make
        name, arguments = action["name"], action.get("arguments") or {}
        compared = action.get("compare_args")
        if compared is not None:
            compared = json_list(compared, "compare_args")
        named = named_call(name, arguments)
        if named is not None:  # a discoverable tool's call: the environment logs it, a read too
            name, arguments = named
            logged.add(len(actions))
            if compared is not None:
                compared = None if "arguments" in compared else []
        if compared is not None:
            compare[len(actions)] = list(compared)
        actions.append({"name": name, "arguments": arguments})
    basis = [
        str(part) for part in json_list(raw_criteria.get("reward_basis"), "reward_basis") or DEFAULT_BASIS
    ]
    # τ²-bench compares the final database only against a replay of some ground truth: with neither actions
    # nor environment assertions (`null`, not `[]`) its DB part is 1 whatever the agent did
    reads_state = "DB" in basis and not (
        raw_criteria.get("actions") is None and raw_criteria.get("env_assertions") is None
    )
    calls: Calls = "every" if "ACTION" in basis else "effects" if reads_state else "none"
    return Truth(
        actions,
        json_list(raw_criteria.get("communicate_info"), "communicate_info"),
        compare,
        calls=calls,
        final_state=reads_state,
        given=_history_calls(task),
        logged=frozenset(logged),
    )


def _history_calls(task: dict[str, Any]) -> list[dict[str, Any]]:
    """The agent's calls in a τ²-bench task's starting history (`initial_state.message_history`): messages the
    run begins with, which its saved messages repeat, made before the agent was run (their effects are in the
    starting state the reward's replay also starts from)."""
    history = json_object(task.get("initial_state")).get("message_history")
    calls = []
    for message in history if isinstance(history, list) else []:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            if (
                isinstance(call, dict)
                and call.get("requestor", "assistant") == "assistant"
                and isinstance(call.get("name"), str)
                and isinstance(call.get("arguments") or {}, dict)
            ):
                name, arguments = named_call(call["name"], call.get("arguments")) or (
                    call["name"],
                    call.get("arguments") or {},
                )
                calls.append({"name": name, "arguments": arguments})
    return calls


# How a τ²-bench simulation may end on its own: any other `termination_reason` (max_steps, too_many_errors,
# agent_error, timeout, …) stopped it before the conversation was over, and τ²-bench rewards it 0.
_FINISHED = ("user_stop", "agent_stop")


def _tau2_record(sim: dict[str, Any], task: dict[str, Any], system: Any) -> dict[str, Any]:
    """One τ²-bench simulation (with a `messages` list), its task and the agent's policy (`system`) as a
    record."""
    own = sim.get("policy")  # the agent's policy as this simulation ran it, where it is saved with it
    system = own if isinstance(own, str) and own else system
    ended = sim.get("termination_reason")
    messages, named = read_messages(sim["messages"])
    return {
        "stopped": ended if isinstance(ended, str) and ended and ended not in _FINISHED else None,
        "system": system if isinstance(system, str) else None,
        "task_id": sim.get("task_id"),
        "trial": sim.get("trial"),
        "reward": json_object(sim.get("reward_info")).get("reward"),
        "messages": messages,
        "truth": read_truth(_tau2_truth, task),
        "notes": [f"{named} call(s) of {DISPATCHER} read as calls of the tool each names"] if named else [],
    }
