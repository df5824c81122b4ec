"""Production traffic: the graded sample and failure rates are two populations (offline path).

Production conversations carry no expectations. Success rates must come from a sample chosen blind to the
outcome (a task policy, the hashed judge/review sample); failure evidence is a rate over all conversations.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats as sps
from typer.testing import CliRunner

from agentwatch.cli import app
from agentwatch.config import SamplingConfig, Settings, TaskPolicy
from agentwatch.scorers import ConversationScorer
from agentwatch.scorers.sampling import Sampler, sample_point
from agentwatch.wire.schema import Conversation
from tests.support.metrics_reference import beta_bounds_by_bisection
from tests.support.production_traffic import POLICY, conversation, scenario

runner = CliRunner()


def _write(tmp_path: Path, lines: list[dict]) -> Path:
    path = tmp_path / "prod.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_scenario_without_policy_reports_no_success_rate_and_failure_rates(tmp_path: Path) -> None:
    path = _write(tmp_path, scenario())
    text = runner.invoke(app, ["score", str(path)])
    assert "no graded conversations" in text.output and "Graded: 0 (coverage 0.0%)" in text.output
    assert "success rate:" not in text.output
    assert "error 10.0% [" in text.output and "loop 5.0% [" in text.output
    out = tmp_path / "r.json"
    runner.invoke(app, ["score", str(path), "--format", "json", "--out", str(out)])
    report = json.loads(out.read_text())
    assert report["conversations"] == 200 and report["scored"] == 0
    assert report["success_rate"]["plugin"] is None and report["pass_pow_k"]["3"]["value"] is None
    rates = report["failure_rates"]
    assert rates["error"]["count"] == 20 and rates["error"]["rate"] == pytest.approx(0.10)
    assert rates["no_answer"]["count"] == 20  # the turns that errored gave no answer
    assert rates["loop"]["count"] == 10 and rates["loop"]["rate"] == pytest.approx(0.05)
    for name, x in (("error", 20), ("loop", 10)):
        lo, hi = beta_bounds_by_bisection(x, 200)
        assert rates[name]["lower"] == pytest.approx(lo, abs=1e-9)
        assert rates[name]["upper"] == pytest.approx(hi, abs=1e-9)
    assert rates["hallucination"]["count"] == 0 and rates["forbidden_tool"]["count"] == 0


def test_scenario_with_a_policy_covers_the_true_success_rate(tmp_path: Path) -> None:
    path = _write(tmp_path, scenario())
    config = tmp_path / "agentwatch.yaml"
    config.write_text(yaml.safe_dump({"policies": [POLICY]}))
    out = tmp_path / "r.json"
    result = runner.invoke(
        app, ["score", str(path), "--config", str(config), "--format", "json", "--out", str(out)]
    )
    assert result.exit_code in (0, 1), result.output
    report = json.loads(out.read_text())
    assert report["scored"] == 200 and report["passed"] == 170 and report["graded_by"] == {"policy": 200}
    sr = report["success_rate"]
    assert sr["lower"] < 0.85 < sr["upper"]
    lo, hi = beta_bounds_by_bisection(170, 200)
    assert (sr["lower"], sr["upper"]) == (pytest.approx(lo, abs=1e-9), pytest.approx(hi, abs=1e-9))
    assert report["failure_rates"]["error"]["count"] == 20  # the same over all traffic, graded or not


def test_evidence_never_grades_and_silent_failures_stay_ungraded() -> None:
    scorer = ConversationScorer()
    rng = random.Random(3)
    for kind in ("fine", "error", "loop", "silent"):
        s = scorer.score(Conversation.model_validate(conversation(f"k-{kind}", kind, rng)))
        assert s.passed is None and s.graded_by == [] and s.asr_credit is None
    policed = ConversationScorer(Settings(policies=[TaskPolicy.model_validate(POLICY)]))
    verdicts = {
        kind: policed.score(Conversation.model_validate(conversation(f"p-{kind}", kind, rng))).passed
        for kind in ("fine", "error", "loop", "silent")
    }
    assert verdicts == {"fine": True, "error": False, "loop": False, "silent": False}


# --------------------------------------------------------------------------- the hashed sample


def test_sample_point_is_the_documented_sha256_rule() -> None:
    import hashlib

    for cid in ("a", "conv-42", "ünïcode-🙂", ""):
        expected = int(hashlib.sha256(cid.encode()).hexdigest()[:16], 16) / 2**64
        assert sample_point(cid) == expected
    points = [sample_point(f"c{i}") for i in range(20_000)]
    assert 0.0 <= min(points) and max(points) < 1.0
    assert abs(np.mean(np.array(points) < 0.2) - 0.2) < 0.01  # uniform enough


def test_sampler_rules_first_match_and_subset_property() -> None:
    sampler = Sampler(
        Settings(
            sampling=SamplingConfig.model_validate(
                {
                    "judge_rate": 0.5,
                    "review_rate": 0.0,
                    "rules": [
                        {"agent": "support-*", "task": "refund", "judge_rate": 0.1, "review_rate": 0.02},
                        {"agent": "support-*", "review_rate": 0.05},
                    ],
                }
            )
        ).sampling
    )
    assert sampler.rates("support-bot", "refund") == (0.1, 0.02)
    assert sampler.rates("support-bot", "faq") == (0.5, 0.05)
    assert sampler.rates("other", "refund") == (0.5, 0.0)
    for i in range(2_000):
        d = sampler.decide(f"id-{i}", "support-bot", "refund")
        assert d.judge == (sample_point(f"id-{i}") < 0.1)
        assert not d.review or d.judge  # the review sample is inside the judge sample


# --------------------------------------------------------------------------- coverage at fixed true values


def _verdict_table(review_rate: float) -> dict[tuple[str, bool], bool | None]:
    """The real scorer's verdict for each kind of conversation, in and out of the review sample."""
    scorer = ConversationScorer(Settings(sampling=SamplingConfig(review_rate=review_rate)))
    rng = random.Random(0)
    table: dict[tuple[str, bool], bool | None] = {}
    i = 0
    while len(table) < 6:
        cid = f"probe-{i}"
        i += 1
        sampled = sample_point(cid) < review_rate
        for kind, label in (("fine", "complete"), ("error", "abandoned"), ("silent", "partial_incorrect")):
            if (kind, sampled) in table:
                continue
            line = conversation(cid, kind, rng)
            line["outcome"] = label  # the truth a reviewer would record
            table[(kind, sampled)] = scorer.score(Conversation.model_validate(line)).passed
        if review_rate >= 1.0 and i > 50:
            table.update({(k, False): None for k in ("fine", "error", "silent")})
    return table


