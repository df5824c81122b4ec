"""The exporter's (unit, bucket) entries are at most `exporter.max_unit_entries`: what its memory for units grows
with. A unit attempted in many buckets holds an entry in each, in every window and again under `task="*"`,
which `max_units_total` (a count of units) did not bound."""

from __future__ import annotations

from typing import Any

from agentwatch.config import load_settings
from agentwatch.exporters.estimator import Estimator
from agentwatch.exporters.exposition import Exposition
from agentwatch.wire.schema import ConversationScore
from tests.support.scores import T0, Clock, make_score


def held(est: Estimator) -> int:
    """The (unit, bucket) entries the estimator's window buckets hold, counted from the buckets themselves."""
    return sum(
        len(bucket.units) for s in est._series.values() for w in s.windows for bucket in w._buckets.values()
    )


def hourly(units: int, hours: int, start: float = T0) -> list[tuple[float, ConversationScore]]:
    """`units` units of two tasks attempted once an hour for `hours` hours from `start`: (clock, score) pairs."""
    out = []
    for h in range(hours):
        t = start + 3600 * h
        for u in range(units):
            score = make_score(
                f"c{h}-{u}",
                (u + h) % 3 != 0,
                task=f"t{u % 2}",
                instance=f"i{u}",
                attempt=h,
                ended_at=t,
            )
            out.append((t, score))
    return out


def estimator(clock: Clock, **exporter: Any) -> Estimator:
    return Estimator(load_settings(exporter={"max_units_total": 10_000, **exporter}), clock=clock)


def test_entries_never_pass_the_bound_while_windows_advance_and_past_it_conversations_are_folded() -> None:
    """A unit attempted hourly for a day holds a 1h, 24h and 7d bucket entry per attempt (fewer in 7d's 2.8-hour
    buckets), twice: 20 units would hold 1,360 entries; at most 300 are held, the graded conversations that would
    add one more count as units of their own (agentwatch_units_folded_total), every conversation still counted."""
    clock = Clock(T0)
    est = estimator(clock, max_unit_entries=300)
    scores = hourly(20, 24)
    for t, score in scores:
        clock.t = t
        assert est.add(score)
        assert held(est) <= 300
    clock.t = T0 + 24 * 3600
    snapshot = est.snapshot()
    assert held(est) <= 300
    assert est._entries.count == held(est)
    folded = est.counters().units_folded
    assert folded > 0
    assert f"agentwatch_units_folded_total {folded}" in Exposition(lambda: est).render().decode()
    week = [e for e in snapshot if e.window == "7d" and e.task == "*"]
    assert [e.conversations for e in week] == [len(scores)]
    # the folded conversations are units of their own: the units counted are the 20 tracked plus them, at most
    assert 20 < week[0].units <= 20 + folded


def test_without_the_bound_the_same_attempts_hold_more_entries() -> None:
    """The same day of hourly attempts with the default bound: every conversation in its unit, none folded."""
    clock = Clock(T0)
    est = estimator(clock)
    for t, score in hourly(20, 24):
        clock.t = t
        assert est.add(score)
    assert est._entries.count == held(est) > 300
    assert est.counters().units_folded == 0


def test_entries_are_released_as_buckets_expire_and_when_series_vanish() -> None:
    """Every entry leaves with its bucket: the count follows the live entries as the windows advance (lazily)
    and is 0 once the series are forgotten, so the freed room takes new units again."""
    clock = Clock(T0)
    est = estimator(clock, max_unit_entries=200)
    for t, score in hourly(10, 30):
        clock.t = t
        est.add(score)
    for hours in (1, 2, 25, 26, 24 * 7 - 20, 24 * 7 + 29):
        clock.t = T0 + 29 * 3600 + hours * 3600
        est.snapshot()
        assert est._entries.count == held(est)
    assert est._series == {} and est._entries.count == 0
    folded = est.counters().units_folded
    for _t, score in hourly(10, 1, start=clock.t):  # the room is free again: no new fold
        assert est.add(score.model_copy(update={"conversation_id": "late" + score.conversation_id}))
    assert est.counters().units_folded == folded
    assert est._entries.count == held(est) == 10 * 3 * 2


def test_a_revision_releases_the_entry_it_replaces_and_one_that_would_add_past_the_bound_is_folded() -> None:
    """An attempt revised to unscored leaves its unit's bucket; an unscored one revised to graded takes an entry
    only within the bound, else it counts as a unit of its own (and so do its later revisions)."""
    clock = Clock(T0 + 60)
    est = estimator(clock, max_unit_entries=6, windows=["1h", "24h", "7d"])
    assert est.add(make_score("a", task="t", instance="i1", attempt=0))
    assert est._entries.count == held(est) == 6  # 3 windows, task series and task="*"
    assert est.add(make_score("b", None, task="t", instance="i2", attempt=0))  # unscored: no entry
    assert est._entries.count == 6
    assert est.add(make_score("b", True, task="t", instance="i2", attempt=0, revision=1))
    assert est._entries.count == held(est) == 6 and est.counters().units_folded == 1
    assert est.add(make_score("a", None, task="t", instance="i1", attempt=0, revision=1))
    assert est._entries.count == held(est) == 0
    assert est.add(make_score("b", False, task="t", instance="i2", attempt=0, revision=2))
    assert est._entries.count == held(est) == 0  # still a unit of its own: nothing is counted twice
    assert est.add(make_score("c", task="t", instance="i3", attempt=0))
    assert est._entries.count == held(est) == 6 and est.counters().units_folded == 1


def _render(est: Estimator) -> list[str]:
    return [line for line in Exposition(lambda: est).render().decode().splitlines() if "{" in line]


def test_below_the_bound_the_estimates_are_those_without_it() -> None:
    """The same repeated attempts give the same exported figures (pass^k, pass@k, ASR over units, units) with
    the default bound, a bound of exactly the entries they need at their peak (every conversation then looked up
    before it is counted) and no bound to speak of; one entry fewer folds a conversation."""
    scores = hourly(12, 30)

    def run(**exporter: Any) -> tuple[Estimator, int]:
        clock = Clock(T0)
        est = estimator(clock, **exporter)
        peak = 0
        for t, score in scores:
            clock.t = t
            est.add(score)
            peak = max(peak, held(est))
        clock.t = T0 + 30 * 3600
        return est, peak

    unbounded, peak = run(max_unit_entries=10**12)
    expected = _render(unbounded)
    assert any(line.startswith("agentwatch_pass_pow_k") for line in expected)
    assert any(line.startswith("agentwatch_asr_units") and not line.endswith(" 0.0") for line in expected)
    for bound in (None, peak):
        est, _ = run() if bound is None else run(max_unit_entries=bound)
        assert _render(est) == expected
        assert est.counters().units_folded == 0
    tight, _ = run(max_unit_entries=peak - 1)
    assert tight.counters().units_folded > 0
