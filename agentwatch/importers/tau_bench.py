"""τ-bench and τ²-bench result files → transcripts and one task policy per task.

τ-bench (`run.py --log-dir`): a JSON array of `{task_id, trial, reward, info: {task: {actions, outputs}},
traj}` (or the same entries one per line, or that array as the one such value of an object, as a fork writes
`{"metrics": …, "results": [...]}`), `traj` in OpenAI chat format with the agent's system prompt first
(from its `react` and `act` strategies the agent acts in text, `importers.text_actions`: detected per
trajectory). τ²-bench: a JSON object
`{info: {environment_info: {policy}}, tasks: [{id, evaluation_criteria: {actions, communicate_info}}],
simulations: [{task_id, trial, messages, reward_info: {reward}}]}`, in one file or saved as a directory
(`results.json` without its simulations, one file per simulation in `simulations/`, as τ²-bench writes
`--save-format dir` runs and leaderboard submissions: `importers.results_files`). The format is detected.

Each trajectory becomes a transcript line: `task` is the benchmark's task id, `attempt` its trial, `system`
the agent's instructions, and the reward the outcome label — `complete` for a reward of 1, else
`partial_incorrect`: the benchmark's reward is all or nothing (the final database state and the required
outputs), so anything below 1 is a failed task, and no finer class can be read from it.

Each task becomes a policy (`policies.yaml`) from its ground truth, built so that it grades what the
benchmark's reward checks — the effects and the outputs:
- the ground-truth actions *with effects* are the expected calls (`order: any`: the final state does not
  record the order); read-only actions (lookups, `calculate`, `think`) and handoffs are left out, since an
  agent may find things its own way, and a task with no action with effects gets `tools: []` — no call with
  effects allowed (the right answer is to refuse, or to answer from lookups). Where a τ²-bench reward requires
  every ground-truth call (`ACTION`), lookups are expected too (`required`); where it reads neither the final
  state nor the calls (`COMMUNICATE` alone), the policy lists no `tools` and grades no call;
- a string argument of four words or more is free text (`match: ignore`), e.g. a summary; τ²-bench's
  `compare_args` marks every other argument `ignore`;
- the required outputs (`outputs`, τ²-bench's `communicate_info`) must be stated by some answer;
- when the ground truth's tools are those of one standard environment (`tau_domains`), only that
  environment's writes have effects: the agent's own tools (a planner's `todo`) are read-only, and a ground-truth
  write that environment refuses from its starting database is not required (`tau_refusals`);
- a call through τ³-bench's `call_discoverable_agent_tool` is read, in the ground truth and in the transcript,
  as the call of the tool it names (`discoverable_tools`).
The reward itself is never read to build a policy. A τ²-bench task whose reward checks what such a policy cannot
(`unchecked_basis`: assertions on the environment or judged by an LLM, the user's own actions in the final
state or among the calls required) gets no policy, and the import says why: its conversations are not
graded, rather than graded on half of what decides them.

This module detects the format, reads τ-bench's entries and imports the records; τ²-bench's simulations are
read by `importers.tau2_simulations`, into the shapes of `importers.tau_records`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from agentwatch.importers import set_identity, transcript_line
from agentwatch.importers.openai_chat import ERROR_PREFIXES, conversation_from_messages
from agentwatch.importers.policy_writer import PolicyWriter
from agentwatch.importers.results_files import JsonLines, SavedRun, TauBenchFormatError
from agentwatch.importers.tau2_simulations import tau2_records
from agentwatch.importers.tau2_tasks import as_run
from agentwatch.importers.tau_domains import DOMAINS, domain_of, fit_to_domain
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
from agentwatch.importers.tau_refusals import excuse_refused
from agentwatch.importers.text_actions import acts_in_text
from agentwatch.wire.schema import Conversation, Turn, attempt_number

# What a benchmark tool answers when it changed nothing: an error, or (banking_knowledge's tools, for a record
# that already exists: a second identical `log_verification`) "Failed to …: Record … may already exist".
_REFUSALS = (*ERROR_PREFIXES, "Failed to ")


def _tau_entries(value: Any) -> bool:
    """Whether `value` looks like τ-bench's entries: a list whose first items are objects, one with a `traj`."""
    head = value[:5] if isinstance(value, list) else []
    return bool(head) and all(isinstance(r, dict) for r in head) and any("traj" in r for r in head)


