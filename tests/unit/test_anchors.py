"""Judge drift told apart from agent drift: a frozen anchor set judged again by a stand-in judge (a local
OpenAI-compatible server) whose behaviour changes; the comparison's statistics against independent
computations; the anchor job's schedule, its reaction to a new judge id and its /metrics."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
import yaml
from sklearn.metrics import cohen_kappa_score
from typer.testing import CliRunner, Result

from agentwatch.cli import app
from agentwatch.config import load_settings
from agentwatch.judge import anchors as anchors_module
from agentwatch.judge.anchor_service import AnchorJob, serve_metrics
from agentwatch.judge.anchors import AnchorsFileError, compare, paired_shift, read_anchors
from agentwatch.judge.verdict import JudgeVerdict
from agentwatch.review.store import Store
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.review_records import TranscriptRecord
from agentwatch.wire.schema import Conversation, Outcome, Turn
from tests.support.fake_openai import FakeOpenAI, verdict_reply
from tests.support.metrics_reference import scrape

cli = CliRunner()


class StandIn:
    """A stand-in judge: strict (passes what the plan marked [J1]) until `lenient` (then passes all)."""

    def __init__(self) -> None:
        self.lenient = False

    def __call__(self, body: dict) -> dict:
        text = json.dumps(body.get("messages") or [])
        if self.lenient or "[J1]" in text:
            return verdict_reply("complete", 0.9, "answers the question")
        return verdict_reply("partial_incorrect", 0.2, "does not answer")


def _labels_file(path: Path, n: int = 80) -> list[dict]:
    """Labelled conversations: 60% succeed; the strict judge agrees with the label on 90% of them."""
    rng = np.random.default_rng(4)
    rows = []
    with path.open("w") as fh:
        for i in range(n):
            right = bool(rng.random() < 0.6)
            agrees = bool(rng.random() < 0.9)
            marker = "[J1]" if right == agrees else "[J0]"
            row = {
                "conversation_id": f"anchor-{i}",
                "agent": "helpdesk",
                "version": "2.0",
                "outcome": "complete" if right else "partial_incorrect",
                "turns": [{"input": f"Where is order {i}?", "answer": f"It ships Monday. {marker}"}],
            }
            rows.append(row)
            fh.write(json.dumps(row) + "\n")
    return rows


def _freeze(labels: Path, anchors: Path, config: Path) -> Result:
    """`agentwatch judge anchors freeze` from a labels file."""
    args = ["judge", "anchors", "freeze", "--from-labels", str(labels), "--out", str(anchors), "--config"]
    return cli.invoke(app, [*args, str(config)])


def _config(path: Path, server: FakeOpenAI, anchors: Path, model: str = "gpt-4o-mini") -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "judge": {
                    "base_url": server.base_url,
                    "model": model,
                    "timeout_s": 10,
                    "concurrency": 4,
                    "api_key_env": "AGENTWATCH_TEST_JUDGE_KEY",
                },
                "anchors": {"path": str(anchors), "interval_s": 3600, "check_interval_s": 0.1},
                "review": {"database_url": f"sqlite:///{path.parent / 'review.db'}"},
            }
        )
    )
    return path


def test_paired_shift_interval_covers_at_known_shifts() -> None:
    """Simulated paired pass/fail at known shifts of the pass rate (`up`: anchors that now pass and did not,
    `down`: the other way): the Bonett–Price interval covers at least 94%, up to 99% when few verdicts flip
    (conservative: a drift alarm then errs towards silence)."""
    rng = np.random.default_rng(9)
    for n, up, down in (
        (50, 0.05, 0.05),
        (50, 0.0, 0.1),
        (100, 0.15, 0.02),
        (200, 0.0, 0.1),
        (30, 0.1, 0.0),
        (200, 0.3, 0.1),
    ):
        truth, covered, reps = up - down, 0, 2000
        for _ in range(reps):
            u = rng.random(n)
            ups = int(np.sum(u < up))
            downs = int(np.sum((u >= up) & (u < up + down)))
            shift, lo, hi = paired_shift(ups, downs, n)
            assert shift == pytest.approx((ups - downs) / n)
            covered += lo <= truth <= hi
        assert 0.94 <= covered / reps <= 0.995, (n, up, down, covered / reps)


def test_comparison_statistics_against_sklearn_and_counts() -> None:
    labels = ["complete"] * 6 + ["partial_incorrect"] * 4
    frozen = ["complete"] * 5 + ["partial_incorrect"] * 5
    now = ["complete"] * 8 + ["partial_incorrect"] * 2
    from agentwatch.judge.anchors import Anchor, FrozenVerdict

    anchors = [
        Anchor(
            conversation=Conversation(conversation_id=f"a{i}"),
            label=Outcome(label),
            frozen=FrozenVerdict(judge="j:old:v1", outcome=Outcome(f), score=0.5),
            frozen_at=datetime(2026, 1, 1, tzinfo=UTC),
        )
        for i, (label, f) in enumerate(zip(labels, frozen, strict=True))
    ]
    verdicts = [JudgeVerdict.graded(v, 0.5, judge_id="j:new:v1") for v in now]
    verdicts[9] = JudgeVerdict.failed("judge_timeout")
    c = compare(anchors, verdicts, "j:new:v1")
    keep = slice(0, 9)
    assert (c.judged, c.failures, c.anchors) == (9, 1, 10)
    assert c.agreement == pytest.approx(
        np.mean([a == b for a, b in zip(now[keep], frozen[keep], strict=True)])
    )
    assert c.kappa_now == pytest.approx(cohen_kappa_score(labels[keep], now[keep]))
    assert c.kappa_frozen == pytest.approx(cohen_kappa_score(labels[keep], frozen[keep]))
    assert c.agreement_kappa == pytest.approx(cohen_kappa_score(now[keep], frozen[keep]))
    assert c.shift == pytest.approx(8 / 9 - 5 / 9) and c.frozen_judge == "j:old:v1"


def test_bad_anchor_files_fail_with_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "anchors.jsonl"
    bad.write_text('{"conversation": {"conversation_id": "x"}, "label": "complete"}\n')
    with pytest.raises(AnchorsFileError, match=r"anchors.jsonl:1: frozen: Field required"):
        read_anchors(bad)
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(AnchorsFileError, match="no anchor"):
        read_anchors(tmp_path / "empty.jsonl")


def _anchor_line(cid: str, label: str = "complete", frozen: str = "complete", score: str = "0.5") -> str:
    """One anchor line as `freeze` writes it; `score` as JSON text (NaN and Infinity are Python's)."""
    conv = json.dumps({"conversation_id": cid})
    verdict = f'{{"judge": "j:m:v1", "outcome": "{frozen}", "score": {score}}}'
    return (
        f'{{"conversation": {conv}, "label": "{label}", "frozen": {verdict}, '
        '"frozen_at": "2026-01-01T00:00:00Z"}\n'
    )


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (
            [_anchor_line("a"), _anchor_line("b"), _anchor_line("a")],
            r"anchors.jsonl:3: conversation 'a' is already the anchor of line 1",
        ),
        (
            [_anchor_line("a"), _anchor_line("b", frozen="unscored")],
            r"anchors.jsonl:2: frozen.outcome: .*not unscored",
        ),
        ([_anchor_line("a", score="NaN")], r"anchors.jsonl:1: frozen.score: Input should be a finite number"),
        (
            [_anchor_line("a", score="Infinity")],
            r"anchors.jsonl:1: frozen.score: Input should be a finite number",
        ),
        ([_anchor_line("a"), "not json\n", _anchor_line("b")], r"anchors.jsonl:2: .*Invalid JSON"),
        ([_anchor_line("a"), b"\xff\xfe\n"], r"anchors.jsonl:2: "),  # not UTF-8
    ],
)
def test_an_anchor_file_with_a_bad_line_fails_naming_it(
    tmp_path: Path, lines: list[str | bytes], message: str
) -> None:
    """A duplicate conversation (it would weigh twice), an unscored frozen verdict (every run failed on it),
    a score that is no number, a line that is not JSON: the set is refused at start, naming the line."""
    path = tmp_path / "anchors.jsonl"
    path.write_bytes(b"".join(x if isinstance(x, bytes) else x.encode() for x in lines))
    with pytest.raises(AnchorsFileError, match=message):
        read_anchors(path)


