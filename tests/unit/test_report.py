"""The offline report on hand-built scores, field by field against fractions, scipy and hand computation."""

from __future__ import annotations

import json
import math
import statistics
from fractions import Fraction
from math import comb

import numpy as np
import pytest
from scipy import stats as sps

from agentwatch.config import Settings, load_settings
from agentwatch.report.baseline import BaselineError, compare_baseline, load_baseline
from agentwatch.report.build import build_report
from agentwatch.report.charts import curves
from agentwatch.report.failure_modes import failure_code
from agentwatch.report.html import render_html
from agentwatch.report.model import Report
from agentwatch.report.text import render_text
from agentwatch.stats.beta import posterior, regression_probability
from agentwatch.wire.schema import ConversationScore, Outcome, OutcomeSource, ToolScore, TurnScore

ISSUE_KEYS = {
    "conversations",
    "scored",
    "passed",
    "failure_rates",
    "graded_by",
    "sampled",
    "labels",
    "success_rate",
    "pass_at_k",
    "pass_pow_k",
    "asr",
    "outcomes",
    "tool_correctness",
    "cost",
    "by_task",
    "by_tag",
    "failure_modes",
    "ungraded",
    "readiness",
    "baseline",
    "units",
    "agent_version",
    "judge",
    "input",
    "label_agreement",
    "versions",
    "correction",
}
K_KEYS = {
    "value",
    "lower",
    "upper",
    "method",
    "interval",
    "units",
    "widened",
    "holds",
    "pooled_unbiased",
    "pooled_plugin",
    "pooled_mean",
    "pooled_lower",
    "pooled_upper",
    "task_mean",
    "corrected",
    "judge_only",
}
CREDIT = {
    "complete": 1.0,
    "partial_correct": 0.4,
    "partial_incorrect": 0.0,
    "hallucinated": 0.0,
    "abandoned": 0.0,
}


def make(
    i: int,
    outcome: str,
    task: str = "t1",
    category: str = "core",
    cost: float | None = None,
    budget: float | None = None,
    reasons: tuple[str, ...] = (),
    tool: tuple[float, float, float, float | None, bool] | None = None,
    loop: bool = False,
) -> ConversationScore:
    """A score: passed iff complete, None iff unscored; ASR credit from the default credits minus cost penalty."""
    passed = None if outcome == "unscored" else outcome == "complete"
    penalty = 0.0
    if cost is not None and budget is not None:
        penalty = min(1.0, max(0.0, (cost - budget) / budget))
    credit = None if passed is None else max(0.0, CREDIT[outcome] - penalty)
    turn = TurnScore(index=0, loop=loop)
    if tool is not None:
        sel, par, seq, util, binary = tool
        graded = [sel, par, seq] + ([util] if util is not None else [])
        turn.tool = ToolScore(
            selection=sel,
            parameters=par,
            sequence=seq,
            utilization=util,
            overall=sum(graded) / len(graded),
            binary=binary,
            passed=binary,
        )
    return ConversationScore(
        conversation_id=f"c{i}",
        agent="bot",
        version="1",
        task=task,
        tags={"category": category, "difficulty": "hard" if i % 2 else "easy"},
        turns=1,
        passed=passed,
        outcome=Outcome(outcome),
        outcome_source=OutcomeSource.RULES,
        reasons=list(reasons),
        turn_scores=[turn],
        cost_usd=cost,
        budget_usd=budget,
        cost_penalty=penalty,
        asr_credit=credit,
    )


