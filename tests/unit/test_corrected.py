"""Estimates corrected by people's labels: the automated verdict kept apart from the label, the offline
report's corrected figures against an independent computation, and the rules for calling a figure corrected.
"""

from __future__ import annotations

import json
from fractions import Fraction
from typing import cast

import numpy as np
import pytest

from agentwatch.config import OutcomeCredits, Settings, load_settings
from agentwatch.report.build import build_report
from agentwatch.report.text import render_text
from agentwatch.scorers import ConversationScorer
from agentwatch.scorers.relabel import relabel
from agentwatch.scorers.sampling import sample_point
from agentwatch.stats.corrected import MIN_ASR_LABELS, MIN_LABELS, correct, sums_of
from agentwatch.wire.schema import Conversation, Outcome, Turn


def _issue_scenario(
    seed: int,
    size: int = 2000,
    p: float = 0.70,
    sensitivity: float = 0.95,
    false_pass: float = 0.45,
    review_rate: float = 0.10,
) -> tuple[list[Conversation], np.ndarray]:
    """`size` conversations whose truth passes with probability p; an external judge's score on every turn
    (0.9: passed, 0.2: failed) that passes `sensitivity` of successes and `false_pass` of failures; a person's
    label on the blind review sample (sample_point(id) < review_rate)."""
    rng = np.random.default_rng(seed)
    truth = rng.random(size) < p
    judged = np.where(truth, rng.random(size) < sensitivity, rng.random(size) < false_pass)
    convs = []
    for i in range(size):
        cid = f"s{seed}-c{i}"
        label = None
        if sample_point(cid) < review_rate:
            label = Outcome.COMPLETE if truth[i] else Outcome.PARTIAL_INCORRECT
        turn = Turn(
            input="where is my order?", answer="It ships on Monday.", judge_score=0.9 if judged[i] else 0.2
        )
        convs.append(
            Conversation(
                conversation_id=cid,
                agent="support",
                version="1.0",
                task="orders",
                turns=[turn],
                outcome=label,
            )
        )
    return convs, truth


def _settings(review_rate: float = 0.10) -> Settings:
    return load_settings(None, sampling={"review_rate": review_rate}, scoring={"hallucination_checks": False})


def test_the_score_keeps_the_automated_verdict_apart_from_the_label_and_revisions_keep_it() -> None:
    settings = _settings(review_rate=1.0)
    conv = Conversation(
        conversation_id="a1",
        agent="a",
        turns=[Turn(input="q", answer="a", judge_score=0.9)],
        outcome=Outcome.ABANDONED,
    )
    score = ConversationScorer(settings, labels="review_sample").score(conv)
    assert score.passed is False and score.outcome is Outcome.ABANDONED  # the label decides
    assert (
        score.automated is not None and score.automated.passed and score.automated.outcome is Outcome.COMPLETE
    )
    assert score.automated.graded_by == ["judge_score"] and score.automated.asr_credit == 1.0
    assert (score.judge_rate, score.review_rate) == (1.0, 1.0)
    revised = relabel(score, Outcome.PARTIAL_CORRECT, OutcomeCredits())
    assert revised is not None and revised.outcome is Outcome.PARTIAL_CORRECT and revised.revision == 1
    assert revised.automated == score.automated  # a label never moves the prediction
    # a score written before the automated verdict existed: revised, it records its own verdict first
    old = score.model_copy(
        update={
            "automated": None,
            "label": None,
            "outcome": Outcome.COMPLETE,
            "passed": True,
            "graded_by": ["judge_score"],
            "outcome_source": "rules",
            "asr_credit": 1.0,
        }
    )
    first_label = relabel(old, Outcome.ABANDONED, OutcomeCredits())
    assert first_label is not None and first_label.automated == score.automated


def test_a_judge_failure_or_a_label_alone_has_no_automated_verdict() -> None:
    settings = _settings(review_rate=1.0)
    conv = Conversation(
        conversation_id="b", agent="a", turns=[Turn(input="q", answer="a")], outcome=Outcome.COMPLETE
    )
    score = ConversationScorer(settings).score(conv)
    assert score.graded_by == ["label"] and score.passed is True and score.automated is None


