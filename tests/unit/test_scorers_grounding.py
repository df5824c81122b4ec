"""Grounding over the whole conversation: instructions as a source, amounts one arithmetic step or a rounding
away from grounded numbers, claims grounded by any call with effects, statuses read back, utilization of any
answer of the conversation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentwatch.config import HANDOFF_TOOLS, READ_ONLY_TOOLS, NameNormalization
from agentwatch.scorers import score_conversation
from agentwatch.scorers.derived_numbers import Derivations, _has, list_totals
from agentwatch.scorers.grounding import Evidence
from agentwatch.scorers.hallucination import _Known, find_hallucinations
from agentwatch.scorers.names import NameNormalizer
from agentwatch.scorers.text import AnswerText
from agentwatch.scorers.tool_kinds import READ_ONLY, ToolKinds
from agentwatch.scorers.utilization import conversation_uses_results
from agentwatch.wire.schema import Conversation, Turn


def flagged(
    answer: str, *results: object, system: str | None = None, question: str = "Help me."
) -> list[str]:
    """Hallucination reasons for one answer after one turn that called a tool per result."""
    evidence = Evidence()
    evidence.add(system)
    calls = [{"name": "get_info", "arguments": {}, "result": r} for r in results]
    turn = Turn.model_validate({"input": question, "answer": answer, "tool_calls": calls})
    evidence.add_turn(turn.input, turn.tool_calls, [False] * len(calls))  # lookups
    return find_hallucinations(answer, evidence)


def test_the_instructions_are_a_source() -> None:
    assert flagged("The change fee is $25.") != []
    assert flagged("The change fee is $25.", system="Changing a flight costs a $25 fee.") == []


@pytest.mark.parametrize(
    ("answer", "results"),
    [
        ("The total is $329. With your $500 certificate, $171 will remain.", [{"amount": 500}, "329.0"]),
        ("Option 1: $105 + $190 = $295.", [{"prices": [105, 190]}]),
        ("$50 per passenger, 3 passengers: $150 in total.", [{"compensation": 50}]),
        ("IAH-JFK: $177\nJFK-SFO: $146\nSFO-IAH: $180\nTotal: $503", [{"p": [177, 146, 180]}]),
        (
            "Old: $503. New: $725. You pay $725 - $503 = $222.",
            [
                {
                    "old": [{"price": 177}, {"price": 146}, {"price": 180}],
                    "new": [{"price": 282}, {"price": 443}],
                }
            ],
        ),
        ("Refund: $2580.", ["-2580.0"]),  # a negative result stated as a positive amount
        ("The itinerary costs $255.", [[[{"price": 136}, {"price": 119}], [{"price": 90}, {"price": 95}]]]),
        ("Your reservation cost $3,538.", [{"flights": [{"price": 1859}, {"price": 1679}]}]),
        ("Of the $500 you paid, 2 shares of $250 each.", [{"paid": 500}]),
        # one step from numbers of the results, neither of them stated (real retail and airline answers)
        ("The price difference is $5.08, refunded to PayPal.", [{"old": 59.91, "new": 54.83}]),
        ("The fare is $241.", [{"prices": [105, 136, 90, 55]}]),  # 105 + 136
        ("Each night costs $33.33.", [{"total": 99.99}, {"nights": 3}]),  # 99.99 / 3
        ("That is about $18 a month.", [{"monthly": 17.96}]),  # rounded
        ("(126 + 139) * 3 = $795 for the three of you.", [{"a": 126, "b": 139}]),  # written out
    ],
)
def test_derived_amounts_are_not_hallucinations(answer: str, results: list[object]) -> None:
    assert flagged(answer, *results) == [], answer


@pytest.mark.parametrize(
    ("answer", "results"),
    [
        ("The total is $329. You will have $172 remaining.", [{"amount": 500}, "329.0"]),  # off by one dollar
        ("The fare is $795.", [{"a": 126, "b": 139}]),  # (126 + 139) × 3: two steps, none written out
        ("(126 + 139) * 3 = $796 in total.", [{"a": 126, "b": 139}]),  # written out, wrong
        ("(126 + 130) * 3 = $768 in total.", [{"a": 126, "b": 139}]),  # written out, 130 not grounded
        ("You saved $999.", [{"a": 10, "b": 20}]),
        ("$50 per passenger, 13 passengers: $650.", [{"compensation": 50}]),  # 13 is not a small count
    ],
)
def test_made_up_amounts_are_still_flagged(answer: str, results: list[object]) -> None:
    assert flagged(answer, *results) != [], answer


def test_list_totals_sum_one_field_over_the_items_of_a_list() -> None:
    value = {
        "flights": [{"price": 10, "seats": {"economy": 2}}, {"price": 15, "seats": {"economy": 3}}],
        "single": [{"price": 7}],
        "legs": [[{"p": 1}, {"p": 2}]],
    }
    assert sorted(list_totals(value)) == [3.0, 5.0, 25.0]


def test_derived_amounts_carry_over_to_later_answers() -> None:
    d = Derivations()
    d.begin(AnswerText("$10 and $20, total $30"))
    for v in (10.0, 20.0):
        d.take(v)
    assert d.explains(30.0, [])
    d.take(30.0)
    d.begin(AnswerText("Again: $40 with the $10 fee."))
    assert d.explains(40.0, [])  # 30 + 10, both stated before
    assert not d.explains(41.0, [])
    assert d.explains(41.0, [11.0])  # 30 + 11 once 11 is grounded


def test_an_operand_lookup_answers_a_plain_bool() -> None:
    """`_has` is typed `-> bool`: a numpy bool there is a type the annotation does not admit (a compiled build
    rejects it, and the conversation would go unscored)."""
    operands = np.array([10.0, 20.0])
    assert _has(operands, 20.0) is True and _has(operands, 20.2) is False and _has(operands, 30.0) is False


@pytest.mark.parametrize(
    ("claim", "tool", "flagged_expected"),
    [
        ("Your booking has been cancelled and the amount refunded.", "cancel_reservation", False),
        ("The difference has been refunded to your card.", "update_reservation_flights", False),
        ("The certificate has been issued to your account.", "send_certificate", False),
        # any call with effects grounds a claim: the verb is the agent's, not a word list's (real retail runs)
        ("Your return has been submitted.", "return_delivered_order_items", False),
        ("The exchange has been issued.", "modify_pending_order_items", False),
        ("I have transferred you to a human agent.", "transfer_to_human_agents", False),  # a handoff acts too
        ("I have refunded 55.00 USD.", "get_order", True),  # a lookup changes nothing
        ("I have cancelled your order.", "search_orders", True),
    ],
)
def test_claims_are_grounded_by_any_call_with_effects(claim: str, tool: str, flagged_expected: bool) -> None:
    names = NameNormalizer(NameNormalization())
    kinds = ToolKinds(names, READ_ONLY_TOOLS, HANDOFF_TOOLS)
    evidence = Evidence()
    turn = Turn.model_validate(
        {
            "input": "55.00 USD please",
            "answer": claim,
            "tool_calls": [{"name": tool, "arguments": {}, "result": "ok"}],
        }
    )
    evidence.add_turn(
        turn.input, turn.tool_calls, [kinds.of(c, names(c.name)) != READ_ONLY for c in turn.tool_calls]
    )
    assert bool(find_hallucinations(claim, evidence)) is flagged_expected


def test_a_failed_call_grounds_no_claim() -> None:
    evidence = Evidence()
    turn = Turn.model_validate(
        {
            "input": "cancel it",
            "tool_calls": [{"name": "cancel_order", "arguments": {}, "error": "not allowed"}],
        }
    )
    evidence.add_turn(turn.input, turn.tool_calls, [True])
    assert find_hallucinations("I have cancelled your order.", evidence) != []


@pytest.mark.parametrize(
    ("answer", "result", "flagged_expected"),
    [
        ("Your order has been cancelled.", {"order_id": "#W1", "status": "cancelled"}, False),
        ("Your order has been cancelled.", {"order_id": "#W1", "status": "pending"}, True),
        ("Your order has been cancelled.", {"note": "uncancelled"}, True),  # not the word itself
    ],
)
def test_a_status_read_back_from_a_tool_is_not_a_claim(
    answer: str, result: object, flagged_expected: bool
) -> None:
    """Describing a state a lookup returned ("status": "cancelled") claims no action."""
    evidence = Evidence()
    turn = Turn.model_validate(
        {
            "input": "what about #W1?",
            "tool_calls": [{"name": "get_order_details", "arguments": {}, "result": result}],
        }
    )
    evidence.add_turn(turn.input, turn.tool_calls, [False])
    assert bool(find_hallucinations(answer, evidence)) is flagged_expected


def test_utilization_over_the_conversation_and_a_closing_thanks() -> None:
    turns = [
        Turn.model_validate(t)
        for t in (
            {
                "input": "Where is my order?",
                "answer": "It ships on Tuesday with DHL.",
                "tool_calls": [{"name": "get_order", "arguments": {"id": 1}, "result": {"carrier": "DHL"}}],
            },
            {"input": "Thanks!", "answer": "You're welcome!"},
        )
    ]
    assert conversation_uses_results(turns) is True
    assert conversation_uses_results(turns[1:]) is False  # no tool was called
    failed = [
        Turn.model_validate(
            {"input": "q", "answer": "It is down.", "tool_calls": [{"name": "get_order", "error": "timeout"}]}
        )
    ]
    assert conversation_uses_results(failed) is None  # nothing could be used


def test_a_system_prompt_on_the_transcript_grounds_a_fee_in_an_answer() -> None:
    turn = {
        "input": "How much is a change?",
        "answer": "A change costs $25.",
        "tool_calls": [{"name": "get_rules", "arguments": {}, "result": {"ok": True}}],
        "expected": {"tools": [{"name": "get_rules"}], "uses_tool_results": False},
    }
    bare = Conversation.model_validate({"conversation_id": "c", "turns": [turn]})
    assert "hallucination" in score_conversation(bare).evidence
    told = bare.model_copy(update={"system": "Policy: a change of flight costs $25."})
    s = score_conversation(told)
    assert s.evidence == [] and s.passed is True


@pytest.mark.parametrize(
    ("answer", "question", "expected"),
    [
        # a long number matches the same number written with separators, either way round (a real τ²-bench run)
        ("Searching Mercedes under 50000.", "Mercedes under $50,000 please.", []),
        ("Mercedes under $50,000.", "Mercedes under 50000 please.", []),
        ("Mercedes under 50000.", "Mercedes under $5,000 please.", ["'50000'"]),
        # an example of a format asserts nothing; what follows the example's clause still does
        ("Please give me your order id (e.g. ORD-12345).", "Help me.", []),
        ("Give me the course codes (ej. MAT201, IND105).", "Help me.", []),
        ("For example, #48213 would do. Your order is ORD-555.", "Help me.", ["'ORD-555'"]),
        ("Flights such as HAT123 leave at noon.", "Help me.", ["'HAT123'"]),  # "such as" lists real ones
    ],
)
def test_separators_and_examples_in_identifiers(answer: str, question: str, expected: list[str]) -> None:
    reasons = flagged(answer, {"status": "ok"}, question=question)
    assert [r.split("'")[1] for r in reasons] == [e.strip("'") for e in expected], reasons


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("check_stock", "read_only"),
        ("trackOrder", "read_only"),  # camelCase words are separated like any others
        ("checkInGuest", "effect"),
        ("track_order", "read_only"),
        ("consultar_promociones", "read_only"),
        ("verify_identity", "read_only"),
        (
            "identificar_paciente",
            "read_only",
        ),  # identifying a patient changes nothing; a rewarded run made it
        ("identify_user", "read_only"),
        ("check_in_guest", "effect"),  # "!check_in*": checking a guest in books a room
        ("functions.Check-Out", "effect"),
        ("create_ticket", "effect"),
    ],
)
def test_lookup_verbs_in_tool_names_and_the_exclusions(name: str, kind: str) -> None:
    names = NameNormalizer(NameNormalization())
    kinds = ToolKinds(names, READ_ONLY_TOOLS, HANDOFF_TOOLS)
    assert kinds.of_name(names(name)) == kind
    # a policy's own patterns extend the list and keep its exclusions
    assert kinds.extended(["create_*"]).of_name(names(name)) == (
        "read_only" if name == "create_ticket" else kind
    )


ORDER = {
    "order_id": "#W2378156",
    "items": [
        {"item_id": "4202497723", "price": 342.81},
        {"item_id": "4602305039", "price": 561.05},
        {"item_id": "9408160950", "price": 381.26},
        {"item_id": "1151293680", "price": 272.33},
    ],
}


@pytest.mark.parametrize(
    ("answer", "results", "expected"),
    [
        # what real grok-4, gpt-5 and gpt-4o answers wrote (published τ-bench and τ²-bench runs of other teams)
        ("Mechanical Keyboard item #1421289881 ($268.77).", [{"item_id": "1421289881", "price": 268.77}], []),
        ("**$1,093.34** (Keyboard: $235.13, Chair: $858.21).", [{"prices": [235.13, 858.21]}], []),
        ("Order total: **$500.00**.", [{"p": 1}], ["500.00"]),  # bold is read, not skipped
        ("Give me the item id (like 1008292230).", [{"p": 1}], []),
        ("Say something like: “Return item 1008292230 from order #W1234568,” and I will.", [{"p": 1}], []),
        ("Say something: “Return item 1008292230 from order #W1234568.”", [{"p": 1}], ["1008292230"]),
        ("Full refunds (~$2,460 total).", [{"p": 1}], []),
        ("Full refunds ($2,460 total).", [{"p": 1}], ["2,460"]),
        (
            "Skateboard $200.80. Hose $96.35 and Backpack $193.38: subtotal $289.73. Total refund: $490.53.",
            [{"p": [200.80, 96.35, 193.38]}],
            [],
        ),
        ("Hose $96.35, Backpack $193.38. Total refund: $490.53.", [{"p": [96.35, 193.38]}], ["490.53"]),
        # signed amounts are amounts: a price difference "+$16.23", a refund "-$94.55"; a total of them is derived
        (
            "Desk lamp: +$16.23 (154.17 − 137.94). Bottle: +$1.38. Total additional charge: $17.61.",
            [{"lamp": [154.17, 137.94], "bottle": [25.0, 26.38]}],
            [],
        ),
        ("Price difference: -$12.34 (a refund).", [{"p": [100.0, 80.0]}], ["12.34"]),
        ("It would be ~-$61 back to your card.", [{"p": [100.0, 80.0]}], []),  # approximate, signed or not
        # a refund for the items the answer names, out of an order's four
        ("Returning items 4602305039, 4202497723 and 9408160950: the refund is **$1,285.12**.", [ORDER], []),
        (
            "Returning items 4602305039, 4202497723 and 9408160950: the refund is **$1,285.21**.",
            [ORDER],
            ["1,285.21"],
        ),
        # a total of three price differences, each beside the two prices it came from
        (
            "Bag ($206.03) → ($219.43). Diff: +$13.40. Watch ($1985.30) → ($2127.62). Diff: +$142.32. "
            "Kettle ($159.78) → ($164.46). Diff: +$4.68. Total diff: +$160.40.",
            [{"p": [206.03, 219.43, 1985.30, 2127.62, 159.78, 164.46]}],
            [],
        ),
        (
            "Bag ($206.03) → ($219.43). Diff: +$13.40. Watch ($1985.30) → ($2127.62). Diff: +$142.32. "
            "Kettle ($159.78) → ($164.46). Diff: +$4.68. Total diff: +$160.30.",
            [{"p": [206.03, 219.43, 1985.30, 2127.62, 159.78, 164.46]}],
            ["160.30"],
        ),
        # a total before the parts it sums, each part a price difference the agent derived
        (
            "**Total Price Difference:** $41.92 ($8.28 for shoes + $33.64 for keyboard)",
            [{"shoes": [155.33, 163.61], "keyboard": [235.13, 268.77]}],
            [],
        ),
        (
            "**Total:** $41.93 ($8.28 for shoes + $33.64 for keyboard)",
            [{"s": [155.33, 163.61, 235.13, 268.77]}],
            ["41.93"],
        ),
        (
            "**Total:** $41.92 ($8.29 for shoes + $33.63 for keyboard)",
            [{"s": [155.33, 163.61, 235.13, 268.77]}],
            ["41.92", "8.29", "33.63"],
        ),
    ],
)
def test_ids_and_amounts_as_other_agents_write_them(
    answer: str, results: list[object], expected: list[str]
) -> None:
    reasons = flagged(answer, *results)
    assert [r.split("'")[1] for r in reasons] == expected, reasons


@pytest.mark.parametrize(
    ("answer", "claim"),
    [
        ("None of the flights have been cancelled by the airline.", False),
        ("Neither flight has been cancelled.", False),
        ("It must have been booked within the last 24 hours.", False),
        ("Could the flight have been booked under another user id, perhaps?", False),
        ("If the order has been cancelled, the refund follows.", False),
        ("Both orders have already been cancelled.", False),  # a state found, not an action taken
        ("Your order has been cancelled.", True),
        ("I have already cancelled your order.", True),  # the agent says it acted
        ("No problem, I have cancelled your order.", True),  # the negation is another clause
    ],
)
def test_what_a_claim_verb_asserts(answer: str, claim: bool) -> None:
    assert bool(flagged(answer, {"status": "pending"})) is claim


def test_a_verb_a_result_states_by_its_stem_is_read_back() -> None:
    """A refund in the payment history: "has been refunded" describes it (a real retail answer)."""
    refund = {"payment_history": [{"transaction_type": "refund", "amount": 758.25}]}
    assert flagged("The total of $758.25 has been refunded to your PayPal.", refund) == []
    assert flagged("The total of $758.25 has been exchanged.", refund) != []


def test_a_tool_result_nested_deeper_than_the_json_decoder_is_read_as_text() -> None:
    """A tool result string of JSON nested past the decoder's depth (a hostile or broken tool) is text to the
    utilization check, where the decoder's RecursionError left the conversation unscored (scorer_error)."""
    deep = "[" * 100_000
    conv = Conversation.model_validate(
        {
            "conversation_id": "deep",
            "agent": "a",
            "turns": [
                {
                    "input": "hi",
                    "answer": "done 42",
                    "tool_calls": [{"name": "t", "arguments": {}, "result": deep}],
                    "expected": {"tools": [{"name": "t"}], "reference_answer": "done 42"},
                }
            ],
        }
    )
    score = score_conversation(conv)
    assert score.passed is not None and not any(r.startswith("scorer_error") for r in score.reasons)


