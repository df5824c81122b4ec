"""The exporter's memory and series under a producer that writes many distinct or very long names: bounded by
count and by bytes, what is folded counted and exported."""

from __future__ import annotations

import gc
import hashlib
import tracemalloc

from prometheus_client.parser import text_string_to_metric_families

from agentwatch.config import load_settings
from agentwatch.exporters import summary
from agentwatch.exporters.estimator import Estimator
from agentwatch.exporters.exposition import Exposition
from agentwatch.wire.schema import ConversationScore
from tests.support.memory import kept_by
from tests.support.scores import T0, Clock, find, make_score


def test_series_past_max_series_are_counted_in_one_other_series_and_the_fold_is_exported() -> None:
    clock = Clock(T0 + 60)
    est = Estimator(load_settings(exporter={"max_series": 50, "windows": ["1h"]}), clock=clock)
    scores = 0
    for agent in range(100):  # within each label's own cap: 100 agents, 2 versions, 5 tasks = 1,000 series
        for version in range(2):
            for task in range(5):
                assert est.add(
                    make_score(f"c{scores}", agent=f"a{agent}", version=f"v{version}", task=f"t{task}")
                )
                scores += 1
    estimates = est.snapshot()
    real = {(e.agent, e.version, e.task) for e in estimates if e.task != "*"}
    assert len(real) == 51 and ("other", "other", "other") in real
    assert sum(e.conversations for e in estimates if e.task != "*") == scores  # every score is still counted
    assert est.counters().folded["series"] == scores - 50
    samples = {
        s.labels["label"]: s.value
        for family in text_string_to_metric_families(Exposition(lambda: est).render().decode())
        for s in family.samples
        if s.name == "agentwatch_labels_folded_total"
    }
    assert samples["series"] == scores - 50
    clock.t = T0 + 3 * 3600  # every series has left the longest window: the slots are free again
    assert est.add(make_score("late", agent="new", ended_at=clock.t))
    assert {(e.agent, e.version, e.task) for e in est.snapshot() if e.task != "*"} == {
        ("new", "v1", "refund")
    }


def _held_per_score(long: bool, n: int = 300) -> float:
    """Bytes the estimator still holds per score after `n` scores (of 100 KB ids and 20 KB names when `long`)."""
    est = Estimator(load_settings(), clock=Clock(T0 + 60))
    est.add(make_score("warm-up"))
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(n):
        pad = (lambda c, k: c * k) if long else (lambda c, k: "")
        score = make_score(
            f"{i}" + pad("c", 100_000),
            agent=f"a{i % 7}" + pad("A", 20_000),
            version=f"v{i % 3}" + pad("V", 20_000),
            task=f"t{i % 5}" + pad("T", 20_000),
            instance=f"i{i}" + pad("I", 100_000),
        )
        assert est.add(score)
        del score
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return held / n


def test_what_one_score_costs_does_not_grow_with_the_length_of_its_names_and_ids() -> None:
    short, long = _held_per_score(long=False), _held_per_score(long=True)
    # 100 KB ids and instances, 20 KB names: held as they were, about 260 KB a score
    assert long < short + 2_000, (short, long)


def test_long_ids_stay_distinct_and_are_revised_and_deduplicated_by_their_whole_text() -> None:
    est = Estimator(load_settings(), clock=Clock(T0 + 60))
    base = "c" * 10_000
    twins = [base + "1", base + "2"]
    marked = "\x00sha256:" + hashlib.sha256(twins[0].encode()).hexdigest()  # as if a digest, yet a plain id
    for cid in (*twins, marked):
        assert est.add(make_score(cid, passed=False))
    assert not est.add(make_score(twins[0], passed=False))  # the same conversation again: a duplicate
    assert est.add(make_score(twins[1], passed=True, revision=1))  # its revision replaces it
    e = find(est.snapshot(), "1h", task="refund")
    assert (e.conversations, e.scored, e.passed) == (3, 3, 1)
    c = est.counters()
    assert (c.rejected["duplicate"], c.revisions) == (1, 1)


