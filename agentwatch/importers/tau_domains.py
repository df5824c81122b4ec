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
τ-bench's airline and retail tools are a subset of the same names.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["DOMAINS", "Domain", "domain_of", "effect_free_patterns"]


@dataclass(frozen=True, slots=True)
class Domain:
    """An environment's agent tools: those that write its database and the others."""

    write: frozenset[str]
    other: frozenset[str]

    @property
    def tools(self) -> frozenset[str]:
        """Every agent tool of the environment."""
        return self.write | self.other


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
    "mock": Domain(
        write=frozenset({"create_task", "update_task_status"}),
        other=frozenset({"get_users", "transfer_to_human_agents"}),
    ),
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
