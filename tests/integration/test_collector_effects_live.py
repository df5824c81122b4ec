"""The attributes behind effect-based grading, from an SDK agent through a real broker to the collector's
score: a conversation-level expectation, a tool flagged read-only, the agent's instructions, a handoff."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.collector_kafka import collect_one_score, unique

pytestmark = pytest.mark.broker

AGENT = r"""
import sys
from agentwatch.sdk import configure, conversation, record_usage, shutdown, trace

bootstrap, topic, cid, flag = sys.argv[1:5]
configure("kafka", agent="travel-desk", version="2.0", bootstrap_servers=bootstrap, topic=topic,
          capture_content=True)
SYSTEM = "You are the travel desk. A change of flight costs a $25 fee."


@trace(kind="tool", read_only=flag == "flagged" or None)
def booking_details(booking_id: str) -> dict:  # not named like a lookup: only the flag says it changes nothing
    return {"booking_id": booking_id, "flight": "HAT136", "date": "2024-05-20"}


@trace(kind="tool")
def change_booking(booking_id: str, flight: str, date: str) -> dict:
    return {"booking_id": booking_id, "status": "changed"}


@trace(kind="tool")
def transfer_to_human_agents(summary: str) -> str:
    return "Transfer successful"


@trace(kind="llm")
def llm(messages: list, model: str) -> str:
    record_usage(model=model, input_tokens=900, output_tokens=60)
    return "ok"


@trace(kind="agent")
def desk(question: str) -> str:
    llm([{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}], "gpt-4o-mini")
    if "change" in question:
        booking = booking_details("B1")
        change_booking("B1", flight="HAT200", date="2024-05-21")
        return f"Done: {booking['flight']} is now HAT200 on 2024-05-21. The change fee is $25."
    transfer_to_human_agents(summary="wants the fee refunded")
    return ""  # handed off: no answer of its own


with conversation(id=cid, task="change"):
    conversation.expect([{"name": "change_booking", "arguments": {"booking_id": "B1", "flight": "HAT200"}}],
                        scope="conversation", outputs=["HAT200"])
    desk("Please change booking B1 to flight HAT200.")
    desk("And I want the fee back, get me a person.")
    conversation.end()
shutdown()
"""


def _score(broker, topic, tmp_path, flag: str) -> dict:
    bs = broker.bootstrap_servers
    cid = unique("effects")
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    run = subprocess.run(
        [sys.executable, str(script), bs, topic, cid, flag], check=False, capture_output=True, timeout=60
    )
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    score: dict = json.loads(collect_one_score(bs, topic, "effects")[0].value)
    return score


def test_conversation_expectation_read_only_flag_instructions_and_handoff_reach_the_score(
    broker, topic, tmp_path
):
    s = _score(broker, topic, tmp_path, "flagged")
    # graded by the conversation's expectation (no turn carries one); the lookup is free because its span says
    # it is read-only; "$25" is grounded by the instructions on the model call; the handoff ends it
    assert s["graded_by"] == ["expectations"], s
    assert (s["passed"], s["outcome"], s["reasons"], s["evidence"]) == (True, "complete", [], [])


def test_without_the_read_only_flag_the_lookup_is_an_effect_nobody_expected(broker, tmp_path):
    s = _score(broker, unique("effects-topic"), tmp_path, "unflagged")
    assert s["passed"] is False
    assert [r.split(":", 1)[0] for r in s["reasons"]] == ["expected_effects"]
    assert "booking_details" in s["reasons"][0]