def mixed() -> list[ConversationScore]:
    """12 conversations: 2 tasks, core and edge, every outcome class, costs, tools, a loop."""
    return [
        make(0, "complete", "t1", cost=0.05, budget=0.10, tool=(1, 1, 1, 1, True)),
        make(1, "complete", "t1", cost=0.08, budget=0.10, tool=(1, 1, 1, None, True)),
        make(2, "complete", "t1", cost=0.20, budget=0.10, reasons=("over_budget: cost $0.2 above",)),
        make(
            3,
            "partial_correct",
            "t1",
            cost=0.07,
            budget=0.10,
            tool=(0.5, 1, 1, 0, False),
            reasons=("tool_selection: turn 0: x", "tool_utilization: turn 0: y"),
        ),
        make(4, "hallucinated", "t1", cost=0.02, reasons=("hallucination: turn 0: ORD-1",)),
        make(5, "complete", "t2", cost=0.30, budget=0.50),
        make(6, "complete", "t2", cost=0.90, budget=0.50, reasons=("over_budget: x",)),
        make(7, "abandoned", "t2", reasons=("loop: turn 0: search x3", "no_answer: turn 0"), loop=True),
        make(8, "unscored", "t2", reasons=("no_grader: nothing",)),
        make(9, "complete", "t2", category="edge", cost=0.10),
        make(10, "partial_incorrect", "t2", category="edge", reasons=("answer: turn 0: low", "label: x")),
        make(11, "complete", "t1", category="edge", tool=(0, 0.5, 0, None, False)),
    ]


@pytest.fixture(scope="module")
def report() -> Report:
    return build_report(mixed(), Settings(), ks=[1, 2, 3, 5, 12])


def test_json_keys_are_exactly_the_documented_ones(report: Report) -> None:
    data = json.loads(report.model_dump_json())
    assert set(data) == ISSUE_KEYS
    assert set(data["success_rate"]) == {
        "plugin",
        "mean",
        "lower",
        "upper",
        "method",
        "labels",
        "judge_only",
        "note",
    }
    assert set(data["pass_at_k"]) == {"1", "2", "3", "5", "12"}
    assert set(data["pass_pow_k"]["3"]) == K_KEYS
    assert set(data["asr"]) == {"value", "lower", "upper", "method", "units", "judge_only"}
    assert set(data["cost"]) == {"p50", "p90", "p99", "over_budget_ratio"}
    assert set(data["failure_rates"]) == {
        "error",
        "no_answer",
        "loop",
        "hallucination",
        "over_budget",
        "forbidden_tool",
    }
    assert set(data["failure_rates"]["loop"]) == {"count", "rate", "mean", "lower", "upper"}
    assert set(data["by_tag"]) == {"category", "difficulty"}
    top_only = {
        "by_task",
        "by_tag",
        "readiness",
        "baseline",
        "agent_version",
        "judge",
        "input",
        "label_agreement",
        "versions",
    }
    assert set(data["by_task"]["t1"]) == ISSUE_KEYS - top_only
    assert data["units"] == {
        "units": 11,
        "repeated": 0,
        "max_attempts": 1,
        "without_unit": 11,
        "pairs": [[1, 0, 4], [1, 1, 7]],
        "by_unit": [],  # no conversation names an instance or an attempt
    }
    # Round trip: a JSON report can be read back (as a baseline).
    assert Report.model_validate_json(report.model_dump_json()) == report


def test_counts_and_success_rate(report: Report) -> None:
    n, c = 11, 7  # 12 conversations, one unscored; 7 complete
    assert (report.conversations, report.scored, report.passed) == (12, n, c)
    sr = report.success_rate
    assert sr.plugin == pytest.approx(c / n)
    assert sr.mean == pytest.approx(float(Fraction(1 + c, 2 + n)))
    assert sr.lower == pytest.approx(sps.beta.ppf(0.025, 1 + c, 1 + n - c), rel=1e-10)
    assert sr.upper == pytest.approx(sps.beta.ppf(0.975, 1 + c, 1 + n - c), rel=1e-10)
    assert report.outcomes == {
        "complete": 7,
        "partial_correct": 1,
        "partial_incorrect": 1,
        "hallucinated": 1,
        "abandoned": 1,
        "unscored": 1,
    }


def _rising(a: int, b: int, k: int) -> Fraction:
    out = Fraction(1)
    for i in range(k):
        out *= Fraction(a + i, a + b + i)
    return out