def _wrapped_entries(document: Any) -> tuple[str, list[Any]] | None:
    """The key and the list of an object that holds τ-bench's entries in one of its values, beside others
    (a fork's `{"metrics": {…}, "results": [...]}`); None for anything else."""
    if not isinstance(document, dict) or "simulations" in document:
        return None
    found = [(key, value) for key, value in document.items() if _tau_entries(value)]
    return (str(found[0][0]), found[0][1]) if len(found) == 1 else None


def detect(document: Any) -> str:
    """`tau-bench` or `tau2-bench`; TauBenchFormatError otherwise."""
    if isinstance(document, SavedRun):
        return "tau2-bench"
    if isinstance(document, JsonLines):
        document = [entry for _, entry in document.entries]
    if _tau_entries(document):
        return "tau-bench"
    if isinstance(document, dict) and isinstance(document.get("simulations"), list):
        return "tau2-bench"
    raise TauBenchFormatError(
        "not a τ-bench results file (a JSON array of {task_id, trial, reward, info, traj}) nor a τ²-bench "
        "one (an object with `simulations` and `tasks`)"
    )


def outcome_of(reward: Any) -> str | None:
    """The outcome label of a benchmark reward: complete for 1, partial_incorrect below; None if absent or not
    a reward (a number from 0 to 1: not NaN, infinity or 10^400)."""
    if isinstance(reward, bool) or not isinstance(reward, (int, float)):
        return None
    if not -1e-9 <= reward <= 1 + 1e-9:  # also False for NaN; an int of any size compares exactly
        return None
    return "complete" if reward >= 1 - 1e-9 else "partial_incorrect"


def _task_id(record: dict[str, Any]) -> str:
    """The record's task id as text; ValueError where it has none (a null id was imported as task "None")."""
    task = record.get("task_id")
    if task is None or task == "" or isinstance(task, (dict, list, bool)):
        raise ValueError(f"no task id (`task_id` is {str(task)[:40] if task is not None else 'null'})")
    return str(task)


def import_results(document: Any, agent: str, version: str, prefix: str) -> Imported:
    """Transcript lines and task policies from a τ-bench or τ²-bench results document (module docstring)."""
    document = as_run(document)
    wrapped = _wrapped_entries(document)
    if wrapped is not None:
        key, document = wrapped
    kind = detect(document)
    out = Imported(format=kind)
    if wrapped is not None:
        out.warnings.append(
            ("file", f"the τ-bench entries read from the object's `{key}`; its other keys are not read")
        )
    writer = PolicyWriter(agent, prefix)
    records = _tau(document, out) if kind == "tau-bench" else tau2_records(document, out)
    seen_tasks: dict[str, dict[str, Any]] = {}
    truth_tools: set[str] = set()
    first_at: dict[str, str] = {}  # conversation id -> the position of the record first imported under it
    for position, record in records:
        try:
            task = _task_id(record)
            raw_trial = record.get("trial")
            trial = attempt_number(raw_trial)
            conv = conversation_from_messages(
                record["messages"],
                f"{prefix}/task-{task}/trial-{trial if trial is not None else position}",
                error_prefixes=_REFUSALS,
                text_actions=record.get("text_actions", False),
                agent=agent,
                version=version,
                task=task,
                outcome=outcome_of(record.get("reward")),
                tags={"benchmark": kind},
                **({"system": record["system"]} if record.get("system") else {}),
            )
        except UNREADABLE as exc:  # ChatFormatError is a ValueError
            out.errors.append((position, reason_of(exc)))
            continue
        reward = record.get("reward")
        if reward is not None and conv.outcome is None:
            out.warnings.append(
                (position, f"its reward {str(reward)[:40]} is not a number from 0 to 1: no label")
            )
        if conv.conversation_id in first_at:
            out.warnings.append(
                (
                    position,
                    f"task {task} trial {trial} again (first at {first_at[conv.conversation_id]}): `agentwatch "
                    "score` counts one conversation id once, its last record",
                )
            )
        first_at.setdefault(conv.conversation_id, position)
        set_identity(conv, raw_trial, attempt_key="trial")
        conv.notes.extend(record.get("notes", ()))
        if record.get("stopped"):
            _stopped(conv, record["stopped"])
        out.lines.append(transcript_line(conv))
        truth: Truth = record["truth"]
        if truth.actions is None:
            out.ungraded.setdefault(task, truth.ungraded or "no ground truth in the file")
        elif task not in seen_tasks:
            truth_tools.update(str(a["name"]) for a in truth.actions)
            try:
                seen_tasks[task] = writer.policy(
                    task,
                    truth.actions,
                    truth.outputs,
                    truth.compare,
                    truth.calls,
                    truth.final_state,
                    truth.given,
                    truth.logged,
                )
            except UNREADABLE as exc:
                out.ungraded.setdefault(task, f"its ground truth could not be read ({reason_of(exc)})")
    out.policies = [seen_tasks[t] for t in sorted(seen_tasks, key=_task_order)]
    out.domain = domain_of(truth_tools)
    out.formerly = out.formerly and out.domain is not None and bool(DOMAINS[out.domain].formerly_recorded)
    if out.domain is not None:
        for policy in out.policies:
            if "tools" in policy and policy.get("extra_calls") != "any":
                fit_to_domain(policy, out.domain, out.formerly)
                out.refused.extend(f"task {policy['task']}: {n}" for n in excuse_refused(policy, out.domain))
    out.ungraded = {t: out.ungraded[t] for t in sorted(out.ungraded, key=_task_order) if t not in seen_tasks}
    return out


