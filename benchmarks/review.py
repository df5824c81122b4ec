"""Benchmark of the review service: store size per conversation, and page render times.

Prints figures, asserts nothing. Conversations are support conversations of `--turns` turns (one tool call per
turn, realistic texts), scored by the real scorer with a judge's verdict. The page times are of the ASGI app
in process (Starlette's test client: routing, store queries, template), without a network hop.
Usage: python -m benchmarks.review [--conversations 500] [--turns 5] [--page-turns 50] [--database-url URL]
"""

from __future__ import annotations

import argparse
import base64
import statistics
import tempfile
import time
from pathlib import Path

from starlette.testclient import TestClient

from agentwatch.config import load_settings
from agentwatch.review.metrics import ReviewStats
from agentwatch.review.store import Store
from agentwatch.review.web import ReviewApp
from agentwatch.wire.schema import Outcome
from tests.support.review import PASSWORD, conversation, judged, record, reviewers, scored


def calibration() -> float:
    """µs of `sum(range(1000))`, median of 200 (≈ 9.5 µs on a quiet machine)."""
    times = []
    for _ in range(200):
        t = time.perf_counter()
        sum(range(1000))
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def store_size(url: str | None, n: int, turns: int) -> None:
    """Bytes of the store per conversation (SQLite file, or PostgreSQL relations), with one label each."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "review.db"
        store = Store(url or f"sqlite:///{path}")
        now = time.time()
        payload = 0
        for i in range(n):
            conv = conversation(f"size-{i}", turns=turns)
            rec = record(conv, scored(conv, verdict=judged()))
            payload += len(rec.model_dump_json())
            store.ingest(rec, now, 86400)
        t = time.perf_counter()
        for item in store.queue(limit=n)[0]:
            store.save_label(
                item.id, "alice", Outcome.COMPLETE, "checked against the order system", True, now
            )
        label_ms = (time.perf_counter() - t) * 1000 / n
        if url is None:
            with store.engine.connect() as c:
                c.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            size = path.stat().st_size
            where = "SQLite file"
        else:
            with store.engine.connect() as c:
                size = sum(
                    c.exec_driver_sql(f"SELECT pg_total_relation_size('{t}')").scalar_one()
                    for t in ("review_conversations", "review_labels", "review_outbox")
                )
            where = "PostgreSQL tables with indexes and TOAST"
        store.close()
    print(
        f"store: {n} conversations of {turns} turns, one label each: "
        f"{size / n / 1024:.1f} KiB per conversation "
        f"({where}; the transcript record itself is {payload / n / 1024:.1f} KiB of JSON); "
        f"saving a label (with its outbox rows) {label_ms:.2f} ms"
    )


def page_times(turns: int, repeats: int) -> None:
    """Median render time of a conversation page of `turns` turns and of a queue page of 100 conversations."""
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(
            review={"database_url": f"sqlite:///{Path(tmp) / 'review.db'}", "reviewers": reviewers()}
        )
        store = Store(settings.review.database_url)
        now = time.time()
        big = conversation("fifty", turns=turns)
        store.ingest(record(big, scored(big, verdict=judged())), now, 86400)
        for i in range(120):
            conv = conversation(f"q{i}", turns=3)
            store.ingest(record(conv, scored(conv, verdict=judged())), now, 86400)
        web = ReviewApp(store, settings.review, ReviewStats())
        auth = {"Authorization": "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()}
        with TestClient(web.app) as client:
            client.post("/login", data={"csrf": "x"})  # warm the app up
            page = client.get("/login")
            csrf = page.text.split('name="csrf" value="')[1].split('"')[0]
            client.post("/login", data={"csrf": csrf, "name": "alice", "secret": PASSWORD})
            for name, path in ((f"conversation page, {turns} turns", "/c/1"), ("queue page, 100 rows", "/")):
                times, size = [], 0
                for _ in range(repeats):
                    t = time.perf_counter()
                    r = client.get(path)
                    times.append(time.perf_counter() - t)
                    size = len(r.content)
                    assert r.status_code == 200, r.status_code
                print(
                    f"{name}: {statistics.median(times) * 1000:.1f} ms median of {repeats} "
                    f"(min {min(times) * 1000:.1f}), {size / 1024:.0f} KiB of HTML"
                )
            t = time.perf_counter()
            assert client.get("/", headers=auth).status_code == 200
            print(
                "a read with HTTP basic auth (scrypt check of the password): "
                f"{(time.perf_counter() - t) * 1000:.0f} ms "
                "(test cost n=2^12; the production cost n=2^15 takes about 8× longer)"
            )
        store.close()


def main() -> None:
    """Parse arguments and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=500)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--page-turns", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--database-url", default=None, help="a PostgreSQL URL to size instead of SQLite")
    args = parser.parse_args()
    print(f"calibration: sum(range(1000)) {calibration():.1f} µs")
    store_size(args.database_url, args.conversations, args.turns)
    page_times(args.page_turns, args.repeats)


if __name__ == "__main__":
    main()
