"""`agentwatch score` end to end: real scorers, a mixed transcript file, exit codes, gzip, baseline."""

from __future__ import annotations

import gzip
import json
import statistics
from fractions import Fraction
from math import comb
from pathlib import Path

import pytest
from scipy import stats as sps

from agentwatch.wire.schema import ConversationScore
from tests.support.score_cli import KINDS, conversation, failing_hallucinations, run, write


@pytest.fixture()
def mixed_file(tmp_path: Path) -> Path:
    return write(tmp_path / "mixed.jsonl", [conversation(k, i) for i, k in enumerate(KINDS)], malformed_at=7)


def test_mixed_file_report_field_by_field(mixed_file: Path, tmp_path: Path) -> None:
    details = tmp_path / "scores.jsonl"
    strict = failing_hallucinations(tmp_path)
    code, out, err = run(
        mixed_file, "--format", "json", "--details", details, "--k", "1,3", "--config", strict
    )
    assert code == 1  # the gate fails on this mix
    assert f"{mixed_file}:7: invalid JSON" in err and "1 malformed line(s) skipped" in err
    scores = [ConversationScore.model_validate_json(line) for line in details.read_text().splitlines()]
    assert len(scores) == len(KINDS)
    by_id = {s.conversation_id: s for s in scores}
    expected_outcome = {
        "good": "complete",
        "over_budget": "complete",
        "hallucinated": "hallucinated",
        "abandoned": "abandoned",
        "unscored": "unscored",
    }
    for i, kind in enumerate(KINDS):
        s = by_id[f"{kind}-{i}"]
        if kind == "partial":
            assert s.passed is False and s.outcome.value.startswith("partial_")
        else:
            assert s.outcome.value == expected_outcome[kind], (kind, s.reasons)
    # Hand computation from the transcript kinds.
    n = len(KINDS) - 2
    c = 14  # 12 good + 2 over budget (complete, penalised only in ASR)
    report = json.loads(out)
    assert (report["conversations"], report["scored"], report["passed"]) == (len(KINDS), n, c)
    assert report["success_rate"]["plugin"] == pytest.approx(c / n)
    assert report["success_rate"]["lower"] == pytest.approx(sps.beta.ppf(0.025, c + 1, n - c + 1))
    assert report["pass_pow_k"]["3"]["pooled_unbiased"] == pytest.approx(
        float(Fraction(comb(c, 3), comb(n, 3)))
    )
    assert report["pass_at_k"]["3"]["pooled_unbiased"] == pytest.approx(
        float(1 - Fraction(comb(n - c, 3), comb(n, 3)))
    )
    partial_credit = sum(
        0.4 if by_id[f"partial-{i}"].outcome.value == "partial_correct" else 0.0
        for i, k in enumerate(KINDS)
        if k == "partial"
    )
    credits = 12 * 1.0 + 2 * 0.5 + partial_credit
    assert report["asr"]["value"] == pytest.approx(credits / n)
    assert report["outcomes"]["complete"] == c and report["outcomes"]["unscored"] == 2
    assert report["outcomes"]["hallucinated"] == 2 and report["outcomes"]["abandoned"] == 2
    costs = [0.30 if k == "over_budget" else 0.005 * (i + 1) for i, k in enumerate(KINDS)]
    assert report["cost"]["p50"] == pytest.approx(statistics.median(costs))
    assert report["cost"]["over_budget_ratio"] == pytest.approx(sum(x > 0.20 for x in costs) / len(costs))
    assert sum(x > 0.20 for x in costs) == 2
    modes = {m["mode"]: m["count"] for m in report["failure_modes"]}
    assert modes["over_budget"] == 2 and modes["hallucination"] == 2 and "no_grader" not in modes
    assert report["ungraded"] == {"no_grader": 2}
    rd = report["readiness"]
    assert rd["scope"] == "core" and rd["verdict"] == "DO NOT SHIP"
    lower = sps.beta.ppf(0.025, 1 + c, 1 + n - c)  # the default gate compares the lower credible bound
    assert rd["gates"][0]["value"] == pytest.approx(lower) and rd["gates"][1]["value"] == pytest.approx(
        lower**3
    )
    assert rd["gates"][0]["note"].startswith("not enough conversations: 20 graded")
    assert set(report["by_task"]) == {"task0", "task1", "task2"}
    assert sum(g["conversations"] for g in report["by_task"].values()) == len(KINDS)


