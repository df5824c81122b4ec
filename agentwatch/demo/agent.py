"""A simulated customer-support agent, instrumented with `@trace`, that the live demo runs.

It behaves like a real tool-using agent (look up an order, refund it, answer policy questions), with
failure modes drawn at random per version: hallucinated order ids, tool loops, wrong tools, crashes.
Version "1.1" is deliberately worse than "1.0" so the demo shows a pass^3 regression.

Most conversations are production-like: no expectations, graded by the task policies below (`POLICIES`, what a
team would put in its configuration). A small synthetic stream (`tags.source = synthetic`) carries expectations,
as scripted checks run against a live agent would.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from agentwatch.sdk import conversation, record_usage, trace

AGENT = "support-bot"


@dataclass(frozen=True, slots=True)
class Behaviour:
    """Per-version failure probabilities of the simulated agent."""

    hallucinate: float
    loop: float
    wrong_tool: float
    crash: float
    skip_tool_result: float


BEHAVIOURS: dict[str, Behaviour] = {
    "1.0": Behaviour(hallucinate=0.02, loop=0.01, wrong_tool=0.03, crash=0.01, skip_tool_result=0.02),
    "1.1": Behaviour(hallucinate=0.10, loop=0.05, wrong_tool=0.08, crash=0.03, skip_tool_result=0.06),
}

TASKS = ("order_status", "refund", "policy")
SYNTHETIC_SHARE = 0.2  # share of conversations that are scripted checks with expectations

# Task policies of the demo agent, in the form of the `policies:` configuration section.
POLICIES: list[dict[str, object]] = [
    {
        "id": "order-status",
        "task": "order_status",
        "tools": [{"name": "lookup_order", "arguments": {"order_id": {"from_input": True}}}],
        "forbidden_tools": ["refund_order"],
        "grounding": ["lookup_order"],
    },
    {
        "id": "refund",
        "task": "refund",
        "tools": [
            {"name": "lookup_order", "arguments": {"order_id": {"from_input": True}}},
            {
                "name": "refund_order",
                "arguments": {"order_id": {"from_input": True}, "amount": {"from_input": True}},
            },
        ],
        "order": "relative",
        "max_turns": 2,
    },
    {
        "id": "returns-policy",
        "task": "policy",
        "tools": [{"name": "search_policy"}],
        "grounding": ["search_policy"],
    },
]
POLICY = "Items can be returned within 30 days of delivery for a full refund."


class ToolFailure(RuntimeError):
    """A tool raised (the simulated backend is down)."""


@trace(kind="tool", read_only=True)  # a lookup: a call the policy does not list is free
def lookup_order(order_id: str) -> dict[str, str]:
    """Fetch an order from the (simulated) order service."""
    return {"order_id": order_id, "status": "shipped", "carrier": "DHL", "eta": "2026-11-25"}


@trace(kind="tool")
def refund_order(order_id: str, amount: float) -> dict[str, object]:
    """Refund an order (simulated payment service)."""
    return {"order_id": order_id, "refunded": amount, "refund_id": f"RF-{order_id[-4:]}"}


@trace(kind="tool", read_only=True)
def search_policy(query: str) -> str:
    """Search the policy knowledge base."""
    return POLICY


@trace(kind="tool", read_only=True)
def track_order(order_id: str) -> dict[str, str]:
    """Track an order's parcel; the (simulated) tracking service times out."""
    raise ToolFailure(f"tracking service timed out for {order_id}")


@trace(kind="tool")
def flaky_inventory(sku: str) -> int:
    """An inventory lookup whose backend is down."""
    raise ToolFailure(f"inventory service unavailable for {sku}")


@trace(kind="llm", name="chat")
def _model_call(model: str, prompt_tokens: int, completion_tokens: int) -> None:
    record_usage(model=model, input_tokens=prompt_tokens, output_tokens=completion_tokens)


