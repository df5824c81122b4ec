"""`agentwatch score` on repeated attempts: the dev data's pass^k, labels that grade, versions apart, --k.

The dev data (τ-bench's airline run with gpt-4o, tasks 0–24, 4 trials each) is converted here the way the
benchmark importer writes it: task = the task id, attempt = the trial, the reward as the outcome label.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Collection
from fractions import Fraction
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentwatch.cli import app
from tests.support import published_runs

runner = CliRunner()


def dev_lines(version: str = "gpt-4o", flip: Collection[int] = frozenset()) -> list[dict]:
    """One transcript line per run; tasks in `flip` have every trial failing instead."""
    out = []
    for run in json.loads(gzip.decompress(published_runs.require(published_runs.AIRLINE).read_bytes())):
        passed = abs(run["reward"] - 1.0) <= 1e-6 and run["task_id"] not in flip
        out.append(
            {
                "conversation_id": f"airline-{run['task_id']}-{run['trial']}",
                "agent": "airline",
                "version": version,
                "task": str(run["task_id"]),
                "attempt": run["trial"],
                "outcome": "complete" if passed else "partial_incorrect",
                "turns": [{"input": "I need to change my flight.", "answer": "Done."}],
            }
        )
    return out


def write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def run(*args: object) -> tuple[int, str, str]:
    result = runner.invoke(app, ["score", *map(str, args)])
    return result.exit_code, result.stdout, result.stderr


def tau_bench(lines: list[dict], k: int) -> Fraction:
    """τ-bench's pass^k: mean over tasks of comb(c, k) / comb(n, k)."""
    tasks: dict[str, list[int]] = {}
    for line in lines:
        tasks.setdefault(line["task"], []).append(line["outcome"] == "complete")
    return sum(
        (Fraction(math.comb(sum(v), k), math.comb(len(v), k)) for v in tasks.values()), Fraction(0)
    ) / len(tasks)


def test_dev_data_headline_is_the_benchmarks_pass_k(tmp_path: Path) -> None:
    lines = dev_lines()
    path = write(tmp_path / "dev.jsonl", lines)
    code, out, _ = run(path, "--format", "json", "--no-gate")
    assert code == 0
    report = json.loads(out)
    assert report["scored"] == 100 and report["graded_by"] == {"label": 100}  # labels in files grade
    assert sorted(report["pass_pow_k"], key=int) == ["1", "2", "3", "4"]  # --k default: 1 .. 4 attempts
    by_unit = report["units"].pop("by_unit")
    assert report["units"] == {
        "units": 25,
        "repeated": 25,
        "max_attempts": 4,
        "without_unit": 0,
        "pairs": [[4, 0, 10], [4, 1, 8], [4, 2, 2], [4, 3, 1], [4, 4, 4]],
    }
    tasks: dict[str, list[bool]] = {}
    for line in lines:
        tasks.setdefault(line["task"], []).append(line["outcome"] == "complete")
    agent = lines[0]["agent"]  # each unit's counts, for pairing with a later report
    assert sorted(by_unit) == sorted([agent, t, None, len(v), sum(v)] for t, v in tasks.items())
    for k in (1, 2, 3, 4):
        head = report["pass_pow_k"][str(k)]
        assert head["method"] == "tasks" and head["units"] == 25 and head["interval"] == "hierarchical"
        assert (
            head["holds"] == "nonparametric"
        )  # 25 units that differ: the hull with the nonparametric interval
        assert head["value"] == pytest.approx(float(tau_bench(lines, k)), abs=1e-15)
        assert head["lower"] < head["value"] < head["upper"]
        assert (
            head["pooled_mean"] < head["value"] or k == 1
        )  # pooled p^k understates pass^k when tasks differ
    _, text, _ = run(path, "--no-gate")
    assert "pass^3: 0.170 [" in text and "mean over 25 units with >= 3 attempts" in text
    assert "hierarchical interval, widened to hold the nonparametric one (the units differ)" in text
    assert "exchangeab" not in text.split("FAILURE EVIDENCE")[0].replace("under exchangeability", "")
    assert "  1 (4/4 graded): pass@1=0.250 pass^3=0.000" in text  # per-task lines: unbiased, not 0.25^3


def test_success_rate_with_repeats_is_pass_1_over_units(tmp_path: Path) -> None:
    """With repeated attempts the success rate's interval is over units, not the pooled Beta posterior."""
    from tests.support.metrics_reference import beta_bounds_by_bisection

    lines = dev_lines()
    code, out, _ = run(write(tmp_path / "dev.jsonl", lines), "--format", "json", "--no-gate", "--k", "3")
    assert code == 0
    report = json.loads(out)
    sr, p1 = report["success_rate"], report["pass_pow_k"]["3"]
    assert sr["method"] == "tasks" and "1" not in report["pass_pow_k"]
    assert sr["plugin"] == pytest.approx(float(tau_bench(lines, 1)), abs=1e-15) and p1["method"] == "tasks"
    pooled_lo, pooled_hi = beta_bounds_by_bisection(31, 100)  # Beta(1 + 31, 1 + 69): independent draws
    assert sr["lower"] < pooled_lo and sr["upper"] > pooled_hi  # 25 units say less than 100 draws would
    code, out, _ = run(write(tmp_path / "dev.jsonl", lines), "--format", "json", "--no-gate")
    full = json.loads(out)
    assert (full["success_rate"]["lower"], full["success_rate"]["upper"]) == (
        full["pass_pow_k"]["1"]["lower"],
        full["pass_pow_k"]["1"]["upper"],
    )


