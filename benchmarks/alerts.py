"""Alert simulator: false pages a month of a fleet of unchanged series, and the detection delay of every rule.

Fleet (false pages). N series (default 100) whose traffic runs from 1 to 20 conversations a minute (evenly
spread), half of them graded, each with its own true rates drawn once (success 0.7-0.9, ASR credits 1 / 0.4 / 0,
abandoned 2-8% of the graded, errors and no answers 1-5%, loops 0.2-2%, hallucination flags 0.5-3%, over
budget 2-10% of all conversations), unchanged for the whole run. Per-minute counts of every rule are drawn
(Poisson traffic, binomial events); the exporter's designs (`cusum.design` on `cusum.on_grid` keys, the rules'
alternatives from `AlertParams`, an equal share of the budget per (series, rule) pair as `alert_rules.plan`
gives it) are recomputed every `--redesign-hours` (6) from the references (the exporter does at every scrape;
a new design takes milliseconds, and thousands are made in a simulated month); the statistic and its alarm episodes follow the
exporter's recursion every minute (the exporter computes the same recursion over its 24h window, which only
drops older evidence); a page is an alarm held for `for` minutes (2m in deploy/prometheus/alert_rules.yml),
counted at its start. References "as in production":

- `own` (default): the series' own trailing 7 days (the counts of the longest window, which include the
  data being tested), after a 7-day warm-up;
- `baseline`: another version with the same true rates whose counts are independent of the data tested,
  holding `--reference` conversations in each rule's population (default: 7 days of the series' traffic; 2,000
  is `alerts.min_reference`, the least a reference may hold), drawn anew every week (a release a week);
- `--plug-in`: the same, with the reference treated as known (the design the issue of estimated references
  is about).

Delays (detections), through the real `Estimator` (injected clock): one agent and task, a baseline version and
a canary with the same traffic and rates; after a warm-up the canary's rate of one rule changes (the stated
change of each scenario) and the delay to its first page is recorded, in minutes and in the canary's
observations in the rule's population, beside the information bound ln(ARL0) / KL(q1 || q0) of that change.
The budget is set so that each (series, rule) pair has the share it would have in the fleet of N series.

    python -m benchmarks.alerts                          # fleet (3 months, own references) and delays
    python -m benchmarks.alerts --months 12 --reference-mode baseline --reference 2000 --only fleet
"""

from __future__ import annotations

import argparse
import copy
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
from scipy import stats

from agentwatch.config import AlertsConfig, Settings
from agentwatch.exporters.alert_rules import MONTH_S, AlertParams
from agentwatch.exporters.estimator import Estimator
from agentwatch.stats.cusum import design, information_bound, kl, on_grid
from agentwatch.wire.schema import ConversationScore, Outcome, OutcomeSource

T0 = 1_800_000_000.0
GRADED = 0.5
RATE_RULES = ("abandoned", "error", "no_answer", "loop", "hallucination", "over_budget")
RATE_RANGES = {
    "abandoned": (0.02, 0.08),
    "error": (0.01, 0.05),
    "no_answer": (0.01, 0.05),
    "loop": (0.002, 0.02),
    "hallucination": (0.005, 0.03),
    "over_budget": (0.02, 0.1),
}
PARTIAL_CREDIT = 0.4


# --------------------------------------------------------------------------- fleet


@dataclass
class Fleet:
    """True rates and traffic of N unchanged series."""

    rate: np.ndarray  # conversations a minute
    p: np.ndarray  # success probability of a graded conversation (credit 1); the rest 0.4 or 0, evenly
    q: dict[str, np.ndarray]  # rate rules: probability of the bad observation in their population

    @classmethod
    def draw(cls, n: int, rng: np.random.Generator) -> Fleet:
        """Traffic from 1 to 20 a minute; rates drawn once per series."""
        rate = np.linspace(1.0, 20.0, n)
        return cls(rate, rng.uniform(0.7, 0.9, n), {r: rng.uniform(*RATE_RANGES[r], n) for r in RATE_RULES})


