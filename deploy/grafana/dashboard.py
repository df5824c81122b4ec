"""The agentwatch Grafana dashboard, built as code with the official grafana-foundation-sdk.

Run `python deploy/grafana/dashboard.py` to (re)write `deploy/grafana/dashboards/agentwatch.json`; the tests
fail when the committed JSON differs from `build_dashboard()`. Metric names follow docs/metrics.md.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

from grafana_foundation_sdk.builders import common as common_b
from grafana_foundation_sdk.builders import dashboard as dash_b
from grafana_foundation_sdk.builders import prometheus as prom_b
from grafana_foundation_sdk.builders import stat as stat_b
from grafana_foundation_sdk.builders import timeseries as ts_b
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models.dashboard import (
    DashboardCursorSync,
    DataSourceRef,
    DynamicConfigValue,
    Threshold,
    ThresholdsMode,
    VariableOption,
    VariableRefresh,
    VariableSort,
)

log = logging.getLogger(__name__)

UID = "agentwatch-overview"
OUTPUT = Path(__file__).parent / "dashboards" / "agentwatch.json"
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")

# Label selector of one series and window; `task="*"` is the agent-level aggregate. `version` is multi-select
# (a canary beside its baseline): panels that repeat per version select the one version of their copy
# (ONE_SEL); the others select every chosen version (SEL) and name the version in their legends.
SERIES = 'agent="$agent", version=~"$version", task="$task"'
SEL = SERIES + ', window="$window"'
ONE_SEL = 'agent="$agent", version="$version", task="$task", window="$window"'
# Counters and histograms exist for real tasks only (no "*"): they are filtered by agent and version.
AGENT_VERSION = 'agent="$agent", version=~"$version"'
# The sequential tests exist for real tasks only, on every task of the chosen versions.
ALERTS = 'agent="$agent", version=~"$version"'
RULES: tuple[tuple[str, str], ...] = (
    ("pass", "pass: failed graded conversations (pass^3 drop)"),
    ("asr", "asr: ASR credit not earned (ASR drop)"),
    ("abandoned", "abandoned: graded conversations abandoned"),
    ("error", "error: conversations ending in an error"),
    ("no_answer", "no_answer: conversations without an answer"),
    ("loop", "loop: conversations looping on a tool"),
    ("hallucination", "hallucination: conversations flagged"),
    ("over_budget", "over_budget: conversations over their ceiling"),
)
RATE = "$__rate_interval"
DURATION_RATE = f"rate(agentwatch_conversation_duration_seconds_bucket{{{AGENT_VERSION}}}[{RATE}])"


def _query(expr: str, legend: str, ref: str) -> prom_b.Dataquery:
    return prom_b.Dataquery().expr(expr).legend_format(legend).ref_id(ref).range().datasource(DATASOURCE)


def _thresholds(*steps: tuple[float | None, str]) -> dash_b.ThresholdsConfig:
    return (
        dash_b.ThresholdsConfig()
        .mode(ThresholdsMode.ABSOLUTE)
        .steps([Threshold(value=v, color=c) for v, c in steps])
    )


def _timeseries(
    title: str, description: str, unit: str, queries: list[tuple[str, str]], width: int = 12, height: int = 8
) -> ts_b.Panel:
    """A time-series panel with one target per (expr, legend)."""
    panel = (
        ts_b.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .span(width)
        .height(height)
        .line_width(1)
        .fill_opacity(0)
        .show_points(common.VisibilityMode.NEVER)
        .legend(
            common_b.VizLegendOptions()
            .display_mode(common.LegendDisplayMode.LIST)
            .placement(common.LegendPlacement.BOTTOM)
            .show_legend(True)
        )
        .tooltip(
            common_b.VizTooltipOptions().mode(common.TooltipDisplayMode.MULTI).sort(common.SortOrder.NONE)
        )
    )
    for i, (expr, legend) in enumerate(queries):
        panel = panel.with_target(_query(expr, legend, chr(ord("A") + i)))
    return panel


def _band(title: str, description: str, metric: str, extra: str = "", max_one: bool = True) -> ts_b.Panel:
    """Posterior mean with its credible interval shaded between the lower and upper bounds (y axis 0..1, or
    0..auto for small rates when not `max_one`), one copy per chosen version side by side (a full row, which
    Grafana divides between the copies)."""
    sel = ONE_SEL + extra
    panel = _timeseries(
        title,
        description,
        "percentunit",
        [
            (f'{metric}{{{sel}, stat="mean"}}', "mean"),
            (f'{metric}{{{sel}, stat="lower"}}', "lower"),
            (f'{metric}{{{sel}, stat="upper"}}', "upper"),
        ],
        width=24,
    )
    panel = panel.min(0).max(1) if max_one else panel.min(0)
    return (
        panel.line_width(2)
        .override_by_name(
            "upper",
            [
                DynamicConfigValue(id_val="custom.fillBelowTo", value="lower"),
                DynamicConfigValue(id_val="custom.fillOpacity", value=25),
                DynamicConfigValue(id_val="custom.lineWidth", value=0),
            ],
        )
        .override_by_name(
            "lower",
            [
                DynamicConfigValue(id_val="custom.lineWidth", value=0),
            ],
        )
        .repeat("version")
        .repeat_direction("h")
        .max_per_row(2)
    )


MAX_K = 10  # bands are drawn for k = 1 .. MAX_K (overrides name each k's bounds)


def _k_bands(title: str, description: str, metric: str, symbol: str) -> ts_b.Panel:
    """pass^k or pass@k of every chosen k with its interval shaded, one copy per chosen version side by side."""
    sel = ONE_SEL + ', k=~"$k"'
    legend = f"{symbol}{{{{k}}}}"
    panel = (
        _timeseries(
            title,
            description,
            "percentunit",
            [
                (f'{metric}{{{sel}, stat="mean"}}', legend),
                (f'{metric}{{{sel}, stat="lower"}}', f"{legend} lower"),
                (f'{metric}{{{sel}, stat="upper"}}', f"{legend} upper"),
            ],
            width=24,
        )
        .min(0)
        .max(1)
        .line_width(2)
    )
    for k in range(1, MAX_K + 1):
        panel = panel.override_by_name(
            f"{symbol}{k} upper",
            [
                DynamicConfigValue(id_val="custom.fillBelowTo", value=f"{symbol}{k} lower"),
                DynamicConfigValue(id_val="custom.fillOpacity", value=20),
                DynamicConfigValue(id_val="custom.lineWidth", value=0),
            ],
        ).override_by_name(f"{symbol}{k} lower", [DynamicConfigValue(id_val="custom.lineWidth", value=0)])
    return panel.repeat("version").repeat_direction("h").max_per_row(2)


def _stat(
    title: str, description: str, unit: str, queries: list[tuple[str, str]], width: int = 6
) -> stat_b.Panel:
    panel = (
        stat_b.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .span(width)
        .height(4)
        .graph_mode(common.BigValueGraphMode.AREA)
        .reduce_options(common_b.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
    )
    for i, (expr, legend) in enumerate(queries):
        panel = panel.with_target(_query(expr, legend, chr(ord("A") + i)))
    return panel


def _variables(d: dash_b.Dashboard) -> dash_b.Dashboard:
    def query_var(name: str, label: str, query: str) -> dash_b.QueryVariable:
        return (
            dash_b.QueryVariable(name)
            .label(label)
            .query(query)
            .datasource(DATASOURCE)
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(VariableSort.NATURAL_ASC)
        )

    return (
        d.with_variable(
            dash_b.DatasourceVariable("datasource")
            .label("Data source")
            .type("prometheus")
            .current(
                VariableOption(selected=True, text="agentwatch-prometheus", value="agentwatch-prometheus")
            )
        )
        .with_variable(query_var("agent", "Agent", "label_values(agentwatch_window_scored, agent)"))
        .with_variable(
            query_var(
                "version",
                "Versions (baseline and canary)",
                'label_values(agentwatch_window_scored{agent="$agent"}, version)',
            ).multi(True)
        )
        .with_variable(
            query_var(
                "task",
                "Task",
                'label_values(agentwatch_window_scored{agent="$agent", version=~"$version"}, task)',
            ).current(VariableOption(selected=True, text="*", value="*"))
        )
        .with_variable(
            query_var("window", "Window", "label_values(agentwatch_window_scored, window)").current(
                VariableOption(selected=True, text="24h", value="24h")
            )
        )
        .with_variable(
            query_var("k", "k", "label_values(agentwatch_pass_pow_k, k)")
            .multi(True)
            .include_all(True)
            .current(VariableOption(selected=True, text="3", value="3"))
        )
    )


def _sequential(d: dash_b.Dashboard) -> dash_b.Dashboard:
    """The paging signal: every rule's statistic against its threshold, per series, for the chosen versions."""
    d = d.with_row(dash_b.Row("Paging signals: sequential tests of the chosen versions (every task)"))
    ratio = f"agentwatch_alert_statistic{{{ALERTS}}} / agentwatch_alert_threshold{{{ALERTS}}}"
    d = d.with_panel(
        _timeseries(
            "Statistic / threshold, every rule",
            "Each series and rule: its CUSUM statistic over its threshold. An alarm starts at 1 and lasts until "
            "the statistic is back at 0; the alert fires once it has lasted 2 minutes. Thresholds share the "
            "fleet's budget of false pages (alerts.false_pages_per_month, docs/alerts.md).",
            "short",
            [(ratio, "{{version}} {{task}} {{rule}}")],
            width=16,
        )
        .min(0)
        .thresholds(_thresholds((None, "green"), (0.7, "yellow"), (1, "red")))
        .thresholds_style(common_b.GraphThresholdsStyleConfig().mode(common.GraphThresholdsStyleMode.DASHED))
    )
    d = d.with_panel(
        _stat(
            "Alarms on",
            "Series whose alarm is on, per version and rule (1 each): the alert fires after 2 minutes.",
            "short",
            [(f"sum by (version, rule) (agentwatch_alert_alarm{{{ALERTS}}})", "{{version}} {{rule}}")],
            width=8,
        )
    )
    for rule, title in RULES:
        sel = f'{ALERTS}, rule="{rule}"'
        d = d.with_panel(
            _timeseries(
                title,
                f"Rule {rule}: the CUSUM statistic S (solid) and its threshold h (dashed) of each series, in nats; "
                "the reference is the baseline version's rate, else the series' own last 7 days (label "
                "reference_version).",
                "short",
                [
                    (f"agentwatch_alert_statistic{{{sel}}}", "{{version}} {{task}}"),
                    (f"agentwatch_alert_threshold{{{sel}}}", "{{version}} {{task}} threshold"),
                ],
                width=6,
                height=7,
            )
            .min(0)
            .override_by_regexp(
                ".* threshold$",
                [
                    DynamicConfigValue(id_val="custom.lineStyle", value={"fill": "dash", "dash": [10, 10]}),
                ],
            )
        )
    return d.with_panel(
        _timeseries(
            "References of the sequential tests",
            "The rate each rule compares a series with: success rate (pass), ASR (asr), else the rate of its bad "
            "observation; from the baseline version when it has enough conversations, else from the series' own "
            "last 7 days (posterior mean, rounded up on the design grid).",
            "percentunit",
            [
                (
                    f"agentwatch_alert_reference{{{ALERTS}}}",
                    "{{version}} {{task}} {{rule}} (from {{reference_version}})",
                )
            ],
            width=24,
        ).min(0)
    )