def test_pass_at_k_and_pass_pow_k_fields(report: Report) -> None:
    n, c = 11, 7
    per_task = {"t1": (6, 4), "t2": (5, 3)}  # scored per task
    for k in (1, 2, 3, 5):
        at, pw = report.pass_at_k[str(k)], report.pass_pow_k[str(k)]
        assert at.pooled_unbiased == pytest.approx(float(1 - Fraction(comb(n - c, k), comb(n, k))), rel=1e-12)
        exact = float(Fraction(comb(c, k), comb(n, k)))
        assert pw.pooled_unbiased == pytest.approx(exact, rel=1e-12, abs=1e-15)
        assert at.pooled_plugin == pytest.approx(float(1 - (1 - Fraction(c, n)) ** k))
        assert pw.pooled_plugin == pytest.approx(float(Fraction(c, n) ** k))
        a, b = 1 + c, 1 + n - c
        assert pw.pooled_mean == pytest.approx(float(_rising(a, b, k)), rel=1e-12)
        assert at.pooled_mean == pytest.approx(float(1 - _rising(b, a, k)), rel=1e-12)
        qlo, qhi = sps.beta.ppf(0.025, a, b), sps.beta.ppf(0.975, a, b)
        assert (pw.pooled_lower, pw.pooled_upper) == pytest.approx((qlo**k, qhi**k), rel=1e-9)
        at_bounds = (1 - (1 - qlo) ** k, 1 - (1 - qhi) ** k)
        assert (at.pooled_lower, at.pooled_upper) == pytest.approx(at_bounds, rel=1e-9)
        # no repeated attempts: the headline is the pooled posterior under exchangeability, and says so
        for e in (at, pw):
            assert (e.method, e.interval, e.units) == ("exchangeable", "beta", None)
            assert (e.value, e.lower, e.upper) == (e.pooled_mean, e.pooled_lower, e.pooled_upper)
        tasks = [(tn, tc) for tn, tc in per_task.values() if tn >= k]
        exp_pow = sum(Fraction(comb(tc, k), comb(tn, k)) for tn, tc in tasks) / len(tasks)
        exp_at = sum(1 - Fraction(comb(tn - tc, k), comb(tn, k)) for tn, tc in tasks) / len(tasks)
        assert pw.task_mean == pytest.approx(float(exp_pow), abs=1e-12)
        assert at.task_mean == pytest.approx(float(exp_at), abs=1e-12)
    # k = 12 > n = 11: no unbiased estimate and no task with n >= k; plug-in and Bayesian still defined.
    big = report.pass_pow_k["12"]
    assert big.pooled_unbiased is None and big.task_mean is None
    assert big.pooled_plugin == pytest.approx((7 / 11) ** 12) and big.value == big.pooled_mean is not None


def test_asr_tool_cost_failure_modes(report: Report) -> None:
    credits = [1.0, 1.0, 0.0, 0.4, 0.0, 1.0, 0.2, 0.0, 1.0, 0.0, 1.0]  # c2 is 100% over budget, c6 80% over
    value = math.fsum(credits) / len(credits)
    assert report.asr.value == pytest.approx(value)
    half = 1.96 * np.std(credits) / math.sqrt(len(credits))
    assert report.asr.lower is not None and report.asr.upper is not None
    assert report.asr.lower < value < report.asr.upper
    assert (report.asr.upper - report.asr.lower) / 2 == pytest.approx(half, rel=0.25)
    tc = report.tool_correctness
    assert tc["selection"] == pytest.approx((1 + 1 + 0.5 + 0) / 4)
    assert tc["parameters"] == pytest.approx((1 + 1 + 1 + 0.5) / 4)
    assert tc["sequence"] == pytest.approx((1 + 1 + 1 + 0) / 4)
    assert tc["utilization"] == pytest.approx((1 + 0) / 2)
    overall = [1.0, 1.0, (0.5 + 1 + 1 + 0) / 4, (0 + 0.5 + 0) / 3]
    assert tc["overall"] == pytest.approx(sum(overall) / 4)
    assert tc["binary"] == pytest.approx(0.5)
    costs = [0.05, 0.08, 0.20, 0.07, 0.02, 0.30, 0.90, 0.10]
    q = statistics.quantiles(costs, n=100, method="inclusive")
    assert report.cost.p50 == pytest.approx(statistics.median(costs))
    assert (report.cost.p90, report.cost.p99) == pytest.approx((q[89], q[98]))
    assert report.cost.over_budget_ratio == pytest.approx(2 / 6)  # six have cost and budget; c2 and c6 over
    modes = {f.mode: f.count for f in report.failure_modes}
    assert modes == {
        "over_budget": 2,
        "tool_selection": 1,
        "tool_utilization": 1,
        "hallucination": 1,
        "loop": 1,
        "no_answer": 1,
        "answer": 1,
    }
    assert report.failure_modes[0].mode == "over_budget"
    # why one conversation was not graded is coverage, listed apart from the failure modes
    assert report.ungraded == {"no_grader": 1}
    # each mode lists its conversations in input order; groups below the report list none
    assert [(f.mode, f.conversations) for f in report.failure_modes[:2]] == [
        ("over_budget", ["c2", "c6"]),
        ("answer", ["c10"]),
    ]
    assert all(not f.conversations for f in report.by_task["t1"].failure_modes)
    assert failure_code("Tool-Selection: turn 1") == "tool_selection" and failure_code("") == "unknown"


