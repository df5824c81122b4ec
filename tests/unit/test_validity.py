"""Validity on real outcomes: agentwatch's verdicts on published benchmark runs of three agents, graded blind,
must agree with the benchmarks' rewards at least as well as they do today (a floor per run), every detector that
fails conversations by default must keep its false-fail rate on real successes at 1% or less pooled (precision
first), and κ and the intervals are computed right."""

from __future__ import annotations

import gzip
import json
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentwatch.config import Settings
from agentwatch.importers.tau_bench import import_results
from agentwatch.report.validity import (
    Agreement,
    RunValidity,
    agreement,
    blind,
    exact_interval,
    grade,
    kappa,
    pooled,
    validate_run,
)
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import Conversation, Outcome
from tests.support import published_runs

# What the graders reach on each dev run today (`python -m benchmarks.validity`, 2026-11-27); lowering one fails.
FLOOR = {
    published_runs.AIRLINE: {"n": 100, "successes": 31, "agreement": 1.00, "kappa": 1.000},
    published_runs.RETAIL: {"n": 100, "successes": 73, "agreement": 1.00, "kappa": 1.000},
    published_runs.TAU2_AIRLINE: {"n": 50, "successes": 28, "agreement": 1.00, "kappa": 1.000},
}
FALSE_FAIL_LIMIT = 0.01  # a detector fails conversations by default only up to this rate on real successes


@given(st.integers(0, 40), st.integers(0, 40), st.integers(0, 40), st.integers(0, 40))
def test_kappa_against_exact_fractions(tp: int, fp: int, fn: int, tn: int) -> None:
    n = tp + fp + fn + tn
    if n == 0:
        assert kappa(tp, fp, fn, tn) != kappa(tp, fp, fn, tn)  # NaN
        return
    po = Fraction(tp + tn, n)
    pe = Fraction(tp + fp, n) * Fraction(tp + fn, n) + Fraction(fn + tn, n) * Fraction(fp + tn, n)
    if pe == 1:
        assert kappa(tp, fp, fn, tn) != kappa(tp, fp, fn, tn)
    else:
        assert kappa(tp, fp, fn, tn) == pytest.approx(float((po - pe) / (1 - pe)), abs=1e-12)


@pytest.fixture(scope="module")
def runs() -> dict[str, RunValidity]:
    return {name: validate_run(published_runs.require(name)) for name in published_runs.ALL}


@pytest.mark.parametrize("name", list(FLOOR))
def test_verdicts_agree_with_real_outcomes_at_least_as_well_as_today(name: str, runs) -> None:
    run, floor = runs[name], FLOOR[name]
    result = run.agreement
    assert result.unscored == 0 and result.n == floor["n"] and result.successes == floor["successes"]
    assert result.agreement >= floor["agreement"] - 1e-9, result.disagreements
    assert result.kappa >= floor["kappa"] - 5e-4, result.disagreements
    lo, hi = result.kappa_interval
    assert -1 <= lo <= result.kappa <= hi <= 1
    reward, verdict = run.pass_pow_k(1)
    assert reward.value is not None and verdict.value is not None
    assert abs(reward.value - verdict.value) <= 1 - floor["agreement"] + 1e-9


def test_every_default_detector_fails_at_most_one_percent_of_real_successes(runs) -> None:
    """Precision first: `scoring.failing_evidence` holds only detectors measured at a false-fail rate of 1% or
    less on every real run together; each still catches something somewhere or is cheap to keep."""
    every = pooled(list(runs.values()))
    assert every.n == sum(f["n"] for f in FLOOR.values())
    for name in Settings().scoring.failing_evidence:
        rates = every.detectors[name]
        assert rates.successes == sum(f["successes"] for f in FLOOR.values())
        assert rates.false_fail_rate <= FALSE_FAIL_LIMIT, (name, rates)
    # every check stays on: the real failures are failed for their effects, outputs or failure evidence
    assert every.detectors["no_answer"].on_failure > 0 and every.detectors["loop"].on_failure > 0
    assert every.true_fail_reasons["policy_tools"] > 0 and every.true_fail_reasons["policy_effects"] > 0


def test_grading_is_blind_to_the_labels() -> None:
    document = json.loads(gzip.decompress(published_runs.require(published_runs.AIRLINE).read_bytes()))
    imported = import_results(document, "agent", "gpt-4o", "dev")
    conversations = [Conversation.model_validate(line) for line in imported.lines]
    flipped_outcome = {
        Outcome.COMPLETE: Outcome.PARTIAL_INCORRECT,
        Outcome.PARTIAL_INCORRECT: Outcome.COMPLETE,
    }
    flipped = [c.model_copy(update={"outcome": flipped_outcome[c.outcome]}) for c in conversations]  # type: ignore[index]
    settings = Settings.model_validate({"policies": imported.policies})
    a, _ = blind(conversations)
    b, _ = blind(flipped)
    assert all(c.outcome is None for c in a + b)
    scores, scores_flipped = grade(a, settings), grade(b, settings)
    assert [s.passed for s in scores] == [s.passed for s in scores_flipped]
    assert all(s.label is None and "label" not in s.graded_by for s in scores)