def _reliability(d: dash_b.Dashboard) -> dash_b.Dashboard:
    d = d.with_row(dash_b.Row("Reliability ($window window, 95% credible intervals), one panel per version"))
    d = d.with_panel(
        _k_bands(
            "pass^k, $version",
            "k attempts at the same task instance all succeed. With repeated attempts in the window (label "
            "method=tasks): the mean over task instances of C(c,k)/C(n,k), shaded: its interval over the "
            "population of instances. Without (method=exchangeable): p^k of the pooled success rate, which "
            "understates pass^k when tasks differ. See 'Units' below.",
            "agentwatch_pass_pow_k",
            "pass^",
        )
    )
    d = d.with_panel(
        _k_bands(
            "pass@k, $version",
            "At least one of k attempts at the same task instance succeeds: over task instances (method=tasks) "
            "or 1-(1-p)^k of the pooled success rate (method=exchangeable). Shaded: interval.",
            "agentwatch_pass_at_k",
            "pass@",
        )
    )
    d = d.with_panel(
        _band(
            "Success rate p, $version",
            "Beta posterior of the per-conversation pass probability.",
            "agentwatch_success_rate",
        )
    )
    d = d.with_panel(
        _band(
            "Agent Success Rate (ASR), $version",
            "Mean outcome credit minus cost penalty, bootstrap interval.",
            "agentwatch_asr",
        )
    )
    d = d.with_panel(
        _timeseries(
            "Regression probability vs baseline",
            "P(pass^k of this version < pass^k of the baseline version - margin), shown, not paged on (the page "
            "is the sequential test of rule pass).",
            "percentunit",
            [
                (
                    f"agentwatch_regression_probability{{{SEL}}}",
                    "{{version}}: pass^{{k}} vs {{baseline_version}} ({{method}})",
                )
            ],
            width=8,
        )
        .min(0)
        .max(1)
        .thresholds(_thresholds((None, "green"), (0.95, "red")))
        .thresholds_style(common_b.GraphThresholdsStyleConfig().mode(common.GraphThresholdsStyleMode.DASHED))
    )
    d = d.with_panel(
        _stat(
            "Conversations in window",
            "Scored conversations (n) and passed ones (c) of the posterior.",
            "short",
            [
                (f"agentwatch_window_scored{{{SEL}}}", "{{version}} scored (n)"),
                (f"agentwatch_window_passed{{{SEL}}}", "{{version}} passed (c)"),
            ],
            width=8,
        )
    )
    return d.with_panel(
        _stat(
            "Units",
            "Task instances with a graded conversation, and those attempted more than once: with "
            "repeated attempts pass^k is over instances (method=tasks), without it is p^k under exchangeability.",
            "short",
            [
                (f"agentwatch_window_units{{{SEL}}}", "{{version}} units"),
                (f"agentwatch_window_repeated_units{{{SEL}}}", "{{version}} attempted more than once"),
            ],
            width=8,
        )
    )


