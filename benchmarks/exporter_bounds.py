"""The exporter's estimator with every memory bound filled at once: its peak RSS against the manifest's limit.

The estimator (the object the exporter service folds scores into) gets `exporter.max_series` real series,
`exporter.max_conversations` conversations, all ending inside the longest window, and `exporter.max_units_total`
distinct units (task instances) with repeated attempts, every agent version under `exporter.max_units`. The mix is
the worst the bounds allow that a real fleet could send: one task per agent version (so each series has its own
`task="*"` aggregate, twice the windows), conversation and instance ids of 250 characters (just under the
256 past which they are kept as SHA-256 digests), agent and task names as long, every conversation graded by the
judge (one in ten with a review label: correction sums and agreement cells in every bucket), a tool-graded turn,
costs and durations over five decades (a sketch bin each), the failure modes of `exporter.max_failure_modes`,
and end times that fill every bucket of every window, the rest in the last hour (in all three windows). Then
one snapshot and one /metrics render (the scrape). Prints the process's peak RSS (`ru_maxrss`), the RSS the
state added per conversation, the time taken, and the scrape's size and time. `--scale` scales every bound (and
so the input); `--tracemalloc` also prints Python's traced current/peak bytes (slower, and its own bookkeeping
adds to the RSS). Asserts nothing.
Then, with `--hourly-units N`, what the windows hold per unit when a unit's attempts are spread over time
(once an hour): `max_units_total` counts units, and each bucket a unit has attempts in holds it again, up to
`exporter.max_unit_entries` (unit, bucket) entries over every bucket (the bytes per entry printed with them).
Usage: python -m benchmarks.exporter_bounds [--scale 1.0] [--tracemalloc] [--limit-mib MiB] [--hourly-units 200]
"""

from __future__ import annotations

import argparse
import gc
import math
import re
import resource
import time
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentwatch.config import Settings, load_settings, parse_duration
from agentwatch.exporters.estimator import Estimator
from agentwatch.exporters.exposition import Exposition
from agentwatch.wire.schema import ConversationScore, TurnScore
from benchmarks.exporter import NOW, judged, scores, scrape

ID_LENGTH = 250  # conversation, instance, agent and task names: just under labels.KEPT_LENGTH (256)
CHUNK = 10_000  # scores built at a time: the input is not held, only what the estimator keeps of it


def rss_mib() -> float:
    """The process's peak resident set size so far, in MiB (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mib() -> float:
    """The process's resident set size now, in MiB (/proc/self/statm)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def bounded_settings(scale: float) -> Settings:
    """The default settings with the series, conversations and units bounds times `scale` (1.0: the defaults)."""
    cfg = load_settings().exporter
    return load_settings(
        exporter={
            "max_series": max(1, round(cfg.max_series * scale)),
            "max_conversations": max(1, round(cfg.max_conversations * scale)),
            "max_units_total": max(1, round(cfg.max_units_total * scale)),
            "max_unit_entries": max(1, round(cfg.max_unit_entries * scale)),
        }
    )


def padded(name: str) -> str:
    """`name` padded in front to ID_LENGTH characters (distinct names stay distinct)."""
    return name.rjust(ID_LENGTH, "x")


