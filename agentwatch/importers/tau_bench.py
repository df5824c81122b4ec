"""τ-bench and τ²-bench result files → transcripts and one task policy per task.

τ-bench (`run.py --log-dir`): a JSON array of `{task_id, trial, reward, info: {task: {actions, outputs}},
traj}` (or the same entries one per line), `traj` in OpenAI chat format with the agent's system prompt first
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
  environment's writes have effects: the agent's own tools (a planner's `todo`) are read-only;
- a call through τ³-bench's `call_discoverable_agent_tool` is read, in the ground truth and in the transcript,
  as the call of the tool it names (`discoverable_tools`).
The reward itself is never read to build a policy. A τ²-bench task whose reward checks what such a policy cannot
(`unchecked_basis`: assertions on the environment or judged by an LLM, the user's own actions in the final
state or among the calls required) gets no policy, and the import says why: its conversations are not
graded, rather than graded on half of what decides them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agentwatch.importers import set_identity, transcript_line
from agentwatch.importers.discoverable_tools import DISPATCHER, named_call, read_messages
from agentwatch.importers.openai_chat import ERROR_PREFIXES, conversation_from_messages
from agentwatch.importers.policy_writer import Calls, PolicyWriter
from agentwatch.importers.results_files import JsonLines, SavedRun, TauBenchFormatError
from agentwatch.importers.tau_domains import DOMAINS, domain_of, fit_to_domain
from agentwatch.importers.tau_versions import records_every_discoverable_call
from agentwatch.importers.text_actions import acts_in_text
from agentwatch.wire.schema import Conversation, Turn, attempt_number

# What a benchmark tool answers when it changed nothing: an error, or (banking_knowledge's tools, for a record
# that already exists: a second identical `log_verification`) "Failed to …: Record … may already exist".
_REFUSALS = (*ERROR_PREFIXES, "Failed to ")


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


def detect(document: Any) -> str:
    """`tau-bench` or `tau2-bench`; TauBenchFormatError otherwise."""
    if isinstance(document, SavedRun):
        return "tau2-bench"
    if isinstance(document, JsonLines):
        document = [entry for _, entry in document.entries]
    head = document[:5] if isinstance(document, list) else []
    if head and all(isinstance(r, dict) for r in head) and any("traj" in r for r in head):
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
    kind = detect(document)
    out = Imported(format=kind)
    writer = PolicyWriter(agent, prefix)
    records = _tau(document, out) if kind == "tau-bench" else _tau2(document, out)
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
        except _UNREADABLE as exc:  # ChatFormatError is a ValueError
            out.errors.append((position, _why(exc)))
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
        truth: _Truth = record["truth"]
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
            except _UNREADABLE as exc:
                out.ungraded.setdefault(task, f"its ground truth could not be read ({_why(exc)})")
    out.policies = [seen_tasks[t] for t in sorted(seen_tasks, key=_task_order)]
    out.domain = domain_of(truth_tools)
    out.formerly = out.formerly and out.domain is not None and bool(DOMAINS[out.domain].formerly_recorded)
    if out.domain is not None:
        for policy in out.policies:
            if "tools" in policy and policy.get("extra_calls") != "any":
                fit_to_domain(policy, out.domain, out.formerly)
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


# What reading a record of unexpected shape raises (a number where an object was, a string where a list was):
# the record is reported with its position and the rest imported.
_UNREADABLE = (KeyError, TypeError, AttributeError, ValueError)


def _why(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}"


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
        except _UNREADABLE as exc:
            out.errors.append((position, _why(exc)))
            continue
        yield position, record


def _object(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one (a field of the wrong shape reads as absent)."""
    return value if isinstance(value, dict) else {}


@dataclass(slots=True)
class _Truth:
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


def _read_truth(read: Callable[[dict[str, Any]], _Truth], source: dict[str, Any]) -> _Truth:
    """`read(source)`, or no ground truth when it is not of the shape read: the transcript is kept, ungraded."""
    try:
        return read(source)
    except _UNREADABLE as exc:
        return _Truth(None, ungraded=f"its ground truth could not be read ({_why(exc)})")


def _tau_truth(info: dict[str, Any]) -> _Truth:
    """The ground truth of a τ-bench entry's `info`: its task's, or in a log without the task, its reward_info's
    actions and the keys of its `info.outputs` as the required outputs (their values, and every other field,
    are the outcome)."""
    task = _object(info.get("task"))
    rewarded = _object(info.get("reward_info"))
    truth = task.get("actions") if "actions" in task else rewarded.get("actions")
    if truth is None:
        return _Truth(None, ungraded="no ground truth (`info.task.actions`, `info.reward_info.actions`)")
    outputs = task.get("outputs") if task else list(_object(rewarded.get("info")).get("outputs") or {})
    actions = [
        {"name": a.get("name"), "arguments": a.get("kwargs") or a.get("arguments") or {}}
        for a in truth
        if isinstance(a, dict) and a.get("name")
    ]
    return _Truth(actions, list(outputs or []))


