"""Alert simulator: false alarms per series-day and detection delays of the pass^3 alerts under continuous evaluation.

Synthetic score streams go through the real `Estimator` (injected clock, scores built like the tests' factory);
every minute the alert conditions are evaluated, reimplemented in Python from what the estimator exports:

- drift (AgentwatchPass3Drift): `agentwatch_drift_statistic >= agentwatch_drift_threshold` for `for` minutes
  (default 2m, as in deploy/prometheus/alert_rules.yml), from `Estimator.drift()` — the same values the gauges
  carry;
- legacy (the former posterior rule, optional, slow: one full snapshot a minute): max over the windows with at
  least 30 scored conversations of `agentwatch_regression_probability{k="3"}` > 0.95 for 15 minutes.

Two versions of one agent and task receive the same traffic: v1 (the baseline, p = 0.8 throughout) and v2, whose
success probability follows the scenario. After a warm-up (so that the reference holds enough conversations)
the scenario starts at minute 0. No-change scenarios count alarm onsets (rising edges of the firing state) of both
series; change scenarios restart from the warmed-up state for each run and record the delay from the change to
the first firing of v2, in minutes and in v2's graded conversations, beside the information bound
ln(ARL0) / KL(p1 || p0) of the change.

    python benchmarks/alerts.py                     # all scenarios, default settings
    python benchmarks/alerts.py --days 60 --runs 100 --legacy-days 2
"""

from __future__ import annotations

import argparse
import copy
import math
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
from agentwatch.exporters.drift import alternative, information_bound
from agentwatch.exporters.estimator import Estimator

from agentwatch.config import Settings
from agentwatch.schema import ConversationScore

T0 = 1_800_000_000.0
P_BASE = 0.8
KEY = ("bot", "v2", "refund")


@dataclass(frozen=True)
class Scenario:
    name: str
    rate: float  # mean conversations per minute per version
    p: Callable[[int], float]  # v2's success probability at minute m (m >= 0: after the warm-up)
    change: bool  # True: measure the delay; False: count false alarms
    p_after: float = P_BASE  # the success probability the change reaches (for the bound)
    burst_every: int = 1  # traffic arrives once every `burst_every` minutes (rate * burst_every at once)


def _pow3_drop(drop: float) -> float:
    return (P_BASE**3 - drop) ** (1 / 3)


def scenarios() -> list[Scenario]:
    p1, p2 = _pow3_drop(0.1), _pow3_drop(0.2)
    return [
        Scenario("no change, 5/min", 5, lambda m: P_BASE, False),
        Scenario("no change, 1/min", 1, lambda m: P_BASE, False),
        Scenario("no change, bursts (50 every 10 min)", 5, lambda m: P_BASE, False, burst_every=10),
        Scenario("pass^3 -0.1, 5/min", 5, lambda m: p1, True, p1),
        Scenario("pass^3 -0.2, 5/min", 5, lambda m: p2, True, p2),
        Scenario("pass^3 -0.2, 1/min", 1, lambda m: p2, True, p2),
        Scenario("pass^3 -0.2, bursts (50 every 10 min)", 5, lambda m: p2, True, p2, burst_every=10),
        Scenario("slow drift: pass^3 -0.2 over 24h, 5/min",
                 5, lambda m: (P_BASE**3 - 0.2 * min(1.0, m / 1440)) ** (1 / 3), True, p2),
    ]


class Sim:
    """One estimator fed two versions, minute by minute."""

    def __init__(self, settings: Settings, seed: int) -> None:
        self.now = [T0]
        self.est = Estimator(settings, clock=lambda: self.now[0])
        self.rng = np.random.default_rng(seed)
        self.i = 0
        self.minute = 0

    def clone(self, seed: int) -> Sim:
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

    def step(self, sc: Scenario, p2: float) -> int:
        """One minute of traffic; returns v2's graded conversations in it."""
        self.now[0] = T0 + self.minute * 60
        n2 = 0
        if self.minute % sc.burst_every == 0:
            for version, p in (("v1", P_BASE), ("v2", p2)):
                k = int(self.rng.poisson(sc.rate * sc.burst_every))
                passes = self.rng.random(k) < p
                offsets = self.rng.random(k) * 59
                for ok, off in zip(passes, offsets, strict=True):
                    self.i += 1
                    self.est.add(_score(f"c{self.i}", bool(ok), version, self.now[0] - off))
                if version == "v2":
                    n2 = k
        self.minute += 1
        return n2


def _score(cid: str, passed: bool, version: str, t: float) -> ConversationScore:
    return ConversationScore(
        conversation_id=cid, agent="bot", version=version, task="refund", turns=1, passed=passed,
        outcome="complete" if passed else "partial_incorrect", outcome_source="rules",
        asr_credit=1.0 if passed else 0.0, ended_at=datetime.fromtimestamp(t, UTC),
    )


def _firing(history: list[bool], for_minutes: int) -> bool:
    return len(history) > for_minutes and all(history[-for_minutes - 1:])


def legacy_condition(est: Estimator) -> bool:
    """max over windows with >= 30 scored of regression_probability{k=3} of v2 > 0.95."""
    probs = [r.probability for e in est.snapshot() if e.series == KEY and e.scored >= 30
             for r in e.regression if r.k == 3]
    return bool(probs) and max(probs) > 0.95


