"""`agentwatch score --judge ...` and `agentwatch judge calibrate` against the local fake judge server."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agentwatch.cli import app
from agentwatch.scorers.sampling import sample_point
from agentwatch.wire.schema import ConversationScore
from tests.support.fake_openai import FakeOpenAI, Reply, verdict_reply

runner = CliRunner()


def write(path: Path, n: int, **extra) -> list[str]:
    ids = []
    with open(path, "w") as fh:
        for i in range(n):
            cid = f"live-{i}"
            ids.append(cid)
            fh.write(
                json.dumps(
                    {
                        "conversation_id": cid,
                        "agent": "bot",
                        "version": "1",
                        "turns": [{"input": f"question {i}", "answer": f"answer {i}"}],
                        **extra,
                    }
                )
                + "\n"
            )
    return ids


def by_answer(body):
    """Verdict depends on the transcript: even answers complete, odd ones partial_incorrect."""
    text = body["messages"][1]["content"]
    n = int(text.split("Agent answer: answer ")[1].split()[0])
    return verdict_reply("complete", 0.9) if n % 2 == 0 else verdict_reply("partial_incorrect", 0.2)


def test_score_with_judge_sample_and_disk_cache(tmp_path):
    data = tmp_path / "live.jsonl"
    ids = write(data, 40)
    details, cache = tmp_path / "details.jsonl", tmp_path / "cache.jsonl"
    with FakeOpenAI(by_answer) as server:
        args = [
            "score",
            str(data),
            "--judge",
            "gpt-4o-mini",
            "--judge-url",
            server.base_url,
            "--judge-sample",
            "0.5",
            "--judge-concurrency",
            "3",
            "--judge-cache",
            str(cache),
            "--details",
            str(details),
            "--format",
            "json",
        ]
        first = runner.invoke(app, args)
        assert first.exit_code in (0, 1), first.output
        sampled = {cid for cid in ids if sample_point(cid) < 0.5}
        assert len(server.requests) == len(sampled)
        scores = [ConversationScore.model_validate_json(line) for line in details.read_text().splitlines()]
        for s in scores:
            if s.conversation_id in sampled:
                assert s.judge == "openai:gpt-4o-mini:v1" and s.graded_by == ["judge"]
                even = int(s.conversation_id.split("-")[1]) % 2 == 0
                assert s.passed is even
            else:
                assert s.passed is None and s.judge is None
        assert "judge openai:gpt-4o-mini:v1" in first.stderr
        again = runner.invoke(app, args)
        assert again.exit_code == first.exit_code
        assert len(server.requests) == len(sampled)  # every verdict came from the disk cache
        assert f"{len(sampled)} cache hit(s)" in again.stderr


def test_score_judge_failures_are_unscored(tmp_path):
    data = tmp_path / "live.jsonl"
    write(data, 6)
    details = tmp_path / "details.jsonl"
    with FakeOpenAI(lambda body: Reply(401, {"error": "no key"})) as server:
        result = runner.invoke(
            app,
            [
                "score",
                str(data),
                "--judge",
                "gpt-4o-mini",
                "--judge-url",
                server.base_url,
                "--details",
                str(details),
                "--format",
                "json",
            ],
        )
    assert result.exit_code == 1, result.output  # nothing graded: the gate cannot pass
    scores = [ConversationScore.model_validate_json(line) for line in details.read_text().splitlines()]
    assert all(s.passed is None and s.reasons[0].startswith("judge_unavailable: HTTP 401") for s in scores)
    assert "judge_unavailable 6" in result.stderr
