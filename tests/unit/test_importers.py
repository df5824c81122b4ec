"""Importers: τ-bench results (real excerpts of the dev data), τ²-bench results, chat-format logs, the CLI."""

from __future__ import annotations

import copy
import gzip
import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from agentwatch.cli import app
from agentwatch.config import Settings, load_settings
from agentwatch.importers.openai_chat import ChatFormatError, conversation_from_record, read_chat_lines
from agentwatch.importers.results_files import TauBenchFormatError, load_document
from agentwatch.importers.tau_bench import detect, import_results
from agentwatch.importers.tau_domains import DOMAINS, domain_of
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import Conversation, Outcome
from agentwatch.wire.transcripts import TranscriptFileError, iter_conversations
from tests.support import published_runs


@pytest.fixture(scope="module")
def dev() -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = json.loads(
        gzip.decompress(published_runs.require(published_runs.AIRLINE).read_bytes())
    )
    return runs


def entries(dev: list[dict[str, Any]], *keys: tuple[int, int]) -> list[dict[str, Any]]:
    return [e for e in dev if (e["task_id"], e["trial"]) in keys]


# --------------------------------------------------------------------------- τ-bench, real excerpts


def test_tau_bench_round_trip_keeps_every_message(dev: list[dict[str, Any]]) -> None:
    picked = entries(dev, (2, 1), (13, 1), (18, 0), (0, 0))
    out = import_results(picked, "tau-airline", "gpt-4o", "airline")
    assert out.format == "tau-bench" and out.errors == []
    assert len(out.lines) == 4
    for entry, line in zip(picked, out.lines, strict=True):
        conv = Conversation.model_validate(line)
        traj = entry["traj"]
        assert conv.conversation_id == f"airline/task-{entry['task_id']}/trial-{entry['trial']}"
        assert (conv.task, line["attempt"], conv.agent, conv.version) == (
            str(entry["task_id"]),
            entry["trial"],
            "tau-airline",
            "gpt-4o",
        )
        assert conv.outcome is (Outcome.COMPLETE if entry["reward"] == 1 else Outcome.PARTIAL_INCORRECT)
        assert conv.system == traj[0]["content"]
        users = [m["content"] for m in traj if m["role"] == "user"]
        assert [t.input for t in conv.turns] == users  # one turn per user message (none follow each other)
        calls = [c for t in conv.turns for c in t.tool_calls]
        made = [tc for m in traj if m["role"] == "assistant" for tc in m.get("tool_calls") or []]
        assert [c.name for c in calls] == [tc["function"]["name"] for tc in made]
        assert [c.arguments for c in calls] == [json.loads(tc["function"]["arguments"]) for tc in made]
        results = [m["content"] for m in traj if m["role"] == "tool"]
        assert sum(c.error is not None for c in calls) == sum(r.startswith("Error") for r in results)
        assert all(c.result is not None or c.error is not None or c.name == "think" for c in calls)
        answers = [m["content"] for m in traj if m["role"] == "assistant" and m.get("content")]
        assert all(a in "\n\n".join(t.answer or "" for t in conv.turns) for a in answers[:-1])
    by_id = {line["conversation_id"]: Conversation.model_validate(line) for line in out.lines}
    # task 2 trial 1 stops on a tool call: its last turn has no answer, so the run's crash is visible
    assert by_id["airline/task-2/trial-1"].turns[-1].answer is None
    # task 13 trial 1: the refused upgrade is an error, the text kept
    refused = [c for t in by_id["airline/task-13/trial-1"].turns for c in t.tool_calls if c.error]
    assert [c.error for c in refused] == ["Error: flight HAT030 not available on date 2024-05-13"]
    # task 18 trial 0 hands off: the last call is the transfer, with its result
    last = by_id["airline/task-18/trial-0"].turns[-1].tool_calls[-1]
    assert (last.name, last.result) == ("transfer_to_human_agents", "Transfer successful")


def test_tau_bench_policies_hold_the_effects_and_outputs_of_the_ground_truth(
    dev: list[dict[str, Any]],
) -> None:
    out = import_results(entries(dev, (0, 0), (2, 0), (13, 0), (14, 0), (16, 0)), "a", "v", "air")
    policies = {p["task"]: p for p in out.policies}
    assert list(policies) == ["0", "2", "13", "14", "16"]  # one per task, in task order
    assert [t["name"] for t in policies["0"]["tools"]] == ["book_reservation"]
    assert policies["0"]["tools"][0]["arguments"]["payment_methods"] == [
        {"payment_id": "certificate_7504069", "amount": 250},
        {"payment_id": "credit_card_4421486", "amount": 5},
    ]
    assert [t["name"] for t in policies["2"]["tools"]] == ["update_reservation_flights"] * 5
    assert policies["2"]["outputs"] == ["23553"]
    assert policies["13"]["tools"] == []  # only a handoff in the ground truth: no call with effects allowed
    # task 14's ground truth also looks things up and calculates: only the baggage change is expected
    assert [t["name"] for t in policies["14"]["tools"]] == ["update_reservation_baggages"]
    assert [t["name"] for t in policies["16"]["tools"]] == ["send_certificate"]
    assert all(p["order"] == "any" and p["agent"] == "a" for p in policies.values())
    assert all("reward" not in json.dumps(p) for p in policies.values())


def test_free_text_arguments_are_ignored_in_generated_policies() -> None:
    entry = {
        "task_id": 7,
        "trial": 0,
        "reward": 0.0,
        "traj": [{"role": "user", "content": "hi"}],
        "info": {
            "task": {
                "actions": [
                    {
                        "name": "escalate_case",
                        "kwargs": {"case_id": "C1", "note": "customer wants the fee waived now"},
                    }
                ],
                "outputs": [],
            }
        },
    }
    (policy,) = import_results([entry], "a", "v", "p").policies
    assert policy["tools"] == [
        {
            "name": "escalate_case",
            "arguments": {"case_id": "C1", "note": "customer wants the fee waived now"},
            "match": {"note": "ignore"},
        }
    ]


def test_bad_records_are_reported_and_the_rest_imported(dev: list[dict[str, Any]]) -> None:
    good = entries(dev, (1, 1))
    out = import_results([{"task_id": 5}, *good, {"task_id": 6, "traj": [{"role": "wizard"}]}], "a", "v", "p")
    assert len(out.lines) == 1
    assert out.errors == [
        ("entry 0", "no `traj` list"),
        ("entry 2", "ChatFormatError: message 0 has an unknown role 'wizard'"),
    ]
    with pytest.raises(TauBenchFormatError):
        detect({"something": "else"})