def _tau_record(entry: dict[str, Any]) -> dict[str, Any]:
    """One τ-bench entry (with a `traj` list) as a record; τ-bench's runner keeps the exception that stopped a
    run in `info.error` (with an empty `traj` and a reward of 0), and its environment fills `info.reward_info`
    only when the episode ends, so a null one is a run the step limit stopped (rewarded 0)."""
    traj = entry["traj"]
    info = _object(entry.get("info"))
    truth = _read_truth(_tau_truth, info)
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


# τ²-bench's reward is the product of the parts its task's `reward_basis` names (default: the final database
# state and the required outputs, as τ-bench's).
DEFAULT_BASIS = ("DB", "COMMUNICATE")


def unchecked_basis(criteria: dict[str, Any]) -> str | None:
    """Why a policy from a τ²-bench task's ground truth cannot decide its reward (the parts of `reward_basis` it
    does not check), or None when it can: a part with nothing to check (no assertions, no actions) is 1."""
    basis = criteria.get("reward_basis") or DEFAULT_BASIS
    actions = [a for a in criteria.get("actions") or [] if isinstance(a, dict)]
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
    return "; ".join(why) or None


def _tau2(document: dict[str, Any] | SavedRun, out: Imported) -> Iterator[tuple[str, dict[str, Any]]]:
    """τ²-bench simulations as (position, record), with their task's ground truth and the agent's policy; a
    simulation that cannot be read is reported at its position (its index, or its file)."""
    if isinstance(document, SavedRun):
        meta, simulations = document.meta, document.simulations
        out.errors.extend(document.errors)
    else:
        meta = document
        simulations = [(f"simulation {i}", sim) for i, sim in enumerate(document["simulations"])]
    info = _object(meta.get("info"))
    system = _object(info.get("environment_info")).get("policy")
    out.formerly = records_every_discoverable_call(info.get("git_commit"))
    tasks: dict[str, dict[str, Any]] = {}
    raw_tasks = meta.get("tasks")
    for task in raw_tasks if isinstance(raw_tasks, list) else []:
        if isinstance(task, dict) and "id" in task:
            tasks[str(task["id"])] = task
    for position, sim in simulations:
        if not isinstance(sim, dict) or not isinstance(sim.get("messages"), list):
            out.errors.append((position, "no `messages` list (full-duplex runs keep only ticks)"))
            continue
        try:
            record = _tau2_record(sim, tasks.get(str(sim.get("task_id")), {}), system)
        except _UNREADABLE as exc:
            out.errors.append((position, _why(exc)))
            continue
        yield position, record


def _tau2_truth(task: dict[str, Any]) -> _Truth:
    """The ground truth of a τ²-bench task (empty: not in the file): the agent's actions (with `compare_args`)
    and `communicate_info`; none where its reward checks what a policy cannot (`unchecked_basis`)."""
    raw_criteria = task.get("evaluation_criteria")
    if not task:
        return _Truth(None, ungraded="the task is not in the file's `tasks`")
    if not isinstance(raw_criteria, dict):
        return _Truth(
            None, ungraded="the task has no evaluation criteria (τ²-bench rewards it 1 whatever happens)"
        )
    unchecked = unchecked_basis(raw_criteria)
    if unchecked is not None:
        return _Truth(None, ungraded=unchecked)
    actions: list[dict[str, Any]] = []
    compare: dict[int, list[str]] = {}
    logged: set[int] = set()
    for action in raw_criteria.get("actions") or []:
        if not isinstance(action, dict) or action.get("requestor", "assistant") != "assistant":
            continue  # the user's own actions (dual control) are not the agent's to make
        name, arguments = action.get("name"), action.get("arguments") or {}
        compared = action.get("compare_args")
        named = named_call(name, arguments)
        if named is not None:  # a discoverable tool's call: the environment logs it, a read too
            name, arguments = named
            logged.add(len(actions))
            if compared is not None:
                compared = None if "arguments" in compared else []
        if compared is not None:
            compare[len(actions)] = list(compared)
        actions.append({"name": name, "arguments": arguments})
    basis = [str(part) for part in raw_criteria.get("reward_basis") or DEFAULT_BASIS]
    # τ²-bench compares the final database only against a replay of some ground truth: with neither actions
    # nor environment assertions (`null`, not `[]`) its DB part is 1 whatever the agent did
    reads_state = "DB" in basis and not (
        raw_criteria.get("actions") is None and raw_criteria.get("env_assertions") is None
    )
    calls: Calls = "every" if "ACTION" in basis else "effects" if reads_state else "none"
    return _Truth(
        actions,
        list(raw_criteria.get("communicate_info") or []),
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
    history = _object(task.get("initial_state")).get("message_history")
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
        "reward": _object(sim.get("reward_info")).get("reward"),
        "messages": messages,
        "truth": _read_truth(_tau2_truth, task),
        "notes": [f"{named} call(s) of {DISPATCHER} read as calls of the tool each names"] if named else [],
    }
