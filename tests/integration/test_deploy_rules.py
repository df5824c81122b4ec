"""Prometheus rules of deploy/: promtool check and unit tests, coverage of every alert, runbook links."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support.quality_alerts import QUALITY_ALERTS

pytestmark = pytest.mark.prometheus

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
PROM = DEPLOY / "prometheus"
RULE_FILES = [PROM / "recording_rules.yml", PROM / "alert_rules.yml"]
TEST_FILES = sorted((PROM / "tests").glob("*.yml"))
README = DEPLOY / "README.md"


def _alerts() -> list[dict]:
    groups = yaml.safe_load((PROM / "alert_rules.yml").read_text())["groups"]
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def _github_anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to dashes."""
    slug = heading.strip().lower()
    slug = re.sub(r"[^\w\- ]", "", slug)
    return slug.replace(" ", "-")


def _readme_anchors() -> set[str]:
    headings = re.findall(r"^#{1,6}\s+(.+)$", README.read_text(), flags=re.MULTILINE)
    return {_github_anchor(h) for h in headings}


def test_promtool_check_rules(promtool: str) -> None:
    result = subprocess.run(
        [promtool, "check", "rules", *map(str, RULE_FILES)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == len(RULE_FILES)


def test_there_are_rule_tests() -> None:
    assert len(TEST_FILES) >= 5


@pytest.mark.parametrize("test_file", TEST_FILES, ids=[p.stem for p in TEST_FILES])
def test_promtool_test_rules(promtool: str, test_file: Path) -> None:
    result = subprocess.run(
        [promtool, "test", "rules", test_file.name],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=test_file.parent,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_rule_tests_load_the_deployed_rule_files() -> None:
    for test_file in TEST_FILES:
        doc = yaml.safe_load(test_file.read_text())
        loaded = {(test_file.parent / p).resolve() for p in doc["rule_files"]}
        assert loaded == {p.resolve() for p in RULE_FILES}, test_file.name


def test_every_alert_has_a_firing_and_a_quiet_test_case() -> None:
    firing: dict[str, int] = {}
    quiet: dict[str, int] = {}
    for test_file in TEST_FILES:
        for group in yaml.safe_load(test_file.read_text())["tests"]:
            for case in group.get("alert_rule_test", []):
                name = case["alertname"]
                target = firing if case.get("exp_alerts") else quiet
                target[name] = target.get(name, 0) + 1
    names = [a["alert"] for a in _alerts()]
    assert len(names) == len(set(names)), "alert names must be unique"
    missing_firing = [n for n in names if not firing.get(n)]
    missing_quiet = [n for n in names if not quiet.get(n)]
    assert not missing_firing, f"alerts without a firing test case: {missing_firing}"
    assert not missing_quiet, f"alerts without a not-firing test case: {missing_quiet}"
    unknown = (set(firing) | set(quiet)) - set(names)
    assert not unknown, f"tests for alerts that do not exist: {unknown}"


def test_required_alerts_exist() -> None:
    exprs = {a["alert"]: a["expr"] for a in _alerts()}
    assert "agentwatch_regression_probability_pass_pow_3" in exprs["AgentwatchPass3Regression"]
    assert "0.95" in exprs["AgentwatchPass3Regression"]
    for name in (
        "AgentwatchPass3Drift",
        "AgentwatchASRDrop",
        "AgentwatchAbandonmentSpike",
        "AgentwatchHallucinationRate",
        "AgentwatchToolLoops",
        "AgentwatchErrorRateAboveBaseline",
        "AgentwatchNoAnswerRateAboveBaseline",
        "AgentwatchOverBudgetRate",
        "AgentwatchScoredCoverageDrop",
        "AgentwatchPipelineStalled",
        "AgentwatchConsumerLagGrowing",
        "AgentwatchDeadLetters",
    ):
        assert name in exprs


def test_regression_recording_rule_requires_a_minimum_of_scored_conversations() -> None:
    groups = yaml.safe_load((PROM / "recording_rules.yml").read_text())["groups"]
    rules = {r["record"]: r["expr"] for g in groups for r in g["rules"]}
    expr = rules["series:agentwatch_regression_probability_pass_pow_3:max"]
    assert 'agentwatch_regression_probability{k="3"}' in expr
    assert re.search(r"agentwatch_window_scored\s*>=\s*\d+", expr)


@pytest.mark.parametrize("alert", _alerts(), ids=[a["alert"] for a in _alerts()])
def test_alert_has_for_severity_and_annotations(alert: dict) -> None:
    assert re.fullmatch(r"\d+[smh]", alert.get("for", "")), "every alert needs a `for`"
    assert alert["labels"]["severity"] in {"critical", "warning", "info"}
    annotations = alert["annotations"]
    for key in ("summary", "description", "runbook_url"):
        assert annotations.get(key, "").strip(), f"missing annotation {key}"


@pytest.mark.parametrize("alert", _alerts(), ids=[a["alert"] for a in _alerts()])
def test_runbook_url_points_at_a_section_of_the_readme(alert: dict) -> None:
    """The base comes from the configuration (Prometheus' external label `runbook_url`), the anchor from here."""
    url = alert["annotations"]["runbook_url"]
    base, anchor = url.split("#", 1)
    assert base == "{{ $externalLabels.runbook_url }}", url
    assert anchor in _readme_anchors(), f"{anchor!r} is not a heading of deploy/README.md"
    assert anchor == _github_anchor(alert["alert"]), "the runbook section is named after the alert"


def test_the_shipped_prometheus_configuration_sets_the_links_bases() -> None:
    labels = yaml.safe_load((PROM / "prometheus.yml").read_text())["global"]["external_labels"]
    assert labels["runbook_url"].endswith("deploy/README.md")
    assert labels["review_url"].startswith("http") and not labels["review_url"].endswith("/")


# Alerts about one series and the kind of failure (`why`) their link to the review service lists.
SERIES_ALERTS = {
    "AgentwatchPass3Drift": "failed",
    "AgentwatchPass3Regression": "failed",
    "AgentwatchASRDrop": "failed",
    "AgentwatchAbandonmentSpike": "abandoned",
    "AgentwatchHallucinationRate": "hallucination",
    "AgentwatchToolLoops": "loop",
    "AgentwatchErrorRateAboveBaseline": "error",
    "AgentwatchNoAnswerRateAboveBaseline": "no_answer",
    "AgentwatchOverBudgetRate": "over_budget",
}


def test_every_series_alert_links_to_its_failing_conversations() -> None:
    from agentwatch.review.failing import WHY

    assert set(QUALITY_ALERTS) <= set(SERIES_ALERTS) and set(SERIES_ALERTS.values()) <= set(WHY)
    for alert in _alerts():
        link = alert["annotations"].get("review_url")
        if alert["alert"] not in SERIES_ALERTS:
            assert link is None, alert["alert"]
            continue
        assert link is not None, alert["alert"]
        base, _, query = " ".join(link.split()).partition("/failing?")
        assert base == "{{ $externalLabels.review_url }}"
        params = dict(part.split("=", 1) for part in query.split("&"))
        assert params["alert"] == alert["alert"] and params["why"] == SERIES_ALERTS[alert["alert"]]
        for label in ("agent", "version", "task"):
            assert params[label] == f"{{{{ $labels.{label} | urlquery }}}}"
        # no window: the review service lists its alerts.window, the evidence the statistic holds
        assert "window" not in params and params["until"].startswith("{{ with query")


def test_every_metric_the_rules_read_is_documented() -> None:
    documented = set(
        re.findall(r"agentwatch_[a-z0-9_]+", (DEPLOY.parent / "docs" / "metrics.md").read_text())
    )
    for path in RULE_FILES:
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                # Raw metrics only: recorded series (level:name:ops) are matched by the colon before them.
                for name in re.findall(r"(?<![:\w])agentwatch_[a-z0-9_]+", rule["expr"]):
                    assert name in documented, f"{rule.get('alert') or rule['record']}: {name}"


def test_every_quality_alert_is_its_rules_sequential_test() -> None:
    """Statistic against threshold, or an alarm not yet over, for 2m; every rule of the exporter has one."""
    from agentwatch.config import AlertsConfig

    exprs = {a["alert"]: a for a in _alerts()}
    assert set(QUALITY_ALERTS.values()) == set(AlertsConfig.RULES)
    for name, rule in QUALITY_ALERTS.items():
        expr = " ".join(exprs[name]["expr"].split())
        assert expr == (
            f'( agentwatch_alert_statistic{{rule="{rule}"}} >= agentwatch_alert_threshold{{rule="{rule}"}} '
            f'or (agentwatch_alert_statistic{{rule="{rule}"}} and agentwatch_alert_alarm{{rule="{rule}"}} '
            "== 1) ) and on (job, instance) agentwatch_exporter_ready == 1"
        ), name
        assert exprs[name]["for"] == "2m", name
    fixed = [
        name for name, a in exprs.items() if name not in QUALITY_ALERTS and "agentwatch_alert_" in a["expr"]
    ]
    assert not fixed


def test_every_alert_on_the_exporters_estimates_waits_for_its_replay() -> None:
    """An alert reading an estimate of the exporter evaluates only where that exporter is ready (replay done);
    deploy/prometheus/tests/exporter_ready.yml checks that a partial window does not fire."""
    estimates = ("agentwatch_alert_", "series:agentwatch_", "agentwatch_judge_agreement_")
    gated = "and on (job, instance) agentwatch_exporter_ready == 1"
    reading = [a for a in _alerts() if any(m in a["expr"] for m in estimates)]
    assert len(reading) >= len(QUALITY_ALERTS) + 3
    for alert in reading:
        assert " ".join(alert["expr"].split()).endswith(gated), alert["alert"]
