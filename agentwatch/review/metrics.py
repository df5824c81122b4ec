"""The review service's counters and its /metrics families (queue size per series, labels saved, Kafka)."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from agentwatch.review.connection_guard import CLOSE_REASONS
from agentwatch.review.outage import PARTS, StoreHealth
from agentwatch.review.queries import OUTCOMES
from agentwatch.review.store import Store
from agentwatch.stats.agreement import kappa as cohen_kappa

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ReviewStats:
    """What the service did since it started; updated by the pages, the ingest loop and the publisher."""

    labels_saved: dict[str, int] = field(default_factory=dict)  # outcome -> labels
    ingested: dict[str, int] = field(default_factory=dict)  # store result (stored, duplicate, …) or `invalid`
    published: dict[str, int] = field(default_factory=dict)  # topic kind (scores, labels) -> records
    publish_failures: int = 0
    expired: int = 0
    signins: dict[tuple[str, str], int] = field(default_factory=dict)  # (method, result) -> attempts
    refused: dict[str, int] = field(default_factory=dict)  # read / write
    closed: dict[str, int] = field(default_factory=dict)  # connections the guard closed, by reason
    store: StoreHealth = field(default_factory=StoreHealth)  # store errors met, and which loops are failing
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _add(self, counts: dict[str, int], key: str, n: int = 1) -> None:
        with self.lock:
            counts[key] = counts.get(key, 0) + n

    def count_label(self, outcome: str) -> None:
        """One label saved."""
        self._add(self.labels_saved, outcome)

    def count_ingest(self, result: str) -> None:
        """One transcript-topic record read, by what the store did with it."""
        self._add(self.ingested, result)

    def count_published(self, kind: str, n: int) -> None:
        """Records Kafka acknowledged."""
        self._add(self.published, kind, n)

    def count_signin(self, method: str, result: str) -> None:
        """One sign-in attempt by `method` (form, basic, bearer, header) and its `result` (ok, failed,
        throttled: refused before any check; busy: no password-check slot)."""
        with self.lock:
            key = (method, result)
            self.signins[key] = self.signins.get(key, 0) + 1

    def count_refused(self, what: str) -> None:
        """One request refused for want of a sign-in (read) or of a session with its CSRF token (write)."""
        self._add(self.refused, what)

    def count_closed(self, reason: str) -> None:
        """One connection closed by the service's guard (`review.connection_guard`), by reason."""
        self._add(self.closed, reason)