def _outcomes(d: dash_b.Dashboard) -> dash_b.Dashboard:
    d = d.with_row(dash_b.Row("Outcomes, tools and coverage"))
    d = d.with_panel(
        _timeseries(
            "Outcome breakdown",
            "Share of the scored conversations by outcome class.",
            "percentunit",
            [(f"agentwatch_outcome_ratio{{{SEL}}}", "{{version}} {{outcome}}")],
        )
        .fill_opacity(60)
        .stacking(common_b.StackingConfig().mode(common.StackingMode.NORMAL))
        .min(0)
        .max(1)
    )
    d = d.with_panel(
        _timeseries(
            "Failure modes",
            "Share of conversations whose reasons include each failure mode.",
            "percentunit",
            [(f"agentwatch_failure_ratio{{{SEL}}}", "{{version}} {{mode}}")],
        ).min(0)
    )
    d = d.with_panel(
        _timeseries(
            "Tool correctness by dimension",
            "Mean over tool-graded turns; binary = share of exact tool-set matches.",
            "percentunit",
            [(f"agentwatch_tool_correctness{{{SEL}}}", "{{version}} {{dimension}}")],
        )
        .min(0)
        .max(1)
    )
    return d.with_panel(
        _timeseries(
            "Graded coverage and samples",
            "Graded: share of conversations a grader decided (expectations, task policy, judge sample, label on "
            "the review sample); the success rate, pass@k, pass^k and ASR use these only. Judge and review: share "
            "of conversations in each sample.",
            "percentunit",
            [
                (f"agentwatch_scored_ratio{{{SEL}}}", "{{version}} graded"),
                (f'agentwatch_sampled_ratio{{{SEL}, sample="judge"}}', "{{version}} judge sample"),
                (f'agentwatch_sampled_ratio{{{SEL}, sample="review"}}', "{{version}} review sample"),
            ],
        )
        .min(0)
        .max(1)
        .thresholds(_thresholds((None, "red"), (0.5, "yellow"), (0.8, "green")))
        .thresholds_style(common_b.GraphThresholdsStyleConfig().mode(common.GraphThresholdsStyleMode.AREA))
    )


