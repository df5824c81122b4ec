"""Task policies: every rule, argument constraints, matching, validation, and `agentwatch policy check`."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from agentwatch.cli import app
from agentwatch.config import ConfigError, Settings, TaskPolicy, load_settings
from agentwatch.scorers import ConversationScorer
from agentwatch.scorers.names import NameNormalizer
from agentwatch.scorers.policy import PolicyBook, grade_policy
from agentwatch.wire.schema import Conversation, Outcome
from tests.support.production_traffic import POLICY, scenario


def conv(*turns: dict, task: str = "refund", agent: str = "support-bot") -> Conversation:
    return Conversation.model_validate(
        {"conversation_id": "c1", "agent": agent, "task": task, "turns": list(turns)}
    )


def call(name: str, error: str | None = None, **arguments: object) -> dict:
    return {"name": name, "arguments": arguments, "result": {"ok": True}, "error": error}


def failures(policy: dict, c: Conversation, cost: float | None = None) -> set[str]:
    result = grade_policy(TaskPolicy.model_validate({"id": "p", **policy}), c, cost, NameNormalizer())
    return {r.split(":", 1)[0] for r in result.failures}


TURN = {"input": "Refund order 4100 please, 25 USD", "answer": "Done."}


@pytest.mark.parametrize(
    ("constraint", "value", "ok"),
    [
        ("4100", "4100", True),
        ("4100", 4100, True),  # a number and its text are the same argument
        ("4100", "4101", False),
        ({"regex": r"\d{4}"}, "4100", True),
        ({"regex": r"\d{4}"}, "41000", False),  # full match, not search
        ({"regex": "(a+)+b"}, "a" * 5000, False),  # no backtracking: Python's re took minutes at 32 a's
        ({"regex": "(a+)+b"}, "a" * 5000 + "b", True),
        ({"from_input": True}, "4100", True),
        ({"from_input": True}, "9999", False),
        ({"from_input": True}, "", False),
        ({"any": True}, {"deep": [1]}, True),
    ],
)
def test_argument_constraints(constraint: object, value: object, ok: bool) -> None:
    c = conv(dict(TURN, tool_calls=[{"name": "refund", "arguments": {"order": value}}]))
    assert (
        "policy_tools" not in failures({"tools": [{"name": "refund", "arguments": {"order": constraint}}]}, c)
    ) is ok


def test_missing_argument_and_normalised_names() -> None:
    c = conv(dict(TURN, tool_calls=[call("functions.Refund-Order")]))
    assert failures({"tools": [{"name": "refund_order"}]}, c) == set()
    # the refund without an order is not the expected one, and it is a call with effects nobody expected
    assert failures({"tools": [{"name": "refund_order", "arguments": {"order": {"any": True}}}]}, c) == {
        "policy_tools",
        "policy_effects",
    }


@pytest.mark.parametrize(
    ("order", "calls", "expected"),
    [
        ("any", ["refund", "lookup"], set()),
        ("relative", ["refund", "lookup"], {"policy_order"}),
        ("relative", ["lookup", "get_note", "refund"], set()),  # a lookup between them is free
        ("relative", ["lookup", "note", "refund"], {"policy_effects"}),  # a call with effects nobody expected
        ("strict", ["lookup", "note", "refund"], {"policy_order"}),
        ("strict", ["lookup", "get_note", "refund"], {"policy_order"}),
        ("strict", ["lookup", "refund"], set()),
        ("strict", ["lookup"], {"policy_tools"}),
    ],
)
def test_order(order: str, calls: list[str], expected: set[str]) -> None:
    c = conv(dict(TURN, tool_calls=[call(n) for n in calls]))
    assert failures({"tools": [{"name": "lookup"}, {"name": "refund"}], "order": order}, c) == expected


def test_strict_order_with_one_tool_counts_extra_calls() -> None:
    c = conv(dict(TURN, tool_calls=[call("lookup"), call("lookup", order="1")]))
    assert failures({"tools": [{"name": "lookup"}], "order": "strict"}, c) == {"policy_order"}


def test_forbidden_grounding_and_caps() -> None:
    early = {"input": "hi", "answer": "Refunded!", "tool_calls": [call("refund")]}
    late = {"input": "ok", "answer": "done", "tool_calls": [call("lookup"), call("delete_account")]}
    c = conv(early, late)
    found = failures(
        {
            "forbidden_tools": ["delete-account"],
            "grounding": ["lookup"],
            "max_tool_calls": 2,
            "max_turns": 1,
            "max_cost_usd": 0.01,
        },
        c,
        cost=0.02,
    )
    assert found == {
        "policy_forbidden",
        "policy_grounding",
        "policy_max_tool_calls",
        "policy_max_turns",
        "policy_max_cost",
    }
    assert failures({"max_cost_usd": 0.01}, c, cost=None) == set()  # unknown cost is not checked
    # a failed lookup does not ground the answer
    failed_lookup = conv({"input": "q", "answer": "a", "tool_calls": [call("lookup", error="Timeout")]})
    assert failures({"grounding": ["lookup"]}, failed_lookup) == {"policy_grounding"}


def test_policy_book_globs_and_first_match() -> None:
    book = PolicyBook(
        [
            TaskPolicy(id="a", agent="support-*", task="refund*"),
            TaskPolicy(id="b", task="refund"),
        ]
    )
    a, b = book.match("support-bot", "refund_v2"), book.match("sales-bot", "refund")
    assert a is not None and a.id == "a"
    assert b is not None and b.id == "b"
    assert book.match("sales-bot", "faq") is None


def test_scorer_records_policy_and_forbidden_evidence_expectations_win() -> None:
    settings = Settings(
        policies=[TaskPolicy(id="refunds", version="7", task="refund", forbidden_tools=["delete"])]
    )
    scorer = ConversationScorer(settings)
    s = scorer.score(conv(dict(TURN, tool_calls=[call("delete")])))
    assert s.policy == "refunds@7" and s.graded_by == ["policy"] and s.passed is False
    assert s.evidence == ["forbidden_tool"] and s.outcome is Outcome.PARTIAL_INCORRECT
    # expectations on the transcript win over the policy
    expected = dict(
        TURN,
        tool_calls=[call("delete")],
        expected={"tools": [{"name": "delete"}], "uses_tool_results": False},
    )
    s2 = scorer.score(conv(expected))
    assert s2.policy is None and s2.graded_by == ["expectations"] and s2.passed is True


def test_bad_policy_config_names_the_key(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"policies": [{"id": "p", "ordr": "strict"}]}))
    with pytest.raises(ConfigError, match=r"policies\.0\.ordr"):
        load_settings(path)
    path.write_text(yaml.safe_dump({"policies": [{"id": "p", "order": "sometimes"}]}))
    with pytest.raises(ConfigError, match=r"policies\.0\.order"):
        load_settings(path)
    path.write_text(yaml.safe_dump({"policies": [{"id": "p"}, {"id": "p"}]}))
    with pytest.raises(ConfigError, match="used twice"):
        load_settings(path)
    path.write_text(yaml.safe_dump({"sampling": {"judge_rate": 2}}))
    with pytest.raises(ConfigError, match=r"sampling\.judge_rate"):
        load_settings(path)


def test_policy_check_cli(tmp_path: Path) -> None:
    transcripts = tmp_path / "t.jsonl"
    transcripts.write_text(
        "".join(json.dumps(line) + "\n" for line in scenario(100, seed=random.randint(0, 99)))
    )
    policies = tmp_path / "policies.yaml"
    policies.write_text(yaml.safe_dump([POLICY]))
    result = CliRunner().invoke(app, ["policy", "check", str(policies), str(transcripts)])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if "order_status" in line)
    assert "order-status@3" in row and "100" in row and "85 (85.0%)" in row
    assert "error 10" in row and "loop 5" in row and "—" in row  # no labels: no agreement to show
    # a label never decides a verdict here: every conversation labelled a failure, the policy's verdicts stay
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text(
        "".join(
            json.dumps(dict(line, outcome="abandoned")) + "\n" for line in map(json.loads, transcripts.open())
        )
    )
    flipped = CliRunner().invoke(
        app, ["policy", "check", str(policies), str(labelled)], env={"COLUMNS": "200"}
    )
    assert flipped.exit_code == 0, flipped.output
    row = next(line for line in flipped.output.splitlines() if "order_status" in line)
    assert "85 (85.0%)" in row and "15 of 100" in row and "label" not in row
    policies.write_text(
        yaml.safe_dump(
            {"policies": [{"id": "x", "tools": [{"name": "a", "arguments": {"k": {"regex": "("}}}]}]}
        )
    )
    bad = CliRunner().invoke(app, ["policy", "check", str(policies), str(transcripts)])
    assert bad.exit_code == 2 and "policies.0.tools.0.arguments" in bad.output
    policies.write_text(
        yaml.safe_dump([{"id": "x", "tools": [{"name": "a", "arguments": {"k": {"regex": "(a)\\1"}}}]}])
    )
    backreference = CliRunner().invoke(app, ["policy", "check", str(policies), str(transcripts)])
    assert backreference.exit_code == 2 and "RE2 syntax: no backreferences" in backreference.output
    # read as a configuration file is: bounded, one line of error (a billion laughs had it past 1.4 GB)
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)
    )
    for text, said in ((laughs.encode(), "expands to more than"), (b"policies: \xff\xfe", "not UTF-8")):
        policies.write_bytes(text)
        refused = CliRunner().invoke(app, ["policy", "check", str(policies), str(transcripts)])
        assert refused.exit_code == 2 and said in refused.output, refused.output


# --------------------------------------------------------------------------- effects, not keystrokes


def _write(name: str, error: str | None = None, **arguments: object) -> dict:
    return {"name": name, "arguments": arguments, "result": None if error else {"ok": True}, "error": error}


MODIFY = {
    "name": "modify_pending_order_items",
    "arguments": {"order_id": "#W9", "item_ids": ["a", "b"], "new_item_ids": ["a2", "b2"], "pay": "card_1"},
    "replacements": [["item_ids", "new_item_ids"]],
}


@pytest.mark.parametrize(
    ("items", "new_items", "ok"),
    [
        (["a", "b"], ["a2", "b2"], True),
        (["b", "a"], ["b2", "a2"], True),  # the same replacements in another order
        (["a", "x", "b"], ["a2", "x", "b2"], True),  # x replaced by itself changes nothing
        (["a", "b"], ["b2", "a2"], False),  # a -> b2: another replacement
        (["a"], ["a2"], False),  # one missing
        (["a", "b", "c"], ["a2", "b2", "c2"], False),  # one more
        ("['b', 'a']", '["b2", "a2"]', True),  # the lists passed as their text (a real τ-bench agent did)
        ("['a', 'b']", "['b2', 'a2']", False),
    ],
)
def test_replacements_compare_as_pairs_in_any_order(items: object, new_items: object, ok: bool) -> None:
    made = _write(
        "modify_pending_order_items", order_id="#W9", item_ids=items, new_item_ids=new_items, pay="card_1"
    )
    found = failures({"tools": [MODIFY]}, conv(dict(TURN, tool_calls=[made])))
    assert (found == set()) is ok, found


def test_unordered_lists_and_a_write_replacing_items_by_themselves() -> None:
    """Items in another order where the environment sorts them are the same state; a write nobody expected that
    replaces every element by itself is still an effect: the environment records the modification (τ-bench marks
    the order modified, and a real run whose agent did so was rewarded 0)."""
    policy = {
        "tools": [
            {
                "name": "return_items",
                "arguments": {"order_id": "#W1", "item_ids": ["1", "2"]},
                "match": {"item_ids": "unordered"},
            }
        ]
    }
    done = _write("return_items", order_id="#W1", item_ids=["2", "1"])
    assert failures(policy, conv(dict(TURN, tool_calls=[done]))) == set()
    by_itself = _write("modify_items", order_id="#W1", item_ids=["3"], new_item_ids=["3"])
    assert failures(policy, conv(dict(TURN, tool_calls=[done, by_itself]))) == {"policy_effects"}
    real = _write("modify_items", order_id="#W1", item_ids=["3"], new_item_ids=["4"])
    assert failures(policy, conv(dict(TURN, tool_calls=[done, real]))) == {"policy_effects"}


def _returning(name: str, result: object, **arguments: object) -> dict:
    return {"name": name, "arguments": arguments, "result": result}


def test_a_write_that_returned_the_record_last_seen_left_the_state_as_it_was() -> None:
    """A reservation "changed" to the flights and cabin it had returns the record its lookup returned, and the
    same change made twice returns the same record twice: nobody's effect. Not so when a write of another such
    record came between (a change undone is two changes), or when the result is too small to be a record rather
    than an acknowledgement (two e-mails "sent")."""
    booked = {
        "reservation_id": "R1",
        "cabin": "economy",
        "flights": [{"flight_number": "HAT1"}],
        "status": "ok",
    }
    moved = {**booked, "flights": [{"flight_number": "HAT2"}]}
    lookup = _returning("get_reservation_details", booked, reservation_id="R1")
    same = _returning(
        "update_reservation_flights", dict(reversed(booked.items())), reservation_id="R1", cabin="economy"
    )
    policy: dict = {"tools": []}
    assert failures(policy, conv(dict(TURN, tool_calls=[lookup, same]))) == set()
    undone = [lookup, _returning("update_reservation_flights", moved, reservation_id="R1"), same]
    assert failures(policy, conv(dict(TURN, tool_calls=undone))) == {"policy_effects"}
    twice = [
        _returning("send_certificate", booked, user_id="u1"),
        _returning("send_certificate", booked, user_id="u1"),
    ]
    assert failures(policy, conv(dict(TURN, tool_calls=twice))) == {"policy_effects"}  # the first is one
    assert failures({"tools": [{"name": "send_certificate"}]}, conv(dict(TURN, tool_calls=twice))) == set()
    ack = {"status": "sent"}
    small = [_returning("get_mail_status", ack, id="m1"), _returning("send_email", ack, to="a@b.c")]
    assert failures(policy, conv(dict(TURN, tool_calls=small))) == {"policy_effects"}
    # nor does such a write count as a change that could have caused a later refusal
    expected = {"name": "modify_address", "arguments": {"order": "#W6", "zip": "10093"}}
    refused = _write("modify_address", error="Error: non-pending order", order="#W6", zip="10093")
    replayed = {"tools": [expected], "refused_first": "note"}
    assert failures(replayed, conv(dict(TURN, tool_calls=[lookup, same, refused]))) == set()


def test_a_write_of_another_record_between_does_not_hide_that_this_one_is_as_last_seen() -> None:
    """A τ²-bench retail agent changed an order's items, then another order's, then set the first order's address
    again to the one it already had: the record it returned is the first order as last seen, though the latest
    record of that kind was the other order (a real success failed for an effect nobody expected). The same
    write returning a record that differs from its order's latest is still an effect."""
    order = {"order_id": "#W1", "address": {"zip": "10116"}, "items": ["new"], "status": "pending"}
    other = {**order, "order_id": "#W2", "items": ["other"]}
    items = _returning(
        "modify_pending_order_items", order, order_id="#W1", item_ids=["old"], new_item_ids=["new"]
    )
    items_other = _returning(
        "modify_pending_order_items", other, order_id="#W2", item_ids=["x"], new_item_ids=["y"]
    )
    again = _returning("modify_pending_order_address", order, order_id="#W1", zip="10116")
    policy = {
        "tools": [
            {"name": "modify_pending_order_items", "arguments": {"order_id": "#W1"}},
            {"name": "modify_pending_order_items", "arguments": {"order_id": "#W2"}},
        ]
    }
    assert failures(policy, conv(dict(TURN, tool_calls=[items, items_other, again]))) == set()
    moved = _returning(
        "modify_pending_order_address", {**order, "address": {"zip": "10001"}}, order_id="#W1", zip="10001"
    )
    assert failures(policy, conv(dict(TURN, tool_calls=[items, items_other, moved]))) == {"policy_effects"}