def test_a_huge_anchor_file_or_line_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file past MAX_FILE_BYTES is refused from its size, a line past MAX_LINE_BYTES without being held."""
    huge = tmp_path / "huge.jsonl"
    with huge.open("wb") as fh:  # sparse: no disk, and a reader that read it whole would hold 300 MiB
        fh.truncate(anchors_module.MAX_FILE_BYTES + 1)
    with pytest.raises(AnchorsFileError, match=r"huge.jsonl: \d+ bytes, more than an anchor set's 256 MiB"):
        read_anchors(huge)
    monkeypatch.setattr(anchors_module, "MAX_LINE_BYTES", 4096)
    long = tmp_path / "long.jsonl"
    long.write_text(_anchor_line("a") + _anchor_line("b" * 8000) + _anchor_line("c"))
    with pytest.raises(AnchorsFileError, match=r"long.jsonl:2: line longer than 4096 bytes"):
        read_anchors(long)


def test_a_judge_that_turns_lenient_on_the_anchors_is_judge_drift(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    _labels_file(labels)
    anchors = tmp_path / "anchors.jsonl"
    judge = StandIn()
    with FakeOpenAI(judge) as server:
        config = _config(tmp_path / "agentwatch.yaml", server, anchors)
        frozen = _freeze(labels, anchors, config)
        assert frozen.exit_code == 0, frozen.output
        assert "80 anchors frozen with the verdicts of openai:gpt-4o-mini:v1" in frozen.output
        steady = cli.invoke(app, ["judge", "anchors", "run", "--config", str(config), "--json"])
        assert steady.exit_code == 0, steady.output
        same = json.loads(steady.output)
        assert same["drift"] is False and same["agreement"] == 1.0 and same["shift"] == 0.0
        judge.lenient = True  # the same name, model and rubric; the verdicts moved
        moved = cli.invoke(app, ["judge", "anchors", "run", "--config", str(config), "--json"])
        assert moved.exit_code == 1, moved.output
        drift = json.loads(moved.output)
        assert drift["drift"] is True and drift["shift_lower"] > 0 and drift["pass_rate_now"] == 1.0
        assert drift["kappa_now"] < drift["kappa_frozen"]
        assert len(server.requests) == 3 * 80  # no verdict cache: every run is a real call per anchor


def test_a_freeze_that_cannot_write_its_file_says_so(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    _labels_file(labels, 4)
    with FakeOpenAI(StandIn()) as server:
        config = _config(tmp_path / "agentwatch.yaml", server, tmp_path / "anchors.jsonl")
        result = _freeze(labels, tmp_path / "no-such-dir" / "anchors.jsonl", config)
    assert result.exit_code == 2, result.output
    assert "cannot write the anchor set to" in result.output and "No such file or directory" in result.output


def test_a_conversation_labelled_twice_is_frozen_once(tmp_path: Path) -> None:
    """Two lines labelling the same conversation: the first label is anchored, the set is one `run` takes."""
    labels = tmp_path / "labels.jsonl"
    rows = _labels_file(labels, 6)
    with labels.open("a") as fh:
        fh.write(json.dumps({**rows[2], "outcome": "abandoned"}) + "\n")
    anchors = tmp_path / "anchors.jsonl"
    with FakeOpenAI(StandIn()) as server:
        config = _config(tmp_path / "agentwatch.yaml", server, anchors)
        result = _freeze(labels, anchors, config)
        assert result.exit_code == 0, result.output
        assert len(server.requests) == 6
        assert "1 lines of" in result.output and "the first label of each is used" in result.output
        frozen = read_anchors(anchors)
        assert [a.conversation.conversation_id for a in frozen] == [f"anchor-{i}" for i in range(6)]
        assert frozen[2].label == Outcome(rows[2]["outcome"])
        run = cli.invoke(app, ["judge", "anchors", "run", "--config", str(config)])
        assert run.exit_code == 0, run.output


def test_the_job_runs_at_start_and_again_when_the_judge_changes_and_serves_drift(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    _labels_file(labels, 40)
    anchors = tmp_path / "anchors.jsonl"
    judge = StandIn()
    with FakeOpenAI(judge) as server:
        config = _config(tmp_path / "agentwatch.yaml", server, anchors)
        assert _freeze(labels, anchors, config).exit_code == 0
        job = AnchorJob(load_settings(config), config)
        metrics = serve_metrics(job, 0, "127.0.0.1")
        stop = threading.Event()
        thread = threading.Thread(target=job.serve, args=(stop,), daemon=True)
        thread.start()
        try:
            _wait(lambda: job.state.runs["ok"] == 1)
            first = scrape(metrics.port)
            key = (
                "agentwatch_judge_drift",
                (("frozen_judge", "openai:gpt-4o-mini:v1"), ("judge", "openai:gpt-4o-mini:v1")),
            )
            assert first[key] == 0.0
            # a new model behind the judge: the job judges the anchors at once, not at the next hour
            judge.lenient = True
            time.sleep(0.05)
            _config(config, server, anchors, model="gpt-4.1-mini")
            _wait(lambda: job.state.runs["ok"] == 2)
            second = scrape(metrics.port)
            moved = (
                "agentwatch_judge_drift",
                (("frozen_judge", "openai:gpt-4o-mini:v1"), ("judge", "openai:gpt-4.1-mini:v1")),
            )
            assert second[moved] == 1.0
            assert not any(
                n == "agentwatch_judge_drift" and dict(ls)["judge"] == "openai:gpt-4o-mini:v1"
                for n, ls in second
            )  # only the judge in force is shown
            shift = {
                dict(ls)["stat"]: v
                for (n, ls), v in second.items()
                if n == "agentwatch_anchor_pass_rate_shift"
            }
            assert shift["lower"] > 0 and shift["mean"] > 0
            assert second[("agentwatch_anchor_runs_total", (("result", "ok"),))] == 2.0
        finally:
            stop.set()
            thread.join(10)
            metrics.stop()


def test_anchors_frozen_from_the_review_store_take_its_blind_labels(tmp_path: Path) -> None:
    judge = StandIn()
    with FakeOpenAI(judge) as server:
        config = _config(tmp_path / "agentwatch.yaml", server, tmp_path / "anchors.jsonl")
        settings = load_settings(config, sampling={"review_rate": 1.0})
        store = Store(settings.review.database_url)
        try:
            scorer = ConversationScorer(settings)
            for i, marker in enumerate(("[J1]", "[J0]", "[J1]")):
                conv = Conversation(
                    conversation_id=f"r{i}",
                    agent="a",
                    turns=[Turn(input=f"q{i}", answer=f"It ships Monday. {marker}")],
                )
                record = TranscriptRecord(
                    kind="transcript",
                    sample="review_sample",
                    conversation=conv,
                    score=scorer.score(conv),
                    published_at=datetime(2026, 1, 1, tzinfo=UTC),
                )
                store.ingest(record, now=time.time(), retention_s=86_400.0)
            rows = [item.id for item in store.queue()[0]]
            store.save_label(rows[0], "alice", Outcome.COMPLETE, "", blind=True, now=time.time())
            store.save_label(rows[1], "alice", Outcome.PARTIAL_INCORRECT, "", blind=True, now=time.time())
            store.save_label(rows[2], "bob", Outcome.ABANDONED, "", blind=False, now=time.time())  # not blind
        finally:
            store.close()
        out = tmp_path / "anchors.jsonl"
        result = cli.invoke(
            app,
            ["judge", "anchors", "freeze", "--from-review-store", "--out", str(out), "--config", str(config)],
        )
        assert result.exit_code == 0, result.output
        frozen = read_anchors(out)
        assert {(a.conversation.conversation_id, a.label) for a in frozen} == {
            ("r0", Outcome.COMPLETE),
            ("r1", Outcome.PARTIAL_INCORRECT),
        }
        assert {a.frozen.outcome for a in frozen} == {Outcome.COMPLETE, Outcome.PARTIAL_INCORRECT}


def _wait(condition, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
