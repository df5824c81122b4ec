"""Calibration numbers checked against scikit-learn; `agentwatch judge calibrate` end to end."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix, precision_recall_fscore_support
from typer.testing import CliRunner

from agentwatch.cli import app
from agentwatch.judge.calibration import (
    CLASSES,
    calibrate,
    cohen_kappa,
    confusion,
    kappa_interval,
    precision_recall,
)
from agentwatch.judge.verdict import JudgeVerdict
from tests.support.fake_openai import FakeOpenAI, verdict_reply

cli = CliRunner()


def noisy(seed: int, n: int, agree: float) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    truth = [rng.choice(CLASSES[: rng.randint(2, 5)]) for _ in range(n)]
    pred = [t if rng.random() < agree else rng.choice(CLASSES) for t in truth]
    return truth, pred


@pytest.mark.parametrize("seed", range(8))
def test_against_sklearn(seed):
    truth, pred = noisy(seed, 30 + 17 * seed, 0.3 + 0.08 * seed)
    labels = list(CLASSES)
    assert cohen_kappa(truth, pred) == pytest.approx(cohen_kappa_score(truth, pred, labels=labels))
    m = confusion(truth, pred)
    assert (m == confusion_matrix(truth, pred, labels=labels)).all()
    p, r, _, support = precision_recall_fscore_support(truth, pred, labels=labels, zero_division=np.nan)
    ours = precision_recall(m)
    for i, c in enumerate(labels):
        assert ours[c]["support"] == support[i]
        for ours_v, theirs in ((ours[c]["precision"], p[i]), (ours[c]["recall"], r[i])):
            assert (ours_v is None and math.isnan(theirs)) or ours_v == pytest.approx(theirs)


def test_interval_brackets_kappa_and_is_seeded():
    truth, pred = noisy(3, 200, 0.7)
    k = cohen_kappa(truth, pred)
    lo, hi = kappa_interval(truth, pred, seed=1)
    assert lo < k < hi and hi - lo < 0.3
    assert kappa_interval(truth, pred, seed=1) == (lo, hi)


def test_perfect_and_undefined():
    assert cohen_kappa(["complete", "abandoned"], ["complete", "abandoned"]) == 1.0
    assert math.isnan(cohen_kappa(["complete"] * 3, ["complete"] * 3))  # chance agreement is 1


def test_failures_are_excluded_and_counted():
    labels = ["complete", "abandoned", "complete"]
    verdicts = [
        JudgeVerdict.graded("complete", 1),
        JudgeVerdict.failed("judge_timeout"),
        JudgeVerdict.graded("partial_correct", 0.5),
    ]
    report = calibrate("j", labels, verdicts, verdicts, min_kappa=0.5)
    assert report.judged == 2 and report.failures == {"judge_timeout": 1}
    assert report.consistency["pairs"] == 2 and report.consistency["agreement"] == 1.0
    json.dumps(report.to_dict())


def write_labels(path, n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    labels = [rng.choice(CLASSES) for _ in range(n)]
    with open(path, "w") as fh:
        fh.writelines(
            json.dumps(
                {
                    "conversation_id": f"lab-{i}",
                    "outcome": label,
                    "turns": [{"input": f"item {i}", "answer": f"answer {i}"}],
                }
            )
            + "\n"
            for i, label in enumerate(labels)
        )
        fh.write(
            json.dumps({"conversation_id": "unlabelled", "turns": [{"input": "x", "answer": "y"}]}) + "\n"
        )
    return labels


def responder_for(labels, flip_every: int, flaky: set[int]):
    """The judge agrees with the label except every `flip_every`-th item; items in `flaky` alternate."""
    seen: dict[int, int] = {}

    def respond(body):
        text = body["messages"][1]["content"]
        i = int(text.split("Agent answer: answer ")[1].split()[0])
        seen[i] = seen.get(i, 0) + 1
        outcome = labels[i]
        if i % flip_every == 0 or (i in flaky and seen[i] == 2):
            outcome = CLASSES[(CLASSES.index(outcome) + 1) % len(CLASSES)]
        return verdict_reply(outcome, 0.9 if outcome == "complete" else 0.3)

    return respond


def test_calibrate_cli_reports_and_gates(tmp_path):
    path = tmp_path / "labels.jsonl"
    labels = write_labels(path, 60)
    with FakeOpenAI(responder_for(labels, 5, {1, 2, 3})) as server:
        result = cli.invoke(
            app,
            [
                "judge",
                "calibrate",
                str(path),
                "--judge",
                "gpt-4o-mini",
                "--judge-url",
                server.base_url,
                "--json",
            ],
        )
        assert len(server.requests) == 120  # 60 labelled, judged twice; the unlabelled line skipped
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    judged = [labels[i] if i % 5 else CLASSES[(CLASSES.index(labels[i]) + 1) % 5] for i in range(60)]
    assert report["kappa"] == pytest.approx(cohen_kappa_score(labels, judged, labels=list(CLASSES)))
    assert report["confusion"] == confusion_matrix(labels, judged, labels=list(CLASSES)).tolist()
    assert report["consistency"]["pairs"] == 60
    assert report["consistency"]["agreement"] == pytest.approx(57 / 60)
    with FakeOpenAI(responder_for(labels, 5, set())) as server:
        text = cli.invoke(
            app,
            [
                "judge",
                "calibrate",
                str(path),
                "--judge-url",
                server.base_url,
                "--min-kappa",
                "0.95",
                "--repeats",
                "1",
            ],
        )
    assert text.exit_code == 1 and "FAIL" in text.stdout and "confusion" in text.stdout


def test_calibrate_without_labels_is_usage_error(tmp_path):
    path = tmp_path / "none.jsonl"
    path.write_text(json.dumps({"conversation_id": "a", "turns": [{"input": "x"}]}) + "\n")
    result = cli.invoke(app, ["judge", "calibrate", str(path)])
    assert result.exit_code == 2 and "outcome label" in result.stderr


def test_calibrate_stopped_by_the_spend_cap_fails_and_says_why(tmp_path):
    """judge.daily_usd is respected (each call costs $0.000036 at gpt-4o-mini's price: the cap allows three,
    the second pass none), and κ on the three graded is no pass."""
    path = tmp_path / "labels.jsonl"
    labels = write_labels(path, 10)
    with FakeOpenAI(responder_for(labels, 1000, set())) as server:
        config = tmp_path / "agentwatch.yaml"
        judge = {"base_url": server.base_url, "model": "gpt-4o-mini", "concurrency": 1, "daily_usd": 0.0001}
        config.write_text(json.dumps({"judge": judge}))
        result = cli.invoke(app, ["judge", "calibrate", str(path), "--config", str(config)])
        assert len(server.requests) == 3
    assert result.exit_code == 1, result.output
    assert "judged: 3; judge failures: judge_budget_exhausted 7" in result.stdout
    assert "FAIL (the judge graded 3 of 10: fewer than half)" in result.stdout
    report = calibrate(
        "j",
        ["complete"] * 4,
        [JudgeVerdict.graded("complete", 1)] * 2 + [JudgeVerdict.failed("judge_timeout")] * 2,
    )
    assert report.too_few_judged is False  # half is enough


def test_calibrate_reports_every_malformed_line_and_uses_the_rest(tmp_path):
    path = tmp_path / "labels.jsonl"
    labels = write_labels(path, 6)
    with path.open("a") as fh:
        fh.writelines(f"not json {i}\n" for i in range(25))
    with FakeOpenAI(responder_for(labels, 1000, set())) as server:
        result = cli.invoke(
            app, ["judge", "calibrate", str(path), "--judge-url", server.base_url, "--repeats", "1"]
        )
    assert result.exit_code == 0, result.output
    assert "labelled conversations: 6; judged: 6" in result.stdout
    assert f"malformed: {path}:8: invalid JSON" in result.stderr  # the first, by its line number
    assert "malformed: 5 more lines (left out)" in result.stderr  # 25 bad lines, 20 shown