def test_conversations_remembered_are_at_most_max_conversations_and_the_forgotten_are_counted() -> None:
    """Every conversation of the longest window (7 days) was remembered, about 500 bytes each: 5.7 a second
    filled the manifest's 2 GiB in a week, and a replay after the restart filled it again. The oldest are now
    forgotten past `exporter.max_conversations`; a revision of one of them is not counted (its original could not
    be taken back), a new conversation is."""
    clock = Clock(T0 + 3600)
    est = Estimator(load_settings(exporter={"max_conversations": 100}), clock=clock)
    for i in range(250):
        assert est.add(make_score(f"c{i}", passed=False, ended_at=T0 + i))
    assert len(est._seen) == 100
    c = est.counters()
    assert c.forgotten == 150
    assert not est.add(
        make_score("c3", passed=True, revision=1, ended_at=T0 + 3)
    )  # its original is forgotten
    assert est.counters().rejected["forgotten"] == 1
    assert est.add(make_score("c249", passed=True, revision=1, ended_at=T0 + 249))  # remembered: revised
    assert not est.add(make_score("c200", passed=False, ended_at=T0 + 200))  # remembered: a duplicate
    assert est.add(make_score("new", passed=True, ended_at=T0 + 300))
    e = find(est.snapshot(), "7d", task="refund")
    assert (e.conversations, e.passed) == (
        251,
        2,
    )  # every conversation counted once; two revised or new passes
    samples = {
        s.name: s.value
        for family in text_string_to_metric_families(Exposition(lambda: est).render().decode())
        for s in family.samples
    }
    assert samples["agentwatch_exporter_conversations_forgotten_total"] == 151


def test_units_tracked_over_every_agent_version_are_at_most_max_units_total() -> None:
    """`max_units` bounds the units of one agent version; 2,000 agent versions of 5,000 units each (about 1.75 KB
    a unit in the windows) were 17 GB. The units of all agent versions together are now at most
    `max_units_total`; a conversation of any other unit counts as a unit of its own, counted, and units that
    left the longest window free their place."""
    clock = Clock(T0 + 60)
    settings = load_settings(exporter={"max_units_total": 30, "max_units": 20, "windows": ["1h"]})
    est = Estimator(settings, clock=clock)
    for version in range(3):
        for instance in range(20):
            assert est.add(
                make_score(f"c{version}-{instance}", version=f"v{version}", instance=str(instance), attempt=0)
            )
    c = est.counters()
    assert sum(len(units) for units in est._caps.units_seen.values()) == 30
    assert c.units_folded == 30
    clock.t = T0 + 3 * 3600  # every unit has left the longest window
    assert est.add(make_score("later", version="v2", instance="0", attempt=0, ended_at=clock.t))
    assert est.counters().units_folded == 30
    assert sum(len(units) for units in est._caps.units_seen.values()) == 1


def test_judges_past_max_judges_are_counted_as_other_and_the_fold_is_exported() -> None:
    """A judge id is a label value of the agreement families and a row in every bucket it graded in: past
    `max_judges` distinct ids in the longest window, the others are `other` (a producer writing a new id with
    every score would otherwise grow both without bound)."""
    est = Estimator(load_settings(exporter={"max_judges": 3, "windows": ["1h"]}), clock=Clock(T0 + 60))
    for i in range(10):
        score = make_score(
            f"c{i}",
            judge=f"openai:model-{i}:v1",
            judge_sampled=True,
            judge_outcome="complete",
            graded_by=["judge"],
            outcome_source="judge",
            automated={"graded_by": ["judge"], "outcome": "complete", "passed": True, "asr_credit": 1.0},
        )
        assert est.add(score)
    samples = [
        s
        for family in text_string_to_metric_families(Exposition(lambda: est).render().decode())
        for s in family.samples
    ]
    judged = {s.labels["judge"]: s.value for s in samples if s.name == "agentwatch_judged_conversations"}
    assert judged == {"openai:model-0:v1": 1, "openai:model-1:v1": 1, "openai:model-2:v1": 1, "other": 7}
    folded = {s.labels["label"]: s.value for s in samples if s.name == "agentwatch_labels_folded_total"}
    assert folded["judge"] == 7


def test_the_memo_of_estimates_over_units_keeps_large_histograms_within_its_items() -> None:
    """A window of 5,000 units (exporter.max_units) each of its own mean credit has a histogram of 5,000 items,
    new at every scrape while the window changes: 200 of them kept by entries alone (4,096) held 88 MB; the
    memo holds at most its items' worth."""
    summary._asr_over_units.cache_clear()

    def feed() -> None:
        for h in range(200):
            histogram = tuple(((h * 5000 + i) / 1e6, 1) for i in range(5000))
            summary._asr_over_units(histogram, 0.95, 10, 0)

    assert kept_by(feed) < 32 * 1024 * 1024
    summary._asr_over_units.cache_clear()


