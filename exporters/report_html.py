"""HTML rendering of a `Report`: the text report plus plots (matplotlib, Agg) embedded as base64 PNG."""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence

from agentwatch.exporters.report_model import Report
from agentwatch.exporters.report_text import final_verdict, report_lines

from agentwatch.config import Settings
from agentwatch.stats import pass_at_k_plugin, pass_pow_k_plugin, posterior

CURVE_KS = tuple(range(1, 11))


def _png(fig: object) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")  # type: ignore[attr-defined]
    return base64.b64encode(buf.getvalue()).decode("ascii")


def curves(report: Report, settings: Settings) -> dict[str, list[float]]:
    """pass@k and pass^k for k = 1..10: plug-in, posterior mean, credible bounds (empty when nothing scored)."""
    n, c = report.scored, report.passed
    if n == 0:
        return {}
    st = settings.stats
    post = posterior(n, c, st.prior_alpha, st.prior_beta)
    out: dict[str, list[float]] = {key: [] for key in ("at_plugin", "at_mean", "at_lo", "at_hi")}
    out.update({key: [] for key in ("pow_plugin", "pow_mean", "pow_lo", "pow_hi")})
    for k in CURVE_KS:
        lo, hi = post.pass_at_k_interval(k, st.level)
        out["at_plugin"].append(pass_at_k_plugin(c / n, k))
        out["at_mean"].append(post.pass_at_k_mean(k))
        out["at_lo"].append(lo)
        out["at_hi"].append(hi)
        lo, hi = post.pass_pow_k_interval(k, st.level)
        out["pow_plugin"].append(pass_pow_k_plugin(c / n, k))
        out["pow_mean"].append(post.pass_pow_k_mean(k))
        out["pow_lo"].append(lo)
        out["pow_hi"].append(hi)
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
    for kind, label, color in (("at", "pass@k", "tab:blue"), ("pow", "pass^k", "tab:red")):
        ax.fill_between(
            ks, data[f"{kind}_lo"], data[f"{kind}_hi"], color=color, alpha=0.2, label=f"{label} {level} band"
        )
        ax.plot(ks, data[f"{kind}_mean"], color=color, marker="o", label=f"{label} posterior mean")
        ax.plot(ks, data[f"{kind}_plugin"], color=color, linestyle="--", label=f"{label} plug-in")
    ax.set_xlabel("k")
    ax.set_ylabel("probability")
    ax.set_ylim(0, 1.02)
    ax.set_xticks(ks)
    ax.set_title(f"pass@k vs pass^k (n={report.scored}, c={report.passed})")
    ax.legend(fontsize=8, loc="center right")
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