class Mix:
    """Which series, unit, attempt and end time the i-th conversation gets (`exporter_bounds` module doc)."""

    def __init__(self, settings: Settings) -> None:
        cfg = settings.exporter
        self.series = cfg.max_series  # one task per agent version: one agent version per series
        self.versions = min(cfg.max_versions_per_agent, self.series)
        assert self.series <= cfg.max_agents * self.versions, "more series than the label caps allow"
        self.conversations = cfg.max_conversations
        self.per_series = math.ceil(self.conversations / self.series)
        self.units_per_series = max(1, min(cfg.max_units, cfg.max_units_total // self.series))
        self.modes = cfg.max_failure_modes
        # 60 end times per window, one in each of its buckets (the current one included), newest first
        self.slots = [
            [
                min(
                    NOW - 1,
                    (math.floor(NOW / (w / cfg.buckets_per_window)) - k + 0.5) * w / cfg.buckets_per_window,
                )
                for k in range(cfg.buckets_per_window)
            ]
            for w in sorted((parse_duration(x) for x in cfg.windows), reverse=True)
        ]

    def ended_at(self, j: int) -> datetime:
        """The end time of a series' j-th conversation: the buckets of each window first, then the shortest."""
        per_window = len(self.slots[0])
        group = min(j // per_window, len(self.slots) - 1)
        return datetime.fromtimestamp(self.slots[group][(j - group * per_window) % per_window], UTC)

    def update(self, i: int, score: ConversationScore) -> dict[str, Any]:
        """The fields of conversation `i` that make it part of the mix."""
        s, j = i % self.series, i // self.series
        agent, version = divmod(s, self.versions)
        unit, attempt = j % self.units_per_series, j // self.units_per_series
        f = ((i * 2654435761) % 2**32) / 2**32  # a spread of costs and durations over bins
        passed = bool(score.passed)
        return {
            "conversation_id": padded(f"c{i}"),
            "agent": padded(f"agent{agent}"),
            "version": f"v{version}",
            "task": padded("task"),
            "instance": padded(f"i{unit}"),
            "attempt": attempt,
            "ended_at": self.ended_at(j),
            "cost_usd": 10 ** (-4 + 5 * f),
            "duration_s": 10 ** (-1 + 5 * (1 - f)),
            "reasons": [] if passed else [f"mode{i % self.modes}: failed"],
            "turn_scores": [_TOOL_TURN],
        }

    def batches(self) -> Iterator[list[ConversationScore]]:
        """Every score of the mix, CHUNK at a time."""
        for start in range(0, self.conversations, CHUNK):
            count = min(CHUNK, self.conversations - start)
            base = scores(count, self.series, start, now=NOW)
            yield [
                judged(b.model_copy(update=self.update(start + k, b)), start + k) for k, b in enumerate(base)
            ]


_TOOL_TURN = TurnScore.model_validate(
    {
        "index": 0,
        "tool": {
            "selection": 1.0,
            "parameters": 0.75,
            "sequence": 1.0,
            "utilization": 0.5,
            "overall": 0.8125,
            "binary": True,
            "passed": True,
        },
        "passed": True,
    }
)


def traced_in(*modules: str) -> int:
    """Traced bytes now held by what the files ending in `modules` allocated."""
    return sum(
        s.size
        for s in tracemalloc.take_snapshot().statistics("filename")
        if s.traceback[0].filename.endswith(modules)
    )


def traced(conversations: int) -> None:
    """Python's traced current and peak bytes, the current split into the windows' and the rest."""
    current, peak = tracemalloc.get_traced_memory()
    # the windows' buckets and totals (units and sketch bins included) are made in these modules; the rest is
    # mostly the remembered conversations (ids, contributions, expiry heap)
    windows = traced_in("exporters/windows.py", "exporters/buckets.py", "stats/corrected.py")
    tracemalloc.stop()
    print(
        f"tracemalloc: current {current / 2**20:,.0f} MiB ({current / conversations:,.0f} bytes per "
        f"conversation; windows {windows / 2**20:,.0f} MiB, the rest {(current - windows) / 2**20:,.0f} MiB), "
        f"peak {peak / 2**20:,.0f} MiB"
    )


def hourly_units(settings: Settings, units: int) -> None:
    """Bytes the windows hold per unit when its attempts are spread over time: `units` units of one series,
    attempted once an hour for 1, 4, 24 hours and the whole longest window, beside a conversation in every bucket
    of every window (so that the figure is the units' alone)."""
    mix = Mix(settings)
    hours = int(max(parse_duration(w) for w in settings.exporter.windows) // 3600) - 1
    fill = scores(sum(map(len, mix.slots)), 1, prefix="fill", now=NOW)
    for spread in (1, 4, 24, hours):
        est = Estimator(settings, clock=lambda: NOW)
        for j, b in enumerate(fill):
            est.add(b.model_copy(update={"ended_at": mix.ended_at(j)}))
        batch = [
            b.model_copy(
                update={
                    "instance": padded(f"i{k}"),
                    "attempt": h,
                    "ended_at": datetime.fromtimestamp(NOW - 1800 - 3600 * h, UTC),
                }
            )
            for h in range(spread)
            for k, b in enumerate(scores(units, 1, h * units, prefix="u", now=NOW))
        ]
        gc.collect()
        tracemalloc.start()
        for b in batch:
            est.add(b)
        gc.collect()
        windows = traced_in("exporters/windows.py", "exporters/buckets.py")
        tracemalloc.stop()
        entries = est._entries.count
        print(
            f"a unit attempted every hour for {spread} hours: {windows / units:,.0f} bytes in the windows "
            f"({units} units; {windows / 2**20:,.1f} MiB, {entries:,} unit entries of at most "
            f"{settings.exporter.max_unit_entries:,}, {windows / max(1, entries):,.0f} bytes each, "
            f"{est._caps.units_folded:,} conversations folded)"
        )


def manifest_limit_mib() -> float:
    """The exporter container's memory limit in deploy/kubernetes/exporter.yaml, in MiB."""
    text = (Path(__file__).parents[1] / "deploy" / "kubernetes" / "exporter.yaml").read_text()
    found = re.search(r"limits:\s*\n\s*memory:\s*(\d+)(Gi|Mi)", text)
    assert found, "no memory limit in the manifest"
    return int(found[1]) * (1024 if found[2] == "Gi" else 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", type=float, default=1.0, help="every bound times this (1.0: the defaults)")
    parser.add_argument("--tracemalloc", action="store_true", help="also trace Python's allocations (slower)")
    parser.add_argument(
        "--limit-mib", type=float, default=manifest_limit_mib(), help="memory limit (default: the manifest's)"
    )
    parser.add_argument(
        "--hourly-units", type=int, default=0, help="then measure this many units attempted every hour"
    )
    args = parser.parse_args()
    settings = bounded_settings(args.scale)
    cfg = settings.exporter
    mix = Mix(settings)
    est = Estimator(settings, clock=lambda: NOW)
    exposition = Exposition(lambda: est)
    gc.collect()
    base_rss = current_rss_mib()
    print(
        f"bounds: max_series {cfg.max_series:,}, max_conversations {cfg.max_conversations:,}, max_units_total "
        f"{cfg.max_units_total:,} (max_units {cfg.max_units:,} per agent version), max_unit_entries "
        f"{cfg.max_unit_entries:,}, windows {cfg.windows}; "
        f"mix: {mix.per_series} conversations and {mix.units_per_series} units per series; RSS before "
        f"{base_rss:,.0f} MiB"
    )
    if args.tracemalloc:
        tracemalloc.start()
    t0 = time.perf_counter()
    ingest_s = 0.0  # the estimator's part; the rest of the loop builds and validates the scores
    for batch in mix.batches():
        t = time.perf_counter()
        for s in batch:
            est.add(s)
        ingest_s += time.perf_counter() - t
    gc.collect()
    held_rss = current_rss_mib()
    units = sum(len(u) for u in est._caps.units_seen.values())
    real = sum(1 for k in est._series if k[2] != "*")
    print(
        f"ingest: {cfg.max_conversations:,} scores in {ingest_s:.1f}s = {cfg.max_conversations / ingest_s:,.0f}/s "
        f"(built in {time.perf_counter() - t0 - ingest_s:.1f}s more); "
        f"{len(est._seen):,} conversations remembered, {units:,} units tracked ({est._entries.count:,} unit "
        f"entries), {real:,} real series "
        f'(+{len(est._series) - real:,} task="*"), {est._caps.units_folded:,} units folded, '
        f"{est._caps.folded['series']:,} scores folded past max_series"
    )
    print(
        f"state: RSS {held_rss:,.0f} MiB = {(held_rss - base_rss) * 2**20 / cfg.max_conversations:,.0f} bytes "
        f"per conversation beyond the RSS before"
    )
    t = time.perf_counter()
    est.snapshot()
    snap_s = time.perf_counter() - t
    dt, size, samples = scrape(exposition)
    print(
        f"scrape: first snapshot {snap_s:.1f}s; /metrics rendered in {dt:.1f}s after it: {size / 2**20:,.1f} MiB, "
        f"{samples:,} samples"
    )
    if args.tracemalloc:
        traced(cfg.max_conversations)
    dt, _, _ = scrape(exposition)
    print(f"scrape again, nothing changed: {dt:.1f}s")
    peak = rss_mib()
    print(
        f"peak RSS {peak:,.0f} MiB = {peak / args.limit_mib:.0%} of {args.limit_mib:,.0f} MiB; total "
        f"{time.perf_counter() - t0:.1f}s"
    )
    if args.hourly_units:
        del est, exposition
        hourly_units(settings, args.hourly_units)


if __name__ == "__main__":
    main()
