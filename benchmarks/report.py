"""Benchmark the statistics and the offline report: timings of each estimator, of `build_report`, and the size
and render time of the HTML report.

Usage: python -m benchmarks.report [--n 50000] [--html 2000] [--no-browser]

The HTML figures come from real agent conversations: the τ-bench airline run in ../shared/data/agent-benchmark (100 conversations,
imported with its task policies) repeated to `--html` conversations with distinct ids and task instances,
scored, and rendered with every failing conversation listed and its transcript carried; the page is then opened
in Chromium (Playwright, Debian's chromium) and the time to its load event, to a task's list and to a
conversation's reasons is measured. Prints figures; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from agentwatch.config import Settings, load_settings
from agentwatch.report.build import build_report
from agentwatch.report.cases import CaseKeeper
from agentwatch.report.text import render_text
from agentwatch.stats.beta import posterior, regression_probability
from agentwatch.stats.bootstrap import bootstrap_mean_interval
from agentwatch.stats.pass_k import pass_at_k_unbiased, pass_pow_k_unbiased
from agentwatch.wire.schema import Conversation, ConversationScore, Outcome, OutcomeSource
from agentwatch.wire.transcript_keys import UnknownKeys
from agentwatch.wire.transcripts import iter_conversations
from tests.support import published_runs

OUTCOMES = ["complete"] * 6 + [
    "partial_correct",
    "partial_incorrect",
    "hallucinated",
    "abandoned",
    "unscored",
]


def timed(label: str, fn, repeat: int = 1) -> None:
    """Run fn `repeat` times and print the mean wall time."""
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    per = (time.perf_counter() - start) / repeat
    print(f"{label:<58} {per * 1e3:10.3f} ms")


def scores(n: int) -> list[ConversationScore]:
    """n synthetic scores over 20 tasks, 2 tags."""
    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        outcome = OUTCOMES[int(rng.integers(len(OUTCOMES)))]
        passed = None if outcome == "unscored" else outcome == "complete"
        out.append(
            ConversationScore(
                conversation_id=str(i),
                agent="bot",
                version="1",
                task=f"task{i % 20}",
                tags={"category": ["core", "edge"][i % 2], "difficulty": ["easy", "medium", "hard"][i % 3]},
                turns=2,
                passed=passed,
                outcome=Outcome(outcome),
                outcome_source=OutcomeSource.RULES,
                reasons=[] if passed else ["answer: turn 0: low"],
                cost_usd=float(rng.gamma(2.0, 0.05)),
                budget_usd=0.2,
                asr_credit=None if passed is None else float(passed),
            )
        )
    return out


def html_report(n: int, browser: bool = True) -> None:
    """Size, render time and opening time in Chromium of the HTML report of `n` real conversations (the
    τ-bench run, repeated), every failing conversation listed and carried."""
    from agentwatch.report.html import render_html
    from agentwatch.scorers import ConversationScorer

    with tempfile.TemporaryDirectory() as tmp:
        source = published_runs.locate(published_runs.AIRLINE)
        subprocess.run(
            [sys.executable, "-m", "agentwatch", "import", "tau-bench", str(source), "--out", tmp],
            check=True,
            capture_output=True,
        )
        lines = [json.loads(line) for line in (Path(tmp) / "transcripts.jsonl").read_text().splitlines()]
        settings = load_settings(Path(tmp) / "policies.yaml")
    scorer = ConversationScorer(settings)
    keeper = CaseKeeper()
    scores = []
    offer = 0.0
    start = time.perf_counter()
    for i in range(n):
        line = dict(lines[i % len(lines)])
        rep = i // len(lines)
        line["conversation_id"] = f"{line['conversation_id']}/rep-{rep}"
        line["instance"] = f"{line.get('instance')}/rep-{rep}"
        conv = Conversation.model_validate(line)
        score = scorer.score(conv)
        t = time.perf_counter()
        keeper.offer(conv, score)
        offer += time.perf_counter() - t
        scores.append(score)
    elapsed = time.perf_counter() - start
    print(f"{'score ' + str(n) + ' τ-bench conversations':<58} {elapsed * 1e3:10.1f} ms")
    print(f"{'  of which keeping the failing transcripts (render, gzip)':<58} {offer * 1e3:10.1f} ms")
    start = time.perf_counter()
    report = build_report(scores, settings)
    print(f"{'build_report':<58} {(time.perf_counter() - start) * 1e3:10.1f} ms")
    start = time.perf_counter()
    page = render_html(report, settings, cases=keeper)
    elapsed = time.perf_counter() - start
    failing = len(keeper.entries)
    carried = failing - keeper.not_carried
    print(f"{'render_html (2 plots)':<58} {elapsed * 1e3:10.1f} ms")
    print(
        f"{'failing conversations listed / transcripts carried':<58} {failing:>6,} / {carried:,} "
        f"({len(keeper.chunks)} chunks, {keeper.carried_bytes / 1024:,.0f} KiB compressed, "
        f"{keeper.rendered_bytes / 1024:,.0f} KiB as HTML)"
    )
    print(f"{'HTML report size':<58} {len(page.encode()) / 1024:10.0f} KiB")
    if browser:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "report.html"
            path.write_text(page, encoding="utf-8")
            open_in_chromium(path)


def open_in_chromium(path: Path, runs: int = 3) -> None:
    """Open the page in Chromium (Playwright, Debian's chromium): the load event, then a task's list of failing
    conversations, then its first conversation's reasons (its chunk decompressed). Medians of `runs`."""
    import shutil
    import statistics

    from playwright.sync_api import sync_playwright

    loads, lists, opens = [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        try:
            for _ in range(runs):
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto(path.as_uri())
                loads.append(page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd"))
                link = page.locator("#by-task a.failing").first
                start = time.perf_counter()
                href = link.get_attribute("href") or "#"
                link.click()
                target = page.locator(f"[id='{href[1:]}']")
                conv = target.locator("details.conv").first
                conv.wait_for()
                lists.append(time.perf_counter() - start)
                start = time.perf_counter()
                conv.locator("summary").click()
                conv.locator("ul.reasons").first.wait_for(state="visible")
                opens.append(time.perf_counter() - start)
                page.close()
        finally:
            browser.close()
    print(
        f"{'Chromium: page loaded (load event, median of ' + str(runs) + ')':<58} {statistics.median(loads):10.0f} ms"
    )
    print(f"{'Chromium: a task row clicked to its list shown':<58} {statistics.median(lists) * 1e3:10.0f} ms")
    print(
        f"{'Chromium: a conversation clicked to its reasons shown':<58} {statistics.median(opens) * 1e3:10.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--html", type=int, default=2_000, help="conversations in the HTML report (0: skip)")
    parser.add_argument("--no-browser", action="store_true", help="do not open the HTML report in Chromium")
    parser.add_argument("--html-only", action="store_true", help="only the HTML report's figures")
    args = parser.parse_args()
    timed("calibration: sum(range(1000)) (this machine's speed swings)", lambda: sum(range(1000)), 1000)
    if args.html:
        html_report(args.html, browser=not args.no_browser)
    if args.html_only:
        return

    timed("pass_at_k_unbiased(n=1e6, c=5e5, k=10)", lambda: pass_at_k_unbiased(10**6, 500_000, 10), 1000)
    timed(
        "pass_pow_k_unbiased(n=1e6, c=9e5, k=1e5)", lambda: pass_pow_k_unbiased(10**6, 900_000, 100_000), 20
    )
    post = posterior(1000, 700)
    timed(
        "BetaPosterior: mean + interval of pass^3 and pass@3",
        lambda: (post.pass_pow_k_mean(3), post.pass_pow_k_interval(3), post.pass_at_k_interval(3)),
        200,
    )
    new, base = posterior(200, 150), posterior(200, 170)
    timed(
        "regression_probability(n=200, k=3, margin=0.05)",
        lambda: regression_probability(new, base, 3, 0.05),
        20,
    )
    big_new, big_base = posterior(10**6, 600_000), posterior(10**6, 601_000)
    timed(
        "regression_probability(n=1e6, k=3, margin=0)",
        lambda: regression_probability(big_new, big_base, 3, 0),
        5,
    )
    values = np.random.default_rng(1).uniform(size=10_000)
    timed("bootstrap_mean_interval(10k values, 1000 resamples)", lambda: bootstrap_mean_interval(values), 3)

    data = scores(args.n)
    settings = Settings()
    report = None

    def build() -> None:
        nonlocal report
        report = build_report(data, settings)

    timed(f"build_report({args.n} scores, 20 tasks, 5 tag groups)", build)
    built = report
    assert built is not None
    timed("render_text", lambda: render_text(built))

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.jsonl.gz"
        line = {
            "conversation_id": "x",
            "task": "t",
            "turns": [
                {
                    "input": "hi",
                    "answer": "hello",
                    "tool_calls": [{"name": "lookup", "arguments": {"id": 1}, "result": {"ok": True}}],
                }
            ],
        }
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            for i in range(args.n):
                line["conversation_id"] = str(i)
                fh.write(json.dumps(line) + "\n")
        for label, unknown in (
            ("read gzip transcripts", None),
            ("read gzip transcripts, unknown keys checked (score)", UnknownKeys()),
        ):
            start = time.perf_counter()
            count = sum(1 for _ in iter_conversations(path, [], unknown=unknown))
            elapsed = time.perf_counter() - start
            print(f"{label:<58} {count / elapsed:10.0f} conversations/s")


if __name__ == "__main__":
    main()
