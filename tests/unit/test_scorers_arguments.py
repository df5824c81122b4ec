"""Argument matching per argument, and the safe arithmetic evaluator behind `numeric` (hostile input too)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentwatch.scorers import arithmetic
from agentwatch.scorers.arguments import argument_agreement, canonical_json, exact_equal, values_match
from agentwatch.scorers.arithmetic import MAX_DEPTH, MAX_LENGTH, evaluate, number_value
from agentwatch.wire.json_text import MAX_NESTING

# --------------------------------------------------------------------------- arithmetic


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("430+412-(136+109)", Fraction(597)),
        ("(430-136)+(412-109)", Fraction(597)),
        ("2*(3+4)/7", Fraction(2)),
        ("-3 - -2", Fraction(-1)),
        ("1,234.50 + 0.5", Fraction(1235)),
        ("3 × 4 ÷ 2 − 1", Fraction(5)),
        (".5+1", Fraction(3, 2)),
        ("((((7))))", Fraction(7)),
        ("10/4", Fraction(5, 2)),
    ],
)
def test_arithmetic_values(text: str, value: Fraction) -> None:
    assert evaluate(text) == pytest.approx(float(value), rel=1e-12)


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('true')",  # names and calls are not arithmetic
        "2**10",  # no power operator
        "1e309",  # no exponent notation (and it would not be finite)
        "9" * 300,  # longer than MAX_LENGTH
        "(" * (MAX_DEPTH + 1) + "1" + ")" * (MAX_DEPTH + 1),  # nested deeper than the parser allows
        "1/0",
        "1/(2-2)",
        "(1+2",
        "1+2)",
        "1 2",
        "",
        "   ",
        "1,2",  # not a thousands separator
        "1.2.3",
        "5.",
        "+",
        "abs(-3)",
        "0x10",
        "1_000",
        "7 % 2",
        "2 ^ 3",
        "[1]",
    ],
)
def test_arithmetic_refuses_hostile_or_malformed_text(text: str) -> None:
    assert evaluate(text) is None


def test_arithmetic_overflow_is_not_a_number(monkeypatch: pytest.MonkeyPatch) -> None:
    assert evaluate("9" * 200) == pytest.approx(1e200)  # 200 digits: a finite float
    product = "*".join(["9" * 80] * 3)  # 1e240: finite
    assert evaluate(product) == pytest.approx(1e240)
    overflow = "*".join(["9" * 80] * 4)  # 1e320 overflows to infinity
    assert len(overflow) > MAX_LENGTH and evaluate(overflow) is None  # too long to be written by hand
    monkeypatch.setattr(arithmetic, "MAX_LENGTH", 10_000)
    assert evaluate(overflow) is None  # not finite either


_LEAF = st.integers(min_value=0, max_value=999)


def _expressions() -> st.SearchStrategy[tuple[str, Fraction]]:
    """(text, exact value) of random expressions over + − × and parentheses, values computed with Fraction."""
    leaves = _LEAF.map(lambda n: (str(n), Fraction(n)))

    def grow(children: st.SearchStrategy[tuple[str, Fraction]]) -> st.SearchStrategy[tuple[str, Fraction]]:
        def combine(a: tuple[str, Fraction], op: str, b: tuple[str, Fraction]) -> tuple[str, Fraction]:
            value = {"+": a[1] + b[1], "-": a[1] - b[1], "*": a[1] * b[1]}[op]
            return f"({a[0]}{op}{b[0]})", value

        return st.builds(combine, children, st.sampled_from("+-*"), children)

    return st.recursive(leaves, grow, max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(_expressions())
def test_arithmetic_matches_exact_fractions(expression: tuple[str, Fraction]) -> None:
    text, value = expression
    assert evaluate(text) == pytest.approx(float(value), rel=1e-12, abs=1e-9)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_arithmetic_never_raises_on_any_text(text: str) -> None:
    result = evaluate(text)
    assert result is None or isinstance(result, float)


def test_number_value_of_json_values() -> None:
    assert number_value(5) == 5.0 and number_value("$12.50") == 12.5 and number_value("2*3") == 6.0
    assert number_value(True) is None and number_value(None) is None and number_value({"a": 1}) is None
    assert number_value(float("inf")) is None


# --------------------------------------------------------------------------- matching modes


def test_default_rules_objects_as_subsets_lists_in_order_values_equal() -> None:
    flight = {"flight_number": "HAT1", "date": "2024-05-20"}
    described = {**flight, "origin": "JFK", "price": 120}
    assert values_match([flight], [described])  # extra descriptive keys inside a nested object are allowed
    assert not values_match([flight], [{"flight_number": "HAT1"}])  # a missing key is not
    assert not values_match([flight, described], [described, flight] + [flight])  # lengths differ
    assert not values_match(["a", "b"], ["b", "a"])  # lists keep their order by default
    assert values_match("4100", 4100) and values_match(4100, "4100.0") and values_match(1, 1.0)
    assert not values_match(True, 1) and not values_match(1, True)  # booleans are not numbers
    assert not values_match("4100", "4100.0")  # two texts compare as texts
    assert not values_match({"a": 1}, [1]) and not values_match(1, [1])


def test_exact_mode_allows_no_extra_keys_anywhere() -> None:
    assert values_match({"a": [{"b": 1}]}, {"a": [{"b": 1.0}]}, "exact")
    assert not values_match({"a": [{"b": 1}]}, {"a": [{"b": 1, "c": 2}]}, "exact")
    assert exact_equal([1, "x"], [1.0, "x"]) and not exact_equal(True, 1)


def test_ignore_numeric_subset_unordered_modes() -> None:
    assert values_match("a summary", "something else entirely", "ignore")
    assert values_match("430+412-(136+109)", "(430-136)+(412-109)", "numeric")
    assert values_match(597, "597.0000001", "numeric", tolerance=1e-6)
    assert not values_match(597, 598, "numeric") and not values_match(597, "n/a", "numeric")
    assert values_match([{"id": 1}, {"id": 2}], [{"id": 2, "x": 0}, {"id": 3}, {"id": 1}], "subset")
    assert not values_match([{"id": 1}, {"id": 1}], [{"id": 1}, {"id": 2}], "subset")  # two need two
    assert values_match(["a", "b", "b"], ["b", "a", "b"], "unordered")
    assert not values_match(["a", "b", "b"], ["b", "a", "a"], "unordered")
    assert not values_match(["a", "b"], ["b", "a", "c"], "unordered")  # nothing left over
    with pytest.raises(ValueError, match="unknown argument mode"):
        values_match(1, 1, "fuzzy")


def test_long_unordered_lists_compare_as_multisets() -> None:
    many = list(range(500))
    assert values_match(many, list(reversed(many)), "unordered")
    assert not values_match(many, [*many[:-1], 9999], "unordered")


def test_argument_agreement_leaves_ignored_arguments_out() -> None:
    expected = {"id": "R1", "summary": "the user wants a refund"}
    assert (
        argument_agreement(expected, {"id": "R1", "summary": "refund please"}, {"summary": "ignore"}) == 1.0
    )
    assert argument_agreement(expected, {"id": "R1"}, {"summary": "ignore"}) == 1.0  # absent is fine too
    # without the mode: one of two arguments agrees → 1/2 (keys in either: id, summary)
    assert argument_agreement(expected, {"id": "R1", "summary": "refund please"}) == Fraction(1, 2)
    assert argument_agreement(None, {"x": 1}) == 1.0 and argument_agreement({}, {}) == 1.0


@pytest.mark.parametrize(
    ("expected", "used", "mode", "same"),
    [
        # a list or an object passed as its text, as a real τ-bench agent passed item_ids: what the tool received
        (["5996159312"], "['5996159312']", None, True),
        (["1", "2"], '["2", "1"]', "unordered", True),
        (["1", "2"], "['1', '3']", "unordered", False),
        ({"id": "R1"}, '{"id": "R1", "extra": 1}', None, True),
        (["1"], "['1']", "exact", False),  # exact is JSON equality: text is not a list
        (["1"], "1", None, False),  # text that is no list stays text
        ("['1']", ["1"], None, False),  # text expected: a list is not it
    ],
)
def test_a_structure_passed_as_its_text(expected: object, used: object, mode: str | None, same: bool) -> None:
    assert values_match(expected, used, mode) is same


def _nested(depth: int, leaf: object) -> object:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def test_integers_past_float_range_compare_exactly_without_overflow() -> None:
    """An integer a float cannot hold (JSON allows any; pydantic reads them whole) is equal to itself only; reading
    it as a float raised OverflowError, which left the whole conversation unscored."""
    huge = 10**400
    assert values_match(huge, huge) and not values_match(huge, huge + 1)
    assert not values_match(huge, 1e308) and not values_match(huge, str(huge) + "x")
    assert values_match({"amount": huge}, {"amount": huge, "note": "x"})
    assert exact_equal([huge, 1], [huge, 1.0]) and not exact_equal([huge], [-huge])
    assert argument_agreement({"n": huge}, {"n": huge}) == 1.0
    assert argument_agreement({"n": -huge}, {"n": 5}) == 0.0


def test_values_nested_deeper_than_the_bound_equal_no_other_value() -> None:
    """Past the comparison's depth values compare as canonical JSON; one nested deeper than `MAX_NESTING` there
    equals no other value, compiled or not (the JSON encoder's RecursionError left the conversation unscored, and
    its limit depends on the caller's stack: compiled, it was not reached)."""
    assert canonical_json(_nested(MAX_NESTING + 1, 1)) != canonical_json(_nested(MAX_NESTING + 1, 1))
    assert canonical_json(_nested(MAX_NESTING, 1)) == canonical_json(_nested(MAX_NESTING, 1))
    deep_a, deep_b = _nested(900, 1), _nested(900, 1)
    assert not exact_equal(deep_a, deep_b)
    assert exact_equal(_nested(250, 1), _nested(250, 1)) and not exact_equal(_nested(250, 1), _nested(250, 2))
    assert argument_agreement({"x": deep_a}, {"x": deep_b}) == 0.0