def test_entries_an_object_holds_beside_other_keys_import_as_the_array_would(
    dev: list[dict[str, Any]],
) -> None:
    """A fork writes `{"metrics": {...}, "results": [entries]}` (Reapor-Yurnero/tau-bench): it was refused as no
    results file at all; its entries now import as the plain array does, and the import says where it read them."""
    plain = entries(dev, (1, 0), (2, 0), (3, 0))
    wrapped = {"metrics": {"avg_reward": 0.33, "pass_hat_ks": {"1": 0.33}}, "results": plain}
    out, expected = import_results(wrapped, "a", "v", "p"), import_results(plain, "a", "v", "p")
    assert (out.lines, out.policies, out.errors) == (expected.lines, expected.policies, expected.errors)
    assert out.format == "tau-bench" and len(out.lines) == 3
    assert out.warnings == [
        ("file", "the τ-bench entries read from the object's `results`; its other keys are not read")
    ]


@pytest.mark.parametrize(
    "document",
    [
        {"a": [{"traj": []}], "b": [{"traj": []}]},  # two lists of entries: which one is the run is a guess
        {"results": [{"task_id": 1}]},  # no entry has a trajectory
        {"results": []},
        {"results": {"traj": []}},
    ],
    ids=["two-lists", "no-traj", "empty", "not-a-list"],
)
def test_an_object_without_exactly_one_list_of_entries_is_still_no_results_file(
    document: dict[str, Any],
) -> None:
    with pytest.raises(TauBenchFormatError):
        import_results(document, "a", "v", "p")


# --------------------------------------------------------------------------- τ²-bench (its documented shape)

TAU2: dict[str, Any] = {
    "info": {"environment_info": {"domain_name": "airline", "policy": "# Airline policy\nFees: $25."}},
    "tasks": [
        {
            "id": "t-1",
            "evaluation_criteria": {
                "actions": [
                    {
                        "action_id": "a1",
                        "requestor": "assistant",
                        "name": "get_user_details",
                        "arguments": {"user_id": "u1"},
                    },
                    {
                        "action_id": "a2",
                        "requestor": "assistant",
                        "name": "cancel_reservation",
                        "arguments": {"reservation_id": "R1", "reason": "change of plan"},
                        "compare_args": ["reservation_id"],
                    },
                ],
                "communicate_info": ["R1"],
            },
        },
    ],
    "simulations": [
        {
            "id": "s1",
            "task_id": "t-1",
            "trial": 2,
            "reward_info": {"reward": 1.0},
            "messages": [
                {"role": "assistant", "content": "Hi! How can I help?"},
                {
                    "role": "user",
                    "content": "Cancel R1, I am u1.",
                    "tool_calls": [
                        {"id": "u", "name": "toggle_airplane_mode", "arguments": {}, "requestor": "user"}
                    ],
                },
                {"role": "tool", "id": "u", "content": "done", "requestor": "user"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "x",
                            "name": "cancel_reservation",
                            "arguments": {"reservation_id": "R1"},
                            "requestor": "assistant",
                        }
                    ],
                },
                {"role": "tool", "id": "x", "content": "not allowed", "error": True},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "x",
                            "name": "cancel_reservation",
                            "arguments": {"reservation_id": "R1", "reason": "other"},
                            "requestor": "assistant",
                        }
                    ],
                },
                {"role": "tool", "id": "x", "content": '{"status": "cancelled"}'},
                {"role": "assistant", "content": "R1 is cancelled."},
            ],
        },
        {"id": "s2", "task_id": "t-1", "trial": 3, "ticks": []},
    ],
}


def test_tau2_bench_results_are_detected_and_imported() -> None:
    out = import_results(TAU2, "a", "v", "t2")
    assert out.format == "tau2-bench"
    assert out.errors == [("simulation 1", "no `messages` list (full-duplex runs keep only ticks)")]
    (line,) = out.lines
    conv = Conversation.model_validate(line)
    assert (conv.task, line["attempt"], conv.outcome, conv.system) == (
        "t-1",
        2,
        Outcome.COMPLETE,
        "# Airline policy\nFees: $25.",
    )
    assert [t.input for t in conv.turns] == ["", "Cancel R1, I am u1."]  # the agent spoke first
    (first, second) = conv.turns[1].tool_calls  # the user's own call is left out, with a note
    assert (first.error, second.result) == ("not allowed", {"status": "cancelled"})
    assert conv.turns[1].answer == "R1 is cancelled."
    assert any("made by the user" in n for n in conv.notes)
    (policy,) = out.policies
    assert policy["tools"] == [
        {
            "name": "cancel_reservation",
            "arguments": {"reservation_id": "R1", "reason": "change of plan"},
            "match": {"reason": "ignore"},
        }
    ]
    assert policy["outputs"] == ["R1"]


def _task(task_id: str, **criteria: Any) -> dict[str, Any]:
    return {"id": task_id, "evaluation_criteria": criteria}


CANCEL = {"requestor": "assistant", "name": "cancel_reservation", "arguments": {"reservation_id": "R1"}}
LOOKUP = {"requestor": "assistant", "name": "get_user_details", "arguments": {"user_id": "u1"}}
TOGGLE = {"requestor": "user", "name": "toggle_roaming", "arguments": {}}


def test_a_tau2_task_whose_reward_a_policy_cannot_check_gets_none_and_the_import_says_why() -> None:
    """τ²-bench's reward is the product of the parts `reward_basis` names: a policy of calls and outputs
    checks the final database (when only the agent acts), every ground-truth call (ACTION, when only the agent
    acts) and the outputs; environment assertions, assertions an LLM judges and the user's own actions it
    cannot see. Parts with nothing to
    check (empty lists) count as checked."""
    tasks = [
        _task("default", actions=[CANCEL], communicate_info=["R1"]),
        _task("db-only", actions=[LOOKUP, CANCEL], reward_basis=["DB"]),
        _task("empty-asserts", actions=[CANCEL], reward_basis=["DB", "ENV_ASSERTION", "NL_ASSERTION"]),
        _task("nl", actions=[CANCEL], reward_basis=["DB", "NL_ASSERTION"], nl_assertions=["Agent refunds"]),
        _task(
            "env",
            actions=[TOGGLE],
            reward_basis=["ENV_ASSERTION"],
            env_assertions=[{"env_type": "user", "func_name": "assert_mobile_data_status"}],
        ),
        _task("user-acts", actions=[LOOKUP, TOGGLE], reward_basis=["DB"]),
        _task("action", actions=[LOOKUP, CANCEL], reward_basis=["ACTION"]),
        _task("action-user", actions=[LOOKUP, TOGGLE], reward_basis=["ACTION"]),
        _task("action-none", actions=[], reward_basis=["ACTION"]),
        _task("odd", actions=[CANCEL], reward_basis=["DB", "VIBES"]),
        {"id": "no-criteria", "evaluation_criteria": None},
        {"id": "odd-criteria", "evaluation_criteria": ["not", "an", "object"]},
    ]
    simulation = TAU2["simulations"][0]
    sims = [{**simulation, "id": f"s-{t['id']}", "task_id": t["id"]} for t in tasks]
    sims.append({**simulation, "id": "s-missing", "task_id": "missing"})
    out = import_results({**TAU2, "tasks": tasks, "simulations": sims}, "a", "v", "t2")
    assert len(out.lines) == len(sims) and out.errors == []
    assert [p["task"] for p in out.policies] == [
        "action",
        "action-none",
        "db-only",
        "default",
        "empty-asserts",
    ]
    assert set(out.ungraded) == {
        "nl",
        "env",
        "user-acts",
        "action-user",
        "odd",
        "missing",
        "no-criteria",
        "odd-criteria",
    }
    assert "NL_ASSERTION" in out.ungraded["nl"] and "ENV_ASSERTION" in out.ungraded["env"]
    assert "user's own actions" in out.ungraded["user-acts"] and "ACTION" in out.ungraded["action-user"]
    assert "'VIBES'" in out.ungraded["odd"] and "not in the file" in out.ungraded["missing"]
    assert "no evaluation criteria" in out.ungraded["no-criteria"]
    # scored with the policies, a conversation of a task without one is not graded, never passed
    settings = Settings.model_validate({"policies": out.policies})
    scorer = ConversationScorer(settings, labels="ignore")
    convs = [Conversation.model_validate(line) for line in out.lines]
    verdicts = {conv.task: scorer.score(conv).outcome for conv in convs}
    assert {t for t, v in verdicts.items() if v == Outcome.UNSCORED} == set(out.ungraded)


