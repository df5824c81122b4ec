"""Maximum bipartite matching (`scorers.matching`), and the expected calls' comparisons bounded by tool name."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from agentwatch.config import TaskPolicy
from agentwatch.scorers.effects import CLOSEST_BUDGET, WantedCall, check_calls, wanted_calls
from agentwatch.scorers.made_calls import MadeCall, made_calls
from agentwatch.scorers.matching import match_pairs
from agentwatch.scorers.policy import grade_policy, tool_fits
from tests.unit.test_scorers_effects import KINDS, NAMES, call, conv


def _maximum(edges: set[tuple[int, int]], left: int) -> int:
    """The size of a maximum matching, by trying every assignment of left items (small graphs only)."""
    best = 0
    rights = sorted({r for _, r in edges})
    for size in range(min(left, len(rights)), 0, -1):
        for ls in itertools.combinations(range(left), size):
            for rs in itertools.permutations(rights, size):
                if all((lft, r) in edges for lft, r in zip(ls, rs, strict=True)):
                    return size
    return best


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 5),
    st.integers(1, 5),
    st.sets(st.tuples(st.integers(0, 4), st.integers(0, 4)), max_size=14),
)
def test_the_matching_is_maximum_and_candidates_change_nothing(left: int, right: int, raw: set) -> None:
    edges = {(a, b) for a, b in raw if a < left and b < right}
    order = list(range(left))[::-1]
    plain = match_pairs(order, right, lambda a, b: (a, b) in edges)
    indexed = match_pairs(
        order, right, lambda a, b: (a, b) in edges, lambda a: sorted(b for x, b in edges if x == a)
    )
    assert plain == indexed  # the same pairs: candidates in ascending order are the items `fits` would take
    assert all((a, b) in edges for a, b in plain.items())
    assert len(set(plain.values())) == len(plain)
    assert len(plain) == _maximum(edges, left)


def test_an_expected_call_is_only_compared_with_the_calls_of_its_tool() -> None:
    """`fits` is asked about no call of another tool (the calls are indexed by name), and the pairs found are
    those of comparing every call."""
    policy = TaskPolicy.model_validate(
        {
            "id": "p",
            "tools": [{"name": "cancel", "arguments": {"id": "R1"}}, {"name": "refund", "arguments": {}}],
        }
    )
    made = made_calls(
        conv(call("refund"), call("cancel", id="R2"), call("cancel", id="R1"), call("lookup")), NAMES, KINDS
    )
    wanted = wanted_calls(policy.tools, NAMES, KINDS, made)
    asked: list[tuple[str, str]] = []

    def fits(w: WantedCall, m: MadeCall) -> bool:
        asked.append((w.name, m.name))
        return tool_fits(w.spec, m.call, "", 1e-9)

    found = check_calls(wanted, made, fits, lambda w, m: [])
    assert found.missing == [] and found.refused == []
    assert ("cancel", "cancel") in asked and ("refund", "refund") in asked
    assert all(a == b for a, b in asked), asked
    assert [(m.name, m.call.arguments) for m in found.unexpected] == [
        ("cancel", {"id": "R2"}),
        ("lookup", {}),
    ]


def test_past_the_budget_a_missing_calls_closest_call_is_not_looked_for() -> None:
    """1,000 expected writes of one tool against 2,000 calls of it, none matching: the closest call is named
    for the first expectations, and the rest say it was not looked for — the verdict the same."""
    tools = [{"name": "update", "arguments": {"id": f"R{i}"}} for i in range(1_000)]
    calls = [call("update", id=f"X{j}") for j in range(2_000)]
    result = grade_policy(
        TaskPolicy.model_validate({"id": "p", "tools": tools}), conv(*calls), None, NAMES, KINDS
    )
    missing = [r for r in result.failures if r.startswith("policy_tools: no successful call matches")]
    assert len(missing) == 1_000
    named = [r for r in missing if "the closest call update" in r]
    unlooked = [r for r in missing if "its closest call was not looked for" in r]
    # each expectation compares the 2,000 calls: the first 50 fit in the budget's 100,000
    assert len(named) == CLOSEST_BUDGET // 2_000 and len(unlooked) == 1_000 - len(named)
    assert missing[: len(named)] == named  # in the policy's order
    assert f"{CLOSEST_BUDGET:,}" in unlooked[0]