def _evidence(d: dash_b.Dashboard) -> dash_b.Dashboard:
    d = d.with_row(dash_b.Row("Failure evidence over all traffic ($window window, no ground truth needed)"))
    d = d.with_panel(
        _timeseries(
            "Failure evidence rates (all conversations)",
            "Posterior mean share of all conversations, graded or not, with each kind of failure evidence.",
            "percentunit",
            [(f'agentwatch_failure_evidence_rate{{{SEL}, stat="mean"}}', "{{version}} {{evidence}}")],
        ).min(0)
    )
    d = d.with_panel(
        _timeseries(
            "Labels (all conversations)",
            "Share of all conversations carrying a person's or feedback label of each outcome, graded or not "
            "(abandoned = negative feedback).",
            "percentunit",
            [(f"agentwatch_label_ratio{{{SEL}}}", "{{version}} {{outcome}}")],
        ).min(0)
    )
    for code, title in (("error", "Error rate"), ("no_answer", "No-answer rate"), ("loop", "Tool-loop rate")):
        d = d.with_panel(
            _band(
                f"{title} (all conversations), $version",
                f"Beta posterior of the share of all conversations with `{code}` evidence. Shaded: credible interval. "
                "The alert on it is the sequential test of rule " + code + " (Paging signals, above).",
                "agentwatch_failure_evidence_rate",
                f', evidence="{code}"',
                max_one=False,
            )
        )
    return d