def test_a_published_tau2_bench_run_imports_with_its_trials_and_endings() -> None:
    """τ²-bench's published airline run: every simulation imported with its trial as the attempt, each ending
    with the user's marker, which no longer reads as a missing answer."""
    document = json.loads(gzip.decompress(published_runs.require(published_runs.TAU2_AIRLINE).read_bytes()))
    out = import_results(document, "a", "v", "t2")
    assert out.format == "tau2-bench" and out.errors == [] and len(out.lines) == len(document["simulations"])
    assert [line["attempt"] for line in out.lines] == [s["trial"] for s in document["simulations"]]
    scores = [
        ConversationScorer(Settings(), labels="ignore").score(Conversation.model_validate(x))
        for x in out.lines
    ]
    endings = [next(r for r in s.reasons if r.startswith("ending:")) for s in scores]
    assert all(("###STOP" in e) != ("###TRANSFER" in e) or "###OUT-OF-SCOPE" in e for e in endings)
    assert not any("no_answer" in s.evidence for s in scores)


def test_a_multi_trial_tau2_run_sets_the_attempt_of_each_trial() -> None:
    sims: list[dict[str, Any]] = json.loads(json.dumps(TAU2["simulations"]))
    document = {**TAU2, "simulations": [{**sims[0], "id": f"s{t}", "trial": t} for t in range(3)]}
    out = import_results(document, "a", "v", "t2")
    assert [(line["task"], line["attempt"]) for line in out.lines] == [("t-1", 0), ("t-1", 1), ("t-1", 2)]
    assert len({line["conversation_id"] for line in out.lines}) == 3


