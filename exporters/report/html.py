"""HTML rendering of a `Report`: the text report plus plots (matplotlib, Agg) embedded as base64 PNG."""

from __future__ import annotations

import base64
import math
import html
import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentwatch.exporters.report.model import Report
from agentwatch.exporters.report.text import final_verdict, report_lines

from agentwatch.config import Settings
from agentwatch.stats import pass_at_k_plugin, pass_pow_k_plugin, posterior
from agentwatch.task_stats import UnitCounts, UnitsPosterior

if TYPE_CHECKING:  # matplotlib is imported when a chart is drawn (extra `html`)
    from matplotlib.figure import Figure

CURVE_KS = tuple(range(1, 11))


def _png(fig: Figure) -> str:
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


def _curve_plot(report: Report, settings: Settings) -> str | None:
    data = curves(report, settings)
    if not data:
        return None
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4))
    ax = fig.subplots()
    ks = list(CURVE_KS)
    level = f"{settings.stats.level:.0%}"
    over_units = "units_k" in data
    for kind, color in (("at", "tab:blue"), ("pow", "tab:red")):
        exch = "p^k" if kind == "pow" else "1-(1-p)^k"
        if over_units:
            name = "pass^k" if kind == "pow" else "pass@k"
            uk = data["units_k"]
            ax.fill_between(uk, data[f"{kind}_lo"], data[f"{kind}_hi"], color=color, alpha=0.2,
                            label=f"{name} over units, {level} interval")
            ax.plot(uk, data[f"{kind}_value"], color=color, marker="o", label=f"{name} over units (τ-bench)")
            ax.plot(ks, data[f"{kind}_exch_mean"], color=color, linestyle="--",
                    label=f"{exch} under exchangeability (pooled)")
        else:
            ax.fill_between(ks, data[f"{kind}_exch_lo"], data[f"{kind}_exch_hi"], color=color, alpha=0.2,
                            label=f"{exch} {level} band")
            ax.plot(ks, data[f"{kind}_exch_mean"], color=color, marker="o",
                    label=f"{exch} under exchangeability, posterior mean")
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
    ax.legend(fontsize=7, loc="center right")
    ax.grid(alpha=0.3)
    return _png(fig)


def _outcome_plot(report: Report) -> str | None:
    if report.conversations == 0:
        return None
    import matplotlib

    matplotlib.use("Agg")
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
    return _png(fig)


def render_html(
    report: Report,
    settings: Settings,
    title: str = "Agent Evaluation Report",
    header: Sequence[str] = (),
) -> str:
    """A self-contained HTML page: the text report and the plots."""
    text = "\n".join(report_lines(report, title=title, header=header, level=settings.stats.level))
    images = [img for img in (_curve_plot(report, settings), _outcome_plot(report)) if img is not None]
    figs = "\n".join(f'<p><img alt="plot" src="data:image/png;base64,{img}"></p>' for img in images)
    verdict = html.escape(final_verdict(report))
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;margin:2em} pre{background:#f6f6f6;padding:1em}</style>"
        f"</head><body><h1>{html.escape(title)}</h1><h2>{verdict}</h2>\n{figs}\n"
        f"<pre>{html.escape(text)}</pre>\n</body></html>\n"
    )
