"""An argument a write's effect does not depend on is not compared: airline's `update_reservation_baggages` with
no non-free bag charges nothing, so which payment method it names leaves the database the reward reads the same."""

from __future__ import annotations

from typing import Any

from agentwatch.config import Settings
from agentwatch.importers.tau_bench import import_results
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import Conversation
from tests.support.tau2_simulations import tau2_call, tau2_simulation


def _bags(nonfree: int, payment: str, total: int = 2) -> dict[str, Any]:
    arguments = {
        "reservation_id": "ZFA04Y",
        "total_baggages": total,
        "nonfree_baggages": nonfree,
        "payment_id": payment,
    }
    return tau2_call("update_reservation_baggages", arguments)


def _simulation(task_id: str, call: dict[str, Any]) -> dict[str, Any]:
    """The agent looks the reservation up, makes `call` (answered) and says it is done; the user ends."""
    lookup = tau2_call("get_reservation_details", {"reservation_id": "ZFA04Y"})
    return tau2_simulation(
        task_id,
        [lookup, call],
        "Please add a bag to reservation ZFA04Y.",
        "Done: reservation ZFA04Y now has 2 bags.",
        "Thanks! ###STOP###",
        '{"reservation_id": "ZFA04Y"}',
    )


def _import(cases: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Per task (ground-truth write, the agent's write): the imported policy's expected write, and the verdict."""
    tasks = [
        {"id": task, "evaluation_criteria": {"actions": [truth], "reward_basis": ["DB"]}}
        for task, (truth, _made) in cases.items()
    ]
    document = {
        "info": {"environment_info": {"domain_name": "airline"}},
        "tasks": tasks,
        "simulations": [_simulation(task, made) for task, (_truth, made) in cases.items()],
    }
    out = import_results(document, "agent", "v", "run")
    assert out.domain == "airline"
    scorer = ConversationScorer(Settings.model_validate({"policies": out.policies}), labels="ignore")
    verdicts = {line["task"]: scorer.score(Conversation.model_validate(line)).passed for line in out.lines}
    expected = {p["task"]: p["tools"][0] for p in out.policies}
    return expected, verdicts


def test_the_payment_of_a_baggage_update_that_charges_nothing_is_not_compared() -> None:
    """With no non-free bag the payment named is free; with one it is charged and compared; the other arguments
    are compared either way."""
    expected, verdicts = _import(
        {
            "free, another card": (_bags(0, "gift_card_6276644"), _bags(0, "credit_card_9879898")),
            "free, same card": (_bags(0, "gift_card_6276644"), _bags(0, "gift_card_6276644")),
            "free, another total": (_bags(0, "gift_card_6276644"), _bags(0, "credit_card_9879898", total=3)),
            "charged, another card": (_bags(1, "gift_card_6276644"), _bags(1, "credit_card_9879898")),
            "charged, same card": (_bags(1, "gift_card_6276644"), _bags(1, "gift_card_6276644")),
        }
    )
    assert verdicts == {
        "free, another card": True,
        "free, same card": True,
        "free, another total": False,
        "charged, another card": False,
        "charged, same card": True,
    }
    assert expected["free, another card"]["match"] == {"payment_id": "ignore"}
    assert "match" not in expected["charged, another card"]