def _python_repr(document: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run as a logger that writes `str(kwargs)` leaves it: tool arguments and results as Python reprs."""
    out: list[dict[str, Any]] = json.loads(json.dumps(document))
    for entry in out:
        for message in entry["traj"]:
            for call in message.get("tool_calls") or []:
                call["function"]["arguments"] = repr(json.loads(call["function"]["arguments"]))
            if message.get("role") == "tool" and str(message.get("content", "")).startswith("{"):
                message["content"] = repr(json.loads(message["content"]))
    return out


def test_arguments_logged_as_python_reprs_read_as_values(dev: list[dict[str, Any]]) -> None:
    """`"{'order_id': '#W1'}"` is read with ast.literal_eval (never eval), with a note; the conversations equal
    the ones of the JSON log."""
    picked = entries(dev, (2, 1), (13, 1), (18, 0))
    plain = import_results(picked, "a", "v", "x")
    reprs = import_results(_python_repr(picked), "a", "v", "x")
    for a, b in zip(plain.lines, reprs.lines, strict=True):
        ca, cb = Conversation.model_validate(a), Conversation.model_validate(b)
        assert [t.tool_calls for t in ca.turns] == [t.tool_calls for t in cb.turns]
        assert any("Python literals, read with ast.literal_eval" in n for n in cb.notes)
        assert not any("Python literal" in n for n in ca.notes)


@pytest.mark.parametrize(
    ("text", "value", "how"),
    [
        (
            "{'order_id': '#W1', 'item_ids': ['1', '2']}",
            {"order_id": "#W1", "item_ids": ["1", "2"]},
            "python",
        ),
        ('{"a": 1}', {"a": 1}, "json"),
        ("{'a': (1, 2), 'b': None, 'c': True}", {"a": [1, 2], "b": None, "c": True}, "python"),
        ("{'x': __import__('os').system('true')}", None, "text"),  # a call: never evaluated
        ("{'x': 1 + 1}", None, "text"),  # an operator: not a literal
        ("[" + "(" * 200 + ")" * 200 + "]", None, "text"),  # too deep to parse
        ("order 4100", None, "text"),
    ],
)
def test_python_literals_are_read_safely(text: str, value: object, how: str) -> None:
    from agentwatch.wire.values import read_structured

    got, read_as = read_structured(text)
    assert read_as == how and got == (text if value is None else value)


def test_generated_policies_compare_lists_unordered_and_replacements_as_pairs() -> None:
    """The importer cannot know whether a list's order matters: item lists compare as multisets, X/new_X as
    replacements; the same write on two tools becomes one expectation with an alternative."""
    actions = [
        {"name": "get_order_details", "kwargs": {"order_id": "#W1"}},
        {"name": "return_delivered_order_items", "kwargs": {"order_id": "#W1", "item_ids": ["2", "1"]}},
        {
            "name": "exchange_delivered_order_items",
            "kwargs": {"order_id": "#W2", "item_ids": ["3"], "new_item_ids": ["4"], "payment_method_id": "p"},
        },
        {
            "name": "modify_pending_order_items",
            "kwargs": {"order_id": "#W2", "item_ids": ["3"], "new_item_ids": ["4"], "payment_method_id": "p"},
        },
    ]
    entry = {
        "task_id": 7,
        "trial": 0,
        "reward": 1.0,
        "info": {"task": {"actions": actions, "outputs": []}},
        "traj": [],
    }
    (policy,) = import_results([entry], "a", "v", "x").policies
    assert policy["tools"] == [
        {
            "name": "return_delivered_order_items",
            "arguments": {"order_id": "#W1", "item_ids": ["2", "1"]},
            "match": {"item_ids": "unordered"},
        },
        {
            "name": "exchange_delivered_order_items",
            "arguments": {
                "order_id": "#W2",
                "item_ids": ["3"],
                "new_item_ids": ["4"],
                "payment_method_id": "p",
            },
            "replacements": [["item_ids", "new_item_ids"]],
            "alternatives": ["modify_pending_order_items"],
        },
    ]
    Settings.model_validate({"policies": [policy]})  # what the importer writes, the configuration reads


# --------------------------------------------------------------------------- chat-format logs


def test_chat_results_pair_with_waiting_calls_by_id_then_by_order() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Look up A and B."}]},
        {
            "role": "assistant",
            "content": "On it.",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get", "arguments": '{"k": "A"}'}},
                {"id": "call_1", "type": "function", "function": {"name": "get", "arguments": '{"k": "B"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"v": 1}'},  # the first waiting call_1
        {"role": "tool", "tool_call_id": "call_9", "content": '{"v": 2}'},  # no such id: the oldest waiting
        {"role": "assistant", "content": None, "function_call": {"name": "put", "arguments": "not json"}},
        {"role": "function", "name": "put", "content": "Error: refused"},
        {"role": "assistant", "content": "A is 1, B is 2; the update was refused."},
        {"role": "tool", "tool_call_id": "call_x", "content": "late"},  # nothing waits for it
    ]
    conv = conversation_from_record({"messages": messages, "id": "chat-1", "task": "lookup"}, "default")
    assert (conv.conversation_id, conv.task, conv.system) == ("chat-1", "lookup", "Be brief.")
    (turn,) = conv.turns
    assert turn.input == "Look up A and B."
    assert [(c.arguments, c.result, c.error) for c in turn.tool_calls] == [
        ({"k": "A"}, {"v": 1}, None),
        ({"k": "B"}, {"v": 2}, None),
        ({"value": "not json"}, None, "Error: refused"),
    ]
    assert turn.answer == "On it.\n\nA is 1, B is 2; the update was refused."
    assert any("no call waiting" in n for n in conv.notes) and any(
        "not a JSON object" in n for n in conv.notes
    )


def test_an_error_bound_to_a_name_fails_its_call_and_a_result_naming_one_does_not() -> None:
    """A harness that runs the agent's calls as code prints a refused call's text bound to a variable: that
    call failed (it changed nothing), as one whose text starts with the prefix; a result that merely holds the
    word, or binds another text, succeeded."""
    results = [
        '# var_4 = "Error: insufficient gift card balance to pay for the order"',
        "var_7='Error: order not found'",
        "Error: user not found",
        '# var_5 = "Order #W1 returned"',
        '{"status": "Error: none reported", "ok": true}',
        "Last error: none",
    ]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Pay for #W1."}]
    for i, text in enumerate(results):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "pay", "arguments": "{}"}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": text})
    messages.append({"role": "assistant", "content": "Done."})
    (turn,) = conversation_from_record({"messages": messages}, "bound").turns
    assert [c.error is not None for c in turn.tool_calls] == [True, True, True, False, False, False]
    assert turn.tool_calls[0].error == results[0]


def test_chat_file_lines_malformed_ones_reported_with_their_number(tmp_path: Path) -> None:
    path = tmp_path / "logs.jsonl"
    good = {
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        "attempt": 3,
    }
    path.write_text(
        "\n".join(
            [
                json.dumps(good),
                "{oops",
                json.dumps({"turns": []}),
                json.dumps([{"role": "user", "content": "bare list"}]),
            ]
        )
        + "\n"
    )
    errors: list = []
    lines = list(read_chat_lines(path, errors, agent="bot"))
    assert [(line["conversation_id"], line.get("attempt"), line["agent"]) for line in lines] == [
        ("logs-1", 3, "bot"),
        ("logs-4", None, "bot"),
    ]
    assert [(e.line, e.reason.split(":")[0]) for e in errors] == [
        (2, "Expecting property name enclosed in double quotes"),
        (3, "expected an object with a `messages` list (or a list of messages)"),
    ]
    with pytest.raises(ChatFormatError):
        conversation_from_record({"messages": ["not an object"]}, "x")


def test_messages_of_a_harness_role_are_left_out_where_the_user_and_the_agent_speak() -> None:
    """A planner's messages in a role of its own (`subtask_creator`) are neither the user's input nor the
    agent's answer: left out with a note, the conversation still read; where no message is the user's, an
    unknown role is still an error (the log is not in chat format)."""
    messages = [
        {"role": "user", "content": "Exchange my lamp."},
        {"role": "subtask_creator", "content": "Subtasks: ['Exchange a lamp']"},
        {"role": "assistant", "content": "Which order?"},
        {"role": "subtask_creator", "content": "Subtasks solved: [False]"},
        {"role": "critic", "content": "ok"},
        {"role": "user", "content": "#W1."},
        {"role": "assistant", "content": "Done: the lamp of #W1 is exchanged."},
    ]
    conv = conversation_from_record({"messages": messages}, "planner")
    assert [(t.input, t.answer) for t in conv.turns] == [
        ("Exchange my lamp.", "Which order?"),
        ("#W1.", "Done: the lamp of #W1 is exchanged."),
    ]
    assert any("2 of role 'subtask_creator', 1 of role 'critic'" in n for n in conv.notes), conv.notes
    with pytest.raises(ChatFormatError, match="unknown role 'human'"):
        conversation_from_record({"messages": [{"role": "human", "content": "hi"}, messages[2]]}, "x")


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ({"role": ["user"], "content": "hi"}, "message 0 has no role (a string)"),
        ({"content": "no role, no type"}, "message 0 has no role (a string)"),
        ({"type": {"a": 1}, "content": "a type that is no name"}, "message 0 has no role (a string)"),
        ({"role": "assistant", "content": "x", "tool_calls": 5}, "`tool_calls` that are not a list"),
        ({"type": "ai", "content": "x", "tool_calls": "call"}, "`tool_calls` that are not a list"),
    ],
)
def test_a_chat_message_of_unexpected_shape_is_a_format_error_naming_it(message: dict, reason: str) -> None:
    """Not a crash of the whole file: the line is reported (read_chat_lines) and the rest read."""
    with pytest.raises(ChatFormatError, match=re.escape(reason)):
        conversation_from_record({"messages": [message]}, "x")


# --------------------------------------------------------------------------- the command line and `score`


def test_import_tau_bench_cli_then_score_with_the_generated_policies(
    tmp_path: Path, dev: list[dict[str, Any]]
) -> None:
    results = tmp_path / "airline-run.json"
    results.write_text(json.dumps(entries(dev, (1, 0), (1, 1), (12, 0))))
    out = tmp_path / "imported"
    run = CliRunner().invoke(app, ["import", "tau-bench", str(results), "--out", str(out), "--agent", "air"])
    assert run.exit_code == 0, run.output
    assert "3 conversation(s)" in run.output and "2 task policies" in run.output
    settings = load_settings(out / "policies.yaml")  # a configuration file with a `policies:` section
    assert [p.id for p in settings.policies] == ["airline-run-task-1", "airline-run-task-12"]
    errors: list = []
    convs = list(iter_conversations(out / "transcripts.jsonl", errors))
    assert errors == [] and [c.version for c in convs] == ["airline-run"] * 3
    scored = CliRunner().invoke(
        app,
        [
            "score",
            str(out / "transcripts.jsonl"),
            "--config",
            str(out / "policies.yaml"),
            "--format",
            "json",
            "--no-gate",
        ],
    )
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.stdout)["conversations"] == 3
    assert yaml.safe_load((out / "policies.yaml").read_text())["policies"][1]["tools"] == []


def test_a_tau2_task_whose_reward_checks_only_what_was_said_grades_no_call() -> None:
    """A `reward_basis` of COMMUNICATE alone makes the calls irrelevant to the reward: the policy lists no tools
    (so calls nobody expected are not checked either) and grades the outputs alone; with DB in the basis the
    same ground truth grades the calls."""
    book = {"requestor": "assistant", "name": "book_reservation", "arguments": {"user_id": "u1"}}
    tasks = [
        _task("said", actions=[book], reward_basis=["COMMUNICATE"], communicate_info=["R1"]),
        _task("db", actions=[book], reward_basis=["DB", "COMMUNICATE"], communicate_info=["R1"]),
    ]
    sims = [{**TAU2["simulations"][0], "id": t["id"], "task_id": t["id"]} for t in tasks]
    out = import_results({**TAU2, "tasks": tasks, "simulations": sims}, "a", "v", "t2")
    db, said = out.policies  # sorted by task
    assert "tools" not in said and said["outputs"] == ["R1"]
    assert db["tools"] == [{"name": "book_reservation", "arguments": {"user_id": "u1"}}]
    scorer = ConversationScorer(Settings.model_validate({"policies": out.policies}), labels="ignore")
    scores = {c.task: scorer.score(c) for c in (Conversation.model_validate(line) for line in out.lines)}
    assert scores["said"].passed is True  # the cancellation nobody expected, the booking never made: unread
    assert scores["db"].passed is False
    assert any("book_reservation" in r for r in scores["db"].reasons)


def test_a_tau2_task_rewarded_on_every_call_requires_its_lookups_too() -> None:
    """ACTION in `reward_basis`: each ground-truth call must have been made, lookups included (`required`);
    without DB beside it, a call nobody expected changes nothing of the reward (`extra_calls: any`)."""
    tasks = [
        _task("action", actions=[LOOKUP, CANCEL], reward_basis=["ACTION"]),
        _task("action-db", actions=[LOOKUP, CANCEL], reward_basis=["ACTION", "DB"]),
        _task("missed", actions=[{**LOOKUP, "arguments": {"user_id": "u9"}}], reward_basis=["ACTION"]),
    ]
    simulation = TAU2["simulations"][0]
    looked_up = [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "g", **LOOKUP}]},
        {"role": "tool", "id": "g", "content": '{"user_id": "u1"}'},
    ]
    messages = [*simulation["messages"][:3], *looked_up, *simulation["messages"][3:]]
    sims = [{**simulation, "id": t["id"], "task_id": t["id"], "messages": messages} for t in tasks]
    out = import_results({**TAU2, "tasks": tasks, "simulations": sims}, "a", "v", "t2")
    action, action_db, missed = out.policies
    assert action["tools"] == [
        {"name": "get_user_details", "arguments": {"user_id": "u1"}, "required": True},
        {"name": "cancel_reservation", "arguments": {"reservation_id": "R1"}},
    ]
    assert action["extra_calls"] == "any" and "extra_calls" not in action_db
    assert action_db["tools"] == action["tools"]
    scorer = ConversationScorer(Settings.model_validate({"policies": out.policies}), labels="ignore")
    scores = {c.task: scorer.score(c) for c in (Conversation.model_validate(line) for line in out.lines)}
    # the simulation looked u1 up and cancelled R1: every ground-truth call made; a lookup of u9 never was
    assert scores["action"].passed is True and scores["action-db"].passed is True
    assert scores["missed"].passed is False
    assert any("get_user_details" in r for r in scores["missed"].reasons)


def test_import_cli_names_the_tau2_tasks_it_wrote_no_policy_for(tmp_path: Path) -> None:
    tasks = [
        _task("t-1", actions=[CANCEL]),
        _task("t-2", actions=[TOGGLE], reward_basis=["ENV_ASSERTION"], env_assertions=[{"env_type": "user"}]),
    ]
    sims = [{**TAU2["simulations"][0], "id": t["id"], "task_id": t["id"]} for t in tasks]
    results = tmp_path / "telecom.json"
    results.write_text(json.dumps({**TAU2, "tasks": tasks, "simulations": sims}))
    run = CliRunner().invoke(app, ["import", "tau-bench", str(results), "--out", str(tmp_path / "o")])
    assert run.exit_code == 0, run.output
    assert "not graded: task t-2: its reward checks assertions on the environment" in run.stderr
    assert "1 task policies" in run.stdout and "1 task(s) without one, not graded" in run.stdout
    written = (tmp_path / "o" / "policies.yaml").read_text()
    assert "# task t-2: its reward checks" in written
    assert [p["task"] for p in yaml.safe_load(written)["policies"]] == ["t-1"]


def test_tau_bench_entries_one_per_line_import_as_the_array_does(
    tmp_path: Path, dev: list[dict[str, Any]]
) -> None:
    picked = entries(dev, (1, 0), (1, 1), (12, 0))
    array = import_results(picked, "a", "v", "p")
    lines = [json.dumps(e) for e in picked]
    raw = "\n".join([lines[0], "{not json", "", lines[1], '{"task_id": 9}', lines[2]]) + "\n"
    jsonl = import_results(load_document(raw.encode()), "a", "v", "p")
    assert jsonl.lines == array.lines and jsonl.policies == array.policies
    assert jsonl.errors == [
        ("line 2", "not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        ("line 5", "no `traj` list"),
    ]
    # a file of other JSON lines is still not a τ-bench file, and says why as before
    with pytest.raises(TauBenchFormatError, match="not JSON"):
        load_document(b'{"messages": []}\n{"messages": []}\n')
    results = tmp_path / "run.jsonl"
    results.write_text(raw)
    run = CliRunner().invoke(app, ["import", "tau-bench", str(results), "--out", str(tmp_path / "o")])
    assert run.exit_code == 0, run.output
    assert "3 conversation(s)" in run.output and "run.jsonl: line 2: not JSON" in run.output


def test_a_log_without_the_task_takes_the_ground_truth_from_its_reward_info() -> None:
    """Some logs keep only `reward_info`: its `actions` are the ground truth and the keys of its
    `info.outputs` the required outputs (their values, the outcome, are not read): the same policies."""
    document = json.loads(gzip.decompress(published_runs.require(published_runs.RETAIL).read_bytes()))
    with_task = import_results(document, "a", "v", "p")
    for entry in document:
        del entry["info"]["task"]
        outputs = ((entry["info"].get("reward_info") or {}).get("info") or {}).get("outputs")
        if outputs:
            for key in outputs:
                outputs[key] = not outputs[key]  # a flipped outcome changes nothing
    without = import_results(document, "a", "v", "p")
    assert without.lines == with_task.lines
    assert any(p.get("outputs") for p in with_task.policies)
    assert without.policies == [p for p in with_task.policies if p["task"] != "20"]  # task 20: no reward_info


def test_import_cli_errors(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"not": "a benchmark"}')
    run = CliRunner().invoke(app, ["import", "tau-bench", str(bad), "--out", str(tmp_path / "o")])
    assert run.exit_code == 2 and "neither" not in run.output and "not a τ-bench results file" in run.output
    chat = tmp_path / "c.jsonl"
    chat.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n{bad\n')
    ok = CliRunner().invoke(app, ["import", "openai-chat", str(chat), "--out", str(tmp_path / "o2")])
    assert ok.exit_code == 0 and "1 conversation(s)" in ok.output and "c.jsonl:2" in ok.output


def test_score_names_the_importer_for_other_formats(tmp_path: Path, dev: list[dict[str, Any]]) -> None:
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n")
    run = CliRunner().invoke(app, ["score", str(chat), "--no-gate"])
    assert "agentwatch import openai-chat" in run.output
    array = tmp_path / "run.json"
    array.write_text(json.dumps(entries(dev, (1, 0))))
    with pytest.raises(TranscriptFileError, match="agentwatch import tau-bench"):
        list(iter_conversations(array, []))
    pretty = tmp_path / "tau2.json"
    pretty.write_text(json.dumps(TAU2, indent=2))
    with pytest.raises(TranscriptFileError, match="τ²-bench"):
        list(iter_conversations(pretty, []))


# --------------------------------------------------------------------------- records of unexpected shape

_ODD_VALUES: list[Any] = [None, 5, "x", [], {}, [1, 2], {"a": 1}, True, 1.5]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path into `value` (the first three items of each list)."""
    if prefix:
        yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:3]):
            yield from _paths(v, (*prefix, i))