def _cost(d: dash_b.Dashboard) -> dash_b.Dashboard:
    d = d.with_row(dash_b.Row("Cost and latency"))
    d = d.with_panel(
        _timeseries(
            "Cost per conversation P50 / P90 / P99",
            "Cost quantiles of the conversations in the window.",
            "currencyUSD",
            [(f"agentwatch_cost_usd{{{SEL}}}", "{{version}} P{{quantile}}")],
            width=8,
        )
    )
    d = d.with_panel(
        _timeseries(
            "Over-budget ratio",
            "Share of conversations whose cost exceeds their ceiling.",
            "percentunit",
            [(f"agentwatch_over_budget_ratio{{{SEL}}}", "{{version}} over budget")],
            width=8,
        ).min(0)
    )
    d = d.with_panel(
        _timeseries(
            "Duration P50 / P90 / P99",
            "Duration quantiles of the conversations in the window.",
            "s",
            [(f"agentwatch_duration_seconds{{{SEL}}}", "{{version}} P{{quantile}}")],
            width=8,
        )
    )
    d = d.with_panel(
        _timeseries(
            "Conversations per second by outcome (all tasks)",
            "Rate of conversations consumed, by outcome.",
            "cps",
            [
                (
                    f"sum by (version, outcome) (rate(agentwatch_conversations_total{{{AGENT_VERSION}}}[{RATE}]))",
                    "{{version}} {{outcome}}",
                )
            ],
            width=8,
        )
    )
    d = d.with_panel(
        _timeseries(
            "Spend per hour (all tasks)",
            "USD per hour from the cost histogram.",
            "currencyUSD",
            [
                (
                    f"sum by (version) (rate(agentwatch_conversation_cost_usd_sum{{{AGENT_VERSION}}}[{RATE}])) * 3600",
                    "{{version}} USD / hour",
                )
            ],
            width=8,
        )
    )
    return d.with_panel(
        _timeseries(
            "Duration P90 from the histogram (all tasks)",
            "Over the dashboard's rate interval, not the window.",
            "s",
            [
                (
                    f"histogram_quantile(0.9, sum by (version, le) ({DURATION_RATE}))",
                    "{{version}} P90",
                )
            ],
            width=8,
        )
    )


JUDGE_CALLS = f"sum(rate(agentwatch_judge_calls_total[{RATE}]))"
JUDGE_LATENCY = f"sum by (le) (rate(agentwatch_judge_latency_seconds_bucket[{RATE}]))"
REVIEW_SAMPLE = 'sample="review_sample"'
JUDGE_FAILED_SHARE = (
    f'sum(rate(agentwatch_judge_failures_total{{reason!="judge_budget_exhausted"}}[{RATE}])) / {JUDGE_CALLS}'
)
JUDGE_AGREEMENT = (
    f'sum by (judge) (agentwatch_review_judge_labels{{{REVIEW_SAMPLE}, agreement="agree"}}) / '
    f"sum by (judge) (agentwatch_review_judge_labels{{{REVIEW_SAMPLE}}})"
)