def test_issue_scenario_corrected_estimate_equals_the_post_stratified_counts_and_covers() -> None:
    convs, truth = _issue_scenario(seed=3)
    settings = _settings()
    scores = [ConversationScorer(settings, labels="truth").score(c) for c in convs]
    report = build_report(scores, settings)
    # independent computation from the raw facts: π from every verdict, a and b from the labelled ones
    reviewed = np.array([sample_point(c.conversation_id) < 0.10 for c in convs])
    verdict = np.array([cast(float, c.turns[0].judge_score) > 0.5 for c in convs])  # every turn is judged
    pi = Fraction(int(verdict.sum()), len(convs))
    a = Fraction(int((truth & verdict & reviewed).sum()), int((verdict & reviewed).sum()))
    b = Fraction(int((truth & ~verdict & reviewed).sum()), int((~verdict & reviewed).sum()))
    sr = report.success_rate
    assert sr.plugin is not None and sr.lower is not None and sr.upper is not None
    assert sr.method == "corrected" and sr.labels == int(reviewed.sum())
    assert sr.plugin == pytest.approx(float(pi * a + (1 - pi) * b), rel=1e-12)
    assert sr.lower <= 0.70 <= sr.upper  # this seed covers; the rate of covering is measured below
    judge = sr.judge_only
    assert judge is not None and judge.mean == pytest.approx((1 + int(verdict.sum())) / (2 + len(convs)))
    assert judge.lower > 0.75  # the judge alone is confidently wrong: about 0.79
    assert report.correction is not None and report.correction.enough
    share = report.correction.outcome_share["complete"]
    assert share.value == pytest.approx(sr.plugin)
    # p^3 under exchangeability is the transform of the corrected rate
    pow3 = report.pass_pow_k["3"]
    assert (
        pow3.corrected
        and pow3.value == pytest.approx(sr.plugin**3)
        and pow3.lower == pytest.approx(sr.lower**3)
    )
    # the gate reads the corrected figure
    gates = {g.name: g for g in report.readiness.gates}
    assert gates["pass@1"].value == pytest.approx(sr.lower)
    text = render_text(report)
    assert f"corrected by {sr.labels} labels of the blind review sample" in text and "judge only 0.7" in text
    data = json.loads(report.model_dump_json())
    assert data["success_rate"]["judge_only"]["mean"] == pytest.approx(judge.mean)


@pytest.mark.parametrize(("p", "sensitivity", "false_pass"), [(0.70, 0.95, 0.45), (0.50, 0.80, 0.20)])
def test_corrected_interval_covers_through_the_correction_sums(
    p: float, sensitivity: float, false_pass: float
) -> None:
    """Coverage of the figure `correct()` reads (the report's and the exporter's) over 200 simulated files."""
    from agentwatch.stats.corrected import CorrectionPoint, CorrectionSums

    rng = np.random.default_rng(21)
    covered = judge_covered = 0
    reps, size, rate = 200, 2000, 0.1
    for _ in range(reps):
        truth = rng.random(size) < p
        verdict = np.where(truth, rng.random(size) < sensitivity, rng.random(size) < false_pass)
        labelled = rng.random(size) < rate
        sums = CorrectionSums()
        for t, v, lab in zip(truth, verdict, labelled, strict=True):
            predicted = 0 if v else 2  # complete or partial_incorrect
            label = (0 if t else 2) if lab else None
            sums.add(
                CorrectionPoint(
                    (1.0, rate), predicted, 1.0 if v else 0.0, label, None if label is None else float(t)
                )
            )
        c = correct(sums)
        assert c is not None and c.success is not None
        covered += c.success.lower <= p <= c.success.upper
        judge_covered += c.success.judge_only_lower <= p <= c.success.judge_only_upper
    assert 0.92 <= covered / reps <= 0.985
    if abs(sensitivity * p + false_pass * (1 - p) - p) > 0.05:  # a judge biased by more than 5 points
        assert judge_covered / reps < 0.05


def test_too_few_labels_are_said_and_not_called_corrected() -> None:
    convs, _truth = _issue_scenario(seed=4, size=150)  # about 15 labels
    settings = _settings()
    scores = [ConversationScorer(settings, labels="truth").score(c) for c in convs]
    report = build_report(scores, settings)
    c = report.correction
    assert c is not None and 2 <= c.labels < MIN_LABELS and not c.enough
    assert report.success_rate.method == "beta" and report.success_rate.note is not None
    assert f"a correction needs {MIN_LABELS}" in report.success_rate.note
    assert not report.pass_pow_k["3"].corrected and report.asr.method == "bootstrap"
    assert "not corrected" in render_text(report)


def test_asr_is_corrected_from_its_own_minimum_of_labels() -> None:
    convs, truth = _issue_scenario(seed=5, size=2000, review_rate=MIN_ASR_LABELS / 2000 * 1.5)
    settings = _settings(review_rate=MIN_ASR_LABELS / 2000 * 1.5)
    scores = [ConversationScorer(settings, labels="truth").score(c) for c in convs]
    report = build_report(scores, settings)
    assert report.correction is not None and report.correction.labels >= MIN_ASR_LABELS
    assert report.asr.method == "corrected" and report.asr.judge_only is not None
    # the labels' credits (1 or 0) corrected by the verdicts' credits: the same post-stratification here
    assert report.asr.value == pytest.approx(report.success_rate.plugin, abs=0.03)
    assert report.asr.lower is not None and report.asr.lower <= float(truth.mean()) + 0.03