def _with_odd_value(document: Any, rng: random.Random) -> Any:
    """A copy of `document` with one value somewhere replaced by one of another shape."""
    out = copy.deepcopy(document)
    *parents, last = rng.choice(list(_paths(out)))
    target = out
    for key in parents:
        target = target[key]
    target[last] = copy.deepcopy(rng.choice(_ODD_VALUES))
    return out


def test_a_record_of_unexpected_shape_is_reported_and_the_rest_imported(dev: list[dict[str, Any]]) -> None:
    """Any value replaced by one of another shape (a number where an object was, a string for a list): the
    import never raises, and every record is either imported or reported at its position (nothing lost)."""
    rng = random.Random(7)
    tau = entries(dev, (1, 0), (12, 0))
    for document, records in ((TAU2, "simulations"), (tau, None)):
        for _ in range(300):
            odd = _with_odd_value(document, rng)
            try:
                out = import_results(odd, "a", "v", "p")
            except TauBenchFormatError:
                continue  # no longer a results file at all (its `simulations` or `traj` gone): said so
            sent = odd[records] if records else odd
            assert len(out.lines) + len(out.errors) == len(sent), (out.errors, odd)


def test_a_ground_truth_that_cannot_be_read_keeps_the_transcript_and_leaves_the_task_ungraded() -> None:
    task = _task("t-1", actions=[{**CANCEL, "compare_args": 5}])
    out = import_results({**TAU2, "tasks": [task], "simulations": TAU2["simulations"][:1]}, "a", "v", "p")
    assert len(out.lines) == 1 and out.errors == [] and out.policies == []
    assert out.ungraded["t-1"].startswith("its ground truth could not be read (TypeError: ")