def test_alternatives_meet_the_expectation_with_the_same_arguments() -> None:
    policy = {
        "tools": [
            {"name": "exchange_delivered", "alternatives": ["modify_pending"], "arguments": {"order": "#W7"}}
        ]
    }
    assert failures(policy, conv(dict(TURN, tool_calls=[_write("modify_pending", order="#W7")]))) == set()
    assert failures(policy, conv(dict(TURN, tool_calls=[_write("modify_pending", order="#W8")]))) == {
        "policy_tools",
        "policy_effects",
    }


def test_an_expected_write_refused_beside_the_valid_one_is_a_note() -> None:
    """The ground truth held a write the environment refuses and the valid one; the agent made both: the refused
    one is not missing, and a note says so."""
    policy = {
        "tools": [
            {"name": "return_items", "arguments": {"order": "#W5", "pay": "paypal_1"}},
            {"name": "return_items", "arguments": {"order": "#W5", "pay": "card_2"}},
        ]
    }
    refused = _write(
        "return_items", error="Error: payment method should be the original one", order="#W5", pay="paypal_1"
    )
    valid = _write("return_items", order="#W5", pay="card_2")
    result = grade_policy(
        TaskPolicy.model_validate({"id": "p", **policy}),
        conv(dict(TURN, tool_calls=[refused, valid])),
        None,
        NameNormalizer(),
    )
    assert result.passed and len(result.notes) == 1 and "refused in this run" in result.notes[0]


