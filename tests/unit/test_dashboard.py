"""The Grafana dashboard built as code: committed JSON is current, variables and panels are there, names follow
docs/metrics.md. (That every expression runs and returns data is checked against a real Prometheus in
tests/integration/test_prometheus_live.py: promtool has no expression checker.)"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest
from grafana_foundation_sdk.models.dashboard import Dashboard

ROOT = Path(__file__).resolve().parents[2]
GRAFANA = ROOT / "deploy" / "grafana"
COMMITTED = GRAFANA / "dashboards" / "agentwatch.json"
VARIABLES = {"datasource", "agent", "version", "task", "window", "k"}


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("aw_dashboard", GRAFANA / "dashboard.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def dashboard() -> dict:
    data: dict = json.loads(COMMITTED.read_text())
    return data


def _targets(dashboard: dict) -> list[tuple[dict, dict]]:
    return [(p, t) for p in dashboard["panels"] for t in p.get("targets", [])]


def _documented_metrics() -> set[str]:
    text = (ROOT / "docs" / "metrics.md").read_text()
    return set(re.findall(r"agentwatch_[a-z0-9_]+", text))


HISTOGRAMS = ("agentwatch_conversation_cost", "agentwatch_conversation_dur", "agentwatch_judge_latency")


def _metric_names(expr: str) -> set[str]:
    """Metric names an expression reads (histogram/counter suffixes stripped to the documented family)."""
    names = set(re.findall(r"\bagentwatch_[a-z0-9_]+", expr))
    out = set()
    for name in names:
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix) and name.startswith(HISTOGRAMS):
                name = name[: -len(suffix)]
        out.add(name)
    return out


def test_committed_json_equals_what_dashboard_py_builds(dashboard: dict) -> None:
    module = _module()
    assert module.render() == COMMITTED.read_text(), "run `python deploy/grafana/dashboard.py` and commit"
    assert module.build_dashboard() == dashboard


def test_dashboard_py_writes_where_asked(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "d.json"
    assert _module().main([str(out)]) == 0
    assert out.read_text() == COMMITTED.read_text()


def test_identity_and_schema(dashboard: dict) -> None:
    assert dashboard["uid"] == "agentwatch-overview"
    assert dashboard["title"] == "agentwatch"
    assert dashboard["schemaVersion"] == Dashboard().schema_version
    assert isinstance(dashboard["panels"], list) and dashboard["panels"]
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))


def test_variables(dashboard: dict) -> None:
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert set(variables) == VARIABLES
    for name in ("agent", "version", "task", "window", "k"):
        assert variables[name]["type"] == "query"
        assert re.fullmatch(rf"label_values\(agentwatch_\w+(\{{.*\}})?, {name}\)", variables[name]["query"])
    assert variables["task"]["current"]["value"] == "*", "the agent-level aggregate is the default task"
    assert "$agent" in variables["version"]["query"], "versions are those of the selected agent"
    assert variables["k"]["multi"] and variables["k"]["includeAll"]
    assert variables["version"]["multi"], "a canary and its baseline are chosen together"


def test_every_target_uses_only_known_variables_and_balanced_brackets(dashboard: dict) -> None:
    for panel, target in _targets(dashboard):
        expr = target["expr"]
        used = set(re.findall(r"\$\{?(\w+)", expr))
        assert used <= VARIABLES | {"__rate_interval"}, (panel["title"], used)
        for open_, close in ("()", "{}", "[]"):
            assert expr.count(open_) == expr.count(close), (panel["title"], expr)
        assert expr.count('"') % 2 == 0, expr
        assert target["datasource"]["uid"] == "${datasource}"


def test_every_metric_read_is_documented(dashboard: dict) -> None:
    documented = _documented_metrics()
    read = set().union(*(_metric_names(t["expr"]) for _, t in _targets(dashboard)))
    for name in read:
        family = re.sub(r"_total$", "", name)
        assert name in documented or family in documented or f"{family}_total" in documented, name


def test_required_panels(dashboard: dict) -> None:
    by_metric: dict[str, list[str]] = {}
    for panel, target in _targets(dashboard):
        for name in _metric_names(target["expr"]):
            by_metric.setdefault(name, []).append(panel["title"])
    for metric in (
        "agentwatch_pass_at_k",
        "agentwatch_pass_pow_k",
        "agentwatch_success_rate",
        "agentwatch_asr",
        "agentwatch_outcome_ratio",
        "agentwatch_tool_correctness",
        "agentwatch_cost_usd",
        "agentwatch_over_budget_ratio",
        "agentwatch_duration_seconds",
        "agentwatch_regression_probability",
        "agentwatch_scored_ratio",
        "agentwatch_sampled_ratio",
        "agentwatch_label_ratio",
        "agentwatch_failure_evidence_rate",
        "agentwatch_spans_consumed_total",
        "agentwatch_consumer_lag",
        "agentwatch_messages_rejected_total",
    ):
        assert metric in by_metric, f"no panel reads {metric}"
    cost = [t["expr"] for p, t in _targets(dashboard) if "agentwatch_cost_usd{" in t["expr"]]
    assert cost and all("quantile" not in e for e in cost), "all three cost quantiles are shown"


def _panels_reading(dashboard: dict, metric: str) -> list[dict]:
    return [p for p in dashboard["panels"] if any(f"{metric}{{" in t["expr"] for t in p.get("targets", []))]


@pytest.mark.parametrize("metric", ["agentwatch_success_rate", "agentwatch_asr"])
def test_band_panels_fill_between_lower_and_upper(dashboard: dict, metric: str) -> None:
    (panel,) = _panels_reading(dashboard, metric)
    legends = {t["legendFormat"]: t["expr"] for t in panel["targets"]}
    assert set(legends) == {"mean", "lower", "upper"}
    for stat, expr in legends.items():
        assert f'stat="{stat}"' in expr
    upper = next(o for o in panel["fieldConfig"]["overrides"] if o["matcher"]["options"] == "upper")
    props = {p["id"]: p.get("value") for p in upper["properties"]}
    assert props["custom.fillBelowTo"] == "lower"
    assert props["custom.fillOpacity"] > 0


@pytest.mark.parametrize(
    ("metric", "symbol"), [("agentwatch_pass_pow_k", "pass^"), ("agentwatch_pass_at_k", "pass@")]
)
def test_pass_k_panels_shade_every_k(dashboard: dict, metric: str, symbol: str) -> None:
    (panel,) = _panels_reading(dashboard, metric)
    assert all('k=~"$k"' in t["expr"] for t in panel["targets"])
    legends = {t["legendFormat"]: t["expr"] for t in panel["targets"]}
    assert legends.keys() == {f"{symbol}{{{{k}}}}", f"{symbol}{{{{k}}}} lower", f"{symbol}{{{{k}}}} upper"}
    fills = {
        o["matcher"]["options"]: {p["id"]: p.get("value") for p in o["properties"]}
        for o in panel["fieldConfig"]["overrides"]
    }
    for k in (1, 3, 5):  # the default stats.ks
        assert fills[f"{symbol}{k} upper"]["custom.fillBelowTo"] == f"{symbol}{k} lower"


def test_band_panels_repeat_per_version_side_by_side(dashboard: dict) -> None:
    """Baseline and canary on one screen: each band panel is repeated for every chosen version."""
    bands = [
        p
        for p in dashboard["panels"]
        if any("fillBelowTo" in str(o) for o in p.get("fieldConfig", {}).get("overrides", []))
    ]
    assert len(bands) == 8
    for panel in bands:
        assert (panel["repeat"], panel["repeatDirection"], panel["maxPerRow"]) == ("version", "h", 2)
        assert "$version" in panel["title"]


def test_every_quality_rule_has_its_statistic_and_threshold(dashboard: dict) -> None:
    from agentwatch.config import AlertsConfig

    for rule in AlertsConfig.RULES:
        panels = [
            p
            for p in dashboard["panels"]
            if p.get("targets") and all(f'rule="{rule}"' in t["expr"] for t in p["targets"])
        ]
        assert len(panels) == 1, rule
        exprs = sorted(t["expr"].split("{")[0] for t in panels[0]["targets"])
        assert exprs == ["agentwatch_alert_statistic", "agentwatch_alert_threshold"]
    (ratio,) = [p for p in dashboard["panels"] if p["title"] == "Statistic / threshold, every rule"]
    assert ratio["targets"][0]["expr"].count('version=~"$version"') == 2
    assert {s["value"] for s in ratio["fieldConfig"]["defaults"]["thresholds"]["steps"]} >= {1}


def test_estimate_panels_select_one_series_and_window(dashboard: dict) -> None:
    for panel, target in _targets(dashboard):
        expr = target["expr"]
        if re.search(
            r"agentwatch_(pass_|success_rate|asr|tool_corr|outcome_ratio|failure_ratio|scored_ratio|"
            r"failure_evidence_rate|sampled_ratio|label_ratio|"
            r"cost_usd|duration_seconds|over_budget|regression|window_)",
            expr,
        ):
            for label in ("agent", "task", "window"):
                assert f'{label}="${label}"' in expr, (panel["title"], expr)
            # one version in a panel repeated per version, else every chosen version
            version = 'version="$version"' if panel.get("repeat") == "version" else 'version=~"$version"'
            assert version in expr, (panel["title"], expr)


def test_failure_evidence_bands_for_the_alerted_codes(dashboard: dict) -> None:
    """Error, no-answer and loop rates are shown with their credible interval, each code in its own band."""
    for code in ("error", "no_answer", "loop"):
        panels = [
            p
            for p in dashboard["panels"]
            if p.get("targets") and all(f'evidence="{code}"' in t["expr"] for t in p["targets"])
        ]
        assert len(panels) == 1, code
        legends = {t["legendFormat"]: t["expr"] for t in panels[0]["targets"]}
        assert set(legends) == {"mean", "lower", "upper"}
        assert all(
            "agentwatch_failure_evidence_rate{" in e and f'stat="{s}"' in e for s, e in legends.items()
        )
        upper = next(o for o in panels[0]["fieldConfig"]["overrides"] if o["matcher"]["options"] == "upper")
        assert {p["id"]: p.get("value") for p in upper["properties"]}["custom.fillBelowTo"] == "lower"
        assert "max" not in panels[0]["fieldConfig"]["defaults"], (
            "small rates: the y axis is not fixed at 100%"
        )


def test_the_judge_row(dashboard: dict) -> None:
    """On-call sees the judge: calls, failures by reason against the paging share, spend against the cap,
    latency, and agreement with people's labels on the blind review sample."""
    panels = dashboard["panels"]
    row = next(i for i, p in enumerate(panels) if p["type"] == "row" and p["title"].startswith("LLM judge"))
    end = next((i for i, p in enumerate(panels) if i > row and p["type"] == "row"), len(panels))
    exprs = {p["title"]: [t["expr"] for t in p["targets"]] for p in panels[row + 1 : end]}
    read = {n for es in exprs.values() for e in es for n in _metric_names(e)}
    assert {
        "agentwatch_judge_calls_total",
        "agentwatch_judge_failures_total",
        "agentwatch_judge_latency_seconds",
        "agentwatch_judge_spend_window_usd",
        "agentwatch_judge_spend_cap_usd",
        "agentwatch_judge_pending",
        "agentwatch_review_judge_labels",
        "agentwatch_review_judge_kappa",
    } <= read
    assert (
        "sum by (reason) (rate(agentwatch_judge_failures_total[$__rate_interval]))"
        in exprs["Judge failures by reason"]
    )
    share = next(p for p in panels[row + 1 : end] if p["title"] == "Judge failure share of calls")
    steps = share["fieldConfig"]["defaults"]["thresholds"]["steps"]
    assert [s["value"] for s in steps] == [None, 0.2]  # AgentwatchJudgeFailing's threshold
    rules = (ROOT / "deploy" / "prometheus" / "alert_rules.yml").read_text()
    assert "/ sum by (job, instance) (rate(agentwatch_judge_calls_total[15m])) > 0.2" in rules
    agreement = exprs["Judge agreement with people (blind review sample)"]
    assert all('sample="review_sample"' in e for e in agreement)