def _sim(task_id: str, calls: list[dict[str, Any]], closing: list[dict[str, Any]]) -> dict[str, Any]:
    """A τ²-bench simulation: the user asks, the agent makes `calls` (each answered "ok") and says it is done,
    then `closing` messages."""
    made: list[dict[str, Any]] = []
    for i, call in enumerate(calls):
        made.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", **call}]})
        made.append({"role": "tool", "id": f"c{i}", "content": '{"status": "ok"}'})
    return {
        "id": task_id,
        "task_id": task_id,
        "trial": 0,
        "reward_info": {"reward": 1.0},
        "messages": [
            {"role": "assistant", "content": "Hi! How can I help?"},
            {"role": "user", "content": "Cancel R1, I am u1."},
            *made,
            {"role": "assistant", "content": "R1 is cancelled."},
            *closing,
        ],
    }


def test_a_user_acting_on_their_own_side_asks_the_agent_nothing() -> None:
    """A user's message that only makes the user's own tool calls (τ²-bench's user checking whether to stop)
    opens no turn: the conversation still ended on the agent's answer and the user's ###STOP###."""
    check: dict[str, Any] = {
        "role": "user",
        "tool_calls": [{"id": "u", "name": "check_for_stop", "arguments": {}, "requestor": "user"}],
    }
    closing = [
        check,
        {"role": "tool", "id": "u", "content": "verify first", "requestor": "user"},
        {"role": "user", "content": "###STOP###"},
    ]
    out = import_results({**TAU2, "simulations": [_sim("t-1", [CANCEL], closing)]}, "a", "v", "t2")
    conv = Conversation.model_validate(out.lines[0])
    assert [t.input for t in conv.turns] == ["", "Cancel R1, I am u1.", "###STOP###"]
    assert any("1 tool call(s) made by the user" in n for n in conv.notes)
    score = ConversationScorer(Settings.model_validate({"policies": out.policies}), labels="ignore").score(
        conv
    )
    assert score.passed is True, score.reasons


HARNESS = [
    {"requestor": "assistant", "name": "goto_node", "arguments": {"node_id": "AUTH"}},
    {"requestor": "assistant", "name": "todo", "arguments": {"todos": [{"content": "cancel R1"}]}},
]


@pytest.mark.parametrize(
    ("truth", "domain"),
    [
        ({"book_reservation", "get_user_details"}, "airline"),
        ({"exchange_delivered_order_items", "find_user_id_by_email"}, "retail"),
        ({"enable_roaming"}, "telecom"),
        ({"get_user_details"}, None),  # airline's and retail's
        ({"book_reservation", "issue_voucher"}, None),  # a modified environment
        (set(), None),
    ],
)
def test_the_standard_environment_is_the_one_holding_every_ground_truth_tool(
    truth: set[str], domain: str | None
) -> None:
    assert domain_of(truth) == domain


