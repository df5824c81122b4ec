"""Validity on real outcomes: agentwatch's verdicts on a published benchmark run, graded blind, must agree
with the benchmark's rewards at least as well as they do today (a quality floor), and κ is computed right."""

from __future__ import annotations

import gzip
import json
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentwatch.config import Settings
from agentwatch.importers.tau_bench import import_results
from agentwatch.report.validity import agreement, blind, expectation_from_actions, grade, kappa
from agentwatch.wire.schema import Conversation, Outcome
from tests.support import published_runs

# What the graders reach on the dev data today (`python -m benchmarks.validity`); lowering one fails.
FLOOR = {
    "policies": {"agreement": 1.00, "kappa": 1.000},
    "defaults": {"agreement": 0.99, "kappa": 0.976},
}


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
def dev() -> tuple[list[Conversation], list[dict], list[dict]]:
    document = json.loads(gzip.decompress(published_runs.require(published_runs.AIRLINE).read_bytes()))
    imported = import_results(document, "agent", "gpt-4o", "dev")
    return [Conversation.model_validate(line) for line in imported.lines], imported.policies, document


def _variant(name: str, dev: tuple[list[Conversation], list[dict], list[dict]], flip_labels: bool = False):
    conversations, policies, document = dev
    if flip_labels:  # a grader that read the labels would follow them
        flipped: dict[Outcome | None, Outcome] = {
            Outcome.COMPLETE: Outcome.PARTIAL_INCORRECT,
            Outcome.PARTIAL_INCORRECT: Outcome.COMPLETE,
        }
        conversations = [c.model_copy(update={"outcome": flipped[c.outcome]}) for c in conversations]
    unlabelled, truth = blind(conversations)
    assert all(c.outcome is None for c in unlabelled)
    if name == "policies":
        return grade(unlabelled, Settings.model_validate({"policies": policies})), truth
    ground = {
        str(e["task_id"]): (
            [{"name": a["name"], "arguments": a["kwargs"]} for a in e["info"]["task"]["actions"]],
            e["info"]["task"]["outputs"],
        )
        for e in document
    }
    with_truth = [
        c.model_copy(update={"expected": expectation_from_actions(*ground[c.task])}) for c in unlabelled
    ]
    return grade(with_truth), truth


@pytest.mark.parametrize("name", ["policies", "defaults"])
def test_verdicts_agree_with_real_outcomes_at_least_as_well_as_today(name: str, dev) -> None:
    scores, truth = _variant(name, dev)
    result = agreement(scores, truth)
    assert result.unscored == 0 and result.n == 100 and result.successes == 31
    assert result.agreement >= FLOOR[name]["agreement"] - 1e-9, result.disagreements
    assert result.kappa >= FLOOR[name]["kappa"] - 5e-4, result.disagreements
    lo, hi = result.kappa_interval
    assert -1 <= lo <= result.kappa <= hi <= 1
    # the hallucination check raises no alarm on a conversation that really succeeded
    assert result.hallucination_on_success == 0
    # every check stays on: the real failures are failed for their effects, outputs or failure evidence
    failed_for = {
        code
        for s, real in zip(scores, truth, strict=True)
        if not real
        for code in (r.split(":", 1)[0] for r in s.reasons)
    }
    assert failed_for & {"policy_tools", "expected_tools"} and "no_answer" in failed_for


def test_grading_is_blind_to_the_labels(dev) -> None:
    scores, _ = _variant("policies", dev)
    flipped, _ = _variant("policies", dev, flip_labels=True)
    assert [s.passed for s in scores] == [s.passed for s in flipped]
    assert all(s.label is None and "label" not in s.graded_by for s in scores)


def test_the_interval_resamples_tasks_and_is_reproducible(dev) -> None:
    scores, truth = _variant("defaults", dev)
    a, b = agreement(scores, truth, seed=7), agreement(scores, truth, seed=7)
    assert a.kappa_interval == b.kappa_interval
    # a verdict flipped on one conversation moves κ; its interval still holds the point estimate
    flipped = list(truth)
    flipped[0] = not flipped[0]
    c = agreement(scores, flipped)
    assert c.kappa < a.kappa and c.kappa_interval[0] <= c.kappa <= c.kappa_interval[1]