def _stopped(conv: Conversation, reason: str) -> None:
    """Record that the benchmark stopped the conversation before it was over (`reason`: its termination
    reason or error): the error that ended its last turn (a turn of its own when it had none)."""
    if not conv.turns:
        conv.turns.append(Turn())
    last = conv.turns[-1]
    if last.error is None:
        last.error = f"the run was stopped before the conversation ended ({reason})"
    conv.notes.append(f"the benchmark stopped the run: {reason}")


def _task_order(task: str) -> tuple[int, int | str]:
    return (0, int(task)) if task.isdigit() else (1, task)


def _tau(document: list[dict[str, Any]] | JsonLines, out: Imported) -> Iterator[tuple[str, dict[str, Any]]]:
    """τ-bench entries as (position, record): messages, ground truth, reward (the system prompt is the first
    message); an entry that cannot be read is reported at its position."""
    if isinstance(document, JsonLines):
        out.errors.extend(document.errors)
        numbered = [(f"line {n}", entry) for n, entry in document.entries]
    else:
        numbered = [(f"entry {i}", entry) for i, entry in enumerate(document)]
    for position, entry in numbered:
        if not isinstance(entry, dict) or not isinstance(entry.get("traj"), list):
            out.errors.append((position, "no `traj` list"))
            continue
        try:
            record = _tau_record(entry)
        except UNREADABLE as exc:
            out.errors.append((position, reason_of(exc)))
            continue
        yield position, record


def _tau_truth(info: dict[str, Any]) -> Truth:
    """The ground truth of a τ-bench entry's `info`: its task's, or in a log without the task, its reward_info's
    actions and the keys of its `info.outputs` as the required outputs (their values, and every other field,
    are the outcome)."""
    task = json_object(info.get("task"))
    rewarded = json_object(info.get("reward_info"))
    truth = task.get("actions") if "actions" in task else rewarded.get("actions")
    if truth is None:
        return Truth(None, ungraded="no ground truth (`info.task.actions`, `info.reward_info.actions`)")
    if task:
        outputs = json_list(task.get("outputs"), "info.task.outputs")
    else:  # reward_info's outputs map each required output to whether it was stated
        stated = json_object(rewarded.get("info")).get("outputs")
        outputs = (
            list(stated) if isinstance(stated, dict) else json_list(stated, "info.reward_info.info.outputs")
        )
    actions = [
        {"name": a["name"], "arguments": a.get("kwargs") or a.get("arguments") or {}}
        for a in (truth_action(a, "actions") for a in json_list(truth, "actions"))
    ]
    return Truth(actions, outputs)


def _tau_record(entry: dict[str, Any]) -> dict[str, Any]:
    """One τ-bench entry (with a `traj` list) as a record; τ-bench's runner keeps the exception that stopped a
    run in `info.error` (with an empty `traj` and a reward of 0), and its environment fills `info.reward_info`
    only when the episode ends, so a null one is a run the step limit stopped (rewarded 0)."""
    traj = entry["traj"]
    info = json_object(entry.get("info"))
    truth = read_truth(_tau_truth, info)
    error = info.get("error")
    stopped = None
    if isinstance(error, str) and error.strip():
        stopped = error.strip().splitlines()[0][:200]
    elif "reward_info" in info and info["reward_info"] is None:
        stopped = "the step limit: the episode never ended"
    return {
        "stopped": stopped,
        "task_id": entry.get("task_id"),
        "trial": entry.get("trial"),
        "reward": entry.get("reward"),
        "messages": traj,
        "text_actions": acts_in_text(traj),
        "truth": truth,
    }