def test_in_a_standard_environment_only_its_writes_have_effects() -> None:
    """The agent's own tools (a workflow graph's `goto_node`, a planner's `todo`) cannot change the database
    the reward reads: free in a task of a standard environment, while a write nobody expected still fails.
    Where the ground truth names a tool no standard environment has, names decide as before."""
    tasks = [
        _task("harness", actions=[LOOKUP, CANCEL], reward_basis=["DB"]),
        _task("extra-write", actions=[LOOKUP, CANCEL], reward_basis=["DB"]),
    ]
    book = {"requestor": "assistant", "name": "book_reservation", "arguments": {"user_id": "u1"}}
    sims = [_sim("harness", [*HARNESS, CANCEL], []), _sim("extra-write", [CANCEL, book], [])]
    out = import_results({**TAU2, "tasks": tasks, "simulations": sims}, "a", "v", "t2")
    assert out.domain == "airline"
    (patterns,) = {tuple(p["read_only_tools"]) for p in out.policies}
    assert patterns[0] == "*" and set(patterns[1:]) == {f"!{w}" for w in DOMAINS["airline"].write}
    scorer = ConversationScorer(Settings.model_validate({"policies": out.policies}), labels="ignore")
    scores = {c.task: scorer.score(c) for c in (Conversation.model_validate(line) for line in out.lines)}
    assert scores["harness"].passed is True, scores["harness"].reasons
    assert scores["extra-write"].passed is False
    assert any("book_reservation" in r for r in scores["extra-write"].reasons)

    custom = [_task("harness", actions=[{**CANCEL, "name": "cancel_booking"}], reward_basis=["DB"])]
    renamed = {**CANCEL, "name": "cancel_booking"}
    out = import_results(
        {**TAU2, "tasks": custom, "simulations": [_sim("harness", [*HARNESS, renamed], [])]}, "a", "v", "t2"
    )
    assert out.domain is None and "read_only_tools" not in out.policies[0]
    (conv,) = (Conversation.model_validate(line) for line in out.lines)
    score = ConversationScorer(Settings.model_validate({"policies": out.policies}), labels="ignore").score(
        conv
    )
    assert score.passed is False and any("goto_node" in r for r in score.reasons)


def test_a_tau2_task_with_no_ground_truth_actions_at_all_grades_no_call() -> None:
    """τ²-bench compares the final database with a replay of the ground truth: with `actions: null` and no
    environment assertions there is none, and its DB part is 1 whatever was done — no call is graded. With
    `actions: []` the database must stay as it was: no call with effects."""
    book = {"requestor": "assistant", "name": "book_reservation", "arguments": {"user_id": "u1"}}
    tasks = [
        _task("null", actions=None, reward_basis=["DB"]),
        _task("empty", actions=[], reward_basis=["DB"]),
    ]
    sims = [_sim(t["id"], [book], []) for t in tasks]
    out = import_results({**TAU2, "tasks": tasks, "simulations": sims}, "a", "v", "t2")
    empty, null = out.policies  # sorted by task
    assert "tools" not in null and empty["tools"] == []
    scorer = ConversationScorer(Settings.model_validate({"policies": out.policies}), labels="ignore")
    scores = {c.task: scorer.score(c) for c in (Conversation.model_validate(line) for line in out.lines)}
    assert scores["null"].passed is True
    assert scores["empty"].passed is False and any("book_reservation" in r for r in scores["empty"].reasons)


def test_the_calls_of_a_tau2_tasks_starting_history_are_not_the_agents_effects() -> None:
    """A τ²-bench task may start from a message history (`initial_state.message_history`) that the saved
    messages repeat: its calls were made before the agent ran, and their effects are in the starting state
    the reward's replay starts from too. Each is allowed once and never required; the same write made again
    by the agent is still an effect nobody expected, and a lookup in the history changes nothing."""
    book = {
        "requestor": "assistant",
        "name": "book_reservation",
        "arguments": {"user_id": "u1", "flight": "F1"},
    }
    look = {"requestor": "assistant", "name": "get_user_details", "arguments": {"user_id": "u1"}}
    history = [
        {"role": "user", "content": "Book F1 for me, I am u1."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "h0", **look}, {"id": "h1", **book}]},
        {"role": "tool", "id": "h0", "content": '{"user_id": "u1"}'},
        {"role": "tool", "id": "h1", "content": '{"reservation_id": "R1"}'},
        {"role": "assistant", "content": "R1 is booked."},
    ]
    tasks = [
        {**_task(t, actions=[CANCEL], reward_basis=["DB"]), "initial_state": {"message_history": history}}
        for t in ("once", "twice")
    ]
    sims = [_sim("once", [CANCEL], []), _sim("twice", [book, CANCEL], [])]
    for sim in sims:
        sim["messages"] = [*history, *sim["messages"]]
    # a history call without a name, or with arguments that are no object, is no expectation: the task is graded
    unreadable = [{"id": "h2", "name": "book_reservation", "arguments": "F1"}, {"id": "h3", "arguments": {}}]
    odd = [{"role": "assistant", "content": None, "tool_calls": unreadable}]
    tasks.append(
        {**_task("odd", actions=[CANCEL], reward_basis=["DB"]), "initial_state": {"message_history": odd}}
    )
    sims.append(_sim("odd", [CANCEL], []))
    out = import_results({**TAU2, "tasks": tasks, "simulations": sims}, "a", "v", "t2")
    assert not out.ungraded
    odd_policy, once, _twice = out.policies
    assert odd_policy["tools"] == [{"name": "cancel_reservation", "arguments": {"reservation_id": "R1"}}]
    assert once["tools"] == [
        {"name": "cancel_reservation", "arguments": {"reservation_id": "R1"}},
        {"name": "book_reservation", "arguments": {"user_id": "u1", "flight": "F1"}, "required": False},
    ]
    scorer = ConversationScorer(Settings.model_validate({"policies": out.policies}), labels="ignore")
    scores = {c.task: scorer.score(c) for c in (Conversation.model_validate(line) for line in out.lines)}
    assert scores["once"].passed is True, scores["once"].reasons
    assert scores["odd"].passed is True, scores["odd"].reasons
    assert scores["twice"].passed is False
    assert any(r.startswith("policy_effects") and "book_reservation" in r for r in scores["twice"].reasons)


@pytest.mark.parametrize("reason", ["max_steps", "too_many_errors", "agent_error"])
def test_a_simulation_the_benchmark_stopped_ended_on_an_error(reason: str) -> None:
    """τ²-bench rewards 0 a simulation that ended any other way than by the user or the agent stopping: the
    error that ended its last turn says so (a turn of its own when no message was kept), and the verdict fails
    though every expected call was made."""
    tasks = [_task("stopped", actions=[CANCEL], reward_basis=["DB"]), _task("empty", actions=[CANCEL])]
    stopped = {**_sim("stopped", [CANCEL], []), "termination_reason": reason}
    empty = {**_sim("empty", [], []), "messages": [], "termination_reason": reason}
    finished = {**_sim("stopped", [CANCEL], []), "id": "ok", "trial": 1, "termination_reason": "user_stop"}
    out = import_results({**TAU2, "tasks": tasks, "simulations": [stopped, empty, finished]}, "a", "v", "t2")
    convs = [Conversation.model_validate(line) for line in out.lines]
    scorer = ConversationScorer(Settings.model_validate({"policies": out.policies}), labels="ignore")
    cut, nothing, done = convs
    assert cut.turns[-1].answer == "R1 is cancelled." and reason in (cut.turns[-1].error or "")
    assert any(f"the benchmark stopped the run: {reason}" in n for n in cut.notes)
    assert len(nothing.turns) == 1 and reason in (nothing.turns[0].error or "")
    assert done.turns[-1].error is None
    verdicts = [scorer.score(c) for c in convs]
    assert [v.passed for v in verdicts] == [False, False, True]
    assert all("error" in v.evidence for v in verdicts[:2])