def _nested(depth: int) -> object:
    """1 inside `depth` lists."""
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def test_integers_past_float_range_and_deep_values_in_calls_leave_the_conversation_scored() -> None:
    """A tool result holding an integer no float holds, and arguments nested deeper than the JSON encoder goes,
    are graded like any others (they raised OverflowError and RecursionError: scorer_error, unscored)."""
    huge = 10**400
    deep = _nested(900)
    conv = Conversation.model_validate(
        {
            "conversation_id": "huge",
            "agent": "a",
            "turns": [
                {
                    "input": "balance?",
                    "answer": f"Your balance is {huge} coins.",
                    "tool_calls": [
                        {"name": "t", "arguments": {"x": deep}, "result": {"balance": huge}},
                        {"name": "t", "arguments": {"x": deep}, "result": [huge, -huge]},
                    ],
                    "expected": {"tools": [{"name": "t", "arguments": {"x": deep}}]},
                }
            ],
        }
    )
    score = score_conversation(conv)
    assert score.passed is not None and not any(r.startswith("scorer_error") for r in score.reasons)


def test_a_difference_holding_a_value_nested_past_the_bound_is_said_in_words() -> None:
    """A transcript's expected call and the call made differ in a value nested 900 deep: the difference says so
    in words, as the score could not be written with it (pydantic writes 255 levels)."""
    deep = _nested(900)
    conv = Conversation.model_validate(
        {
            "conversation_id": "deep-difference",
            "agent": "a",
            "expected": {"tools": [{"name": "t", "arguments": {"a": 1, "b": deep}}]},
            "turns": [
                {
                    "input": "hi",
                    "answer": "done",
                    "tool_calls": [{"name": "t", "arguments": {"a": deep, "b": 2}, "result": "ok"}],
                }
            ],
        }
    )
    score = score_conversation(conv)
    said = {(d.path, str(d.expected), str(d.got)) for d in score.differences}
    assert ("a", "1", "<a value nested deeper than 200 levels>") in said
    assert ("b", "<a value nested deeper than 200 levels>", "2") in said
    assert score.model_dump_json()


