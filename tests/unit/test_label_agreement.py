"""The report sets the automated verdicts beside the labels that decided the same conversations.

κ is checked against its definition computed in exact fractions from the 2×2 table, not against the library the
module calls; the interval only for holding the point estimate and for resampling tasks whole."""

from __future__ import annotations

import json
from fractions import Fraction

from agentwatch.config import Settings
from agentwatch.report.build import build_report
from agentwatch.report.html import render_html
from agentwatch.report.label_agreement import label_agreement
from agentwatch.report.text import render_text
from agentwatch.wire.schema import ConversationScore, Outcome, OutcomeSource
from agentwatch.wire.scores import AutomatedVerdict


def _score(i: int, label: bool | None, graders: bool, task: str = "t") -> ConversationScore:
    """Conversation `i`: the automated graders' verdict `graders`; a label that passed or failed it (None: no
    label, the graders decide)."""
    auto = AutomatedVerdict(
        graded_by=["policy"],
        outcome=Outcome.COMPLETE if graders else Outcome.PARTIAL_INCORRECT,
        passed=graders,
        asr_credit=1.0 if graders else 0.0,
    )
    passed = graders if label is None else label
    outcome = Outcome.COMPLETE if passed else Outcome.PARTIAL_INCORRECT
    return ConversationScore(
        conversation_id=f"c{i}",
        agent="bot",
        version="1",
        task=task,
        turns=1,
        passed=passed,
        outcome=outcome,
        outcome_source=OutcomeSource.LABEL if label is not None else OutcomeSource.RULES,
        graded_by=["policy", "label"] if label is not None else ["policy"],
        label=outcome if label is not None else None,
        automated=auto if label is not None else None,
        asr_credit=1.0 if passed else 0.0,
    )


def _kappa(tp: int, ff: int, fp: int, tf: int) -> Fraction:
    """Cohen's κ by its definition: (p_o − p_e) / (1 − p_e), label rows against grader columns."""
    n = tp + ff + fp + tf
    po = Fraction(tp + tf, n)
    pe = Fraction((tp + ff) * (tp + fp) + (fp + tf) * (ff + tf), n * n)
    return (po - pe) / (1 - pe)


def _scores() -> list[ConversationScore]:
    """30 labelled conversations over 10 tasks: 12 both pass, 9 both fail, 6 the graders failed a label's pass,
    3 the graders passed a label's fail; and 5 the graders decided alone."""
    cells = [(True, True)] * 12 + [(False, False)] * 9 + [(True, False)] * 6 + [(False, True)] * 3
    labelled = [_score(i, lab, auto, task=f"t{i % 10}") for i, (lab, auto) in enumerate(cells)]
    return labelled + [_score(100 + i, None, i % 2 == 0) for i in range(5)]


def test_the_table_and_kappa_are_those_of_the_labelled_conversations() -> None:
    a = label_agreement(_scores(), 0.95, examples=2)
    assert a is not None
    assert (a.conversations, a.agree, a.graders_failed, a.graders_passed) == (30, 21, 6, 3)
    assert a.kappa is not None and abs(a.kappa - float(_kappa(12, 6, 3, 9))) < 1e-12
    assert a.kappa_lower is not None and a.kappa_upper is not None
    assert a.kappa_lower <= a.kappa <= a.kappa_upper
    assert a.graders_failed_examples == ["c21", "c22"] and a.graders_passed_examples == ["c27", "c28"]


def test_tasks_are_resampled_whole() -> None:
    """The same table in one task per conversation and in three tasks: grouped, the interval is wider."""
    cells = [(True, True)] * 12 + [(False, False)] * 9 + [(True, False)] * 6 + [(False, True)] * 3
    apart = [_score(i, lab, auto, task=f"t{i}") for i, (lab, auto) in enumerate(cells)]
    grouped = [_score(i, lab, auto, task=f"t{i % 3}") for i, (lab, auto) in enumerate(cells)]
    a, g = label_agreement(apart, 0.95, 0), label_agreement(grouped, 0.95, 0)
    assert a is not None and g is not None and a.kappa == g.kappa
    assert a.kappa_lower is not None and a.kappa_upper is not None
    assert g.kappa_lower is not None and g.kappa_upper is not None
    assert g.kappa_upper - g.kappa_lower != a.kappa_upper - a.kappa_lower


def test_no_label_no_comparison_and_a_single_answer_has_no_kappa() -> None:
    assert label_agreement([_score(i, None, True) for i in range(4)], 0.95, 5) is None
    every_pass = label_agreement([_score(i, True, True) for i in range(4)], 0.95, 5)
    assert every_pass is not None and every_pass.agree == 4 and every_pass.kappa is None


def test_the_report_carries_it_in_json_and_says_it_in_text() -> None:
    report = build_report(_scores(), Settings())
    data = json.loads(report.model_dump_json())
    assert data["label_agreement"]["conversations"] == 30 and data["label_agreement"]["graders_failed"] == 6
    text = render_text(report)
    assert (
        "LABELS vs AUTOMATED VERDICTS (30 conversations a label decided, with an automated verdict beside): "
        f"agree on 21 (70.0%), κ {float(_kappa(12, 6, 3, 9)):.3f} [" in text
    )
    assert "the graders failed, the label passed: 6 (e.g. c21, c22, c23, c24, c25 and 1 more)" in text
    assert "the graders passed, the label failed: 3 (e.g. c27, c28, c29)" in text
    unlabelled = build_report([_score(i, None, i % 2 == 0) for i in range(6)], Settings())
    assert unlabelled.label_agreement is None and "LABELS vs AUTOMATED" not in render_text(unlabelled)


def test_the_html_report_says_it_beside_the_figures() -> None:
    html = render_html(build_report(_scores(), Settings()), Settings())
    assert (
        '<p class="note">Labels vs automated verdicts (30 conversations a label decided): agree on 21 (70.0%), '
        f"κ {float(_kappa(12, 6, 3, 9)):.3f} ["
    ) in html
    assert "the graders failed 6 the labels passed and passed 3 the labels failed" in html
    unlabelled = build_report([_score(i, None, i % 2 == 0) for i in range(6)], Settings())
    assert "Labels vs automated verdicts" not in render_html(unlabelled, Settings())