def test_groups(report: Report) -> None:
    t1, t2 = report.by_task["t1"], report.by_task["t2"]
    assert (t1.conversations, t1.scored, t1.passed) == (6, 6, 4)
    assert (t2.conversations, t2.scored, t2.passed) == (6, 5, 3)
    assert t2.pass_pow_k["3"].pooled_unbiased == pytest.approx(float(Fraction(comb(3, 3), comb(5, 3))))
    core, edge = report.by_tag["category"]["core"], report.by_tag["category"]["edge"]
    assert (core.conversations, core.scored, core.passed) == (9, 8, 5)
    assert (edge.conversations, edge.scored, edge.passed) == (3, 3, 2)
    hard = report.by_tag["difficulty"]["hard"]
    assert hard.conversations == 6 and hard.outcomes["unscored"] == 0


def test_readiness_on_core_tasks(report: Report) -> None:
    rd = report.readiness
    assert rd.scope == "core" and (rd.scope_conversations, rd.scope_scored, rd.scope_passed) == (9, 8, 5)
    gates = {g.name: g for g in rd.gates}
    lower = sps.beta.ppf(0.025, 1 + 5, 1 + 8 - 5)  # the default gate compares the lower 95% credible bound
    assert gates["pass@1"].value == pytest.approx(lower) and not gates["pass@1"].passed
    assert gates["pass^3"].value == pytest.approx(lower**3) and not gates["pass^3"].passed
    assert gates["pass^3"].method == gates["pass@1"].method == "exchangeable"
    assert (
        gates["pass@1"].note
        == "not enough conversations: 8 graded, at least 30 needed (gate.min_conversations)"
    )
    assert gates["loops"].value == 1 and not gates["loops"].passed
    assert (gates["pass@1"].threshold, gates["pass^3"].threshold) == (0.8, 0.5)
    assert rd.tier == "prototype"  # posterior mean 6/10 >= 0.5; below beta's 0.80
    assert not rd.safe_to_ship and rd.verdict == "DO NOT SHIP"


def test_gate_on_all_when_nothing_is_core_and_safe_to_ship() -> None:
    scores = [make(i, "complete", category="edge") for i in range(59)] + [
        make(59, "hallucinated", category="x")
    ]
    rd = build_report(scores, Settings()).readiness
    assert rd.scope == "all" and "no conversation tagged category=core" in rd.scope_note
    gates = {g.name: g for g in rd.gates}
    lower = sps.beta.ppf(0.025, 1 + 59, 1 + 1)
    assert gates["pass@1"].value == pytest.approx(lower) and gates["pass^3"].value == pytest.approx(lower**3)
    assert lower > 0.9 and rd.safe_to_ship and rd.verdict == "SAFE TO SHIP" and rd.tier == "production"
    assert "SAFE TO SHIP." in render_text(build_report(scores, Settings()))
    # the same share of passes on one conversation in ten is not evidence enough
    few = build_report(scores[50:], Settings()).readiness
    note = few.gates[0].note
    assert not few.safe_to_ship and note is not None and "not enough conversations: 10 graded" in note