def test_flagged_labels_never_correct() -> None:
    """Labels outside the review sample (a feedback widget's) are not a random sample: no correction."""
    convs, _truth = _issue_scenario(seed=6, size=300, review_rate=0.0)
    settings = _settings(review_rate=0.0)
    flagged = [
        c.model_copy(update={"outcome": Outcome.ABANDONED}) if i % 5 == 0 else c for i, c in enumerate(convs)
    ]
    scores = [ConversationScorer(settings).score(c) for c in flagged]
    assert correct(sums_of(scores, OutcomeCredits())) is None
    assert build_report(scores, settings).correction is None


def _window(estimator, task: str = "orders"):
    return next(e for e in estimator.snapshot() if e.window == "1h" and e.task == task)


def test_the_estimator_revised_by_late_labels_equals_the_offline_report() -> None:
    """Scores first without labels, then each review-sample conversation's revision with its label (as the
    review service publishes them): the window's corrected figures equal the report's over the latest
    revisions."""
    import time as _time

    from agentwatch.exporters.estimator import Estimator

    convs, _truth = _issue_scenario(seed=8, size=600, review_rate=0.25)
    settings = _settings(review_rate=0.25)
    scorer = ConversationScorer(settings, labels="review_sample")
    now = _time.time()
    est = Estimator(settings, clock=lambda: now)
    latest = []
    for conv in convs:
        first = scorer.score(conv.model_copy(update={"outcome": None}))
        assert est.add(first.model_copy(update={"ended_at": None}))
        score = first
        if conv.outcome is not None:
            revised = relabel(first, conv.outcome, settings.scoring.credits)
            assert revised is not None and revised.automated == first.automated
            assert est.add(revised.model_copy(update={"ended_at": None}))
            score = revised
        latest.append(score)
    window = _window(est)
    offline = build_report(latest, settings, settings.stats.ks)
    assert window.correction is not None and offline.correction is not None
    assert offline.success_rate.judge_only is not None
    assert window.correction.labels == offline.correction.labels > MIN_LABELS
    assert window.correction.success.value == pytest.approx(offline.success_rate.plugin, abs=1e-12)
    assert window.correction.success.lower == pytest.approx(offline.success_rate.lower, abs=1e-12)
    assert window.correction.success.judge_only == pytest.approx(
        offline.success_rate.judge_only.mean, abs=1e-12
    )
    # a label taken back by a revision without it: the window forgets it
    back = latest[next(i for i, s in enumerate(latest) if s.label is not None)]
    unlabelled = back.model_copy(update={"label": None, "revision": back.revision + 1, "ended_at": None})
    assert est.add(unlabelled)
    assert _window(est).correction.labels == window.correction.labels - 1


def test_windows_sampled_at_two_rates_are_hajek_weighted_like_the_report() -> None:
    """One window, half of it judged at rate 1 and half at rate 0.25: the success rate is the Hájek share on
    Kish's effective counts, equal to the report's, and it is not the pooled count's."""
    import time as _time

    from agentwatch.exporters.estimator import Estimator
    from agentwatch.wire.schema import AutomatedVerdict, ConversationScore, OutcomeSource

    def score(i: int, rate: float, passed: bool) -> ConversationScore:
        outcome = Outcome.COMPLETE if passed else Outcome.ABANDONED
        return ConversationScore(
            conversation_id=f"w{i}",
            agent="a",
            version="1",
            task="orders",
            turns=1,
            passed=passed,
            outcome=outcome,
            outcome_source=OutcomeSource.JUDGE,
            graded_by=["judge"],
            asr_credit=float(passed),
            judge="j",
            judge_outcome=outcome,
            judge_sampled=True,
            judge_rate=rate,
            review_rate=0.0,
            automated=AutomatedVerdict(
                graded_by=["judge"], outcome=outcome, passed=passed, asr_credit=float(passed)
            ),
        )

    scores = [score(i, 1.0, i % 10 < 9) for i in range(100)] + [
        score(100 + i, 0.25, i % 2 == 0) for i in range(100)
    ]
    now = _time.time()
    est = Estimator(Settings(), clock=lambda: now)
    for s in scores:
        est.add(s)
    window = _window(est)
    report = build_report(scores, Settings())
    w = np.array([1.0] * 100 + [4.0] * 100)
    x = np.array([s.passed for s in scores], dtype=float)
    ne, share = w.sum() ** 2 / (w @ w), (w @ x) / w.sum()
    assert share == pytest.approx(0.58) and window.effective == pytest.approx((ne, ne * share))
    assert report.success_rate.method == "weighted" and report.success_rate.plugin == pytest.approx(share)
    assert window.success.mean == pytest.approx((1 + ne * share) / (2 + ne))
    assert window.success.mean == pytest.approx(report.success_rate.mean, abs=1e-12)
    assert window.success.lower == pytest.approx(report.success_rate.lower, abs=1e-12)
    assert window.judged == {"j": 200}