def _judge(d: dash_b.Dashboard) -> dash_b.Dashboard:
    """The LLM judge as on-call needs it: is it answering, failing, spending, slow, and do people agree."""
    d = d.with_row(dash_b.Row("LLM judge (every collector; the judge grades all agents' judge samples)"))
    d = d.with_panel(
        _timeseries(
            "Judge calls per second",
            "Conversations sent to the judge, verdicts that graded one (cache hits included) and cache hits.",
            "cps",
            [
                (JUDGE_CALLS, "calls"),
                (f"sum(rate(agentwatch_judge_verdicts_total[{RATE}]))", "verdicts"),
                (f"sum(rate(agentwatch_judge_cache_hits_total[{RATE}]))", "cache hits"),
            ],
            width=6,
        )
    )
    d = d.with_panel(
        _timeseries(
            "Judge failures by reason",
            "Judge-sampled conversations left unscored, per second: timeouts, bad "
            "output, judge unavailable, spend cap reached (AgentwatchJudgeBudgetExhausted).",
            "cps",
            [(f"sum by (reason) (rate(agentwatch_judge_failures_total[{RATE}]))", "{{reason}}")],
            width=6,
        )
    )
    d = d.with_panel(
        _timeseries(
            "Judge failure share of calls",
            "Failed calls (spend cap aside) over calls; "
            "AgentwatchJudgeFailing pages above 20% over 15 minutes.",
            "percentunit",
            [(JUDGE_FAILED_SHARE, "failed / calls")],
            width=6,
        )
        .min(0)
        .max(1)
        .thresholds(_thresholds((None, "green"), (0.2, "red")))
        .thresholds_style(common_b.GraphThresholdsStyleConfig().mode(common.GraphThresholdsStyleMode.DASHED))
    )
    d = d.with_panel(
        _timeseries(
            "Judge latency P50 / P90 / P99",
            "Latency of judge calls from the histogram, over the rate interval.",
            "s",
            [(f"histogram_quantile({q}, {JUDGE_LATENCY})", f"P{round(q * 100)}") for q in (0.5, 0.9, 0.99)],
            width=6,
        )
    )
    d = d.with_panel(
        _timeseries(
            "Judge spend against the cap",
            "Spend over the sliding hour and 24 hours as the spend cap counts it, "
            "per collector, and the caps (judge.hourly_usd, judge.daily_usd). At the cap, judge-sampled "
            "conversations are left unscored.",
            "currencyUSD",
            [
                (
                    "sum by (instance, period) (agentwatch_judge_spend_window_usd)",
                    "spent, last {{period}} ({{instance}})",
                ),
                ("max by (period) (agentwatch_judge_spend_cap_usd)", "cap per {{period}}"),
            ],
            width=8,
        ).min(0)
    )
    d = d.with_panel(
        _timeseries(
            "Judge agreement with people (blind review sample)",
            "From the review service: share of people's labels on the blind review sample that chose the judge's "
            "outcome class, and Cohen's kappa. Empty until people label conversations the judge graded.",
            "percentunit",
            [
                (JUDGE_AGREEMENT, "agreement {{judge}}"),
                (f"agentwatch_review_judge_kappa{{{REVIEW_SAMPLE}}}", "kappa {{judge}}"),
            ],
            width=8,
        )
        .min(0)
        .max(1)
    )
    return d.with_panel(
        _stat(
            "Judge backlog and labels",
            "Conversations waiting for a verdict (the collector pauses consumption "
            "at collector.max_pending_verdicts), and labels on the blind review sample compared with the judge.",
            "short",
            [
                ("sum(agentwatch_judge_pending)", "waiting for a verdict"),
                (f"sum(agentwatch_review_judge_labels{{{REVIEW_SAMPLE}}})", "labels compared"),
            ],
            width=8,
        )
    )