def _gate_passes(n: int, c: int, settings: Settings) -> bool:
    """The real gate's decision on n graded conversations of which c passed."""
    scores = [make(i, "complete" if i < c else "abandoned", category="core") for i in range(n)]
    return build_report(scores, settings).readiness.safe_to_ship


@pytest.mark.parametrize(("true_pow3", "n", "most"), [(0.40, 30, 0.05), (0.45, 30, 0.05), (0.49, 100, 0.05)])
def test_gate_false_pass_rate_on_releases_below_the_threshold(true_pow3: float, n: int, most: float) -> None:
    """A release whose true pass^3 is below 0.50 passes the default gate rarely: exactly, over every c."""
    settings = Settings()
    p = true_pow3 ** (1 / 3)
    decisions = [_gate_passes(n, c, settings) for c in range(n + 1)]
    assert decisions == sorted(decisions)  # more passes never turn SAFE into DO NOT SHIP
    exact = sum(sps.binom.pmf(c, n, p) for c in range(n + 1) if decisions[c])
    rng = np.random.default_rng(5)
    simulated = np.mean([decisions[c] for c in rng.binomial(n, p, size=4000)])
    assert exact <= most and simulated <= most + 0.01, (exact, simulated)


@pytest.mark.parametrize("estimate", ["unbiased", "task_mean", "mean", "lower", "value", "plugin"])
def test_gate_estimate_choice(estimate: str) -> None:
    scores = [make(i, "complete" if i < 8 else "abandoned", task=f"t{i % 2}") for i in range(10)]
    settings = load_settings(None, gate={"estimate": estimate})
    value = {g.name: g.value for g in build_report(scores, settings).readiness.gates}["pass^3"]
    post = posterior(10, 8)
    expected = {
        "unbiased": float(Fraction(comb(8, 3), comb(10, 3))),
        "task_mean": float((Fraction(comb(4, 3), comb(5, 3)) + Fraction(comb(4, 3), comb(5, 3))) / 2),
        "mean": float(_rising(9, 3, 3)),
        "value": float(_rising(9, 3, 3)),  # no repeats: the pooled posterior mean under exchangeability
        "plugin": 0.8**3,
        "lower": sps.beta.ppf(0.025, 9, 3) ** 3,
    }[estimate]
    assert value == pytest.approx(expected, rel=1e-9) and post.alpha == 9


def test_empty_groups_are_null_not_nan() -> None:
    r = build_report([make(0, "unscored")], Settings())
    data = json.loads(r.model_dump_json())
    assert data["scored"] == 0 and data["success_rate"] == {
        "plugin": None,
        "mean": None,
        "lower": None,
        "upper": None,
        "method": "beta",
        "labels": 0,
        "judge_only": None,
        "note": None,
    }
    assert data["asr"]["value"] is None and data["readiness"]["tier"] == "unknown"
    assert "NaN" not in r.model_dump_json()


def test_baseline_comparison_and_regression(tmp_path) -> None:
    settings = Settings()
    base = build_report([make(i, "complete" if i < 27 else "hallucinated") for i in range(30)], settings)
    new = build_report([make(i, "complete" if i < 15 else "hallucinated") for i in range(30)], settings)
    path = tmp_path / "base.json"
    path.write_text(base.model_dump_json(), encoding="utf-8")
    cmp = compare_baseline(new, load_baseline(path), settings, str(path))
    assert cmp.success_rate.delta == pytest.approx(15 / 30 - 27 / 30)
    assert cmp.pass_pow_k["3"].delta == pytest.approx(float(_rising(16, 16, 3) - _rising(28, 4, 3)))
    assert cmp.outcome_share["hallucinated"].delta == pytest.approx(15 / 30 - 3 / 30)
    expected = regression_probability(posterior(30, 15), posterior(30, 27), 3, 0.05)
    assert {c.scope for c in cmp.checks} == {"all", "core"}
    assert all(c.probability == pytest.approx(expected) and c.method == "exchangeable" for c in cmp.checks)
    assert expected > 0.95 and cmp.regression
    assert "P(pass^3_new < pass^3_base - 0.05) >= 0.95" in cmp.rule
    same = compare_baseline(base, base, settings, "same")
    assert not same.regression and same.success_rate.delta == 0
    new.baseline = cmp
    text = render_text(new)
    assert "VS BASELINE" in text and "REGRESSION DETECTED." in text and "baseline regression" in text