def test_an_expected_write_the_agents_own_write_got_refused_is_missing_beside_another_of_its_tool() -> None:
    """Two expected address changes of two orders; the agent changed one order's items first, which made it no
    longer pending, so its address change was refused: the refusal is the agent's doing, and that address change
    is missing, though the other order's (the same tool) was made. Made before any write, it is excused."""
    policy = {
        "tools": [
            {"name": "modify_address", "arguments": {"order": "#W1", "zip": "76165"}},
            {"name": "modify_address", "arguments": {"order": "#W2", "zip": "76165"}},
            {"name": "modify_items", "arguments": {"order": "#W2", "item_ids": ["1"], "new_item_ids": ["2"]}},
        ]
    }
    items = _write("modify_items", order="#W2", item_ids=["1"], new_item_ids=["2"])
    refused = _write(
        "modify_address", error="Error: non-pending order cannot be modified", order="#W2", zip="76165"
    )
    other = _write("modify_address", order="#W1", zip="76165")
    assert failures(policy, conv(dict(TURN, tool_calls=[items, refused, other]))) == {"policy_tools"}
    assert failures(policy, conv(dict(TURN, tool_calls=[refused, other, items]))) == set()


def test_an_expected_write_refused_from_the_state_the_agent_found_is_a_note() -> None:
    """Where the expectations replay a ground truth (`refused_first: note`), an expected write made exactly and
    refused before the agent changed anything is one the environment does not accept from the start (the ground
    truth's own replay is refused too): a note; by default it is missing. After a write of the
    agent's, the refusal may be the agent's doing, and the expected write is missing; and where the ground truth
    named an alternative, the alternative was the valid one."""
    expected = {"name": "modify_address", "arguments": {"order": "#W6", "zip": "10093"}}
    refused = _write("modify_address", error="Error: non-pending order", order="#W6", zip="10093")
    replayed = {"tools": [expected], "refused_first": "note"}
    result = grade_policy(
        TaskPolicy.model_validate({"id": "p", **replayed}),
        conv(dict(TURN, tool_calls=[refused])),
        None,
        NameNormalizer(),
    )
    assert result.passed and len(result.notes) == 1 and "refused in this run" in result.notes[0]
    assert failures({"tools": [expected]}, conv(dict(TURN, tool_calls=[refused]))) == {
        "policy_tools"
    }  # default
    items = {"name": "modify_items", "arguments": {"order": "#W6", "item_ids": ["1"], "new_item_ids": ["2"]}}
    before = _write("modify_items", order="#W6", item_ids=["1"], new_item_ids=["2"])
    both = {**replayed, "tools": [expected, items]}
    assert failures(both, conv(dict(TURN, tool_calls=[before, refused]))) == {"policy_tools"}
    assert failures(both, conv(dict(TURN, tool_calls=[refused, before]))) == set()
    lookup = _write("get_order_details", order="#W6")  # a lookup before changes nothing
    assert failures(replayed, conv(dict(TURN, tool_calls=[lookup, refused]))) == set()
    either = {**replayed, "tools": [{**expected, "alternatives": ["modify_pending_address"]}]}
    assert failures(either, conv(dict(TURN, tool_calls=[refused]))) == {"policy_tools"}