def _people(d: dash_b.Dashboard) -> dash_b.Dashboard:
    """Corrections by people's labels, judge–human agreement and judge drift on the anchors."""
    d = d.with_row(dash_b.Row("Judge and people: corrected estimates, agreement, anchors ($window window)"))
    corrected = "agentwatch_corrected_success_rate"
    d = d.with_panel(
        _timeseries(
            "Success rate corrected by people's labels, $version version",
            "PPI++: the automated verdicts corrected by the labels of the blind review sample (band: 95% "
            "interval), beside the verdicts alone (judge only). The corrected line appears once it rests on "
            "enough labels. One copy per chosen version.",
            "percentunit",
            [
                (f'{corrected}{{{ONE_SEL}, estimate="corrected", stat="{stat}"}}', stat)
                for stat in ("mean", "lower", "upper")
            ]
            + [(f'{corrected}{{{ONE_SEL}, estimate="judge_only", stat="mean"}}', "judge only")],
            width=24,
        )
        .min(0)
        .max(1)
        .line_width(2)
        .override_by_name(
            "upper",
            [
                DynamicConfigValue(id_val="custom.fillBelowTo", value="lower"),
                DynamicConfigValue(id_val="custom.fillOpacity", value=25),
                DynamicConfigValue(id_val="custom.lineWidth", value=0),
            ],
        )
        .override_by_name("lower", [DynamicConfigValue(id_val="custom.lineWidth", value=0)])
        .repeat("version")
        .repeat_direction("h")
        .max_per_row(2)
    )
    d = d.with_panel(
        _stat(
            "Labels the correction rests on",
            "Review-sample labels on automatically graded conversations, by the automated verdict; 1 when the "
            "success rate and ASR rest on enough labels to be called corrected.",
            "short",
            [
                (f"agentwatch_correction_labels{{{SEL}}}", "labels where the graders {{verdict}}"),
                (f"agentwatch_correction_predictions{{{SEL}}}", "automated verdicts"),
                (f"agentwatch_correction_enough{{{SEL}}}", "enough for {{figure}}"),
            ],
            width=12,
        )
    )
    d = d.with_panel(
        _timeseries(
            "Outcome shares, corrected and judge only",
            "Share of each outcome class among the automatically graded conversations: corrected by the labels "
            "(solid) and the verdicts alone.",
            "percentunit",
            [(f'agentwatch_corrected_outcome_ratio{{{SEL}, stat="mean"}}', "{{outcome}} ({{estimate}})")],
            width=12,
        )
        .min(0)
        .max(1)
    )
    d = d.with_panel(
        _timeseries(
            "Judge–human agreement (Cohen's kappa) in the window",
            "From the exporter: kappa of each judge's verdicts with the review-sample labels in the window, with "
            "its 95% interval; AgentwatchJudgeAgreementLow fires when the upper bound is below judge.min_kappa "
            "over a day with enough labels. (The judge row shows the review store's agreement since it began.)",
            "none",
            [
                (
                    f'agentwatch_judge_agreement_kappa{{window="$window", stat="{stat}"}}',
                    f"{{{{judge}}}} {stat}",
                )
                for stat in ("mean", "lower", "upper")
            ]
            + [("max(agentwatch_judge_min_kappa)", "judge.min_kappa")],
            width=12,
        )
    )
    d = d.with_panel(
        _stat(
            "Labels against verdicts",
            "The confusion of the review-sample labels (label) with the judge's verdicts (verdict), per judge.",
            "short",
            [
                ('agentwatch_judge_confusion{window="$window"} > 0', "{{judge}}: {{label}} → {{verdict}}"),
                ('agentwatch_judge_agreement_labels{window="$window"}', "{{judge}}: labels"),
            ],
            width=12,
        )
    )
    return d.with_panel(
        _stat(
            "Judge drift on the frozen anchors",
            "1: the judge's verdicts on the unchanged anchors moved (the series it grades have their regression "
            "alerts inhibited). The share keeping the frozen class and the pass-rate shift with its interval.",
            "none",
            [
                ("agentwatch_judge_drift", "drift {{judge}}"),
                ("agentwatch_anchor_agreement", "same class {{judge}}"),
                ("agentwatch_anchor_pass_rate_shift", "shift {{stat}} {{judge}}"),
                ("time() - agentwatch_anchor_last_run_timestamp_seconds", "seconds since the run {{judge}}"),
            ],
            width=12,
        )
    )