def test_no_labels_grades_by_expectations_alone(tmp_path: Path) -> None:
    path = write(tmp_path / "dev.jsonl", dev_lines())
    details = tmp_path / "scores.jsonl"
    code, out, _ = run(path, "--format", "json", "--no-labels", "--no-gate", "--details", details)
    assert code == 0
    report = json.loads(out)
    assert report["scored"] == 0 and report["labels"] == {"complete": 31, "partial_incorrect": 69}
    first = json.loads(details.read_text().splitlines()[0])
    assert first["passed"] is None and first["label"] == "partial_incorrect"
    assert first["reasons"][0].startswith(
        "label: outcome partial_incorrect set by a label labels do not grade"
    )


def test_two_versions_in_one_file_are_reported_apart_and_compared(tmp_path: Path) -> None:
    worse = dev_lines("gpt-4o-next", flip={12, 18, 20, 24, 21, 13, 15})
    path = write(tmp_path / "both.jsonl", dev_lines() + worse)
    code, out, err = run(path, "--format", "json", "--no-gate")
    assert (
        "100 conversation id(s) occur under several versions of one agent: airline-0-0, airline-1-0, "
        "airline-2-0, airline-3-0, airline-4-0 and 95 more" in err
    )
    report = json.loads(out)
    assert [v["agent_version"] for v in report["versions"]] == ["airline gpt-4o", "airline gpt-4o-next"]
    assert report["agent_version"] == "airline gpt-4o-next" and report["scored"] == 100
    assert report["versions"][0]["baseline"] is None
    check = report["baseline"]["checks"][0]
    assert check["method"] == "tasks" and check["probability"] > 0.95 and check["regressed"]
    assert report["pass_pow_k"]["3"]["value"] == pytest.approx(float(tau_bench(worse, 3)))
    assert code == 1  # the regression fails the run even with --no-gate
    _, text, _ = run(path, "--no-gate")
    assert (
        text.index("VERSION airline gpt-4o\n")
        < text.index("VERSION airline gpt-4o-next")
        < text.index("VERSIONS COMPARED:")
    )
    assert "airline gpt-4o-next vs version airline gpt-4o: [all] P(pass^3 dropped by > 0.05)" in text


def test_k_defaults_to_the_configured_values_without_repeats_and_stops_at_eight(tmp_path: Path) -> None:
    once = [dict(line, task=f"{line['task']}-{line['attempt']}", attempt=None) for line in dev_lines()]
    code, out, _ = run(write(tmp_path / "once.jsonl", once), "--format", "json", "--no-gate")
    report = json.loads(out)
    assert sorted(report["pass_pow_k"], key=int) == ["1", "3", "5"]
    assert {e["method"] for e in report["pass_pow_k"].values()} == {"exchangeable"}
    _, text, _ = run(write(tmp_path / "once.jsonl", once), "--no-gate")
    assert "No task was attempted more than once" in text and "p^3 (exchangeable):" in text
    assert "pass^3" not in text
    many = [dict(dev_lines()[0], conversation_id=f"c{i}", attempt=i) for i in range(12)]
    report = json.loads(run(write(tmp_path / "many.jsonl", many), "--format", "json", "--no-gate")[1])
    assert sorted(report["pass_pow_k"], key=int) == [str(k) for k in range(1, 9)]


def test_html_report_plots_pass_k_over_tasks(tmp_path: Path) -> None:
    from agentwatch.config import Settings
    from agentwatch.report.build import build_report
    from agentwatch.report.charts import curves
    from agentwatch.scorers import ConversationScorer
    from agentwatch.wire.schema import Conversation

    lines = dev_lines()
    page = tmp_path / "r.html"
    path = write(tmp_path / "dev.jsonl", lines)
    code, _, _ = run(path, "--format", "html", "--out", page, "--no-gate")
    html = page.read_text()
    assert code == 0 and html.count("data:image/png;base64,") == 2 and "pass^3: 0.170 [" in html
    settings = Settings()
    scorer = ConversationScorer(settings, labels="truth")
    scores = [scorer.score(Conversation.model_validate(line)) for line in lines]
    report = build_report(scores, settings, [1, 3])
    data = curves(report, settings)
    assert data["units_k"] == [1.0, 2.0, 3.0, 4.0]  # over tasks up to the most attempts, not to 10
    assert data["pow_value"] == pytest.approx([float(tau_bench(lines, k)) for k in (1, 2, 3, 4)])
    bands = zip(data["pow_lo"], data["pow_value"], data["pow_hi"], strict=True)
    assert all(lo <= v <= hi for lo, v, hi in bands)
    assert len(data["pow_exch_mean"]) == 10  # the pooled curve under exchangeability, drawn dashed beside it
