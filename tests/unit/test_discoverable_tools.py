"""τ³-bench's banking_knowledge runs: calls through `call_discoverable_agent_tool` graded as the tools they name.

The task below has the shape of the domain's tasks (sierra-research/tau2-bench `data/tau2/domains/
banking_knowledge/tasks.json` at a2c0247: a verification logged, a discoverable write and a discoverable read
the reward requires, each unlocked first); the simulations are written by hand, each with the outcome the
environment's reward gives it (`tools.py`: a write is recorded, a read only when the ground truth calls it,
an unlock is kept in memory).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agentwatch.cli import app
from agentwatch.config import Settings, TaskPolicy
from agentwatch.importers.discoverable_tools import named_call, read_messages
from agentwatch.importers.tau_bench import import_results
from agentwatch.importers.tau_versions import records_every_discoverable_call
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import Conversation

WRITE = "update_transaction_rewards_3847"
READ = "get_user_dispute_history_7291"
VERIFIED = {
    "name": "Ana Lima",
    "user_id": "u1",
    "address": "12 Rua Nova, Porto",
    "email": "ana@example.com",
    "phone_number": "555-0100",
    "date_of_birth": "01/02/1990",
    "time_verified": "2025-11-14 03:40:00 EST",
}
REWARDS = {"transaction_id": "txn_1", "new_rewards_earned": "6300 points"}


def _dispatch(tool: str, arguments: dict[str, Any] | str) -> tuple[str, dict[str, Any]]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return "call_discoverable_agent_tool", {"agent_tool_name": tool, "arguments": text}


TASK = {
    "id": "task_026",
    "evaluation_criteria": {
        "actions": [
            {"name": "log_verification", "arguments": VERIFIED, "requestor": "assistant"},
            {"name": "unlock_discoverable_agent_tool", "arguments": {"agent_tool_name": WRITE}},
            {"name": "call_discoverable_agent_tool", "arguments": _dispatch(WRITE, REWARDS)[1]},
            {"name": "unlock_discoverable_agent_tool", "arguments": {"agent_tool_name": READ}},
            {"name": "call_discoverable_agent_tool", "arguments": _dispatch(READ, {"user_id": "u1"})[1]},
        ],
        "communicate_info": [],
        "reward_basis": ["DB"],
    },
}


def _simulation(trial: int, reward: float, calls: list[tuple[tuple[str, dict[str, Any]], str]]) -> dict:
    """A simulation: the user asks, the agent makes `calls` ((name, arguments), result) and answers."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Please fix the rewards on my last purchase."}
    ]
    for i, ((name, arguments), result) in enumerate(calls):
        call = {"id": f"c{i}", "name": name, "arguments": arguments, "requestor": "assistant"}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append(
            {"role": "tool", "id": f"c{i}", "content": result, "requestor": "assistant", "error": False}
        )
    messages.append({"role": "assistant", "content": "Done: the rewards are corrected."})
    messages.append({"role": "user", "content": "Thanks! ###STOP###"})
    return {
        "id": f"sim-{trial}",
        "task_id": "task_026",
        "trial": trial,
        "messages": messages,
        "reward_info": {"reward": reward},
        "termination_reason": "user_stop",
    }


def _unlock(tool: str) -> tuple[tuple[str, dict[str, Any]], str]:
    return ("unlock_discoverable_agent_tool", {"agent_tool_name": tool}), f"Tool unlocked: {tool}"


SEARCH = (
    ("KB_search", {"query": "rewards correction"}),
    "doc_rewards_001: unlock update_transaction_rewards",
)
LOOKUP = (
    ("get_user_information_by_id", {"user_id": "u1"}),
    json.dumps({"user_id": "u1", "name": "Ana Lima"}),
)
LOG = (("log_verification", VERIFIED), "Verification logged successfully.")
FIX = (_dispatch(WRITE, REWARDS), "Rewards updated for txn_1.")
HISTORY = (_dispatch(READ, {"user_id": "u1"}), '{"disputes": []}')
DONE = [SEARCH, LOOKUP, LOG, _unlock(WRITE), FIX, _unlock(READ), HISTORY]


def _verdicts(*simulations: dict[str, Any]) -> dict[int, bool | None]:
    """Each simulation's verdict (by trial), graded blind by the policy the import writes for the task."""
    document = {"info": {}, "tasks": [TASK], "simulations": list(simulations)}
    imported = import_results(document, "agent", "bank", "bank")
    assert imported.errors == [] and imported.domain == "banking_knowledge"
    settings = Settings(policies=[TaskPolicy.model_validate(p) for p in imported.policies])
    scorer = ConversationScorer(settings, labels="ignore")
    out = {}
    for line in imported.lines:
        score = scorer.score(Conversation.model_validate(line))
        out[int(line["attempt"])] = score.passed
    return out