def test_bad_baseline_files(tmp_path) -> None:
    with pytest.raises(BaselineError, match="cannot read"):
        load_baseline(tmp_path / "nope.json")
    (tmp_path / "a.json").write_text("{", encoding="utf-8")
    with pytest.raises(BaselineError, match="not JSON"):
        load_baseline(tmp_path / "a.json")
    (tmp_path / "b.json").write_text('{"conversations": 3}', encoding="utf-8")
    with pytest.raises(BaselineError, match="not an agentwatch report"):
        load_baseline(tmp_path / "b.json")


def test_text_layout(report: Report) -> None:
    text = render_text(report, title="Agent Evaluation Report — bot 1")
    order = [
        "Agent Evaluation Report — bot 1",
        "METRICS (graded sample",
        "FAILURE EVIDENCE (rates over all 12 conversations",
        "METRICS (by difficulty)",
        "METRICS (by category)",
        "TOP FAILURE MODES",
        "READINESS",
        "DO NOT SHIP",
    ]
    positions = [text.index(s) for s in order]
    assert positions == sorted(positions)
    assert "success rate: 0.636 (7/11 graded passed)" in text
    assert "1. over_budget (2 conversations)" in text
    assert "coverage 91.7%" in text and "\x1b[" not in text


def test_html_has_plots_and_curve_values(report: Report) -> None:
    settings = Settings()
    page = render_html(report, settings, title="T <x>")
    assert page.count("data:image/png;base64,") == 2 and "T &lt;x&gt;" in page and "DO NOT SHIP" in page
    data = curves(report, settings)
    p = 7 / 11
    assert data["pow_plugin"] == pytest.approx([p**k for k in range(1, 11)])
    assert data["at_plugin"] == pytest.approx([1 - (1 - p) ** k for k in range(1, 11)])
    assert data["pow_exch_mean"] == pytest.approx([float(_rising(8, 5, k)) for k in range(1, 11)])
    assert all(
        lo <= m <= hi
        for lo, m, hi in zip(data["pow_exch_lo"], data["pow_exch_mean"], data["pow_exch_hi"], strict=True)
    )
    assert "units_k" not in data  # no repeated attempts: no curve over units


def test_a_share_at_1_outside_its_interval_is_said_with_the_posterior_mean() -> None:
    """30 of 30 passed: the observed share 1.000 lies outside the equal-tailed interval [0.888, 0.999]; the line
    says so and gives the posterior mean (Beta(31, 1): 31/32). A share inside its interval gets no such note."""
    text = render_text(build_report([make(i, "complete", "t1") for i in range(30)], Settings()))
    line = next(x for x in text.splitlines() if "success rate:" in x)
    assert line.startswith("  success rate: 1.000 (30/30 graded passed) [0.888, 0.999]")
    assert f"posterior mean {float(Fraction(31, 32)):.3f}" in line and "leaves it out" in line
    text = render_text(build_report(mixed(), Settings()))
    assert "leaves it out" not in text


def test_a_baseline_with_impossible_counts_is_refused_by_name(tmp_path) -> None:
    """An edited baseline whose counts cannot be (passed -1, or more passed than graded) stopped the comparison
    with `ValueError: need 0 <= c <= n` and a traceback; it is refused as not a report, saying which counts."""
    good = json.loads(build_report(mixed(), Settings()).model_dump_json())
    for change, said in (
        ({"passed": -1}, "passed: Input should be greater than or equal to 0"),
        ({"passed": 12}, "are not passed <= scored"),
    ):
        path = tmp_path / "edited.json"
        path.write_text(json.dumps({**good, **change}))
        with pytest.raises(BaselineError, match=said):
            load_baseline(path)
    path.write_text(json.dumps(good))
    assert load_baseline(path).passed == good["passed"]