def test_the_interval_resamples_tasks_and_is_reproducible(runs) -> None:
    run = runs[published_runs.RETAIL]
    a, b = agreement(run.scores, run.truth, seed=7), agreement(run.scores, run.truth, seed=7)
    assert a.kappa_interval == b.kappa_interval
    # a verdict flipped on one conversation moves κ; its interval still holds the point estimate
    flipped = list(run.truth)
    flipped[0] = not flipped[0]
    c = agreement(run.scores, flipped)
    assert c.kappa < a.kappa and c.kappa_interval[0] <= c.kappa <= c.kappa_interval[1]


def test_pooled_agreement_keeps_the_tasks_of_different_runs_apart(runs) -> None:
    """Task "5" of one run and task "5" of another are different tasks: resampled apart."""
    both = [runs[published_runs.RETAIL], runs[published_runs.TAU2_AIRLINE]]
    merged = agreement([s for r in both for s in r.scores], [t for r in both for t in r.truth])
    apart = pooled(both)
    assert (merged.true_pass, merged.false_fail) == (apart.true_pass, apart.false_fail)
    shared = {s.task for s in both[0].scores} & {s.task for s in both[1].scores}
    assert shared  # the test means something: the two runs share task ids


@pytest.mark.parametrize(("hits", "n"), [(0, 132), (1, 132), (5, 20), (20, 20)])
def test_the_false_fail_interval_is_clopper_pearson(hits: int, n: int) -> None:
    """Checked by bisection on the exact binomial tails (independent of the Beta quantiles the code uses)."""
    from math import comb

    def tail_at_least(p: float) -> float:
        return sum(comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(hits, n + 1))

    def tail_at_most(p: float) -> float:
        return sum(comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(0, hits + 1))

    def bisect(f, target: float, increasing: bool) -> float:
        lo, hi = 0.0, 1.0
        for _ in range(80):
            mid = (lo + hi) / 2
            if (f(mid) < target) == increasing:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    lo, hi = exact_interval(hits, n)
    want_lo = 0.0 if hits == 0 else bisect(tail_at_least, 0.025, increasing=True)
    want_hi = 1.0 if hits == n else bisect(tail_at_most, 0.025, increasing=False)
    assert lo == pytest.approx(want_lo, abs=1e-9) and hi == pytest.approx(want_hi, abs=1e-9)


def test_a_file_that_is_no_run_is_reported_and_the_rest_of_the_batch_graded(tmp_path) -> None:
    """`python -m benchmarks.validity` over many files stopped at the first one that was no results file,
    grading none of the others."""
    from benchmarks.validity import _graded

    not_a_run = tmp_path / "summary.json"
    not_a_run.write_text('{"avg_reward": 0.4}')
    good = published_runs.require(published_runs.TAU2_AIRLINE)
    runs, refused = _graded([not_a_run, good, tmp_path / "absent.json"], Settings())
    assert [len(r.scores) for r in runs] == [FLOOR[published_runs.TAU2_AIRLINE]["n"]]
    assert [path for path, _ in refused] == [not_a_run, tmp_path / "absent.json"]
    assert refused[0][1].startswith("TauBenchFormatError: not a τ-bench results file")


def test_a_run_of_one_class_prints_kappa_as_undefined_not_nan(capsys) -> None:
    """A run whose every conversation really succeeded (or a run with none graded) printed `kappa nan` and
    `0/0 = nan%`; it says what is undefined instead."""
    from benchmarks.validity import _agreement, _detectors

    every_success = Agreement(true_pass=7)
    every_success.kappa = kappa(7, 0, 0, 0)
    every_success.detectors["loop"].successes = 7
    _agreement("one class", every_success, 0)
    _detectors(every_success, {"loop"})
    _agreement("none graded", Agreement(), 0)
    out = capsys.readouterr().out
    assert "nan" not in out
    assert "Cohen's kappa undefined" in out and "100.0% (7/7)" in out
    assert "0/7 = 0.0% [0.0%, 41.0%]" in out and "0/0 (none)" in out
    assert "no conversation graded" in out


def test_a_loop_that_is_evidence_whatever_the_setting_is_no_false_fail_of_the_loop() -> None:
    """The loop's false-fail rate decides whether `loop` may fail conversations (`scoring.failing_evidence`); a
    lookup's or a handoff's loop, none refused, is evidence whatever that setting says, so it is not counted there:
    5 real successes of a LangChain agent that sent the transfer again put the loop at 5.0% pooled while it failed
    none. A write repeated counts, and a detector outside the setting (hallucination) counts each finding."""
    turn = {"input": "Cancel my booking", "answer": "Done."}

    def looped(name: str, result: str) -> Conversation:
        calls = [{"name": name, "arguments": {"id": "R1"}, "result": result}] * 3
        return Conversation.model_validate(
            {"conversation_id": name, "agent": "a", "task": "t", "turns": [dict(turn, tool_calls=calls)]}
        )

    scorer = ConversationScorer(Settings.model_validate({"policies": [{"id": "p", "tools": []}]}))
    scores = [
        scorer.score(looped(name, result))
        for name, result in [
            ("transfer_to_human_agents", "Transfer successful"),
            ("get_reservation_details", "R1: 2 passengers"),
            ("cancel_reservation", "cancelled"),
        ]
    ]
    assert [s.evidence for s in scores] == [["loop"]] * 3
    assert [s.passed for s in scores] == [True, True, False]
    loop = agreement(scores, [True, True, True], resamples=10).detectors["loop"]
    assert (loop.on_success, loop.successes) == (1, 3)
