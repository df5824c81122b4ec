"""The review service under a flood of wrong passwords: RSS, /healthz latency, and the rate of password guesses.

Run: `python -m benchmarks.review_flood [--requests 200] [--concurrency 64] [--guess-seconds 10]`. Prints
figures; asserts nothing. `agentwatch review` runs as its own process (a real broker, SQLite, uvicorn on
loopback) with a password hashed at the production cost (scrypt N=2^15: 32 MiB and ~0.1 s a check):

* the flood: `--requests` GET / with a wrong HTTP Basic password, `--concurrency` at a time, while /healthz is
  read every 50 ms and the process's RSS sampled every 20 ms;
* guessing: wrong passwords through the sign-in form, one after another for `--guess-seconds`, from a fresh
  service: how many reached a password check (401) and how many were refused before it (429).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from agentwatch.kafka.broker import EmbeddedBroker
from tests.support.review_flood import flood, guesses, start_review


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--guess-seconds", type=float, default=10.0)
    args = parser.parse_args()
    broker = EmbeddedBroker().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            service = start_review(broker.bootstrap_servers, Path(tmp))
            try:
                r = flood(service, args.requests, args.concurrency)
            finally:
                service.stop()
            print(
                f"flood of {args.requests} wrong Basic passwords, {args.concurrency} at a time: "
                f"{dict(sorted(r.statuses.items()))} in {r.seconds:.1f} s"
            )
            print(
                f"  RSS: before {r.rss_before:.0f} MiB, peak {r.rss_peak:.0f} MiB, after {r.rss_after:.0f} MiB"
            )
            print(f"  /healthz during the flood: {r.health_summary()}")
            (Path(tmp) / "guess").mkdir()
            service = start_review(broker.bootstrap_servers, Path(tmp) / "guess")
            try:
                statuses = guesses(service, args.guess_seconds)
            finally:
                service.stop()
            checked = statuses.get(401, 0)
            print(
                f"password guessing through the form for {args.guess_seconds:g} s: {sum(statuses.values())} "
                f"attempts, {checked} checked ({checked / args.guess_seconds:.2f} guesses/s), "
                f"{statuses.get(429, 0)} refused before hashing (429)"
            )
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