class SupportAgent:
    """The agent: one `handle` call is one turn."""

    def __init__(self, version: str, rng: random.Random, model: str = "gpt-4o-mini") -> None:
        self.version = version
        self.behaviour = BEHAVIOURS[version]
        self.rng = rng
        self.model = model

    @trace(kind="agent", name=AGENT)
    def handle(self, message: str, task: str, order_id: str, amount: float) -> str:
        """Answer one user message."""
        b, rng = self.behaviour, self.rng
        _model_call(self.model, rng.randint(400, 900), rng.randint(40, 160))
        if rng.random() < b.crash:
            flaky_inventory("SKU-1")  # raises: the turn errors (abandoned)
        if task == "order_status":
            if rng.random() < b.loop:
                # stuck: the tracking service times out, the same call is retried, then the agent guesses
                for _ in range(3):
                    try:
                        track_order(order_id)
                    except ToolFailure:
                        pass
                return "Your order is on its way."
            order = (
                lookup_order(order_id) if rng.random() >= b.wrong_tool else {"status": search_policy(message)}
            )
            _model_call(self.model, rng.randint(600, 1200), rng.randint(40, 120))
            if rng.random() < b.hallucinate:
                return f"Order {order_id[:-1]}9 was delivered yesterday."
            if rng.random() < b.skip_tool_result:
                return "Your order is on its way."
            return f"Order {order_id} is {order.get('status', 'unknown')} with {order.get('carrier', '?')}."
        if task == "refund" and not message.startswith("Yes"):
            order = lookup_order(order_id)
            return f"Order {order_id} was {order['status']}. Shall I refund {amount:.2f} USD?"
        if task == "refund":
            lookup_order(order_id)
            if rng.random() < b.wrong_tool:
                return f"I have refunded {amount:.2f} USD for order {order_id}."  # claims an action not taken
            refund = refund_order(order_id, amount)
            _model_call(self.model, rng.randint(600, 1200), rng.randint(40, 120))
            if rng.random() < b.hallucinate:
                return f"Refund RF-{rng.randint(1000, 9999)} of {amount + 10:.2f} USD is on its way."
            return f"Refund {refund['refund_id']} of {amount:.2f} USD issued for order {order_id}."
        policy = search_policy(message)
        if rng.random() < b.hallucinate:
            return "Items can be returned within 90 days, no questions asked."
        return policy


def run_conversation(agent: SupportAgent, conversation_id: str, task: str, synthetic: bool = True) -> None:
    """Run one conversation (one or two turns); a synthetic one carries expectations, a production one none."""
    rng = agent.rng
    order_id = f"ORD-{rng.randint(10000, 99999)}"
    amount = round(rng.uniform(10, 200), 2)
    tags = {
        "category": "core" if task != "policy" else "faq",
        "difficulty": "easy" if task != "refund" else "medium",
        "source": "synthetic" if synthetic else "production",
    }
    expect = conversation.expect if synthetic else _no_expectations
    with conversation(id=conversation_id, task=task, agent=AGENT, version=agent.version, tags=tags):
        try:
            if task == "order_status":
                expect([("lookup_order", {"order_id": order_id})], forbidden_tools=["refund_order"])
                agent.handle(f"Where is my order {order_id}?", task, order_id, amount)
            elif task == "refund":
                expect([("lookup_order", {"order_id": order_id})], uses_tool_results=False)
                agent.handle(f"I want a refund for {order_id}.", task, order_id, amount)
                expect(
                    [("lookup_order", None), ("refund_order", {"order_id": order_id, "amount": amount})],
                    uses_tool_results=True,
                )
                agent.handle(f"Yes, refund {amount:.2f} USD for {order_id} please.", task, order_id, amount)
            else:
                expect(["search_policy"], reference_answer=POLICY)
                agent.handle("What is your return policy?", task, order_id, amount)
        except ToolFailure:
            pass  # the span recorded the error; a real agent would apologise to the user
        conversation.end()


def _no_expectations(*_args: object, **_kwargs: object) -> None:
    """Production traffic: nobody knows the right answer in advance."""
