"""The tools of τ-bench's and τ²-bench's standard environments: which of them can change the database.

A task rewarded on the database's final state can be failed by a call only when the call can change that
database: one of the environment's WRITE tools. Agents bring tools of their own beside the environment's (a
planner's `todo`, a workflow graph's `goto_node`, a `think`), and those cannot. When every ground-truth action of
a results file names a tool of exactly one standard environment, the file is of that environment, and its
policies treat every other tool as read-only (`read_only_tools: ["*", "!<write tool>", …]`). A run of a
modified or custom environment (a ground truth naming a tool outside every list) keeps the default
classification by name.

The lists are τ²-bench's `@is_tool(ToolType.WRITE)` methods and the others of each domain's agent tools
(sierra-research/tau2-bench, `src/tau2/domains/{airline,retail,telecom,mock}/tools.py` at a2c0247, 2026-08-18);
τ-bench's airline and retail tools are a subset of the same names. For `banking_knowledge` (τ³-bench), the tools
that change its database (`mutates_state`) are the writes, among its agent tools, its discoverable agent tools
(`tools.py`) and its retrieval tools (`retrieval_mixins.py`, same commit).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["DOMAINS", "UNUSED_ARGUMENTS", "Domain", "domain_of", "effect_free_patterns", "fit_to_domain"]


@dataclass(frozen=True, slots=True)
class Domain:
    """An environment's agent tools: those that write its database and the others; `recorded`: the writes whose
    call the environment records even when the tool returns an error (banking_knowledge's dispatcher logs a call
    of a discoverable write whatever it returned); `formerly_recorded`: the other tools whose every call its
    grading before tau2-bench 1.0.1 recorded too (`tau_versions`)."""

    write: frozenset[str]
    other: frozenset[str]
    recorded: frozenset[str] = frozenset()
    formerly_recorded: frozenset[str] = frozenset()

    @property
    def tools(self) -> frozenset[str]:
        """Every agent tool of the environment."""
        return self.write | self.other


# banking_knowledge's discoverable agent tools that change its state: the dispatcher records a call of one in the
# database whatever the tool returned, an error too.
_BANKING_DISCOVERABLE_WRITES = frozenset(
    {
        "activate_debit_card_8291",
        "activate_debit_card_8292",
        "activate_debit_card_8293",
        "apply_checking_account_credit_5829",
        "apply_credit_card_account_flag_6147",
        "apply_savings_account_credit_6831",
        "apply_statement_credit_8472",
        "approve_credit_limit_increase_5847",
        "change_debit_card_pin_6285",
        "clear_debit_card_fraud_alert_4892",
        "close_bank_account_7392",
        "close_credit_card_account_7834",
        "close_debit_card_4721",
        "deny_credit_limit_increase_5848",
        "example_agent_tool_0000",
        "file_credit_card_transaction_dispute_4829",
        "file_debit_card_transaction_dispute_6281",
        "freeze_debit_card_3892",
        "log_credit_card_closure_reason_4521",
        "open_bank_account_4821",
        "order_debit_card_5739",
        "order_replacement_credit_card_7291",
        "pay_credit_card_from_checking_9182",
        "request_temporary_debit_card_limit_increase_8374",
        "reset_debit_card_pin_6284",
        "set_debit_card_recurring_block_7382",
        "submit_credit_limit_increase_request_7392",
        "submit_interest_discrepancy_report_7294",
        "transfer_funds_between_bank_accounts_7291",
        "unfreeze_debit_card_3893",
        "update_transaction_rewards_3847",
    }
)

DOMAINS: dict[str, Domain] = {
    "airline": Domain(
        write=frozenset(
            {
                "book_reservation",
                "cancel_reservation",
                "send_certificate",
                "update_reservation_baggages",
                "update_reservation_flights",
                "update_reservation_passengers",
            }
        ),
        other=frozenset(
            {
                "get_flight_status",
                "get_reservation_details",
                "get_user_details",
                "list_all_airports",
                "search_direct_flight",
                "search_onestop_flight",
                "calculate",
                "think",
                "transfer_to_human_agents",
            }
        ),
    ),
    "retail": Domain(
        write=frozenset(
            {
                "cancel_pending_order",
                "exchange_delivered_order_items",
                "modify_pending_order_address",
                "modify_pending_order_items",
                "modify_pending_order_payment",
                "modify_user_address",
                "return_delivered_order_items",
            }
        ),
        other=frozenset(
            {
                "find_user_id_by_email",
                "find_user_id_by_name_zip",
                "get_item_details",
                "get_order_details",
                "get_product_details",
                "get_user_details",
                "list_all_product_types",
                "calculate",
                "think",
                "transfer_to_human_agents",
            }
        ),
    ),
    "telecom": Domain(
        write=frozenset(
            {
                "disable_roaming",
                "enable_roaming",
                "refuel_data",
                "resume_line",
                "send_payment_request",
                "suspend_line",
            }
        ),
        other=frozenset(
            {
                "get_bills_for_customer",
                "get_customer_by_id",
                "get_customer_by_name",
                "get_customer_by_phone",
                "get_data_usage",
                "get_details_by_id",
                "transfer_to_human_agents",
            }
        ),
    ),
    # The agent's tools and the discoverable tools it calls through `call_discoverable_agent_tool`
    # (`discoverable_tools`), read as the tools they name; the user's tools are not the agent's. Unlocking a
    # tool is kept in memory, not in the database; `give_discoverable_user_tool` records what it gave.
    "banking_knowledge": Domain(
        write=_BANKING_DISCOVERABLE_WRITES
        | {
            "call_discoverable_agent_tool",
            "change_user_email",
            "give_discoverable_user_tool",
            "log_verification",
        },
        other=frozenset(
            {
                "KB_search",
                "KB_search_bm25",
                "KB_search_dense",
                "emergency_credit_bureau_incident_transfer_1114",
                "get_all_user_accounts_by_user_id_3847",
                "get_atm_deposit_images_8473",
                "get_bank_account_transactions_9173",
                "get_closure_reason_history_8293",
                "get_credit_card_accounts_by_user",
                "get_credit_card_transactions_by_user",
                "get_credit_limit_increase_history_4829",
                "get_current_time",
                "get_debit_cards_by_account_id_7823",
                "get_debit_dispute_status_7483",
                "get_payment_history_6183",
                "get_pending_replacement_orders_5765",
                "get_referrals_by_user",
                "get_user_dispute_history_7291",
                "get_user_information_by_email",
                "get_user_information_by_id",
                "get_user_information_by_name",
                "grep",
                "initial_transfer_to_human_agent_0218",
                "initial_transfer_to_human_agent_1822",
                "list_discoverable_agent_tools",
                "rewrite_context",
                "shell",
                "transfer_to_human_agents",
                "unlock_discoverable_agent_tool",
            }
        ),
        recorded=_BANKING_DISCOVERABLE_WRITES,
        formerly_recorded=frozenset(
            {
                "emergency_credit_bureau_incident_transfer_1114",
                "get_all_user_accounts_by_user_id_3847",
                "get_atm_deposit_images_8473",
                "get_bank_account_transactions_9173",
                "get_closure_reason_history_8293",
                "get_credit_limit_increase_history_4829",
                "get_debit_cards_by_account_id_7823",
                "get_debit_dispute_status_7483",
                "get_payment_history_6183",
                "get_pending_replacement_orders_5765",
                "get_user_dispute_history_7291",
                "initial_transfer_to_human_agent_0218",
                "initial_transfer_to_human_agent_1822",
            }
        ),
    ),
    "mock": Domain(
        write=frozenset({"create_task", "update_task_status"}),
        other=frozenset({"get_users", "think", "transfer_to_human_agents"}),
    ),
}


def _no_bag_charged(arguments: dict[str, Any]) -> bool:
    """airline's `update_reservation_baggages` charges 50 for each non-free bag past the reservation's: with
    `nonfree_baggages` 0 it charges nothing, whatever the reservation holds."""
    value = arguments.get("nonfree_baggages")
    return type(value) in (int, float) and value == 0


# Per environment, (write, argument, when): an argument the write's effect does not depend on where `when` holds of
# the call's arguments. It must still name something that exists (else the environment refuses the call), but
# which one leaves the database the same: airline's `update_reservation_baggages` writes the payment method only
# into a payment it records when it charges, and charged nothing a gift card is "charged" 0 (τ-bench's
# `update_reservation_baggages.py` at 59a200c; τ²-bench's `update_reservation_baggages` and `_payment_for_update`
# at a2c0247).
UNUSED_ARGUMENTS: dict[str, tuple[tuple[str, str, Callable[[dict[str, Any]], bool]], ...]] = {
    "airline": (("update_reservation_baggages", "payment_id", _no_bag_charged),),
}


def domain_of(ground_truth_tools: Iterable[str]) -> str | None:
    """The one standard environment whose tools include every ground-truth tool named, or None."""
    named = set(ground_truth_tools)
    if not named:
        return None
    found = [name for name, domain in DOMAINS.items() if named <= domain.tools]
    return found[0] if len(found) == 1 else None


def effect_free_patterns(domain: str) -> list[str]:
    """A policy's `read_only_tools` for a task of `domain`: every tool but the environment's writes."""
    return ["*", *(f"!{tool}" for tool in sorted(DOMAINS[domain].write))]


def fit_to_domain(policy: dict[str, Any], domain: str, formerly: bool = False) -> None:
    """A policy of a task of `domain` whose reward reads the final state, fitted to what the environment records:
    its other tools read-only, an expected call it does not record left out unless required (a tool the names
    alone took for a write, `unlock_discoverable_agent_tool`), the writes it records even when they fail
    forbidden where the ground truth does not make them (any call of one changes the state the reward reads), and an
    argument the write's effect does not depend on there (`UNUSED_ARGUMENTS`) ignored;
    `formerly`: the run was rewarded by the grading that recorded `formerly_recorded` calls too."""
    env = DOMAINS[domain]
    policy["read_only_tools"] = effect_free_patterns(domain)
    policy["tools"] = [
        t
        for t in policy["tools"]
        if t.get("required") is True
        or not all(n in env.other for n in (t["name"], *t.get("alternatives", ())))
    ]
    for tool in policy["tools"]:
        for name, argument, unused in UNUSED_ARGUMENTS.get(domain, ()):
            if tool["name"] == name and argument in tool["arguments"] and unused(tool["arguments"]):
                tool["match"] = dict(sorted({**tool.get("match", {}), argument: "ignore"}.items()))
    expected = {name for t in policy["tools"] for name in (t["name"], *t.get("alternatives", ()))}
    forbidden = sorted((env.recorded | env.formerly_recorded if formerly else env.recorded) - expected)
    if forbidden:
        policy["forbidden_tools"] = forbidden