def test_a_dispatcher_call_reads_as_the_call_it_names_and_bad_ones_stay_as_made() -> None:
    assert named_call(*_dispatch(WRITE, REWARDS)) == (WRITE, REWARDS)
    assert named_call(
        "call_discoverable_agent_tool", {"agent_tool_name": READ, "arguments": {"user_id": "u1"}}
    ) == (
        READ,
        {"user_id": "u1"},
    )
    assert named_call("call_discoverable_agent_tool", {"agent_tool_name": READ}) == (READ, {})
    for arguments in ({"agent_tool_name": READ, "arguments": "{not json"}, {"arguments": "{}"}, "text"):
        assert named_call("call_discoverable_agent_tool", arguments) is None
    assert named_call("log_verification", VERIFIED) is None
    messages = _simulation(0, 1.0, [FIX, SEARCH])["messages"]
    read, count = read_messages(messages)
    assert (
        count == 1
        and read[1]["tool_calls"][0]["name"] == WRITE
        and read[1]["tool_calls"][0]["arguments"] == REWARDS
    )
    assert messages[1]["tool_calls"][0]["name"] == "call_discoverable_agent_tool"  # the input is not changed
    assert read[3] is messages[3]


def test_the_policy_expects_the_named_write_and_the_read_the_reward_requires() -> None:
    imported = import_results(
        {"info": {}, "tasks": [TASK], "simulations": [_simulation(0, 1.0, DONE)]}, "a", "v", "b"
    )
    (policy,) = imported.policies
    expected = {t["name"]: t for t in policy["tools"]}
    assert set(expected) == {"log_verification", WRITE, READ}  # unlocking changes no database
    assert expected[WRITE]["arguments"] == REWARDS and expected[READ].get("required") is True
    assert "!update_transaction_rewards_3847" in policy["read_only_tools"]
    line = imported.lines[0]
    assert any("call_discoverable_agent_tool read as calls" in n for n in line["notes"])


def test_verdicts_follow_what_the_environment_records() -> None:
    respaced = (
        _dispatch(WRITE, '{"new_rewards_earned":"6300 points","transaction_id":"txn_1"}'),
        "Rewards updated.",
    )
    extra_read = (_dispatch("get_pending_replacement_orders_5765", {"credit_card_account_id": "cc1"}), "[]")
    not_yet = (_dispatch(WRITE, REWARDS), f"Error: Tool '{WRITE}' has not been unlocked.")
    wrong = (_dispatch(WRITE, {**REWARDS, "transaction_id": "txn_2"}), "Rewards updated for txn_2.")
    extra_write = (
        _dispatch("apply_statement_credit_8472", {"user_id": "u1", "amount": 5}),
        "Credit applied.",
    )
    verdicts = _verdicts(
        _simulation(0, 1.0, DONE),
        # the same, its JSON written otherwise, with reads and unlocks nobody asked for: nothing else recorded
        _simulation(
            1,
            1.0,
            [
                SEARCH,
                not_yet,
                _unlock("close_credit_card_account_7834"),
                *DONE[1:4],
                respaced,
                _unlock(READ),
                HISTORY,
                _unlock("get_pending_replacement_orders_5765"),
                extra_read,
            ],
        ),
        _simulation(
            2, 0.0, DONE[:-1]
        ),  # the read the ground truth makes is recorded: missing, the state differs
        _simulation(3, 0.0, [*DONE[:4], wrong, *DONE[5:]]),  # the write on another transaction
        _simulation(
            4, 0.0, [*DONE, _unlock("apply_statement_credit_8472"), extra_write]
        ),  # a write nobody asked for
    )
    assert verdicts == {0: True, 1: True, 2: False, 3: False, 4: False}


def test_an_action_task_compares_only_what_its_compare_args_name() -> None:
    transfer = "initial_transfer_to_human_agent_0218"
    task = {
        "id": "task_026",
        "evaluation_criteria": {
            "actions": [
                {
                    "name": "call_discoverable_agent_tool",
                    "arguments": {"agent_tool_name": transfer},
                    "compare_args": ["agent_tool_name"],
                }
            ],
            "reward_basis": ["ACTION"],
        },
    }
    handoff = (_dispatch(transfer, {"summary": "customer asks for a person"}), "Transferring you now.")
    other = (_dispatch("initial_transfer_to_human_agent_1822", {}), "Transferring you now.")
    document = {
        "info": {},
        "tasks": [task],
        "simulations": [
            _simulation(0, 1.0, [_unlock(transfer), handoff]),
            _simulation(1, 0.0, [_unlock("initial_transfer_to_human_agent_1822"), other]),
        ],
    }
    imported = import_results(document, "agent", "bank", "bank")
    (policy,) = imported.policies
    (tool,) = policy["tools"]
    assert tool["name"] == transfer and tool["arguments"] == {} and policy["extra_calls"] == "any"
    settings = Settings(policies=[TaskPolicy.model_validate(p) for p in imported.policies])
    scorer = ConversationScorer(settings, labels="ignore")
    passed = [scorer.score(Conversation.model_validate(line)).passed for line in imported.lines]
    assert passed == [True, False]


