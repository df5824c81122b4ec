"""Ground-truth writes the benchmark's environment refuses from its starting database are not required: the
reward's replay is refused too and changes nothing, so an agent that does not make them loses nothing."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest

from agentwatch.config import Settings
from agentwatch.importers.tau_bench import import_results
from agentwatch.importers.tau_domains import DOMAINS
from agentwatch.importers.tau_refusals import excuse_refused, refused_from_start
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import Conversation
from tests.support.tau2_simulations import tau2_call, tau2_simulation

ITEMS = ["4579334072", "6117189161", "4947717507"]
# τ-bench's retail task 12 (and τ²-bench's before its 2026 task fixes): a refund to PayPal of an order paid by
# card, which the environment refuses ("payment method should be the original payment method")
PAYPAL_RETURN = {"order_id": "#W5490111", "item_ids": ITEMS, "payment_method_id": "paypal_9497703"}
CARD_RETURN = {**PAYPAL_RETURN, "payment_method_id": "credit_card_3124723"}
# τ²-bench's retail task 64: an exchange of an order still pending (refused), then the same as its modification
PENDING = {
    "order_id": "#W7464385",
    "item_ids": ["1810466394"],
    "new_item_ids": ["6700049080"],
    "payment_method_id": "paypal_1261484",
}


def _table() -> dict[str, list[dict[str, Any]]]:
    text = (resources.files("agentwatch") / "data" / "tau_refused_writes.json").read_text("utf-8")
    table: dict[str, list[dict[str, Any]]] = json.loads(text)
    return table


def test_the_table_holds_writes_of_each_environment_with_where_they_were_found() -> None:
    """Each entry is a write tool of its environment (a lookup refused changes nothing anyway, and a tool the
    environment lacks means the table is of another version), with the error the replay gave and its tasks."""
    table = _table()
    assert set(table) <= set(DOMAINS) and table["retail"]
    for domain, writes in table.items():
        for write in writes:
            assert write["name"] in DOMAINS[domain].write, write
            assert write["error"] and write["tasks"] and isinstance(write["arguments"], dict), write


@pytest.mark.parametrize(
    ("name", "arguments", "refused"),
    [
        ("return_delivered_order_items", PAYPAL_RETURN, True),
        ("return_delivered_order_items", CARD_RETURN, False),  # the original payment method: accepted
        (
            "return_delivered_order_items",
            {**PAYPAL_RETURN, "item_ids": ITEMS[::-1]},
            False,
        ),  # as the truth holds it
        ("exchange_delivered_order_items", PENDING, True),
        ("modify_pending_order_items", PENDING, False),
    ],
)
def test_a_write_is_refused_only_as_the_ground_truth_holds_it(
    name: str, arguments: dict[str, Any], refused: bool
) -> None:
    assert refused_from_start("retail", name, arguments) is refused
    assert refused_from_start("airline", name, arguments) is False


def test_only_plain_expected_writes_are_excused() -> None:
    """A write with `alternatives` stays required (the same write on another tool was the valid one), and so
    does one whose `required` the import already decided (a lookup the reward checks, a call made before the
    agent ran)."""
    policy: dict[str, Any] = {
        "tools": [
            {"name": "return_delivered_order_items", "arguments": PAYPAL_RETURN},
            {"name": "exchange_delivered_order_items", "arguments": PENDING, "alternatives": ["x"]},
            {"name": "return_delivered_order_items", "arguments": PAYPAL_RETURN, "required": True},
            {"name": "return_delivered_order_items", "arguments": CARD_RETURN},
        ]
    }
    assert excuse_refused(policy, "retail") == ["return_delivered_order_items"]
    assert [t.get("required") for t in policy["tools"]] == [False, None, True, None]


def _simulation(task_id: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    """The agent looks the order up, makes `calls` (each answered) and hands off; the user ends."""
    return tau2_simulation(
        task_id,
        [tau2_call("get_order_details", {"order_id": "#W5490111"}), *calls],
        "Return my items from #W5490111 and refund them to PayPal.",
        "Refunds go to the original payment method; I transfer you.",
        "###TRANSFER###",
        '{"status": "ok"}',
    )


def _grade(
    tasks: list[dict[str, Any]], simulations: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[str]]:
    """Each task's verdict when its simulation is graded by the imported policies; the writes excused."""
    document = {
        "info": {"environment_info": {"domain_name": "retail"}},
        "tasks": tasks,
        "simulations": simulations,
    }
    out = import_results(document, "agent", "v", "run")
    scorer = ConversationScorer(Settings.model_validate({"policies": out.policies}), labels="ignore")
    verdicts = {line["task"]: scorer.score(Conversation.model_validate(line)).passed for line in out.lines}
    return verdicts, out.refused


def _task(task_id: str, *writes: dict[str, Any]) -> dict[str, Any]:
    lookup = tau2_call("get_order_details", {"order_id": "#W5490111"})
    return {"id": task_id, "evaluation_criteria": {"actions": [lookup, *writes], "reward_basis": ["DB"]}}


def test_an_agent_that_does_not_make_a_refused_ground_truth_write_passes() -> None:
    """Task 12 as τ-bench holds it: the ground truth refunds to PayPal, which the environment refuses; an agent
    that declines and hands off leaves the database as the reward's replay leaves it, and was rewarded. With
    the valid refund in the ground truth instead, the same conversation still fails (the write is missing);
    and an expected write with an alternative stays required."""
    tasks = [
        _task("12", tau2_call("return_delivered_order_items", PAYPAL_RETURN)),
        _task("valid", tau2_call("return_delivered_order_items", CARD_RETURN)),
        _task(
            "64",
            tau2_call("exchange_delivered_order_items", PENDING),
            tau2_call("modify_pending_order_items", PENDING),
        ),
    ]
    sims = [_simulation("12", []), _simulation("valid", []), _simulation("64", [])]
    verdicts, refused = _grade(tasks, sims)
    assert verdicts == {"12": True, "valid": False, "64": False}
    assert refused == ["task 12: return_delivered_order_items"]