class ReviewMetrics(Collector):
    """Yields the `agentwatch_review_*` families: store counts read at each scrape, and `ReviewStats`."""

    def __init__(self, store: Store, stats: ReviewStats, sessions: Callable[[], int] | None = None) -> None:
        self._store = store
        self._stats = stats
        self._sessions = sessions  # sessions alive now (read from the store at each scrape)

    def collect(self) -> Iterator[Metric]:
        """Fresh families."""
        s = self._stats
        with s.lock:
            saved, ingested, published = dict(s.labels_saved), dict(s.ingested), dict(s.published)
            signins, refused, closed = dict(s.signins), dict(s.refused), dict(s.closed)
        queue = GaugeMetricFamily(
            "agentwatch_review_queue",
            "Conversations waiting for a label, by series "
            "and sample (review_sample: blind; flagged: by a person).",
            labels=["agent", "version", "task", "sample"],
        )
        try:
            for agent, version, task, sample, n in self._store.queue_sizes():
                queue.add_metric([agent, version, task, sample], n)
            pending = self._store.pending()
            pairs = self._store.judge_pairs()
            alive = self._sessions() if self._sessions is not None else None
        except Exception:  # noqa: BLE001 - a scrape must not fail because the database is away
            log.exception("review store unreachable while collecting metrics")
            pending, pairs, alive = None, None, None
        yield queue
        if pairs is not None:
            yield from _agreement(pairs)
        yield _by(
            "agentwatch_review_labels_saved",
            "Labels saved by reviewers, by outcome class.",
            "outcome",
            saved,
            OUTCOMES,
        )
        yield _by(
            "agentwatch_review_records",
            "Transcripts-topic records read, by result (stored, "
            "duplicate, revised, answered, unknown, expired, invalid).",
            "result",
            ingested,
            sorted(ingested),
        )
        yield _by(
            "agentwatch_review_published",
            "Records Kafka acknowledged: revised scores and label records.",
            "topic",
            published,
            ("scores", "labels"),
        )
        if pending is not None:
            yield GaugeMetricFamily(
                "agentwatch_review_publish_pending",
                "Revised scores and label records saved but not yet acknowledged by Kafka.",
                value=pending,
            )
        yield CounterMetricFamily(
            "agentwatch_review_publish_failures",
            "Attempts to publish that Kafka did not acknowledge (retried).",
            value=s.publish_failures,
        )
        yield CounterMetricFamily(
            "agentwatch_review_expired",
            "Conversations deleted by retention (review.retention_days).",
            value=s.expired,
        )
        attempts = CounterMetricFamily(
            "agentwatch_review_signins",
            "Sign-in attempts by method (form, basic, bearer, header) and result (ok; failed: wrong name or "
            "secret; throttled: refused before any check, the client or name backs off; busy: no "
            "password-check slot free).",
            labels=["method", "result"],
        )
        for method in ("form", "basic", "bearer"):
            for result in ("ok", "failed", "throttled", "busy"):
                attempts.add_metric([method, result], signins.get((method, result), 0))
        for (method, result), n in sorted(signins.items()):
            if method not in ("form", "basic", "bearer"):
                attempts.add_metric([method, result], n)
        yield attempts
        if alive is not None:
            yield GaugeMetricFamily(
                "agentwatch_review_sessions", "Signed-in sessions alive in the store.", value=alive
            )
        yield _by(
            "agentwatch_review_refused",
            "Requests refused: read (no sign-in) or write (no session or CSRF token).",
            "kind",
            refused,
            ("read", "write"),
        )
        store_errors = s.store.counts()
        yield _by(
            "agentwatch_review_store_errors",
            "Store errors met (database away, locked, full or read-only), by part: ingest, publish, retention "
            "(retried every review.publish_retry_s or at the next interval), page (answered 503).",
            "part",
            store_errors,
            PARTS,
        )
        yield _by(
            "agentwatch_review_connections_closed",
            "Connections the service closed: slow_request (no whole request in time), unread_responses (the "
            "client read none of its answers in time), per_client (one address over "
            "review.max_connections_per_client).",
            "reason",
            closed,
            CLOSE_REASONS,
        )


def _agreement(pairs: list[tuple[str, str, str, str, int]]) -> Iterator[Metric]:
    """People against the judge, per judge and sample: labels that agree with its class, and Cohen's κ."""
    labelled = GaugeMetricFamily(
        "agentwatch_review_judge_labels",
        "Conversations a judge graded and a person labelled, each by its first label (review sample: its "
        "first blind one), by whether the person's outcome class is the judge's (agree, disagree); "
        "sample=review_sample is the blind random one.",
        labels=["judge", "sample", "agreement"],
    )
    kappa = GaugeMetricFamily(
        "agentwatch_review_judge_kappa",
        "Cohen's kappa between the people's and the judge's outcome classes "
        "over those labels (absent while undefined).",
        labels=["judge", "sample"],
    )
    index = {o: i for i, o in enumerate(OUTCOMES)}
    tables: dict[tuple[str, str], list[list[int]]] = {}
    for judge, sample, outcome, judged, n in pairs:
        if outcome not in index or judged not in index:
            continue  # an unscored verdict or label: no class to agree on
        m = tables.setdefault((judge, sample), [[0] * len(OUTCOMES) for _ in OUTCOMES])
        m[index[outcome]][index[judged]] += n
    for (judge, sample), m in sorted(tables.items()):
        agree = sum(m[i][i] for i in range(len(OUTCOMES)))
        total = sum(map(sum, m))
        labelled.add_metric([judge, sample, "agree"], agree)
        labelled.add_metric([judge, sample, "disagree"], total - agree)
        k = cohen_kappa(np.array(m))
        if not math.isnan(k):
            kappa.add_metric([judge, sample], k)
    yield labelled
    yield kappa


def _by(name: str, doc: str, label: str, counts: dict[str, int], keys: Iterable[str]) -> CounterMetricFamily:
    """A counter family with one sample per key (zeros included)."""
    fam = CounterMetricFamily(name, doc, labels=[label])
    for key in keys:
        fam.add_metric([key], counts.get(key, 0))
    return fam