def test_a_tau_bench_run_an_exception_stopped_ended_on_that_error(dev: list[dict[str, Any]]) -> None:
    """τ-bench's runner keeps the exception that stopped a run in `info.error`, with no trajectory and a reward
    of 0: the conversation is one turn ended by that error, graded by its task's policy and failed."""
    done = next(e for e in dev if e["reward"] == 1.0)
    crashed = {
        "task_id": done["task_id"],
        "trial": 99,
        "reward": 0.0,
        "info": {"error": "litellm.Timeout: Connection timed out after 600.0 seconds.\n", "traceback": "..."},
        "traj": [],
    }
    out = import_results([done, crashed], "a", "v", "t")
    ok, stopped = (Conversation.model_validate(line) for line in out.lines)
    assert [t.error for t in stopped.turns] == [
        "the run was stopped before the conversation ended (litellm.Timeout: Connection timed out after 600.0 "
        "seconds.)"
    ]
    scorer = ConversationScorer(Settings.model_validate({"policies": out.policies}), labels="ignore")
    assert scorer.score(ok).passed is True
    assert scorer.score(stopped).passed is False


def test_a_tau_bench_run_the_step_limit_stopped_ended_on_that(dev: list[dict[str, Any]]) -> None:
    """τ-bench's environment fills `info.reward_info` when the episode ends: a null one is a run its step limit
    stopped (rewarded 0 whatever was done), and its last turn ends on that."""
    done = next(e for e in dev if e["reward"] == 1.0)
    cut = {**copy.deepcopy(done), "trial": 98, "reward": 0.0}
    cut["info"]["reward_info"] = None
    out = import_results([done, cut], "a", "v", "t")
    ok, stopped = (Conversation.model_validate(line) for line in out.lines)
    assert ok.turns[-1].error is None
    assert stopped.turns[-1].error == (
        "the run was stopped before the conversation ended (the step limit: the episode never ended)"
    )
    assert stopped.turns[-1].answer == ok.turns[-1].answer  # the conversation itself is kept as it was
    scorer = ConversationScorer(Settings.model_validate({"policies": out.policies}), labels="ignore")
    assert scorer.score(ok).passed is True and scorer.score(stopped).passed is False


def test_a_record_without_a_task_id_is_reported_not_imported_as_task_none(dev: list[dict[str, Any]]) -> None:
    """A null `task_id` was imported as task "None" (every such record one task of pass^k)."""
    (good,) = entries(dev, (1, 1))
    records = [{**good, "task_id": None}, {**good, "task_id": ""}, {**good, "task_id": [1]}, good]
    out = import_results(copy.deepcopy(records), "a", "v", "p")
    assert [line["task"] for line in out.lines] == ["1"]
    assert [where for where, _ in out.errors] == ["entry 0", "entry 1", "entry 2"]
    assert out.errors[0][1] == "ValueError: no task id (`task_id` is null)"


@pytest.mark.parametrize("reward", [float("inf"), float("nan"), 10**400, 1.5, -0.5, "1"])
def test_a_reward_that_is_not_one_from_0_to_1_gives_no_label_and_a_warning(
    dev: list[dict[str, Any]], reward: Any
) -> None:
    """A reward of 10^400 (or infinity, 1.5) was read as a success."""
    (good,) = entries(dev, (1, 1))
    out = import_results([{**copy.deepcopy(good), "reward": reward}], "a", "v", "p")
    assert len(out.lines) == 1 and out.lines[0].get("outcome") is None
    assert out.errors == []
    assert [where for where, _ in out.warnings] == ["entry 0"]
    assert "is not a number from 0 to 1" in out.warnings[0][1]


@pytest.mark.parametrize("reward", [0, 0.0, 1, 1.0, 0.9999999999])
def test_a_reward_from_0_to_1_is_the_outcome_label(dev: list[dict[str, Any]], reward: float) -> None:
    (good,) = entries(dev, (1, 1))
    out = import_results([{**copy.deepcopy(good), "reward": reward}], "a", "v", "p")
    assert out.lines[0]["outcome"] == ("complete" if reward > 0.5 else "partial_incorrect")
    assert out.warnings == []


def test_a_task_and_trial_imported_twice_is_named(tmp_path: Path, dev: list[dict[str, Any]]) -> None:
    """Two records of one task and trial share a conversation id, and `score` counts it once: the import says
    so, naming both records, and keeps both lines."""
    one, other = entries(dev, (1, 1)), entries(dev, (12, 0))
    results = tmp_path / "run.json"
    results.write_text(json.dumps([*one, *other, *one]))
    run = CliRunner().invoke(app, ["import", "tau-bench", str(results), "--out", str(tmp_path / "out")])
    assert run.exit_code == 0, run.output
    assert "warning: " in run.stderr and "entry 2: task 1 trial 1 again (first at entry 0)" in run.stderr
    assert "3 conversation(s)" in run.stdout


def test_a_task_id_holding_terminal_escapes_is_shown_with_them_escaped(tmp_path: Path) -> None:
    """A task id is the results file's to choose: one holding a terminal escape (set the title, clear the screen)
    is named on stderr with its control characters shown as escapes, and stays a comment in policies.yaml."""
    hostile = "t-2\x1b]0;owned\x07\x1b[2J\u2028policies: []"
    tasks = [
        _task("t-1", actions=[CANCEL]),
        _task(
            hostile, actions=[TOGGLE], reward_basis=["ENV_ASSERTION"], env_assertions=[{"env_type": "user"}]
        ),
    ]
    sims = [{**TAU2["simulations"][0], "id": t["id"], "task_id": t["id"]} for t in tasks]
    results = tmp_path / "telecom.json"
    results.write_text(json.dumps({**TAU2, "tasks": tasks, "simulations": sims}))
    run = CliRunner().invoke(app, ["import", "tau-bench", str(results), "--out", str(tmp_path / "o")])
    assert run.exit_code == 0, run.output
    assert "not graded: task t-2" in run.stderr
    assert "\x1b" not in run.stderr and "\x07" not in run.stderr and "\u2028" not in run.stderr
    written = (tmp_path / "o" / "policies.yaml").read_text()
    assert [p["task"] for p in yaml.safe_load(written)["policies"]] == ["t-1"]