def test_the_memo_of_estimates_over_units_keeps_4096_histograms_of_a_normal_size() -> None:
    """Windows whose units have up to 8 attempts: 4,096 histograms of 40 (n, c) pairs are all remembered."""
    summary.over_units.cache_clear()
    for h in range(4096):
        pairs = tuple((n, c, 1 + h) for n in range(1, 9) for c in range(min(n, 4) + 1))[:40]
        first = summary.over_units(pairs, (1, 3), 0.95)
        assert summary.over_units(pairs, (1, 3), 0.95) is first
    assert summary.over_units.cache_info().currsize == 4096
    summary.over_units.cache_clear()


def test_a_unit_attempted_across_buckets_costs_each_bucket_an_entry_not_a_copy_of_its_instance() -> None:
    """500 units of 250-character instances (just under the 256 past which they are digests), each attempted in
    20 buckets: every bucket held the instance of the score that first put its unit there (296 bytes per (unit,
    bucket) entry); one string per instance, 154, as for short instances: within the 200 the docs plan for."""
    clock = Clock(T0)
    est = Estimator(load_settings(exporter={"windows": ["1h"], "max_conversations": 1000}), clock=clock)
    est.add(make_score("warm-up", instance="w", attempt=0))

    def feed() -> None:
        n = 0
        for b in range(20):
            clock.t = T0 + 60 * b + 1
            for u in range(500):
                n += 1
                score = make_score(f"c{n}", instance=f"{u:05d}" + "x" * 245, attempt=b, ended_at=clock.t)
                assert est.add(score)

    kept = kept_by(feed)
    entries = est._entries.count - 2  # the warm-up's, in the task series and task="*"
    assert entries == 2 * 20 * 500
    assert kept / entries < 200, kept / entries


def _judged(cid: str, rate: float, labelled: bool) -> ConversationScore:
    """A judged score recording judge rate `rate` and review rate `rate / 2`, in the review sample when
    `labelled` (with a person's label)."""
    return make_score(
        cid,
        judge="j",
        judge_sampled=True,
        judge_outcome="complete",
        graded_by=["judge"],
        outcome_source="judge",
        automated={"graded_by": ["judge"], "outcome": "complete", "passed": True, "asr_credit": 1.0},
        judge_rate=rate,
        review_rate=rate / 2,
        review_sampled=labelled,
        label="complete" if labelled else None,
    )


def test_scores_recording_sample_rates_of_their_own_hold_strata_within_max_sample_rates() -> None:
    """4,000 judged scores each recording rates of its own (a producer's): each pair was strata of the weighted
    estimates in the bucket and total of every window of both its series, 7.2 KB a score for as long as the
    windows held it (29.0 MB); past `max_sample_rates` (256) pairs a score weighs as one that records no rate,
    counted (2.4 MB)."""
    est = Estimator(load_settings(exporter={"max_conversations": 1000}), clock=Clock(T0 + 60))
    est.add(make_score("warm-up"))

    def feed() -> None:
        for i in range(4000):
            assert est.add(_judged(f"c{i}", 0.5 + i * 1e-6, i % 2 == 0))

    assert kept_by(feed) < 4 * 1024 * 1024
    assert est.counters().folded["rates"] == 4000 - 256
    total = est._series[("bot", "v1", "refund")].windows[0].total
    assert len(total.graded_by_probability()) == 256 + 1  # and 1: those weighed as recording no rate


def test_scores_recording_up_to_max_sample_rates_pairs_keep_their_weights() -> None:
    est = Estimator(load_settings(exporter={"windows": ["1h"]}), clock=Clock(T0 + 60))
    for i in range(256):
        assert est.add(_judged(f"c{i}", 2.0 ** (-i / 4), False))
    total = est._series[("bot", "v1", "refund")].windows[0].total
    assert sorted(total.graded_by_probability()) == sorted(2.0 ** (-i / 4) for i in range(256))
    assert est.counters().folded["rates"] == 0


def test_a_remembered_conversation_shares_its_failure_modes_strings() -> None:
    """2,000 failed conversations, each with reasons of 32 distinct 61-character failure modes (within
    max_failure_modes and max_label_length): each remembered conversation held its own copy of every mode,
    4,322 bytes a conversation (4.3 GB at max_conversations); one string per mode, 802."""
    est = Estimator(load_settings(), clock=Clock(T0 + 60))
    reasons = [f"m{j:02d}" + "x" * 58 + ": failed" for j in range(32)]
    est.add(make_score("warm-up", False, reasons=list(reasons)))

    def feed() -> None:
        for i in range(2000):
            assert est.add(make_score(f"c{i}", False, reasons=list(reasons)))

    assert kept_by(feed) / 2000 < 1200
    assert est.counters().folded["mode"] == 0
