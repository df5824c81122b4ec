"""Benchmark of the estimator and the Prometheus exporter: scores/s into the estimator, scrape times.

Prints figures, asserts nothing. "Series" below means estimator series (agent, version, task); each one yields
about 78 Prometheus samples per window (25 of them failure evidence, sample and label ratios).
Then scores that are repeated attempts at task instances (pass^k over units): ingest, the first snapshot
(every window over units), a snapshot after 100 new scores, and memory per tracked unit. Then the quality
alerts' sequential tests on series whose references are complete (`--alert-series` series of 2,100
conversations each, every rule evaluated): the first snapshot (every design made; capped at 2 s of designs per
snapshot, so also the snapshots it takes until all are made), a snapshot once all are memoised, the samples
they add, and the memory of the per-minute counts per series.
With --judged every score is graded by a judge, with its automated verdict and sample rates, and one in ten is
in the review sample with a person's label (corrected estimates, agreement per judge); the scores carry fields
a build without corrections ignores, so the same script measures both builds (PYTHONPATH).
The ingest is also timed in CPU seconds and set beside the collector's decode → score pipeline timed in the same
run (`--beside-collector`, conversations; 0 skips it): how many collector cores one exporter core keeps up with.
Usage: python -m benchmarks.exporter [--series 10000] [--scores 50000] [--attempts 4] [--alert-series 100]
       [--judged] [--beside-collector 1000]
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from datetime import UTC, datetime

from agentwatch.config import Settings, load_settings
from agentwatch.exporters.estimator import Estimator
from agentwatch.exporters.exposition import Exposition
from agentwatch.exporters.summary import over_units, summarise
from agentwatch.wire.schema import ConversationScore, Outcome, OutcomeSource

NOW = 1_800_000_000.0


JUDGED = False  # --judged


def judged(score: ConversationScore, i: int) -> ConversationScore:
    """`score` graded by a judge (its verdict the score's outcome), one in ten with a review-sample label that
    disagrees with the judge on one in four."""
    verdict = score.outcome
    label = None
    if i % 10 == 0:
        label = verdict if i % 40 else ("partial_incorrect" if score.passed else "complete")
    return ConversationScore.model_validate(
        {
            **score.model_dump(),
            "graded_by": ["judge", "label"] if label else ["judge"],
            "judge": "openai:gpt-4o-mini:v1",
            "judge_outcome": verdict,
            "judge_sampled": True,
            "judge_rate": 0.25,
            "review_rate": 0.025,
            "review_sampled": label is not None,
            "label": label,
            "automated": {
                "graded_by": ["judge"],
                "outcome": verdict,
                "passed": score.passed,
                "asr_credit": score.asr_credit,
            },
        }
    )


def scores(
    count: int,
    series: int,
    start: int = 0,
    *,
    prefix: str = "c",
    spread_s: int = 3000,
    now: float = NOW,
    errors_every: int = 0,
) -> list[ConversationScore]:
    """Scores spread over `series` series (agents × tasks), ending in the `spread_s` seconds before a minute
    before `now`; every `errors_every`-th with the failure evidence `error` (0: none)."""
    out = []
    for i in range(start, start + count):
        s = i % series
        passed = (i * 7919) % 10 < 8
        out.append(
            ConversationScore(
                conversation_id=f"{prefix}{i}",
                agent=f"agent{s // 10}",
                version="v1",
                task=f"task{s % 10}",
                turns=1,
                passed=passed,
                outcome=Outcome.COMPLETE if passed else Outcome.PARTIAL_INCORRECT,
                outcome_source=OutcomeSource.RULES,
                asr_credit=1.0 if passed else 0.0,
                evidence=["error"] if errors_every and i % errors_every == 0 else [],
                cost_usd=0.001 * (i % 100),
                duration_s=float(i % 60),
                ended_at=datetime.fromtimestamp(now - 60 - (i % spread_s), UTC),
            )
        )
        if JUDGED:
            out[-1] = judged(out[-1], i)
    return out


def bytes_per_tracked_id(count: int = 20_000, series: int = 100) -> float:
    """Bytes the estimator keeps per remembered conversation identity: the memory of `count` new conversations
    in series and buckets that already exist (so it is the identity record alone: key, contribution, series keys,
    expiry heap entry), measured with tracemalloc."""
    est = Estimator(load_settings(exporter={"max_tasks": 1000}), clock=lambda: NOW)
    for s in scores(2 * series * 60, series, start=10**7):  # every series and bucket exists
        est.add(s)
    held = added_bytes(est, scores(count, series))
    assert len(est._seen) == count + 2 * series * 60
    return held / count


def with_attempts(batch: list[ConversationScore], series: int, attempts: int) -> list[ConversationScore]:
    """The same scores as repeated attempts: every `attempts` successive scores of a series share an instance
    (score i belongs to series i % series, as `scores` builds them)."""
    out = []
    for i, s in enumerate(batch):
        j = i // series  # the j-th score of its series
        out.append(s.model_copy(update={"instance": f"q{j // attempts}", "attempt": j % attempts}))
    return out


def ingest(est: Estimator, batch: list[ConversationScore]) -> float:
    """Seconds to add `batch` to `est`."""
    return ingest_times(est, batch)[0]


def ingest_times(est: Estimator, batch: list[ConversationScore]) -> tuple[float, float]:
    """(wall, CPU) seconds to add `batch` to `est`."""
    t, c = time.perf_counter(), time.process_time()
    for s in batch:
        est.add(s)
    return time.perf_counter() - t, time.process_time() - c


def beside_collector(conversations: int, settings: Settings, batch: list[ConversationScore]) -> None:
    """The collector's decode → assemble → rebuild → score over `conversations` ten-span conversations
    (`benchmarks.collector`) and the estimator's ingest of `batch` into fresh estimators, both CPU time, best of
    3, taking turns: how many collector cores one exporter core keeps up with."""
    from benchmarks.collector import _run_pipeline, _scorer, make_workload

    workload = make_workload(conversations)
    score = _scorer()
    collector, exporter = [], []
    for _ in range(3):
        spans, done, cpu, _ = _run_pipeline(workload, score)
        collector.append(done / cpu)
        exporter.append(len(batch) / ingest_times(Estimator(settings, clock=lambda: NOW), batch)[1])
    per_s, ingest_s = max(collector), max(exporter)
    print(
        f"beside the collector (CPU, best of 3 each, taking turns): decode → assemble → rebuild → score "
        f"{per_s:,.0f} conversations/s ({conversations} conversations), estimator ingest {ingest_s:,.0f} "
        f"scores/s = {ingest_s / per_s:.1f}× the collector per core"
    )


def added_bytes(est: Estimator, batch: list[ConversationScore]) -> int:
    """Bytes `est` holds after being fed `batch` beyond what it held before (tracemalloc)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for s in batch:
        est.add(s)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return held


def repeated_attempts(series: int, count: int, attempts: int) -> None:
    """pass^k over units: ingest, snapshots and memory of scores that repeat attempts at task instances."""
    settings = load_settings(exporter={"max_tasks": 1000})
    est = Estimator(settings, clock=lambda: NOW)
    batch = with_attempts(scores(count, series), series, attempts)
    dt = ingest(est, batch)
    print(
        f"repeated attempts ({attempts} per instance): estimator.add {len(batch) / dt:,.0f} scores/s "
        f"({series} series)"
    )
    t = time.perf_counter()
    snap = est.snapshot()
    tasks = sum(1 for e in snap if e.method == "tasks")
    print(
        f"repeated attempts: first snapshot {len(snap)} series×windows ({tasks} over units) in "
        f"{time.perf_counter() - t:.3f}s"
    )
    for s in with_attempts(scores(100, series, start=count), series, attempts):
        est.add(s)
    t = time.perf_counter()
    est.snapshot()
    print(f"repeated attempts: snapshot after 100 new scores: {time.perf_counter() - t:.3f}s")
    over_units.cache_clear()  # distinct histograms: what windows that share none cost
    count_w, dt = summarise_seconds(est)
    distinct = over_units.cache_info().currsize
    print(
        f"repeated attempts: estimates of {count_w} series×windows without the memo ({distinct} distinct "
        f"unit histograms): {dt:.3f}s = {dt / max(distinct, 1) * 1e3:.1f} ms per histogram"
    )
    fresh = Estimator(settings, clock=lambda: NOW)
    with_units = added_bytes(fresh, batch)
    without = added_bytes(Estimator(settings, clock=lambda: NOW), scores(count, series))
    units = sum(len(u) for u in fresh._caps.units_seen.values())
    print(
        f"repeated attempts: {units:,} units tracked, {(with_units - without) / units:,.0f} bytes per unit "
        f"beyond the same scores without units"
    )


def summarise_seconds(est: Estimator) -> tuple[int, float]:
    """Series×windows and seconds of the Beta posteriors, pass@k / pass^k and ASR bootstraps of every window."""
    items = [(key, w.name, w.total) for key, s in est._series.items() for w in s.windows if not w.empty]
    t = time.perf_counter()
    summarise(items, est.stats_params)
    return len(items), time.perf_counter() - t


def scrape(target: Exposition) -> tuple[float, int, int]:
    """Seconds, bytes and samples of one /metrics body (garbage of earlier steps collected first, so that its
    collection does not land in the render)."""
    gc.collect()
    t = time.perf_counter()
    body = target.render()
    return time.perf_counter() - t, len(body), body.count(b"\n") - body.count(b"\n#")


def alert_tests(series: int, per_series: int = 2100) -> None:
    """The sequential tests of `series` series whose references hold alerts.min_reference conversations."""
    from agentwatch.exporters.alert_rules import Minutes
    from agentwatch.stats.cusum import clear_designs

    settings = load_settings(exporter={"max_tasks": 1000})
    est = Estimator(settings, clock=lambda: NOW)
    batch = scores(series * per_series, series, prefix="a", spread_s=20_000, errors_every=37)
    dt = ingest(est, batch)
    print(
        f"alerts: {len(batch):,} scores into {series} series in {dt:.1f}s = {len(batch) / dt:,.0f} scores/s"
    )
    clear_designs()
    t = time.perf_counter()
    snapshots, tests = 0, 0
    while True:
        snap = est.snapshot()
        snapshots += 1
        got = sum(len(e.alerts) for e in snap)
        if got == tests:
            break
        tests = got
    print(
        f"alerts: {tests} (series, rule) tests designed in {snapshots - 1} snapshot(s), "
        f"{time.perf_counter() - t:.2f}s ({(time.perf_counter() - t) / max(tests, 1) * 1e3:.1f} ms per test)"
    )
    t = time.perf_counter()
    est.snapshot()
    print(f"alerts: snapshot with every design memoised: {time.perf_counter() - t:.3f}s")
    t = time.perf_counter()
    alerts = est.alerts()
    print(
        f"alerts: Estimator.alerts() of {sum(len(v) for v in alerts.values())} tests: "
        f"{time.perf_counter() - t:.3f}s"
    )
    _, _, samples = scrape(Exposition(lambda: est))
    print(
        f"alerts: /metrics of {series} series: {samples:,} samples, {4 * tests:,} of them agentwatch_alert_* "
        f"({4 * tests / series:.0f} per series)"
    )
    gc.collect()
    tracemalloc.start()
    rings = [Minutes(est.alert_params.minutes) for _ in range(100)]
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    print(
        f"alerts: per-minute counts of {est.alert_params.minutes} minutes: {held / len(rings):,.0f} bytes per "
        "real series"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--series", type=int, default=10_000)
    parser.add_argument("--scores", type=int, default=50_000)
    parser.add_argument("--windows", default="1h,24h,7d")
    parser.add_argument("--attempts", type=int, default=4, help="attempts per instance (repeated attempts)")
    parser.add_argument("--alert-series", type=int, default=100, help="series of the sequential tests' part")
    parser.add_argument("--judged", action="store_true", help="judge-graded scores, 10%% with review labels")
    parser.add_argument(
        "--beside-collector",
        type=int,
        default=1000,
        help="time the collector pipeline on this many conversations too and print the ratio (0: do not)",
    )
    args = parser.parse_args()
    global JUDGED
    JUDGED = args.judged
    t = time.perf_counter()
    sum(range(1000))
    print(f"calibration sum(range(1000)): {(time.perf_counter() - t) * 1e6:.1f} µs; judged: {JUDGED}")
    windows = args.windows.split(",")
    settings = load_settings(exporter={"windows": windows, "max_tasks": 1000})
    est = Estimator(settings, clock=lambda: NOW)
    batch = scores(max(args.scores, args.series), args.series)
    dt, cpu = ingest_times(est, batch)
    print(
        f"estimator.add: {len(batch)} scores in {dt:.2f}s = {len(batch) / dt:,.0f} scores/s "
        f"({args.series} series, {len(windows)} windows, aggregate task='*' included; "
        f"{len(batch) / cpu:,.0f} scores/s of CPU)"
    )
    if args.beside_collector:
        beside_collector(args.beside_collector, settings, batch)
    t = time.perf_counter()
    snap = est.snapshot()
    print(
        f"first snapshot (all windows computed): {len(snap)} series×windows in {time.perf_counter() - t:.3f}s"
    )
    t = time.perf_counter()
    est.snapshot()
    print(f"unchanged snapshot (cached): {time.perf_counter() - t:.3f}s")
    count, dt = summarise_seconds(est)
    print(f"estimates of {count} series×windows (Beta posteriors, pass@k, pass^k, ASR bootstraps): {dt:.3f}s")

    exposition = Exposition(lambda: est)
    for label in ("first render", "unchanged"):
        dt, size, samples = scrape(exposition)
        print(
            f"/metrics ({label}) of {len(snap)} series×windows: {samples:,} samples, {size / 1e6:.1f} MB "
            f"in {dt:.3f}s"
        )
    for s in scores(100, args.series, start=len(batch)):
        est.add(s)
    dt, _, samples = scrape(exposition)
    print(f"/metrics after 100 new scores: {dt:.3f}s")

    per_id = bytes_per_tracked_id()
    print(
        f"memory per tracked conversation identity (for de-duplication and revisions): {per_id:,.0f} bytes "
        f"(1M conversations in the longest window ≈ {per_id * 1e6 / 2**20:,.0f} MiB)"
    )

    # About 20,000 Prometheus samples: 190 estimator series (+ 19 task="*" aggregates), one window.
    small = Estimator(load_settings(exporter={"windows": ["1h"]}), clock=lambda: NOW)
    for s in scores(190 * 20, 190):
        small.add(s)
    exposition = Exposition(lambda: small)
    scrape(exposition)  # fills the estimator's caches
    dt, _, samples = scrape(exposition)
    print(f"/metrics, unchanged: {samples:,} Prometheus samples in {dt * 1e3:.1f} ms")
    for s in scores(50, 190, start=190 * 20):
        small.add(s)
    dt, _, samples = scrape(exposition)
    print(f"/metrics after 50 new scores: {samples:,} samples in {dt * 1e3:.1f} ms")

    repeated_attempts(min(args.series, 200), min(args.scores, 20_000), args.attempts)
    alert_tests(args.alert_series)


if __name__ == "__main__":
    main()