def _minutes(f: Fleet, rng: np.random.Generator, minutes: int) -> dict[str, np.ndarray]:
    """Per-minute (minutes × series) counts of every rule: observations `n_<rule>` and bad ones `x_<rule>`,
    plus `ref_asr` (the credits' shortfall, what the reference of asr counts)."""
    shape = (minutes, len(f.rate))
    total = rng.poisson(f.rate, shape)
    graded = rng.binomial(total, GRADED)
    full = rng.binomial(graded, f.p)
    partial = rng.binomial(graded - full, 0.5)
    zero = graded - full - partial
    out = {
        "n_pass": graded,
        "x_pass": partial + zero,
        "n_asr": graded,
        "x_asr": rng.binomial(partial, 1 - PARTIAL_CREDIT) + zero,
        "ref_asr": (1 - PARTIAL_CREDIT) * partial + zero,
    }
    for r in RATE_RULES:
        pop = graded if r == "abandoned" else total
        out[f"n_{r}"] = pop
        out[f"x_{r}"] = rng.binomial(pop, f.q[r])
    return out


def _designs(
    params: AlertParams, refs: np.ndarray, traffic: np.ndarray, covered_s: float, plug_in: bool
) -> list[list]:
    """Designs per series and rule: the share and the posterior as `alert_rules.plan` makes them.
    refs: series × rules × (n, bad) of the references; traffic: series × rules observations over covered_s."""
    pairs = refs.shape[0] * refs.shape[1]
    share = params.pages_per_month / pairs
    out = []
    for i in range(refs.shape[0]):
        row = []
        for j, alt in enumerate(params.alternatives):
            n, bad = refs[i, j]
            if plug_in:
                n, bad = n * 1e9, bad * 1e9
            a, b = params.prior_alpha + bad, params.prior_beta + n - bad
            row.append(design(*on_grid(a / (a + b), a + b, traffic[i, j] / covered_s * MONTH_S, share), alt))
        out.append(row)
    return out


@dataclass
class FleetResult:
    """Pages per rule, and what they were designed for."""

    pages: dict[str, int]
    months: float
    budget: float
    series: int
    h_nats: dict[str, list[float]] = field(default_factory=dict)


def fleet(
    settings: Settings,
    n: int,
    months: float,
    mode: str,
    reference: int | None,
    plug_in: bool,
    for_minutes: int,
    seed: int,
    redesign_hours: int = 6,
    progress: Callable[[str], None] = lambda s: None,
) -> FleetResult:
    """Simulate `months` of the unchanged fleet; count the pages of every rule."""
    params = AlertParams.from_settings(settings)
    rules = list(params.rules)
    rng = np.random.default_rng(seed)
    f = Fleet.draw(n, rng)
    hours_7d = 7 * 24
    hourly = np.zeros((hours_7d, n, len(rules), 2))  # own counts (n, bad) per hour, a ring
    s = np.zeros((n, len(rules)))
    alarm = np.zeros((n, len(rules)), dtype=bool)
    held = np.zeros((n, len(rules)), dtype=np.int64)
    pages = dict.fromkeys(rules, 0)
    h_nats: dict[str, list[float]] = {r: [] for r in rules}
    baseline_refs: np.ndarray | None = None
    total_hours = int(months * 30 * 24)
    for hour in range(-hours_7d, total_hours):
        c = _minutes(f, rng, 60)
        own = np.stack(
            [
                np.stack([c[f"n_{r}"].sum(0), c[f"ref_{r}" if r == "asr" else f"x_{r}"].sum(0)], -1)
                for r in rules
            ],
            1,
        )
        hourly[hour % hours_7d] = own
        if hour < 0:
            continue  # warm-up: seven days of history before the first evaluation
        window = hourly.sum(0)  # the last 7 days (the longest window)
        if mode == "own":
            refs = window
        else:
            if hour % hours_7d == 0 or baseline_refs is None:  # a new release every week
                baseline_refs = _baseline(f, rules, window, reference, rng)
            refs = baseline_refs
        if hour % redesign_hours == 0:
            d = _designs(params, refs, window[:, :, 0], 7 * 86400.0, plug_in)
            up = np.array([[x.up / x.scale for x in row] for row in d])
            down = np.array([[x.down / x.scale for x in row] for row in d])
            h = np.array([[x.threshold for x in row] for row in d])
        if hour % 24 == 0:
            for j, r in enumerate(rules):
                h_nats[r].extend(h[:, j].tolist())
        nobs = np.stack([c[f"n_{r}"] for r in rules], -1)
        xbad = np.stack([c[f"x_{r}"] for r in rules], -1)
        for m in range(60):
            s = np.maximum(0.0, s + up * xbad[m] + down * (nobs[m] - xbad[m]))
            alarm = (alarm | (s >= h - 1e-9)) & (s > 1e-9)
            held = np.where(alarm, held + 1, 0)
            for col in np.flatnonzero((held == for_minutes + 1).any(0)):
                pages[rules[col]] += int((held[:, col] == for_minutes + 1).sum())
        if hour % 168 == 0:
            progress(f"  fleet: hour {hour}/{total_hours}, pages so far {sum(pages.values())}")
    return FleetResult(pages, months, params.pages_per_month, n, h_nats)