def test_an_answers_identifiers_are_listed_twenty_then_counted() -> None:
    made_up = " ".join(f"ORD-{1000 + i}" for i in range(30))
    reasons = flagged(f"Your orders are {made_up}.", {"orders": ["ORD-9999"]})
    assert len(reasons) == 21 and reasons[0].startswith("'ORD-1000'") and "'ORD-1019'" in reasons[19]
    assert reasons[20] == "10 more identifiers appear in neither the inputs, the tool calls nor the reference"


def test_the_checks_stop_at_their_search_budget_and_count_what_they_left() -> None:
    """Every identifier is searched for in all the evidence before it: past the budget (characters searched
    in a conversation) the rest are counted, not checked, and not called hallucinations."""
    evidence = Evidence(search_budget=50_000)
    text = "filler " * 1_000  # 7,000 characters
    evidence.add_turn("question", [], [])
    for _ in range(3):
        evidence.add(text)
    answer = "IDs: " + " ".join(f"ORD-{1000 + i}" for i in range(10))
    reasons = find_hallucinations(answer, evidence)
    # each check searches the 21,000 characters read (the first one also copies them): 2 checks spend the budget
    assert evidence.spent and evidence.unchecked == 8
    assert [r.split("'")[1] for r in reasons] == ["ORD-1000", "ORD-1001"]
    assert find_hallucinations("And ORD-5555.", evidence) == [] and evidence.unchecked == 9