def test_a_lookup_repeated_with_its_result_each_time_is_evidence_unless_asked() -> None:
    """Real agents re-read a record (a user found by name and zip three times, an order looked up again at each
    step of a workflow) and were rewarded: on the real runs graded, such a loop was the only failure of 4 real
    successes and of no real failure. It is evidence, counted over all traffic; `lookup_loops_fail` makes it a
    loop like the others. A lookup refused each time and a write repeated stay loops."""
    looked = {"name": "find_user_id_by_name_zip", "arguments": {"zip": "10001"}, "result": "u1"}
    base = {"id": "p", "tools": []}
    c = conv(dict(TURN, tool_calls=[looked] * 3))
    s = ConversationScorer(Settings.model_validate({"policies": [base]})).score(c)
    assert s.passed is True and s.evidence == ["loop"]
    assert (
        "evidence: loop: turn 0: find_user_id_by_name_zip called 3 times with identical arguments"
        in " ".join(s.reasons)
    )
    asked = Settings.model_validate({"policies": [base], "scoring": {"lookup_loops_fail": True}})
    assert ConversationScorer(asked).score(c).passed is False
    written = {"name": "send_certificate", "arguments": {"user_id": "u1"}, "result": "sent"}
    once = {"id": "p", "tools": [{"name": "send_certificate", "arguments": {"user_id": "u1"}}]}
    s = ConversationScorer(Settings.model_validate({"policies": [once]})).score(
        conv(dict(TURN, tool_calls=[written] * 3))
    )
    assert s.passed is False and any(
        r.startswith("loop: turn 0: send_certificate called 3 times") for r in s.reasons
    )