def _baseline(
    f: Fleet, rules: list[str], window: np.ndarray, reference: int | None, rng: np.random.Generator
) -> np.ndarray:
    """References from an independent version with the same rates: (n, bad) per series and rule."""
    out = np.zeros_like(window)
    for j, r in enumerate(rules):
        n = window[:, j, 0] if reference is None else np.full(len(f.rate), float(reference))
        n = np.maximum(n.round(), 1).astype(np.int64)
        bad: np.ndarray
        if r == "pass":
            bad = rng.binomial(n, 1 - f.p)
        elif r == "asr":
            partial = rng.binomial(n, (1 - f.p) / 2)
            zero = rng.binomial(n - partial, ((1 - f.p) / 2) / (1 - (1 - f.p) / 2))
            bad = (1 - PARTIAL_CREDIT) * partial + zero
        else:
            bad = rng.binomial(n, f.q[r])
        out[:, j, 0], out[:, j, 1] = n, bad
    return out


def _poisson_interval(k: int, level: float = 0.95) -> tuple[float, float]:
    a = (1 - level) / 2
    lo = 0.0 if k == 0 else stats.chi2.ppf(a, 2 * k) / 2
    return lo, stats.chi2.ppf(1 - a, 2 * k + 2) / 2


# --------------------------------------------------------------------------- delays (real Estimator)


BASE_RATES = {
    "p": 0.8,
    "partial": 0.1,
    "abandoned": 0.05,
    "error": 0.02,
    "no_answer": 0.03,
    "loop": 0.01,
    "hallucination": 0.02,
    "over_budget": 0.05,
}


@dataclass(frozen=True)
class Scenario:
    """The canary's change, for the delay of one rule."""

    name: str
    rule: str
    change: dict[str, float]  # canary rates after the change (keys of BASE_RATES)
    rate: float = 5.0  # conversations a minute per version


def scenarios() -> list[Scenario]:
    """One stated change per rule (a second traffic for pass^3)."""
    p3 = (0.8**3 - 0.15) ** (1 / 3)
    return [
        Scenario("pass^3 -0.15 (0.51 -> 0.36), 5/min", "pass", {"p": p3, "partial": (1 - p3) / 2}),
        Scenario("pass^3 -0.15, 1/min", "pass", {"p": p3, "partial": (1 - p3) / 2}, rate=1.0),
        Scenario("ASR -0.1 (0.84 -> 0.74), 5/min", "asr", {"p": 0.7, "partial": 0.1}),
        Scenario("abandoned x3 (5% -> 15% of graded), 5/min", "abandoned", {"abandoned": 0.15}),
        Scenario("errors x3 (2% -> 6%), 5/min", "error", {"error": 0.06}),
        Scenario("no answer x3 (3% -> 9%), 5/min", "no_answer", {"no_answer": 0.09}),
        Scenario("loops x3 (1% -> 3%), 5/min", "loop", {"loop": 0.03}),
        Scenario("hallucination 2% -> 6%, 5/min", "hallucination", {"hallucination": 0.06}),
        Scenario("over budget x3 (5% -> 15%), 5/min", "over_budget", {"over_budget": 0.15}),
    ]


def _score(
    cid: str, version: str, t: float, rates: dict[str, float], rng: np.random.Generator
) -> ConversationScore:
    graded = rng.random() < GRADED
    evidence = [
        e for e in ("error", "no_answer", "loop", "hallucination", "over_budget") if rng.random() < rates[e]
    ]
    if not graded:
        return ConversationScore(
            conversation_id=cid,
            agent="bot",
            version=version,
            task="refund",
            turns=1,
            passed=None,
            outcome=Outcome.UNSCORED,
            outcome_source=OutcomeSource.RULES,
            evidence=evidence,
            ended_at=datetime.fromtimestamp(t, UTC),
        )
    u = rng.random()
    credit = 1.0 if u < rates["p"] else PARTIAL_CREDIT if u < rates["p"] + rates["partial"] else 0.0
    outcome = {1.0: Outcome.COMPLETE, PARTIAL_CREDIT: Outcome.PARTIAL_CORRECT}.get(
        credit, Outcome.PARTIAL_INCORRECT
    )
    if rng.random() < rates["abandoned"]:
        outcome = Outcome.ABANDONED
    return ConversationScore(
        conversation_id=cid,
        agent="bot",
        version=version,
        task="refund",
        turns=1,
        passed=credit == 1.0 and outcome != Outcome.ABANDONED,
        outcome=outcome,
        outcome_source=OutcomeSource.RULES,
        asr_credit=credit,
        evidence=evidence,
        ended_at=datetime.fromtimestamp(t, UTC),
    )