def test_a_long_conversation_full_of_numbers_is_scored_within_the_budget() -> None:
    """Twelve turns of 60 kB texts, each answer holding about 1,200 numbers found nowhere: every number was
    searched for in all the texts before it (50 such turns took 203 s to score); the turns past the budget say
    how many identifiers they left unchecked."""
    import random

    rnd = random.Random(7)

    def text() -> str:
        return " ".join(f"w{rnd.randint(0, 99)} {rnd.randint(10_000, 10**9)}" for _ in range(5_000))[:60_000]

    turns = [
        {
            "input": text(),
            "answer": text(),
            "tool_calls": [{"name": "get", "arguments": {"q": text()}, "result": text()}],
        }
        for _ in range(12)
    ]
    score = score_conversation(Conversation.model_validate({"conversation_id": "long", "turns": turns}))
    notes = [r for r in score.reasons if r.startswith("note: hallucination:") and "not checked" in r]
    assert notes and all("1,073,741,824 characters" in n for n in notes)
    listed = [r for r in score.reasons if r.startswith("evidence: hallucination: turn 0:")]
    assert len(listed) == 21


_NUMBER = st.one_of(
    st.floats(allow_nan=False), st.floats(min_value=-1e6, max_value=1e6), st.integers(0, 10**6)
)


@given(
    st.lists(_NUMBER.map(float), max_size=40),
    _NUMBER.map(float),
    st.sampled_from([0.0, 0.005, -0.005, 0.0049999, 0.0050001, 0.01, 1e-12]),
)
def test_the_numbers_look_up_as_a_pass_over_them_would(
    numbers: list[float], value: float, offset: float
) -> None:
    """The evidence's numbers are searched by binary search: the same answers as the pass it replaced."""
    evidence = Evidence()
    evidence.add(" ".join(repr(n) for n in numbers))
    known = _Known(evidence, None)
    known.values = list(numbers)  # exactly these numbers (the text's own reading is tested elsewhere)
    for probe in (value, value + offset, *(n + offset for n in numbers[:3])):
        assert known.near(probe) == any(abs(probe - k) <= 0.005 for k in numbers)
        assert known.holds(probe) == (probe in numbers)
