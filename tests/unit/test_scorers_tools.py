"""Tool correctness: hand-computed fractions, brute-force LCS, names, utilization, property tests."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentwatch.config import NameNormalization, ToolWeights
from agentwatch.scorers import score_conversation
from agentwatch.scorers.names import NameNormalizer
from agentwatch.scorers.text import AnswerText
from agentwatch.scorers.tool_correctness import (
    ToolGrader,
    _lcs_rows,
    jaccard,
    lcs_length,
    parameters_score,
)
from agentwatch.scorers.utilization import SearchBudget, answer_uses, uses_results
from agentwatch.wire.schema import Conversation, Expectation, ToolCall


def expect(*tools, **kw) -> Expectation:
    return Expectation.model_validate(
        {
            "tools": [
                {"name": t} if isinstance(t, str) else {"name": t[0], "arguments": t[1]} for t in tools
            ],
            **kw,
        }
    )


def calls(*items) -> list[ToolCall]:
    out = []
    for it in items:
        if isinstance(it, str):
            out.append(ToolCall(name=it))
        else:
            name, args, *rest = it
            out.append(ToolCall(name=name, arguments=args, result=rest[0] if rest else None))
    return out


def brute_lcs(a: list[str], b: list[str]) -> int:
    """Longest subsequence of `a` that is also a subsequence of `b`, by enumeration."""

    def is_subseq(s, t) -> bool:
        it = iter(t)
        return all(x in it for x in s)

    for r in range(len(a), 0, -1):
        for idx in itertools.combinations(range(len(a)), r):
            if is_subseq([a[i] for i in idx], b):
                return r
    return 0


# --------------------------------------------------------------------------- dimensions


def test_jaccard_hand_computed():
    assert jaccard({"a", "b"}, {"b", "c"}) == pytest.approx(float(Fraction(1, 3)))
    assert jaccard({"a", "b", "c"}, {"a", "b"}) == pytest.approx(float(Fraction(2, 3)))
    assert jaccard(set(), set()) == 1.0
    assert jaccard({"a"}, set()) == 0.0


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [("abcbdab", "bdcaba", 4), ("abc", "abc", 3), ("abc", "cba", 1), ("", "abc", 0), ("aab", "ab", 2)],
)
def test_lcs_known_sequences(a, b, expected):
    assert lcs_length(list(a), list(b)) == expected == brute_lcs(list(a), list(b))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from("abcd"), max_size=7), st.lists(st.sampled_from("abcd"), max_size=7))
def test_lcs_matches_brute_force(a, b):
    assert lcs_length(a, b) == brute_lcs(a, b)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from("abcd"), max_size=7), st.lists(st.sampled_from("abcde"), max_size=7))
def test_lcs_by_rows_matches_brute_force(a, b):
    """The row-at-a-time table that long sequences take (`_lcs_rows`) against enumeration."""
    assert (_lcs_rows(a, b) if a and b else 0) == brute_lcs(a, b)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from("abcdefgh"), min_size=201, max_size=400),
    st.lists(st.sampled_from("abcdefghij"), min_size=201, max_size=400),
)
def test_long_sequences_take_the_rows_and_agree_with_the_cells(a, b):
    assert len(a) * len(b) > 40_000  # past _LCS_CELLS: lcs_length fills the table a row at a time
    cells = [0] * (len(b) + 1)
    for x in a:
        row = [0]
        for j, y in enumerate(b):
            row.append(cells[j] + 1 if x == y else max(cells[j + 1], row[j]))
        cells = row
    assert lcs_length(a, b) == cells[-1]


def test_many_calls_of_one_name_past_the_solvers_limit_are_paired_in_order():
    """Above 100 expected calls of one name, the assignment solver (time growing with the cube) is not run:
    the calls are paired in the order they were expected and made."""
    expected = [("get", {"id": i}) for i in range(150)]
    assert parameters_score(expected, [("get", {"id": i}) for i in range(150)]) == 1.0
    swapped = [("get", {"id": i ^ 1}) for i in range(150)]  # neighbours swapped: the solver would find 1.0
    assert parameters_score(expected, swapped) == 0.0
    assert parameters_score(expected[:100], swapped[:100]) == 1.0  # at the limit: solved


def test_selection_sequence_parameters_fractions():
    grader = ToolGrader()
    exp = expect(("a", {"x": 1, "y": 2}), ("b", {"q": "z"}))
    used = calls(("b", {"q": "z"}), ("c", {}), ("a", {"x": 1, "y": 3, "w": 0}))
    s = grader.grade(exp.model_copy(update={"uses_tool_results": False}), used, "ok")
    assert s.selection == pytest.approx(float(Fraction(2, 3)))  # {a,b} vs {a,b,c}
    # a: keys {x,y,w}, matching {x} → 1/3; b: 1/1 → mean 2/3
    assert s.parameters == pytest.approx(float(Fraction(2, 3)))
    # expected [a,b], used [b,c,a] → LCS 1 → 1/2
    assert s.sequence == pytest.approx(0.5)
    assert s.utilization is None
    assert s.overall == pytest.approx(float((Fraction(2, 3) + Fraction(2, 3) + Fraction(1, 2)) / 3))
    assert s.binary is False and s.passed is False


def test_missing_call_scores_zero_and_null_arguments_not_checked():
    exp = expect(("a", None), ("b", {"k": 1}), "c")
    s = ToolGrader().grade(exp, calls(("a", {"anything": 5}), ("c", {"z": 1})), "x")
    # a matched (args null → 1), b missing → 0, c matched with expected args null → 1
    assert s.parameters == pytest.approx(float(Fraction(2, 3)))


def test_duplicate_calls_distinct_matching():
    # Two expected calls of `get` must be matched to two distinct used calls.
    exp = expect(("get", {"id": 1}), ("get", {"id": 2}))
    one = ToolGrader().grade(exp, calls(("get", {"id": 1}), ("get", {"id": 1})), "")
    assert one.parameters == pytest.approx(0.5)  # second expected call can only take the other {id:1} → 0
    both = ToolGrader().grade(exp, calls(("get", {"id": 2}), ("get", {"id": 1})), "")
    assert both.parameters == 1.0
    # duplicates do not change selection or binary
    dup = ToolGrader().grade(expect("get"), calls("get", "get", "get"), "")
    assert dup.selection == 1.0 and dup.binary is True


def test_optimal_assignment_beats_greedy():
    # Greedy in order would give e1→u1 (2/2) then e2→u2 (0/2 keys) = 1/2; optimal is e1→u2, e2→u1.
    exp = [("f", {"a": 1, "b": 1}), ("f", {"a": 1})]
    used = [("f", {"a": 1, "b": 1}), ("f", {"a": 1, "b": 9})]
    # e1-u1: 2/2, e1-u2: 1/2, e2-u1: 1/2, e2-u2: 1/2 → best total = 1 + 1/2 either way; check via enumeration
    best = max(
        sum(
            Fraction(sum(1 for k in e if k in u and e[k] == u[k]), len(e.keys() | u.keys()))
            for (_, e), (_, u) in zip(exp, perm, strict=True)
        )
        for perm in itertools.permutations(used)
    )
    assert parameters_score(exp, used) == pytest.approx(float(best / 2))


def test_numbers_compare_by_value_but_bools_are_not_numbers():
    exp = expect(("f", {"n": 1, "flag": True}))
    s = ToolGrader().grade(exp, calls(("f", {"n": 1.0, "flag": 1})), "")
    assert s.parameters == pytest.approx(0.5)


def test_sequence_not_graded_when_order_does_not_matter():
    exp = expect("a", "b", sequence_matters=False, uses_tool_results=False)
    s = ToolGrader().grade(exp, calls("b", "a"), "")
    assert s.sequence == 1.0 and s.overall == 1.0 and s.passed is True
    ordered = ToolGrader().grade(expect("a", "b", uses_tool_results=False), calls("b", "a"), "")
    assert ordered.sequence == 0.5 and ordered.passed is False


def test_expected_empty_means_no_tools():
    exp = Expectation.model_validate({"tools": []})
    assert ToolGrader().grade(exp, [], "hi").passed is True
    bad = ToolGrader().grade(exp, calls("search"), "hi")
    assert bad.selection == 0.0 and bad.binary is False and bad.passed is False


# --------------------------------------------------------------------------- weights and tolerance


def test_weights_sum_with_rounding_error_still_passes_threshold_one():
    assert 0.4 + 0.3 + 0.2 + 0.1 < 1.0  # the float sum really is below 1
    grader = ToolGrader(weights=ToolWeights(selection=0.4, parameters=0.3, sequence=0.2, utilization=0.1))
    s = grader.grade(
        expect(("get", {"id": 7})), calls(("get", {"id": 7}, {"status": "shipped"})), "It shipped."
    )
    assert s.utilization == 1.0 and s.passed is True and s.overall == pytest.approx(1.0)


def test_tolerance_rescues_float_rounding_below_exact_threshold():
    weights = ToolWeights(selection=0.1, parameters=0.1, sequence=0.4, utilization=0.9)
    exact = (Fraction(1) * 1 + Fraction(2, 3) * 1 + Fraction(2, 3) * 4) / 6  # = 13/18
    threshold = float(exact)
    exp = expect("a", ("b", {"x": 1}), "c", uses_tool_results=False)
    used = calls(("a", {}), ("c", {}), ("b", {"x": 2}))  # selection 1, parameters 2/3, sequence 2/3
    strict = ToolGrader(weights=weights, threshold=threshold, tolerance=0.0).grade(exp, used, "")
    assert strict.overall < threshold  # precondition: float arithmetic lands just below 13/18
    assert strict.passed is False
    tolerant = ToolGrader(weights=weights, threshold=threshold, tolerance=1e-9).grade(exp, used, "")
    assert tolerant.passed is True


def test_weights_normalised_when_utilization_not_graded():
    weights = ToolWeights(selection=0.5, parameters=0.2, sequence=0.2, utilization=0.1)
    exp = expect("a", "b", uses_tool_results=False)
    s = ToolGrader(weights=weights).grade(exp, calls("a"), "")
    # selection 1/2, parameters 1/2 (b missing), sequence 1/2 (LCS 1 of 2); weights over 0.9
    expected = (
        Fraction(1, 2) * Fraction(5, 10) + Fraction(1, 2) * Fraction(2, 10) + Fraction(1, 2) * Fraction(2, 10)
    )
    assert s.overall == pytest.approx(float(expected / Fraction(9, 10)))
    graded = ToolGrader(weights=weights).grade(
        expect("a", "b", uses_tool_results=True), calls(("a", {}, {"v": "zzz"})), "no value here"
    )
    assert graded.utilization == 0.0
    assert graded.overall == pytest.approx(float(expected))  # weights sum to 1, utilization 0 adds nothing


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    "name",
    ["functions.Get-Order", "get_order", "Get Order", "tools.get.order", "GET_ORDER", "getOrder", "GetOrder"],
)
def test_name_normalisation(name):
    norm = NameNormalizer()
    assert norm(name) == norm("get_order") == "get_order"


def test_camel_case_words_and_prefixes_written_in_camel_case() -> None:
    norm = NameNormalizer(NameNormalization(strip_prefixes=["functions.", "weatherPlugin-"]))
    assert norm("WeatherPlugin-getForecast") == "get_forecast"  # the prefix is compared case-folded
    assert norm("getHTTPStatus") == "get_httpstatus"  # an acronym stays one word
    assert norm("order2Items") == "order2_items"
    assert NameNormalizer(NameNormalization(unify_separators=False))("getOrder") == "getorder"


def test_name_normalisation_configurable():
    strict = NameNormalizer(
        NameNormalization(case_insensitive=False, unify_separators=False, strip_prefixes=[])
    )
    assert strict("Get-Order") != strict("get_order")
    s = ToolGrader(names=NameNormalizer()).grade(expect("get_order"), calls("functions.Get-Order"), "")
    assert s.binary is True and s.selection == 1.0


# --------------------------------------------------------------------------- utilization


@pytest.mark.parametrize(
    ("answer", "result", "uses"),
    [
        ("The total is $42.50.", {"order": {"total": 42.5}}, True),
        ("Pi is about 3.14", [1, {"pi": 3.14159}], True),
        ("Balance: 1,234.50 EUR", '{"balance": 1234.5}', True),
        ("Your parcel is with DHL.", {"carrier": {"name": "dhl", "id": 9}}, True),
        ("I used the tool and checked your order.", {"status": "shipped", "total": 42.5}, False),
        ("The total is $44.", {"total": 42.5}, False),
        ("The total is $42.6.", {"total": 42.5}, False),
        ("ok", {"code": "ok"}, False),  # strings under 3 characters are not salient
    ],
)
def test_utilization(answer, result, uses):
    assert answer_uses(answer, [result]) is uses


def test_utilization_ignores_failed_calls():
    exp = expect("get")
    failed = [ToolCall(name="get", result={"status": "shipped"}, error="timeout")]
    # every call failed: nothing to use, not graded (an answer saying so is right); the failed result never counts
    assert ToolGrader().grade(exp, failed, "It has shipped").utilization is None
    both = [*failed, ToolCall(name="get", result={"status": "pending"})]
    assert ToolGrader().grade(exp, both, "It has shipped").utilization == 0.0
    ok = [ToolCall(name="get", result={"status": "shipped"})]
    assert ToolGrader().grade(exp, ok, "It has shipped").utilization == 1.0
    assert ToolGrader().grade(exp, [], "It has shipped").utilization == 0.0  # no call at all


# --------------------------------------------------------------------------- properties

names_st = st.sampled_from(["a", "b", "c", "functions.A", "B-x"])
args_st = st.dictionaries(st.sampled_from(["k", "m", "n"]), st.integers(0, 2), max_size=2)
call_st = st.tuples(names_st, args_st)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(names_st, st.one_of(st.none(), args_st)), max_size=4),
    st.lists(call_st, max_size=5),
    st.randoms(use_true_random=False),
    st.booleans(),
    st.text(max_size=20),
)
def test_scores_in_unit_interval_and_permutation_invariant(exp_tools, used, rnd, seq, answer):
    exp = Expectation.model_validate(
        {"tools": [{"name": n, "arguments": a} for n, a in exp_tools], "sequence_matters": seq}
    )
    tc = [ToolCall(name=n, arguments=a, result={"v": a.get("k")}) for n, a in used]
    grader = ToolGrader()
    s = grader.grade(exp, tc, answer)
    for v in (s.selection, s.parameters, s.sequence, s.overall):
        assert 0.0 <= v <= 1.0
    assert s.utilization in (None, 0.0, 1.0)
    shuffled = list(tc)
    rnd.shuffle(shuffled)
    p = grader.grade(exp, shuffled, answer)
    assert p.selection == s.selection
    assert p.parameters == pytest.approx(s.parameters)
    assert p.binary == s.binary


def test_parameters_brute_force_random():
    rng = random.Random(7)
    for _ in range(200):
        exp = [("f", {k: rng.randint(0, 1) for k in rng.sample("abc", rng.randint(1, 3))}) for _ in range(3)]
        used = [("f", {k: rng.randint(0, 1) for k in rng.sample("abc", rng.randint(0, 3))}) for _ in range(3)]

        def agree(e, u):
            keys = e.keys() | u.keys()
            return Fraction(sum(1 for k in e if k in u and e[k] == u[k]), len(keys)) if keys else Fraction(1)

        best = max(
            sum(agree(e, u) for (_, e), (_, u) in zip(exp, perm, strict=True))
            for perm in itertools.permutations(used)
        )
        assert parameters_score(exp, used) == pytest.approx(float(best / 3))


def test_utilization_not_graded_when_results_not_captured():
    exp = expect("get")
    s = ToolGrader().grade(exp, [ToolCall(name="get")], "It has shipped")  # content capture off
    assert s.utilization is None and s.passed is True
    none_ok = ToolGrader().grade(exp, [ToolCall(name="get", error="boom")], "Sorry, the lookup failed.")
    assert none_ok.utilization is None and none_ok.passed is True  # nothing to use; the answer says so


# --------------------------------------------------------------------------- utilization: echoed values


def _order_turn(answer: str) -> tuple[Expectation, list[ToolCall], str]:
    exp = expect(("lookup_order", {"order_id": "ORD-52459"}))
    used = [
        ToolCall(
            name="lookup_order",
            arguments={"order_id": "ORD-52459"},
            result={"order_id": "ORD-52459", "status": "shipped", "carrier": "DHL"},
        )
    ]
    return exp, used, answer


def test_utilization_echo_of_input_is_not_evidence():
    exp, used, answer = _order_turn("Order ORD-52459 was delivered yesterday.")
    s = ToolGrader().grade(exp, used, answer, "Where is my order ORD-52459?")
    assert s.utilization == 0.0 and s.passed is False


def test_utilization_new_result_value_is_evidence():
    exp, used, answer = _order_turn("Order ORD-52459 is shipped with DHL.")
    s = ToolGrader().grade(exp, used, answer, "Where is my order ORD-52459?")
    assert s.utilization == 1.0 and s.passed is True


def test_utilization_echo_of_arguments_is_not_evidence():
    result = {"customer_id": 7731, "email": "ann@example.com"}
    args = {"customer_id": 7731}
    assert answer_uses("Customer 7731 is on file.", [result], None, [args]) is False
    assert answer_uses("Customer 7731 is on file.", [result]) is True  # without the arguments it would count
    assert answer_uses("We wrote to ann@example.com.", [result], None, [args]) is True


@pytest.mark.parametrize(
    ("turn_input", "answer", "uses"),
    [
        ("Is order 52459 over $40?", "Yes: 52459 totals $42.50.", True),  # 42.5 is new, 52459 is not
        ("Is order 52459 over $40?", "Order 52459 is in the system.", False),
        ("Does it cost 42.50?", "It costs $42.50.", False),  # the number was in the question
        ("Has it SHIPPED?", "Yes, it has shipped.", False),  # case-insensitive, like the answer match
        ("Where is it?", "It has shipped.", True),
    ],
)
def test_utilization_echo_of_input_text_and_numbers(turn_input, answer, uses):
    result = {"order": 52459, "total": 42.5, "status": "shipped"}
    assert answer_uses(answer, [result], turn_input, [{}]) is uses


def test_utilization_echo_applies_per_call():
    # a value the second call was asked about is still new information when the first call returned it
    results = [{"carrier": "DHL"}, {"carrier": "DHL", "eta": "Monday"}]
    args = [{}, {"carrier": "DHL"}]
    assert answer_uses("Sent with DHL.", results, "Where is it?", args) is True
    assert answer_uses("Sent with DHL.", results[1:], "Where is it?", args[1:]) is False


def test_a_utilization_search_past_its_budget_has_no_answer_rather_than_a_failure() -> None:
    """Every result value is searched for in the answer: past the budget, no value found yet, the check says
    None (utilization not graded), where it said False (the agent ignored its results) after any time."""
    result = {f"k{i}": f"value{i:05d}" for i in range(200)}
    answer = AnswerText("nothing of the kind " * 50)  # 1,000 characters
    assert uses_results(answer, [result], "q", None, SearchBudget(1_000_000)) is False
    budget = SearchBudget(50_000)
    assert uses_results(answer, [result], "q", None, budget) is None and budget.left <= 0
    found = AnswerText("it is value00003 " + "x" * 1_000)
    assert uses_results(found, [result], "q", None, SearchBudget(10_000)) is True  # found before it ran out


def test_a_conversation_whose_results_outgrow_the_search_leaves_utilization_ungraded_and_says_so() -> None:
    big = {f"k{i}": f"value{i:05d}" for i in range(10_000)}
    answer = " ".join(f"word{i}" for i in range(10_000))  # 90 kB, no result value in it
    turns = [
        {
            "input": "q",
            "answer": answer,
            "tool_calls": [{"name": "get", "arguments": {}, "result": big}],
            "expected": {"tools": [{"name": "get"}], "uses_tool_results": True},
        }
        for _ in range(3)
    ]
    score = score_conversation(Conversation.model_validate({"conversation_id": "u", "turns": turns}))
    utilization = [t.tool.utilization if t.tool is not None else "-" for t in score.turn_scores]
    # 10,000 values x 90 kB: 900 million characters a turn; the budget is the conversation's (1,073,741,824)
    assert utilization == [0.0, None, None]
    notes = [r for r in score.reasons if r.startswith("note: tool_utilization:")]
    assert len(notes) == 2 and notes[0].startswith("note: tool_utilization: turn 1: not checked")
    assert "1,073,741,824 characters" in notes[0]


def test_a_conversations_own_utilization_past_the_budget_is_not_failed_and_says_so() -> None:
    big = {f"k{i}": f"value{i:05d}" for i in range(10_000)}
    answer = " ".join(f"word{i}" for i in range(10_000))
    turns = [
        {"input": "q", "answer": answer, "tool_calls": [{"name": "get", "arguments": {}, "result": big}]}
    ] * 3
    conv = {
        "conversation_id": "w",
        "turns": turns,
        "expected": {"tools": [{"name": "get"}], "uses_tool_results": True},
    }
    score = score_conversation(Conversation.model_validate(conv))
    assert not any(r.startswith("tool_utilization:") for r in score.reasons)
    assert any(r.startswith("note: tool_utilization: not checked") for r in score.reasons)
    small = [
        {
            "input": "q",
            "answer": "word",
            "tool_calls": [{"name": "get", "arguments": {}, "result": {"k": "value"}}],
        }
    ]
    conv = {
        "conversation_id": "s",
        "turns": small,
        "expected": {"tools": [{"name": "get"}], "uses_tool_results": True},
    }
    assert any(
        r.startswith("tool_utilization:")
        for r in score_conversation(Conversation.model_validate(conv)).reasons
    )