def _pipeline(d: dash_b.Dashboard) -> dash_b.Dashboard:
    d = d.with_row(dash_b.Row("Pipeline health"))
    d = d.with_panel(
        _timeseries(
            "Throughput",
            "Spans and log records consumed, scores produced and scores read per second.",
            "cps",
            [
                (f"sum(rate(agentwatch_spans_consumed_total[{RATE}]))", "spans consumed"),
                (f"sum(rate(agentwatch_log_records_consumed_total[{RATE}]))", "log records consumed"),
                (f"sum(rate(agentwatch_scores_produced_total[{RATE}]))", "scores produced"),
                (f"sum(rate(agentwatch_scores_consumed_total[{RATE}]))", "scores read by the estimator"),
            ],
            width=8,
        )
    )
    d = d.with_panel(
        _timeseries(
            "Consumer lag",
            "Messages behind the fetch high watermark, by topic.",
            "short",
            [("sum by (topic) (agentwatch_consumer_lag)", "{{topic}}")],
            width=8,
        )
    )
    d = d.with_panel(
        _timeseries(
            "Dead letters",
            "Messages rejected to the dead-letter topic, by reason.",
            "cps",
            [(f"sum by (reason) (rate(agentwatch_messages_rejected_total[{RATE}]))", "{{reason}}")],
            width=8,
        )
    )
    d = d.with_panel(
        _timeseries(
            "Kafka consumer errors",
            "Error events each service's consumer reported, by librdkafka's name (_TRANSPORT: a broker connection "
            "failed; _ALL_BROKERS_DOWN: none reachable), per second.",
            "cps",
            [
                (f"sum by (error) (rate(agentwatch_consumer_errors_total[{RATE}]))", "collector {{error}}"),
                (
                    f"sum by (error) (rate(agentwatch_exporter_consumer_errors_total[{RATE}]))",
                    "exporter {{error}}",
                ),
                (
                    f"sum by (error) (rate(agentwatch_review_consumer_errors_total[{RATE}]))",
                    "review {{error}}",
                ),
            ],
            width=8,
        )
    )
    d = d.with_panel(
        _timeseries(
            "Conversations being assembled",
            "Open conversations in the collector.",
            "short",
            [("sum(agentwatch_open_conversations)", "open")],
            width=8,
        )
    )
    d = d.with_panel(
        _timeseries(
            "Span anomalies",
            "Late and duplicate spans, and logged messages whose span was not in their conversation, per second.",
            "cps",
            [
                (f"sum(rate(agentwatch_late_spans_total[{RATE}]))", "late"),
                (f"sum(rate(agentwatch_duplicate_spans_total[{RATE}]))", "duplicate"),
                (
                    f"sum(rate(agentwatch_orphan_message_fragments_total[{RATE}]))",
                    "logged messages without span",
                ),
            ],
            width=8,
        )
    )
    d = d.with_panel(
        _timeseries(
            "Conversations finished by reason",
            "end, idle, cap or shutdown; and traces that only set agents up (create_agent, embeddings), no "
            "conversation.",
            "cps",
            [
                (f"sum by (reason) (rate(agentwatch_conversations_finished_total[{RATE}]))", "{{reason}}"),
                (f"sum(rate(agentwatch_setup_only_traces_total[{RATE}]))", "setup only (not scored)"),
            ],
            width=12,
        )
    )
    d = d.with_panel(
        _timeseries(
            "Estimator input",
            "Scores rejected by reason, clamped; label values folded.",
            "cps",
            [
                (f"sum by (reason) (rate(agentwatch_scores_rejected_total[{RATE}]))", "rejected {{reason}}"),
                (f"sum(rate(agentwatch_scores_clamped_total[{RATE}]))", "clamped"),
                (f"sum by (label) (rate(agentwatch_labels_folded_total[{RATE}]))", "folded {{label}}"),
            ],
            width=12,
        )
    )
    return d.with_panel(
        _stat(
            "Freshness",
            "Age of the newest counted score and of the last offset commit.",
            "s",
            [
                ("time() - max(agentwatch_estimator_last_score_timestamp_seconds)", "newest score"),
                ("time() - max(agentwatch_last_commit_timestamp_seconds)", "last commit"),
            ],
            width=12,
        )
    )


def build_dashboard() -> dict[str, Any]:
    """The dashboard as a JSON-ready dict (Grafana's dashboard model, schemaVersion from the SDK)."""
    d = (
        dash_b.Dashboard("agentwatch")
        .uid(UID)
        .description(
            "Reliability of AI agents in production: paging signals, pass@k, pass^k, ASR, outcomes, cost, "
            "the LLM judge, pipeline; choose several versions to see a canary beside its baseline."
        )
        .tags(["agentwatch", "agents", "reliability"])
        .editable()
        .time("now-24h", "now")
        .refresh("1m")
        .timezone("browser")
        .tooltip(DashboardCursorSync.CROSSHAIR)
    )
    d = _variables(d)
    for section in (_sequential, _reliability, _outcomes, _evidence, _cost, _judge, _people, _pipeline):
        d = section(d)
    model = json.loads(json.dumps(d.build(), cls=JSONEncoder))
    for panel_id, panel in enumerate(model["panels"], start=1):
        panel["id"] = panel_id  # stable ids: Grafana links and repeats refer to them
    return model


def render() -> str:
    """The dashboard JSON text as committed (sorted keys, two-space indent, trailing newline)."""
    return json.dumps(build_dashboard(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the dashboard JSON to the path given, or to deploy/grafana/dashboards/agentwatch.json."""
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0]) if args else OUTPUT
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(), encoding="utf-8")
    log.info("wrote %s", out)
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    raise SystemExit(main())
