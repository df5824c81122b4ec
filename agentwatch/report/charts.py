"""Plots of the offline report (matplotlib, Agg), embedded in the HTML report as base64 PNG.

Legends sit outside the plotted area, so no band or curve is hidden behind one.
"""

from __future__ import annotations

import base64
import io
import math
from typing import Any

from agentwatch.config import Settings
from agentwatch.report.model import Report
from agentwatch.stats.beta import posterior
from agentwatch.stats.pass_k import pass_at_k_plugin, pass_pow_k_plugin
from agentwatch.stats.units import UnitCounts, UnitsPosterior

CURVE_KS = tuple(range(1, 11))


def png(fig: Any) -> str:
    """A figure as base64 PNG (the legend outside the axes is kept: tight bounding box)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def curves(report: Report, settings: Settings) -> dict[str, list[float]]:
    """Curves for k = 1..10 (empty when nothing is scored).

    Always the pooled Beta posterior's p^k and 1-(1-p)^k under exchangeability (`exch_*`: posterior mean and
    bounds; `*_plugin`); with repeated attempts also pass^k and pass@k over units for k = 1 up to the most
    attempts (`units_k`, `pow_value`, `pow_lo`, `pow_hi`, `at_*`), the report's own estimator.
    """
    n, c = report.scored, report.passed
    if n == 0:
        return {}
    st = settings.stats
    post = posterior(n, c, st.prior_alpha, st.prior_beta)
    out: dict[str, list[float]] = {}
    for k in CURVE_KS:
        for kind, interval, mean, plugin in (
            ("pow", post.pass_pow_k_interval, post.pass_pow_k_mean, pass_pow_k_plugin),
            ("at", post.pass_at_k_interval, post.pass_at_k_mean, pass_at_k_plugin),
        ):
            lo, hi = interval(k, st.level)
            out.setdefault(f"{kind}_plugin", []).append(plugin(c / n, k))
            out.setdefault(f"{kind}_exch_mean", []).append(mean(k))
            out.setdefault(f"{kind}_exch_lo", []).append(lo)
            out.setdefault(f"{kind}_exch_hi", []).append(hi)
    units = report.units
    if units is not None and units.repeated:
        ks = list(range(1, min(units.max_attempts, CURVE_KS[-1]) + 1))
        found = UnitsPosterior(UnitCounts.from_pairs(units.pairs)).estimates(ks, st.level)
        out["units_k"] = [float(k) for k in ks]
        for kind, by_k in found.items():
            values = [(e.value, e.lower, e.upper) for e in (by_k[k] for k in ks)]
            out[f"{kind}_value"] = [float(v if v is not None else math.nan) for v, _lo, _hi in values]
            out[f"{kind}_lo"] = [float(lo if lo is not None else math.nan) for _v, lo, _hi in values]
            out[f"{kind}_hi"] = [float(hi if hi is not None else math.nan) for _v, _lo, hi in values]
    return out


def curve_figure(report: Report, settings: Settings) -> Any:
    """pass@k and pass^k against k with their bands (a matplotlib Figure), or None when nothing is graded."""
    data = curves(report, settings)
    if not data:
        return None
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 4))
    ax = fig.subplots()
    ks = list(CURVE_KS)
    level = f"{settings.stats.level:.0%}"
    over_units = "units_k" in data
    for kind, color in (("at", "tab:blue"), ("pow", "tab:red")):
        exch = "p^k" if kind == "pow" else "1-(1-p)^k"
        if over_units:
            name = "pass^k" if kind == "pow" else "pass@k"
            uk = data["units_k"]
            ax.fill_between(
                uk,
                data[f"{kind}_lo"],
                data[f"{kind}_hi"],
                color=color,
                alpha=0.2,
                label=f"{name} over units, {level} interval",
            )
            ax.plot(uk, data[f"{kind}_value"], color=color, marker="o", label=f"{name} over units (τ-bench)")
            ax.plot(
                ks,
                data[f"{kind}_exch_mean"],
                color=color,
                linestyle="--",
                label=f"{exch} under exchangeability (pooled)",
            )
        else:
            ax.fill_between(
                ks,
                data[f"{kind}_exch_lo"],
                data[f"{kind}_exch_hi"],
                color=color,
                alpha=0.2,
                label=f"{exch} {level} band",
            )
            ax.plot(
                ks,
                data[f"{kind}_exch_mean"],
                color=color,
                marker="o",
                label=f"{exch} under exchangeability, posterior mean",
            )
            ax.plot(ks, data[f"{kind}_plugin"], color=color, linestyle="--", label=f"{exch} plug-in")
    ax.set_xlabel("k")
    ax.set_ylabel("probability")
    ax.set_ylim(0, 1.02)
    ax.set_xticks(ks)
    if over_units:
        units = report.units
        assert units is not None
        ax.set_title(f"pass@k and pass^k over {units.units} units (n={report.scored}, c={report.passed})")
    else:
        ax.set_title(
            f"no repeated attempts: p^k under exchangeability (n={report.scored}, c={report.passed})"
        )
    # outside the plotted area: a legend inside would cover a band
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    ax.grid(alpha=0.3)
    return fig


def outcome_figure(report: Report) -> Any:
    """Conversations per outcome class as horizontal bars (a matplotlib Figure), or None without any."""
    if report.conversations == 0:
        return None
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3))
    ax = fig.subplots()
    names = list(report.outcomes)
    values = [report.outcomes[n] for n in names]
    bars = ax.barh(names, values, color="tab:gray")
    ax.bar_label(bars, labels=[str(v) for v in values], padding=3)
    ax.invert_yaxis()
    ax.set_xlabel("conversations")
    ax.set_title("Outcome breakdown")
    return fig


def charts(report: Report, settings: Settings) -> list[tuple[str, str]]:
    """(alt text, base64 PNG) of the report's plots."""
    out = []
    for alt, fig in (
        ("pass@k and pass^k against k, with their intervals", curve_figure(report, settings)),
        ("conversations per outcome class", outcome_figure(report)),
    ):
        if fig is not None:
            out.append((alt, png(fig)))
    return out
