"""JudgeRunner, cache, spend cap, stats and prompt truncation (fake judges in process, one real-HTTP test)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from agentwatch.config import JudgeConfig, Settings
from agentwatch.judge.budget import SpendCap
from agentwatch.judge.cache import JudgeCache
from agentwatch.judge.counters import JudgeStats
from agentwatch.judge.prompt import build_messages, load_rubric, render_transcript
from agentwatch.judge.runner import JudgeRunner
from agentwatch.judge.verdict import JudgeVerdict
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import Conversation, Outcome
from tests.support.fake_openai import FakeOpenAI, Script, verdict_reply


def conv(cid: str, answer: str = "done") -> Conversation:
    return Conversation.model_validate(
        {"conversation_id": cid, "turns": [{"input": "do it", "answer": answer}]}
    )


class CountingJudge:
    judge_id = "fake:m:v1"

    def __init__(self, cost=0.01, delay=0.0, fail=None):
        self.calls = 0
        self.cost = cost
        self.delay = delay
        self.fail = fail
        self.lock = threading.Lock()
        self.active = self.peak = 0

    def fingerprint(self, c):
        return c.turns[0].answer or ""

    def judge(self, c):
        with self.lock:
            self.calls += 1
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(self.delay)
        with self.lock:
            self.active -= 1
        if self.fail:
            return JudgeVerdict.failed(self.fail, "scripted", self.judge_id, cost_usd=self.cost)
        return JudgeVerdict.graded(
            "complete",
            0.9,
            "ok",
            self.judge_id,
            input_tokens=100,
            output_tokens=10,
            cost_usd=self.cost,
            latency_s=0.3,
        )


def test_cache_hits_never_pay_twice():
    judge = CountingJudge()
    runner = JudgeRunner(judge, concurrency=2)
    first = runner.judge_one(conv("a"))
    again = runner.judge_one(conv("a"))  # redelivered
    assert judge.calls == 1 and first.ok and again.cached and again.outcome is Outcome.COMPLETE
    s = runner.stats.snapshot()
    assert s["calls"] == 1 and s["cache_hits"] == 1 and s["spend_usd"] == pytest.approx(0.01)
    runner.close()


def test_duplicates_in_flight_share_one_call():
    judge = CountingJudge(delay=0.2)
    runner = JudgeRunner(judge, concurrency=4)
    verdicts = runner.judge_many([conv("a"), conv("a-dup", "done"), conv("b", "other")])
    assert judge.calls == 2 and all(v.ok for v in verdicts)
    assert runner.stats.snapshot()["cache_hits"] == 1
    runner.close()


def test_concurrency_is_bounded_and_order_kept():
    judge = CountingJudge(delay=0.05)
    runner = JudgeRunner(judge, concurrency=3)
    done: list[JudgeVerdict] = []
    convs = [conv(f"c{i}", f"answer {i}") for i in range(12)]
    verdicts = runner.judge_many(convs, on_done=done.append)
    assert len(verdicts) == 12 and len(done) == 12 and judge.peak <= 3 and runner.pending == 0
    runner.close()


def test_spend_cap_exhausts_then_recovers_with_the_clock():
    now = [0.0]
    cap = SpendCap(hourly_usd=0.025, clock=lambda: now[0])
    judge = CountingJudge(cost=0.01)
    runner = JudgeRunner(judge, concurrency=1, cap=cap)
    verdicts = [runner.judge_one(conv(f"c{i}", f"a{i}")) for i in range(5)]
    assert [v.ok for v in verdicts] == [True, True, True, False, False]
    assert verdicts[3].failure == "judge_budget_exhausted" and "hourly cap" in verdicts[3].detail
    assert judge.calls == 3 and runner.stats.snapshot()["failures"]["judge_budget_exhausted"] == 2
    now[0] = 3601.0
    assert runner.judge_one(conv("late", "late")).ok
    runner.close()


def test_daily_cap_is_sliding():
    now = [0.0]
    cap = SpendCap(daily_usd=1.0, clock=lambda: now[0])
    cap.record(0.6)
    now[0] = 7200.0
    cap.record(0.5)
    reason = cap.check()
    assert reason is not None and "daily" in reason
    now[0] = 86_401.0  # the first spend left the window
    assert cap.check() is None
    hour, day = cap.spent()
    assert hour == 0.0 and day == pytest.approx(0.5)


def test_the_spends_of_a_second_are_one_entry_that_leaves_with_the_latest() -> None:
    """An entry a paid call held 112 MB at a million calls a day; now at most one a second, and a spend still
    counts for a whole hour after it was made (never less)."""
    from fractions import Fraction

    now = [0.0]
    cap = SpendCap(hourly_usd=1e9, daily_usd=1e9, clock=lambda: now[0])
    exact = Fraction(0)
    for i in range(200_000):  # 100 calls a second for 2,000 s
        now[0] = i / 100
        cap.record(0.001)
        exact += Fraction(0.001)
    assert len(cap._spends) <= 2_001
    hour, day = cap.spent()
    assert hour == pytest.approx(float(exact), rel=1e-9) and day == pytest.approx(float(exact), rel=1e-9)
    # the calls of second 0 (at 0.00 .. 0.99 s) leave the hour together, once the latest of them has
    now[0] = 3600.5
    assert cap.spent()[0] == pytest.approx(float(exact), rel=1e-9)
    now[0] = 3601.0
    assert cap.spent()[0] == pytest.approx(float(exact - 100 * Fraction(0.001)), rel=1e-9)


def test_failures_are_counted_not_cached():
    judge = CountingJudge(fail="judge_timeout")
    runner = JudgeRunner(judge, concurrency=1)
    assert runner.judge_one(conv("a")).failure == "judge_timeout"
    assert runner.judge_one(conv("a")).failure == "judge_timeout"
    assert judge.calls == 2 and runner.stats.snapshot()["failures"]["judge_timeout"] == 2
    runner.close()


def test_disk_cache_survives_restart(tmp_path):
    path = tmp_path / "judge-cache.jsonl"
    judge = CountingJudge()
    runner = JudgeRunner(judge, cache=JudgeCache(path=path))
    runner.judge_one(conv("a"))
    runner.close()
    with open(path, "a") as fh:
        fh.write('{"torn": ')  # a crash mid-line
    judge2 = CountingJudge()
    runner2 = JudgeRunner(judge2, cache=JudgeCache(path=path))
    v = runner2.judge_one(conv("a"))
    assert judge2.calls == 0 and v.cached and v.score == 0.9 and v.judge_id == "fake:m:v1"
    runner2.close()


def test_cache_is_lru_bounded():
    cache = JudgeCache(max_entries=2)
    for k in "abc":
        cache.put(k, JudgeVerdict.graded("complete", 1.0))
    assert len(cache) == 2 and cache.get("a") is None and cache.get("c") is not None


def test_the_disk_cache_is_rewritten_with_what_it_keeps_before_it_grows_past_twice_that(tmp_path) -> None:
    """A service judging for months appended a line a verdict forever (4 GB a day at 100 verdicts a second),
    and read all of it at every start."""
    path = tmp_path / "judge-cache.jsonl"
    cache = JudgeCache(max_entries=60, path=path)
    for i in range(1_000):
        cache.put(f"k{i}", JudgeVerdict.graded("complete", (i % 10) / 10, explanation=f"v{i}"))
        assert sum(1 for _ in path.open()) <= 120
    cache.put("k999", JudgeVerdict.graded("partial_correct", 0.5, explanation="again"))  # the last line wins
    cache.close()
    again = JudgeCache(max_entries=60, path=path)
    assert len(again) == 60 and again.get("k939") is None
    kept = [again.get(f"k{i}") for i in range(940, 999)]
    assert all(v is not None and v.explanation == f"v{i}" for i, v in zip(range(940, 999), kept, strict=True))
    last = again.get("k999")
    assert last is not None and last.explanation == "again"
    assert not path.with_name(path.name + ".new").exists()
    again.close()


def test_stats_latency_histogram():
    stats = JudgeStats()
    stats.observe(JudgeVerdict.graded("complete", 1, latency_s=0.3), called=True)
    stats.observe(JudgeVerdict.graded("complete", 1, latency_s=100), called=True)
    snap = stats.snapshot()
    assert snap["latency_buckets"][0.25] == 0 and snap["latency_buckets"][0.5] == 1
    assert snap["latency_buckets"][float("inf")] == 2 and snap["latency_count"] == 2


def test_truncation_is_marked_and_keeps_first_and_last_turns():
    turns = [
        {
            "input": f"question {i}",
            "answer": f"answer {i} " + "x" * 3000,
            "tool_calls": [{"name": "search", "arguments": {"q": i}, "result": "r" * 5000}],
        }
        for i in range(30)
    ]
    c = Conversation.model_validate({"conversation_id": "long", "turns": turns})
    text, truncated = render_transcript(c, 2000)
    assert truncated and len(text) <= 2000 * 4
    assert "question 0" in text and "question 29" in text and "[truncated" in text
    short, cut = render_transcript(conv("s"), 2000)
    assert not cut and "[truncated" not in short
    msgs = build_messages(c, load_rubric("v1"), 3000)
    assert "truncated for length" in msgs[1]["content"]


def test_a_value_nested_past_the_encoders_depth_is_shown_to_its_limit() -> None:
    """A tool result nested 990 deep (JSON's own parser takes it) made the prompt's encoder raise, and the
    conversation could never be judged."""
    deep: list[Any] = ["bottom"]
    for _ in range(990):
        deep = [deep]
    c = Conversation.model_validate(
        {
            "conversation_id": "deep",
            "turns": [{"input": "q", "answer": "a", "tool_calls": [{"name": "t", "result": deep}]}],
        }
    )
    text = build_messages(c, load_rubric("v1"), 12_000)[-1]["content"]
    assert "[nested deeper, not shown]" in text and "bottom" not in text


def test_unknown_rubric_version():
    with pytest.raises(ValueError):
        load_rubric("v999")
    with pytest.raises(ValueError):
        load_rubric("../etc")


def test_runner_from_settings_refuses_cap_without_price():
    settings = Settings(judge=JudgeConfig(model="mystery-model", hourly_usd=1.0))
    with pytest.raises(ValueError, match="no price"):
        JudgeRunner.from_settings(settings)


def test_end_to_end_http_runner_and_scorer():
    with FakeOpenAI(Script(verdict_reply("hallucinated", 0.0, "order id invented"))) as server:
        settings = Settings(judge=JudgeConfig(base_url=server.base_url, model="gpt-4o-mini", concurrency=2))
        runner = JudgeRunner.from_settings(settings, environ={})
        scorer = ConversationScorer(settings)
        convs = [conv("a", "Your order ORD-1 shipped"), conv("b", "Your order ORD-1 shipped")]
        verdicts = runner.judge_many([c for c in convs if scorer.wants_judge(c)])
        scores = [scorer.score(c, v) for c, v in zip(convs, verdicts, strict=True)]
        runner.close()
    assert len(server.requests) == 1  # same transcript content: one paid call
    assert all(s.outcome is Outcome.HALLUCINATED and s.passed is False for s in scores)
    assert scores[0].judge == "openai:gpt-4o-mini:v1" and scores[0].graded_by == ["judge"]


def test_the_spend_cap_is_checked_when_a_queued_call_starts_not_only_when_it_is_queued():
    """A batch is queued at once, before any call has cost anything: the cap must stop the calls that start
    after it is reached, so spend passes it by at most the calls in flight (`concurrency`)."""
    cap = SpendCap(hourly_usd=0.025)
    judge = CountingJudge(cost=0.01, delay=0.01)
    runner = JudgeRunner(judge, concurrency=2, cap=cap)
    verdicts = runner.judge_many([conv(f"c{i}", f"a{i}") for i in range(40)])
    runner.close()
    assert judge.calls <= 3 + 2  # three calls reach the cap, at most two more were in flight
    assert cap.total_usd <= 0.025 + 2 * 0.01 + 1e-9
    failed = [v for v in verdicts if not v.ok]
    assert len(failed) == 40 - judge.calls and {v.failure for v in failed} == {"judge_budget_exhausted"}
    assert runner.stats.snapshot()["failures"]["judge_budget_exhausted"] == len(failed)
