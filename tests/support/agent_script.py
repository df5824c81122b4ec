"""A small support agent instrumented with the SDK, as a script: `python agent.py BOOTSTRAP TOPIC CONVERSATION_ID`."""

from __future__ import annotations

AGENT = r"""
import sys
from agentwatch.sdk import configure, conversation, record_usage, shutdown, trace

bootstrap, topic, cid = sys.argv[1:4]
configure("kafka", agent="support-bot", version="1.2.0", bootstrap_servers=bootstrap, topic=topic,
          capture_content=True)


@trace(kind="tool")
def lookup_order(order_id: int) -> dict:
    return {"status": "shipped", "eta": "2026-11-25"}


@trace(kind="tool")
def refund(order_id: int, amount: float) -> dict:
    # "refunded" is what the answer takes from the result: the amount only echoes the call's own argument
    return {"status": "refunded", "amount": amount}


@trace(kind="llm")
def llm(prompt: str, model: str, n_in: int, n_out: int) -> str:
    record_usage(model=model, input_tokens=n_in, output_tokens=n_out)
    return "ok"


@trace(kind="agent")
def support_bot(question: str) -> str:
    if "refund" in question:
        conversation.expect([("refund", {"order_id": 42, "amount": 19.99})],
                            reference_answer="Refunded 19.99 USD for order 42.")
        result = refund(42, 19.99)
        llm(question, "gpt-4o", 2000, 150)
        conversation.end()
        return f"Refunded {result['amount']} USD for order 42."
    conversation.expect([("lookup_order", {"order_id": 42})],
                        reference_answer="Order 42 has shipped; ETA 2026-11-25.")
    order = lookup_order(order_id=42)
    llm(question, "gpt-4o-mini", 1200, 80)
    return f"Order 42 has {order['status']}; ETA {order['eta']}."


with conversation(id=cid, task="refunds", budget_usd=0.05, tags={"tier": "gold"}):
    support_bot("Where is order 42?")
    support_bot("Please refund it.")
shutdown()
"""