def test_a_handoff_repeated_with_its_result_each_time_is_evidence_unless_asked() -> None:
    """An agent that sent the transfer again after each "Transfer successful" (a LangChain agent's τ²-bench airline
    run: 3 to 9 identical `transfer_to_human_agents` calls) handed the conversation to a person: on that run such
    a loop failed 5 of 19 real successes and was the only failure of no real failure. It is evidence;
    `handoff_loops_fail` makes it a loop like the others. A handoff refused each time stays a loop."""
    handed = {
        "name": "transfer_to_human_agents",
        "arguments": {"summary": "wants a refund"},
        "result": "Transfer successful",
    }
    base = {"id": "p", "tools": []}
    c = conv(dict(TURN, tool_calls=[handed] * 3))
    s = ConversationScorer(Settings.model_validate({"policies": [base]})).score(c)
    assert s.passed is True and s.evidence == ["loop"]
    assert (
        "evidence: loop: turn 0: transfer_to_human_agents called 3 times with identical arguments (a handoff, "
        "none refused)" in s.reasons
    )
    asked = Settings.model_validate({"policies": [base], "scoring": {"handoff_loops_fail": True}})
    assert ConversationScorer(asked).score(c).passed is False
    lookups_only = Settings.model_validate({"policies": [base], "scoring": {"lookup_loops_fail": True}})
    assert ConversationScorer(lookups_only).score(c).passed is True
    refused = dict(handed, result=None, error="Error: no agent available")
    s = ConversationScorer(Settings.model_validate({"policies": [base]})).score(
        conv(dict(TURN, tool_calls=[refused] * 3))
    )
    assert s.passed is False and any(
        r.startswith("loop: turn 0: transfer_to_human_agents called 3 times") for r in s.reasons
    )