def _coverage(review_rate: float, scheme: str, reps: int, n: int, p: float, seed: int) -> float:
    """Share of repetitions whose 95% interval of the success rate covers p."""
    verdicts = _verdict_table(review_rate)
    rng = np.random.default_rng(seed)
    covered = 0
    for rep in range(reps):
        success = rng.random(n) < p
        # failures are outcome-dependent: 60% of them leave evidence (an error), the rest are silent
        evidence = ~success & (rng.random(n) < 0.6)
        kinds = np.where(success, "fine", np.where(evidence, "error", "silent"))
        in_sample = np.array([sample_point(f"sim-{seed}-{rep}-{i}") < review_rate for i in range(n)])
        if scheme == "sample":
            passed = [verdicts[(k, bool(s))] for k, s in zip(kinds, in_sample, strict=True)]
        else:  # grade only where evidence was found: what the pipeline must never do
            passed = [False if e else None for e in evidence]
        graded = [v for v in passed if v is not None]
        if not graded:
            continue
        x = sum(graded)
        lo, hi = (
            sps.beta.ppf(0.025, 1 + x, 1 + len(graded) - x),
            sps.beta.ppf(0.975, 1 + x, 1 + len(graded) - x),
        )
        covered += lo <= p <= hi
    return covered / reps


@pytest.mark.parametrize(("rate", "n"), [(1.0, 400), (0.2, 500), (0.05, 2000)])
def test_sampled_success_rate_covers_the_truth(rate: float, n: int) -> None:
    coverage = _coverage(rate, "sample", reps=2000, n=n, p=0.8, seed=11)
    assert 0.93 <= coverage <= 0.97, coverage


def test_grading_only_where_evidence_is_found_fails_the_same_test() -> None:
    assert _coverage(1.0, "evidence", reps=200, n=100, p=0.8, seed=12) < 0.5


def test_two_agents_reusing_conversation_ids_are_two_conversations_offline(tmp_path: Path) -> None:
    """Identity is (agent, conversation id): the report counts both agents' "1"; a repeated line of one counts once."""
    rng = random.Random(9)
    lines = []
    for agent in ("support-bot", "sales-bot"):
        for i in range(3):
            line = conversation(str(i), "fine", rng)
            line["agent"] = agent
            lines.append(line)
    lines.append(dict(lines[0]))  # the same conversation again (a replayed export)
    out = tmp_path / "r.json"
    runner.invoke(
        app, ["score", str(_write(tmp_path, lines)), "--format", "json", "--out", str(out), "--no-gate"]
    )
    report = json.loads(out.read_text())
    assert report["conversations"] == 6