class Pair:
    """One estimator fed a baseline (v1) and a canary (v2), minute by minute."""

    def __init__(self, settings: Settings, rate: float, seed: int) -> None:
        self.now = [T0]
        self.est = Estimator(settings, clock=lambda: self.now[0])
        self.rng = np.random.default_rng(seed)
        self.rate = rate
        self.i = 0
        self.minute = 0

    def clone(self, seed: int) -> Pair:
        """An independent copy (its own clock, lock and random stream)."""
        lock, clock = self.est._lock, self.est._clock
        self.est._lock = self.est._clock = None  # type: ignore[assignment]
        try:
            other = copy.deepcopy(self)
        finally:
            self.est._lock, self.est._clock = lock, clock
        other.est._lock = threading.Lock()
        other.est._clock = lambda: other.now[0]
        other.rng = np.random.default_rng(seed)
        return other

    def step(self, canary: dict[str, float]) -> list[ConversationScore]:
        """One minute of traffic of both versions; returns the canary's scores."""
        self.now[0] = T0 + self.minute * 60
        out = []
        for version, rates in (("v1", BASE_RATES), ("v2", canary)):
            for _ in range(int(self.rng.poisson(self.rate))):
                self.i += 1
                s = _score(f"c{self.i}", version, self.now[0] - self.rng.random() * 59, rates, self.rng)
                self.est.add(s)
                if version == "v2":
                    out.append(s)
        self.minute += 1
        return out


def _in_population(rule: str, s: ConversationScore) -> bool:
    return s.passed is not None if rule in ("pass", "asr", "abandoned") else True


def delays(
    sc: Scenario,
    settings: Settings,
    runs: int,
    warm_days: float,
    for_minutes: int,
    seed: int,
    max_minutes: int = 3 * 1440,
) -> dict:
    """Delay from the canary's change to the first page of the scenario's rule, over `runs` runs."""
    base = Pair(settings, sc.rate, seed)
    for _ in range(int(warm_days * 1440)):
        base.step(BASE_RATES)
    canary = {**BASE_RATES, **sc.change}
    minutes, observations, missed, designs = [], [], 0, []
    for r in range(runs):
        pair = base.clone(seed * 1000 + r + 1)
        held, seen = 0, 0
        for m in range(max_minutes):
            seen += sum(_in_population(sc.rule, s) for s in pair.step(canary))
            found = {a.rule: a for a in pair.est.alerts().get(("bot", "v2", "refund"), ())}
            a = found.get(sc.rule)
            held = held + 1 if a is not None and a.alarm else 0
            if held == for_minutes + 1:
                assert a is not None  # held > 0: the rule was found, in alarm
                minutes.append(m + 1)
                observations.append(seen)
                designs.append(a.design)
                break
        else:
            missed += 1
    return {
        "minutes": minutes,
        "observations": observations,
        "missed": missed,
        "runs": runs,
        "design": designs[0] if designs else None,
    }


def _true_q(rule: str, rates: dict[str, float]) -> float:
    if rule == "pass":
        return 1 - rates["p"]
    if rule == "asr":
        return 1 - rates["p"] - PARTIAL_CREDIT * rates["partial"]
    return rates[rule]