def test_evidence_fails_only_where_configured_or_asked_by_the_policy() -> None:
    """A detector outside scoring.failing_evidence leaves its finding as evidence; a policy may ask for it."""
    loop = [_write("search_flights", error="Error: timed out", q="x")] * 3  # a lookup, refused each time
    c = conv(dict(TURN, tool_calls=loop))
    base = {"id": "p", "tools": []}
    on = ConversationScorer(Settings.model_validate({"policies": [base]}))
    off = ConversationScorer(
        Settings.model_validate({"policies": [base], "scoring": {"failing_evidence": ["error", "no_answer"]}})
    )
    asked = ConversationScorer(
        Settings.model_validate(
            {
                "policies": [{**base, "fail_on": ["loop"]}],
                "scoring": {"failing_evidence": ["error", "no_answer"]},
            }
        )
    )
    s_on, s_off, s_asked = on.score(c), off.score(c), asked.score(c)
    assert s_on.passed is False and s_on.outcome is Outcome.ABANDONED and s_on.evidence == ["loop"]
    assert s_off.passed is True and s_off.outcome is Outcome.COMPLETE and s_off.evidence == ["loop"]
    assert any(r.startswith("evidence: loop: turn 0:") for r in s_off.reasons)
    assert s_asked.passed is False and s_asked.evidence == ["loop"]
    with pytest.raises(ValueError, match="unknown detector"):
        Settings.model_validate({"scoring": {"failing_evidence": ["hallucinations"]}})


