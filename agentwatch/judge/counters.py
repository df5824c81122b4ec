"""Counters of the judge for the services to export: calls, latency histogram, tokens, spend, failures, cache hits."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from agentwatch.judge.verdict import FAILURE_CODES, JudgeVerdict

LATENCY_BUCKETS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)


@dataclass
class JudgeStats:
    """Totals since start (monotonic counters). `observe(verdict)` once per verdict handed out."""

    calls: int = 0  # verdicts obtained from the judge (not from the cache), graded or failed
    cache_hits: int = 0
    graded: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    spend_usd: float = 0.0
    failures: Counter[str] = field(default_factory=Counter)
    latency_counts: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_BUCKETS) + 1))
    latency_sum_s: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def observe(self, verdict: JudgeVerdict, *, called: bool) -> None:
        """Count one verdict; `called`: the judge was asked (False for cache hits and calls refused up front)."""
        with self._lock:
            if verdict.cached:
                self.cache_hits += 1
            if verdict.ok:
                self.graded += 1
            else:
                self.failures[verdict.failure or "unknown"] += 1
            if not called:
                return
            self.calls += 1
            self.input_tokens += verdict.input_tokens
            self.output_tokens += verdict.output_tokens
            self.spend_usd += verdict.cost_usd or 0.0
            self.latency_sum_s += verdict.latency_s
            i = 0
            while i < len(LATENCY_BUCKETS) and verdict.latency_s > LATENCY_BUCKETS[i]:
                i += 1
            self.latency_counts[i] += 1

    def snapshot(self) -> dict[str, Any]:
        """A plain copy: counters, failures by reason (every code, zeros included), cumulative latency buckets."""
        with self._lock:
            cumulative, running = [], 0
            for c in self.latency_counts:
                running += c
                cumulative.append(running)
            return {
                "calls": self.calls,
                "cache_hits": self.cache_hits,
                "graded": self.graded,
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "spend_usd": self.spend_usd,
                "failures": {code: self.failures.get(code, 0) for code in FAILURE_CODES},
                "latency_buckets": dict(zip([*LATENCY_BUCKETS, float("inf")], cumulative, strict=True)),
                "latency_sum_s": self.latency_sum_s,
                "latency_count": running,
            }
