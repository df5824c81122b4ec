"""Obtains verdicts for conversations: cache, spend cap, a bounded thread pool, and the stats — one place shared
by the offline CLI and the collector.

`submit(conv)` returns a `Future[JudgeVerdict]` at once (the collector keeps consuming and pauses partitions
while `pending` is high); `judge_many(convs)` judges a batch and returns verdicts in input order (the offline
CLI). The same conversation asked for twice while its first call is in flight shares that call; asked for
again later it is served from the cache. A future never raises: every failure is a failed verdict.

Order of checks for one conversation: cache (hit: no call, no spend) → spend cap, when it is queued and again when
its call starts (reached: `judge_budget_exhausted` without a call) → the judge (`run_judge`: exceptions become failure codes) → record spend, cache a verdict that
grades.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from agentwatch.config import JudgeConfig, Settings
from agentwatch.judge.budget import SpendCap
from agentwatch.judge.cache import JudgeCache, cache_key
from agentwatch.judge.counters import JudgeStats
from agentwatch.judge.verdict import JUDGE_BUDGET_EXHAUSTED, Judge, JudgeVerdict, run_judge
from agentwatch.wire.schema import Conversation

log = logging.getLogger(__name__)


class JudgeRunner:
    """Judges conversations with at most `concurrency` calls in flight."""

    def __init__(
        self,
        judge: Judge,
        *,
        concurrency: int = 4,
        cache: JudgeCache | None = None,
        cap: SpendCap | None = None,
        stats: JudgeStats | None = None,
    ) -> None:
        self.judge = judge
        self.judge_id = str(getattr(judge, "judge_id", type(judge).__name__))
        self.concurrency = concurrency
        self.cache = cache if cache is not None else JudgeCache()
        self.cap = cap if cap is not None else SpendCap()
        self.stats = stats if stats is not None else JudgeStats()
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="judge")
        self._lock = threading.Lock()
        self._inflight: dict[str, Future[JudgeVerdict]] = {}
        self._pending = 0

    @classmethod
    def from_settings(cls, settings: Settings, judge: Judge | None = None, **judge_kw: Any) -> JudgeRunner:
        """A runner from `settings.judge` (an `OpenAIJudge` unless `judge` is given), priced by `settings.cost`."""
        from agentwatch.config.prices import PriceLookup

        cfg: JudgeConfig = settings.judge
        prices = PriceLookup(settings.cost.prices.models)
        if judge is None:
            from agentwatch.judge.client import OpenAIJudge

            if (cfg.hourly_usd is not None or cfg.daily_usd is not None) and prices(cfg.model) is None:
                raise ValueError(
                    f"judge.model {cfg.model!r} has no price in cost.prices: the spend cap cannot be enforced"
                )
            judge = OpenAIJudge.from_config(cfg, prices, **judge_kw)
        return cls(
            judge,
            concurrency=cfg.concurrency,
            cache=JudgeCache(cfg.cache_entries, cfg.cache_path),
            cap=SpendCap(cfg.hourly_usd, cfg.daily_usd),
        )

    @property
    def pending(self) -> int:
        """Submitted conversations whose verdict is not ready yet."""
        return self._pending

    def _key(self, conv: Conversation) -> str | None:
        try:
            return cache_key(self.judge_id, self.judge.fingerprint(conv))
        except Exception:
            log.exception("judge fingerprint failed for %r", conv.conversation_id)
            return None

    def submit(self, conv: Conversation) -> Future[JudgeVerdict]:
        """A future of the verdict on `conv` (already done on a cache hit or when the cap is reached)."""
        key = self._key(conv)
        if key is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.stats.observe(hit, called=False)
                return _done(hit)
        with self._lock:
            if key is not None and key in self._inflight:
                shared = self._inflight[key]
                return _chain(shared, self.stats)
            blocked = self.cap.check()
            if blocked is not None:
                v = JudgeVerdict.failed(JUDGE_BUDGET_EXHAUSTED, blocked, self.judge_id)
                self.stats.observe(v, called=False)
                return _done(v)
            self._pending += 1
            future = self._pool.submit(self._call, conv, key)
            if key is not None:
                self._inflight[key] = future
        return future

    def _call(self, conv: Conversation, key: str | None) -> JudgeVerdict:
        try:
            # again as the call starts: a batch is queued before any of it has cost anything
            blocked = self.cap.check()
            if blocked is not None:
                refused = JudgeVerdict.failed(JUDGE_BUDGET_EXHAUSTED, blocked, self.judge_id)
                self.stats.observe(refused, called=False)
                return refused
            verdict = run_judge(self.judge, conv)
            self.cap.record(verdict.cost_usd)
            self.stats.observe(verdict, called=True)
            if key is not None:
                self.cache.put(key, verdict)
            return verdict
        finally:
            with self._lock:
                self._pending -= 1
                if key is not None:
                    self._inflight.pop(key, None)

    def judge_one(self, conv: Conversation) -> JudgeVerdict:
        """The verdict on one conversation (blocking)."""
        return self.submit(conv).result()

    def judge_many(
        self, convs: Iterable[Conversation], on_done: Callable[[JudgeVerdict], None] | None = None
    ) -> list[JudgeVerdict]:
        """Verdicts for a batch, in input order; `on_done` is called (from worker threads) as each completes."""
        futures = [self.submit(c) for c in convs]
        if on_done is not None:
            for f in futures:
                f.add_done_callback(lambda f: on_done(f.result()))
        return [f.result() for f in futures]

    def close(self) -> None:
        """Wait for calls in flight, stop the pool, close the cache file and the judge's connections."""
        self._pool.shutdown(wait=True)
        self.cache.close()
        close = getattr(self.judge, "close", None)
        if callable(close):
            close()


def _done(v: JudgeVerdict) -> Future[JudgeVerdict]:
    f: Future[JudgeVerdict] = Future()
    f.set_result(v)
    return f


def _chain(shared: Future[JudgeVerdict], stats: JudgeStats) -> Future[JudgeVerdict]:
    """A future with the shared call's verdict, marked cached (this request did not pay)."""
    out: Future[JudgeVerdict] = Future()

    def copy(f: Future[JudgeVerdict]) -> None:
        v = replace(f.result(), cached=True, latency_s=0.0)
        stats.observe(v, called=False)
        out.set_result(v)

    shared.add_done_callback(copy)
    return out
