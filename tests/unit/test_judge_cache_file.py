"""A verdict cache file that is corrupt, huge or hostile: read without failing, and nothing but a verdict that
grades is ever served from it."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from agentwatch.judge.cache import JudgeCache, cache_key
from agentwatch.judge.runner import JudgeRunner
from agentwatch.judge.verdict import JudgeVerdict
from agentwatch.wire.schema import Conversation, Outcome

JUDGE_ID = "openai:m:v1"


class Stub:
    """A judge that grades every conversation `partial_correct` 0.6 and counts its calls."""

    judge_id = JUDGE_ID

    def __init__(self) -> None:
        self.calls = 0

    def fingerprint(self, conv: Conversation) -> str:
        return f"fp-{conv.conversation_id}"

    def judge(self, conv: Conversation) -> JudgeVerdict:
        self.calls += 1
        return JudgeVerdict.graded("partial_correct", 0.6, "judged", JUDGE_ID)


def conv(cid: str) -> Conversation:
    return Conversation.model_validate(
        {"conversation_id": cid, "turns": [{"input": "hi", "answer": "hello"}]}
    )


def line(cid: str, **fields: object) -> bytes:
    d = {"key": cache_key(JUDGE_ID, f"fp-{cid}"), "outcome": "complete", "score": 0.9, "explanation": "ok"}
    d.update(fields)
    return json.dumps(d).encode() + b"\n"


HOSTILE = {
    "nan score": line("nan", score=float("nan")),
    "score past 1": line("big", score=7),
    "negative score": line("neg", score=-0.5),
    "score as text": line("text", score="0.9"),
    "outcome unscored": line("unscored", outcome="unscored"),
    "infinite cost": line("cost", cost_usd=float("inf")),
    "cost as text": line("costtext", cost_usd="free"),
    "negative tokens": line("tokens", input_tokens=-5),
    "tokens past int": line("huge", input_tokens=float("inf")),
    "explanation not text": line("expl", explanation={"a": 1}),
    "nested past the decoder": b"[" * 200_000 + b"]" * 200_000 + b"\n",
    "not utf-8": b'\xff\xfe{"key": 1}\n',
    "a line of 5 MB": line("long", explanation="x" * 5_000_000),
    "not an object": b"[1, 2]\n",
}


def test_a_hostile_cache_file_is_read_and_serves_only_verdicts_that_grade(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "verdicts.jsonl"
    path.write_bytes(line("good") + b"".join(HOSTILE.values()) + line("after") + b'{"key": "torn", "outc')
    with caplog.at_level(logging.WARNING, logger="agentwatch.judge.cache"):
        cache = JudgeCache(100, path)
    assert len(cache) == 2  # the two good lines, the one after the hostile ones too
    assert f"{len(HOSTILE) + 1} unreadable line(s)" in caplog.text
    stub = Stub()
    runner = JudgeRunner(stub, cache=cache)
    try:
        names = ["good", "after", "nan", "big", "neg", "text", "unscored", "cost", "long"]
        verdicts = runner.judge_many([conv(n) for n in names])
    finally:
        runner.close()
    assert [v.cached for v in verdicts[:2]] == [True, True] and verdicts[0].outcome is Outcome.COMPLETE
    # every hostile line's conversation is judged afresh: its line was never a verdict
    assert stub.calls == len(names) - 2
    assert all(v.ok and not v.cached and v.score == 0.6 for v in verdicts[2:])
    # the torn last line was ended before appending: the verdicts written this run read back
    assert len(JudgeCache(100, path)) == len(names)


def _verdict(explanation: str) -> JudgeVerdict:
    return JudgeVerdict.graded("complete", 0.9, explanation, JUDGE_ID, input_tokens=900, output_tokens=60)


def test_the_cache_holds_at_most_its_entries_in_bytes_too() -> None:
    """Explanations are up to 1,000 characters: of 4-byte characters an entry held 4.4 KB, 440 MB at the default
    100,000 entries. Typical and longest ASCII explanations still fill every entry; the newest are kept."""
    from tests.support.memory import kept_by

    cache = JudgeCache(max_entries=2000)
    keys = [cache_key(JUDGE_ID, f"{i:064x}") for i in range(3000)]

    def feed() -> None:
        for i, k in enumerate(keys):
            cache.put(k, _verdict(f"{i}" + "\U0001f600" * 999))

    assert kept_by(feed) < 2000 * 1536 * 1.25
    assert cache.get(keys[-1]) is not None and cache.get(keys[0]) is None
    for explanation in ("The agent looked the order up and refunded it.", "x" * 1000):
        plain = JudgeCache(max_entries=2000)
        for k in keys:
            plain.put(k, _verdict(explanation))
        assert len(plain) == 2000 and plain.get(keys[1000]) is not None