def test_a_discoverable_write_that_ran_is_recorded_even_when_it_returned_an_error() -> None:
    """The dispatcher records a call of a discoverable write whatever the tool returned, so an extra one fails
    the reward even when it failed; one the dispatcher refused, or whose tool raised, is recorded nowhere."""
    other = "apply_statement_credit_8472"
    ran = (
        _dispatch(other, {"user_id": "u1", "amount": 5}),
        "Error: the account is not eligible for a credit.",
    )
    locked = (
        _dispatch(other, {"user_id": "u1", "amount": 5}),
        f"Error: Tool '{other}' has not been unlocked.",
    )
    verdicts = _verdicts(
        _simulation(0, 0.0, [*DONE, _unlock(other), ran]),
        _simulation(1, 1.0, [*DONE, locked]),
    )
    assert verdicts == {0: False, 1: True}
    raised = _simulation(2, 1.0, [*DONE, _unlock(other), ran])
    raised["messages"][-3]["error"] = True  # the tool message of the last call: the tool raised
    assert _verdicts(raised) == {2: True}
    read, count = read_messages(_simulation(3, 1.0, [locked, FIX])["messages"])
    assert count == 1 and [m["tool_calls"][0]["name"] for m in read if m.get("tool_calls")] == [
        "call_discoverable_agent_tool",
        WRITE,
    ]
    (policy,) = import_results(
        {"info": {}, "tasks": [TASK], "simulations": [_simulation(0, 1.0, DONE)]}, "a", "v", "b"
    ).policies
    assert other in policy["forbidden_tools"] and WRITE not in policy["forbidden_tools"]


# The last commit of tau2-bench before its fix of the grading (#329, 2026-07-14): every discoverable call recorded.
EARLIER = "ede51b4651510fc137142346430ee8c15b1d7ba6"


def test_a_run_of_a_commit_before_1_0_1_is_graded_as_its_grading_recorded_every_call() -> None:
    """Before tau2-bench 1.0.1 a read nobody asked for was recorded too, and failed the reward."""
    extra_read = (_dispatch("get_pending_replacement_orders_5765", {"credit_card_account_id": "cc1"}), "[]")
    with_read = [*DONE, _unlock("get_pending_replacement_orders_5765"), extra_read]
    for commit, passed in (
        (EARLIER, False),
        (EARLIER[:7].upper(), False),
        ("a2c0247", True),
        ("unknown", True),
    ):
        document = {
            "info": {"git_commit": commit},
            "tasks": [TASK],
            "simulations": [_simulation(0, 1.0, with_read)],
        }
        imported = import_results(document, "agent", "bank", "bank")
        assert imported.formerly is (not passed)
        settings = Settings(policies=[TaskPolicy.model_validate(p) for p in imported.policies])
        (line,) = imported.lines
        score = ConversationScorer(settings, labels="ignore").score(Conversation.model_validate(line))
        assert score.passed is passed, commit
    assert not records_every_discoverable_call("ede51b")  # too short to name one commit
    assert not records_every_discoverable_call(None)


def test_the_import_command_says_which_grading_it_follows(tmp_path: Path) -> None:
    document = {"info": {"git_commit": EARLIER}, "tasks": [TASK], "simulations": [_simulation(0, 1.0, DONE)]}
    path = tmp_path / "bank.json"
    path.write_text(json.dumps(document))
    result = CliRunner().invoke(app, ["import", "tau-bench", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "tau2-bench (banking_knowledge): 1 conversation(s)" in result.output
    header = (tmp_path / "out" / "policies.yaml").read_text()
    assert "before 1.0.1" in header and "get_pending_replacement_orders_5765" in header


def test_a_second_identical_verification_log_changes_nothing() -> None:
    """banking_knowledge answers a record that already exists with "Failed to …": a refusal, no second write."""
    again = (("log_verification", VERIFIED), "Failed to log verification: Record may already exist.")
    assert _verdicts(_simulation(0, 1.0, [*DONE, again])) == {0: True}
    twice = (
        ("log_verification", {**VERIFIED, "time_verified": "2025-11-14 03:41:00 EST"}),
        "Verification logged.",
    )
    assert _verdicts(_simulation(1, 0.0, [*DONE, twice])) == {
        1: False
    }  # another record: a write nobody expected