def test_gzip_input_gives_the_same_report(mixed_file: Path, tmp_path: Path) -> None:
    gz = tmp_path / "mixed.jsonl.gz"
    gz.write_bytes(gzip.compress(mixed_file.read_bytes()))
    code_a, out_a, _ = run(mixed_file, "--format", "json")
    code_b, out_b, err_b = run(gz, "--format", "json")
    a, b = json.loads(out_a), json.loads(out_b)
    assert a.pop("input")["files"] == [str(mixed_file)] and b.pop("input")["files"] == [str(gz)]
    assert code_a == code_b == 1 and a == b
    assert f"{gz}:7:" in err_b


def test_text_and_html_output(mixed_file: Path, tmp_path: Path) -> None:
    code, out, _ = run(mixed_file)
    assert code == 1 and "Agent Evaluation Report — bot 2" in out and "DO NOT SHIP" in out
    assert "METRICS (by difficulty)" in out and "TOP FAILURE MODES" in out
    html = tmp_path / "r.html"
    code, out, _ = run(mixed_file, "--format", "html", "--out", html)
    assert code == 1 and out == ""
    assert html.read_text().count("data:image/png;base64,") == 2
    text = tmp_path / "r.txt"
    run(mixed_file, "--out", text)
    assert "DO NOT SHIP" in text.read_text() and "\x1b[" not in text.read_text()