def warm(sc: Scenario, settings: Settings, seed: int) -> Sim:
    sim = Sim(settings, seed)
    need = settings.exporter.drift_baseline_min_conversations
    minutes = max(1440, math.ceil(1.2 * need / sc.rate))
    for _ in range(minutes):
        sim.step(sc, P_BASE)
    sim.minute_zero = sim.minute  # type: ignore[attr-defined]
    return sim


def no_change(sc: Scenario, settings: Settings, days: float, legacy_days: float, seed: int,
              for_minutes: int) -> dict:
    sim = warm(sc, settings, seed)
    hist: dict[tuple, list[bool]] = {}
    onsets = 0
    legacy_hist: list[bool] = []
    legacy_onsets = 0
    minutes = int(days * 1440)
    for m in range(minutes):
        sim.step(sc, sc.p(m))
        drift = sim.est.drift()
        for key in (("bot", "v1", "refund"), KEY):
            d = drift.get(key)
            h = hist.setdefault(key, [])
            before = _firing(h, for_minutes)
            h.append(d is not None and d.alarm)
            if _firing(h, for_minutes) and not before:
                onsets += 1
        if m < legacy_days * 1440:
            before = _firing(legacy_hist, 15)
            legacy_hist.append(legacy_condition(sim.est))
            if _firing(legacy_hist, 15) and not before:
                legacy_onsets += 1
    return {"series_days": 2 * days, "onsets": onsets, "legacy_days": legacy_days, "legacy_onsets": legacy_onsets}


def delays(sc: Scenario, settings: Settings, runs: int, seed: int, for_minutes: int,
           max_minutes: int = 4 * 1440) -> dict:
    base = warm(sc, settings, seed)
    out_min, out_conv, missed = [], [], 0
    for r in range(runs):
        sim = base.clone(seed * 1000 + r + 1)
        hist: list[bool] = []
        conv = 0
        for m in range(max_minutes):
            conv += sim.step(sc, sc.p(m))
            d = sim.est.drift().get(KEY)
            hist.append(d is not None and d.alarm)
            if _firing(hist, for_minutes):
                out_min.append(m + 1)
                out_conv.append(conv)
                break
        else:
            missed += 1
    return {"minutes": out_min, "conversations": out_conv, "missed": missed, "runs": runs}


def _q(xs: list[float], q: float) -> float:
    return float(np.quantile(xs, q)) if xs else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--days", type=float, default=30.0, help="days simulated per no-change scenario")
    ap.add_argument("--runs", type=int, default=50, help="runs per change scenario")
    ap.add_argument("--legacy-days", type=float, default=0.0, help="days of the legacy rule (slow: ~1 min/day)")
    ap.add_argument("--for-minutes", type=int, default=2, help="`for` of the drift alert, minutes")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default="", help="run the scenarios whose name contains this")
    args = ap.parse_args(argv)
    settings = Settings()
    x = settings.exporter
    print(f"drift CUSUM: ARL0 {x.drift_arl0_conversations:g} graded conversations, tuned for a pass^{x.drift_k} "
          f"drop of {x.drift_pass_pow_drop:g}, window {x.drift_window}, reference >= "
          f"{x.drift_baseline_min_conversations}; alert for {args.for_minutes}m; p0 = {P_BASE}")
    print(f"{'scenario':44} {'false alarms / series-day':>26} {'delay conv. median / p95':>26} "
          f"{'minutes median / p95':>21} {'bound (conv.)':>13} {'missed':>7}")
    for i, sc in enumerate(scenarios()):
        if args.only and args.only not in sc.name:
            continue
        t = time.time()
        if not sc.change:
            r = no_change(sc, settings, args.days, args.legacy_days, args.seed + i, args.for_minutes)
            fa = f"{r['onsets']}/{r['series_days']:g} = {r['onsets'] / r['series_days']:.4f}"
            print(f"{sc.name:44} {fa:>26} {'':>26} {'':>21} {'':>13} {'':>7}  ({time.time() - t:.0f} s)")
            if r["legacy_days"]:
                lf = f"{r['legacy_onsets']}/{r['legacy_days']:g} = {r['legacy_onsets'] / r['legacy_days']:.4f}"
                print(f"{'  legacy posterior rule (v2 only)':44} {lf:>26}")
        else:
            r = delays(sc, settings, args.runs, args.seed + i, args.for_minutes)
            bound = information_bound(x.drift_arl0_conversations, P_BASE, sc.p_after)
            conv = f"{_q(r['conversations'], .5):.0f} / {_q(r['conversations'], .95):.0f}"
            mins = f"{_q(r['minutes'], .5):.0f} / {_q(r['minutes'], .95):.0f}"
            print(f"{sc.name:44} {'':>26} {conv:>26} {mins:>21} {bound:>13.0f} "
                  f"{r['missed']:>3}/{r['runs']:<3}  ({time.time() - t:.0f} s)")
        sys.stdout.flush()
    print(f"design alternative p1 at p0 = {P_BASE}: {alternative(P_BASE, x.drift_k, x.drift_pass_pow_drop):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