def _q(xs: list[float], q: float) -> float:
    return float(np.quantile(xs, q)) if xs else float("nan")


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--series", type=int, default=100, help="series in the fleet")
    ap.add_argument("--months", type=float, default=3.0, help="months simulated of the unchanged fleet")
    ap.add_argument("--reference-mode", choices=("own", "baseline"), default="own")
    ap.add_argument("--reference", type=int, default=None, help="baseline mode: conversations of a reference")
    ap.add_argument("--plug-in", action="store_true", help="treat the references as known (for comparison)")
    ap.add_argument("--redesign-hours", type=int, default=6, help="fleet: hours between new designs")
    ap.add_argument("--runs", type=int, default=20, help="runs per delay scenario")
    ap.add_argument("--warm-days", type=float, default=2.0, help="history before a delay scenario's change")
    ap.add_argument("--for-minutes", type=int, default=2, help="`for` of the alert rules, minutes")
    ap.add_argument(
        "--budget", type=float, default=None, help="alerts.false_pages_per_month (default: config)"
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default="", help="`fleet`, or run the delay scenarios whose name contains this")
    args = ap.parse_args(argv)
    settings = (
        Settings()
        if args.budget is None
        else Settings(alerts=AlertsConfig(false_pages_per_month=args.budget))
    )
    a = settings.alerts
    rules = list(a.rules)
    print(
        f"budget {a.false_pages_per_month:g} false pages a month over {args.series} series x {len(rules)} rules; "
        f"alert for {args.for_minutes}m; min reference {a.min_reference}; tuned for pass^{a.pass_k} "
        f"-{a.pass_pow_drop:g}, ASR -{a.asr_drop:g}, rates: odds x{a.rate_ratio:g} (at least +{a.rate_min_increase:g})"
    )
    if not args.only or args.only == "fleet":
        t = time.time()
        r = fleet(
            settings,
            args.series,
            args.months,
            args.reference_mode,
            args.reference,
            args.plug_in,
            args.for_minutes,
            args.seed,
            args.redesign_hours,
            progress=lambda s: print(s, file=sys.stderr),
        )
        ref = (
            args.reference_mode
            + (f", {args.reference} conversations" if args.reference else "")
            + (", plug-in" if args.plug_in else "")
        )
        print(
            f"\nfleet of {r.series} unchanged series, {r.months:g} months, references: {ref} "
            f"({time.time() - t:.0f} s)"
        )
        print(
            f"{'rule':14} {'pages':>6} {'pages / month':>14} {'95% interval':>16} {'threshold h, nats (median)':>28}"
        )
        for rule in rules:
            k = r.pages[rule]
            lo, hi = _poisson_interval(k)
            print(
                f"{rule:14} {k:>6} {k / r.months:>14.2f} {f'{lo / r.months:.2f}-{hi / r.months:.2f}':>16} "
                f"{np.median(r.h_nats[rule]):>28.2f}"
            )
        k = sum(r.pages.values())
        lo, hi = _poisson_interval(k)
        print(
            f"{'all':14} {k:>6} {k / r.months:>14.2f} {f'{lo / r.months:.2f}-{hi / r.months:.2f}':>16}   "
            f"budget {r.budget:g} / month"
        )
        sys.stdout.flush()
    if args.only == "fleet":
        return 0
    pairs_here = 2 * len(rules)
    per_pair = a.false_pages_per_month / (args.series * len(rules))
    delay_settings = Settings(
        alerts=AlertsConfig.model_validate({**a.model_dump(), "false_pages_per_month": per_pair * pairs_here})
    )
    print(
        f"\ndelays through the Estimator: canary vs baseline, {args.runs} runs, {args.warm_days:g} days of "
        f"history; each pair's share {per_pair:.2e} pages a month (as in the fleet of {args.series})"
    )
    print(
        f"{'scenario':44} {'minutes median / p95':>21} {'observations median / p95':>27} {'bound':>7} "
        f"{'h (nats)':>9} {'missed':>7}"
    )
    for i, sc in enumerate(scenarios()):
        if args.only and args.only not in sc.name:
            continue
        t = time.time()
        res = delays(sc, delay_settings, args.runs, args.warm_days, args.for_minutes, args.seed + i)
        d = res["design"]
        bound = float("nan")
        if d is not None:
            q0, q1 = _true_q(sc.rule, BASE_RATES), _true_q(sc.rule, {**BASE_RATES, **sc.change})
            bound = information_bound(d.arl0, q0, q1) if kl(q1, q0) > 0 else float("nan")
        mins = f"{_q(res['minutes'], 0.5):.0f} / {_q(res['minutes'], 0.95):.0f}"
        obs = f"{_q(res['observations'], 0.5):.0f} / {_q(res['observations'], 0.95):.0f}"
        h = f"{d.threshold:.2f}" if d is not None else ""
        print(
            f"{sc.name:44} {mins:>21} {obs:>27} {bound:>7.0f} {h:>9} {res['missed']:>3}/{res['runs']:<3}  "
            f"({time.time() - t:.0f} s)"
        )
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