def test_identical_calls_a_policy_expects_several_times_are_no_loop_beyond_them() -> None:
    """A task may require one call several times (τ³-bench's banking task_032: a transfer tool called three
    times): those repeats are what it asks for; repeats past them are still a loop."""
    transfer = {"name": "initial_transfer", "arguments": {}}
    policy = {"id": "p", "tools": [transfer] * 3, "extra_calls": "any"}
    scorer = ConversationScorer(Settings.model_validate({"policies": [policy]}))
    for made, looped in ((3, False), (4, False), (5, True)):
        score = scorer.score(conv(dict(TURN, tool_calls=[_write("initial_transfer")] * made)))
        assert ("loop" in score.evidence) is looped, made
        assert score.passed is not looped
    once = ConversationScorer(Settings.model_validate({"policies": [{**policy, "tools": [transfer]}]}))
    assert "loop" in once.score(conv(dict(TURN, tool_calls=[_write("initial_transfer")] * 3))).evidence
    # expected three times with different arguments: three identical calls are a loop
    varied = [{"name": "initial_transfer", "arguments": {"n": n}} for n in range(3)]
    apart = ConversationScorer(Settings.model_validate({"policies": [{**policy, "tools": varied}]}))
    assert "loop" in apart.score(conv(dict(TURN, tool_calls=[_write("initial_transfer", n=0)] * 3))).evidence