def test_exit_0_when_gate_passes(tmp_path: Path) -> None:
    path = write(tmp_path / "good.jsonl", [conversation("good", i) for i in range(40)])
    code, out, err = run(path, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["readiness"]["verdict"] == "SAFE TO SHIP"


def test_lines_that_could_not_be_read_fail_the_gate_unless_allowed(tmp_path: Path) -> None:
    """A file cut short or half garbage gave SAFE TO SHIP on whatever was left, exit 0: the figures rested on part
    of the input and the gate did not say so. More than `gate.max_malformed` unread lines (default 0) now fail it."""
    path = write(tmp_path / "good.jsonl", [conversation("good", i) for i in range(40)])
    with path.open("a") as f:
        f.write('{"conversation_id": "cut", "turns": [\n{"turns": "no id"}\n')
    code, out, err = run(path, "--format", "json")
    assert code == 1, err
    gate = next(g for g in json.loads(out)["readiness"]["gates"] if g["name"] == "malformed lines")
    assert (gate["value"], gate["threshold"], gate["passed"]) == (2, 0, False)
    assert "malformed lines 2 (needs <= 0)" in err.splitlines()[-1]
    assert "2 transcript line(s) could not be read" in err.splitlines()[-1]
    tolerant = tmp_path / "tolerant.yaml"
    tolerant.write_text("gate:\n  max_malformed: 2\n")
    code, out, err = run(path, "--format", "json", "--config", tolerant)
    assert code == 0, err
    assert json.loads(out)["readiness"]["verdict"] == "SAFE TO SHIP"
    text = tmp_path / "report.txt"
    assert run(path, "--out", text)[0] == 1
    assert "  malformed lines <= 0: 2 " in text.read_text()


def test_baseline_regression_exits_1(tmp_path: Path) -> None:
    config = tmp_path / "gate.yaml"
    config.write_text("gate:\n  pass_at_1_min: 0.0\n  pass_pow_3_min: 0.0\n", encoding="utf-8")
    good = write(tmp_path / "v1.jsonl", [conversation("good", i, version="1") for i in range(30)])
    worse = write(
        tmp_path / "v2.jsonl",
        [conversation("good" if i % 2 else "hallucinated", i, version="2") for i in range(30)],
    )
    base = tmp_path / "v1.json"
    assert run(good, "--format", "json", "--out", base, "--config", config)[0] == 0
    assert run(worse, "--config", config)[0] == 0  # gate alone passes with these thresholds
    code, out, _ = run(worse, "--config", config, "--baseline", base, "--format", "json")
    assert code == 1
    b = json.loads(out)["baseline"]
    assert b["regression"] and b["checks"][0]["probability"] > 0.95
    assert b["success_rate"]["delta"] == pytest.approx(15 / 30 - 1.0)
    code, out, _ = run(good, "--config", config, "--baseline", base)
    assert code == 0 and "No regression." in out


def test_exit_2_on_usage_and_unreadable_input(mixed_file: Path, tmp_path: Path) -> None:
    assert run(tmp_path / "missing.jsonl")[0] == 2
    assert run(mixed_file, "--k", "0")[0] == 2
    assert run(mixed_file, "--k", "one")[0] == 2
    code, _, err = run(mixed_file, "--k", "1,99999999999")  # was a traceback after trying to allocate it
    assert code == 2 and "from 1 to 1,000" in err
    bad_config = tmp_path / "bad.yaml"
    bad_config.write_text("gate:\n  pass_at_1_minimum: 0.5\n", encoding="utf-8")
    code, _, err = run(mixed_file, "--config", bad_config)
    assert code == 2 and "gate.pass_at_1_minimum" in err
    bad_base = tmp_path / "base.json"
    bad_base.write_text("[]", encoding="utf-8")
    code, _, err = run(mixed_file, "--baseline", bad_base)
    assert code == 2 and "not a report" in err and "--format json" in err
    only_bad = tmp_path / "junk.jsonl"
    only_bad.write_text("not json\n{}\n", encoding="utf-8")
    code, _, err = run(only_bad)
    assert code == 2 and "junk.jsonl:1:" in err and "junk.jsonl:2:" in err
    code, _, err = run(mixed_file, "--out", tmp_path / "no" / "such" / "dir" / "r.txt")
    assert code == 2 and "cannot write" in err


def test_sdk_exporter_variable_does_not_break_the_cli(tmp_path: Path, monkeypatch) -> None:
    """`AGENTWATCH_EXPORTER=kafka` is the SDK's switch; the service's `exporter` section ignores a plain word."""
    from agentwatch.config import load_settings

    monkeypatch.setenv("AGENTWATCH_EXPORTER", "kafka")
    monkeypatch.setenv("AGENTWATCH_EXPORTER__METRICS_PORT", "9999")
    monkeypatch.setenv("AGENTWATCH_STATS", '{"level": 0.9}')
    settings = load_settings()
    assert settings.exporter.metrics_port == 9999 and settings.stats.level == 0.9
    path = write(tmp_path / "good.jsonl", [conversation("good", i) for i in range(3)])
    code, out, err = run(path, "--format", "json")
    assert code == 1 and "Traceback" not in err and json.loads(out)["conversations"] == 3


def test_no_gate_writes_a_baseline_and_deltas_read_in_points(tmp_path: Path) -> None:
    """The README's first CI line exits 0 while the gate fails; a regression is shown in points and relative %."""
    good = write(tmp_path / "v1.jsonl", [conversation("good", i, version="1") for i in range(10)])
    worse = write(
        tmp_path / "v2.jsonl",
        [conversation("good" if i % 2 else "hallucinated", i, version="2") for i in range(10)],
    )
    base = tmp_path / "v1.json"
    assert run(good, "--format", "json", "--out", base)[0] == 1  # 10 conversations: not enough to ship on
    code, _, _ = run(good, "--format", "json", "--out", base, "--no-gate")
    assert code == 0 and base.exists()
    _, out, _ = run(worse, "--baseline", base, "--no-gate")
    report = json.loads(run(worse, "--baseline", base, "--no-gate", "--format", "json")[1])
    new, old = report["pass_pow_k"]["3"]["value"], report["baseline"]["pass_pow_k"]["3"]["base"]
    points, relative = 100 * (new - old), 100 * (new - old) / old
    # no repeated attempts: the figure is p^3 under exchangeability, and is named so
    change = f"({points:+.1f} points, {relative:+.0f}% relative)"
    assert f"p^3 (exchangeable): {new:.3f} vs {old:.3f} {change}" in out
    assert "pass^3:" not in out
    assert "DO NOT SHIP" in out and "not enough conversations: 10 graded, at least 30 needed" in out


def test_stderr_counts_agree_with_the_report(mixed_file: Path) -> None:
    _, out, err = run(mixed_file)
    read, graded = len(KINDS), len(KINDS) - KINDS.count("unscored")
    assert f"1 malformed line(s) skipped; {read} conversation(s) read, {graded} graded" in err
    assert f"Conversations: {read} | Graded: {graded} " in out


def test_conversation_ids_named_in_warnings_cannot_drive_the_terminal(tmp_path: Path) -> None:
    """An id holding a terminal escape (here: set the window title) read twice, and under two versions, is named
    in the warnings with its control characters shown as escapes, never written to the terminal as they are."""
    hostile = "good-0\x1b]0;owned\x07\x1b[2J"
    convs = []
    for version in ("1", "2"):
        c = conversation("good", 0, version=version)
        c["conversation_id"] = hostile
        convs += [c, c]  # read twice under each version
    code, _out, err = run(write(tmp_path / "t.jsonl", convs), "--no-gate")
    assert code == 0
    assert "read more than once" in err and "several versions" in err
    assert "\x1b" not in err and "\x07" not in err
    assert "good-0" in err
