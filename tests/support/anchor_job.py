"""The anchor job's test fixtures: an anchor set of distinct conversations, a configuration pointing at a local
judge, an edit that the job sees, and a judge that fails, goes down or holds its answers on demand."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tests.support.fake_openai import FakeOpenAI, Reply, verdict_reply

JUDGE = "openai:gpt-4o-mini:v1"


def anchor_set(path: Path, n: int = 8) -> Path:
    """`n` anchors, each a conversation of its own (the runner shares a call between equal ones)."""
    with path.open("w") as fh:
        for i in range(n):
            conv = {"conversation_id": f"c{i}", "turns": [{"input": f"order {i}?", "answer": f"Monday {i}."}]}
            verdict = {"judge": JUDGE, "outcome": "complete", "score": 0.9}
            row = {
                "conversation": conv,
                "label": "complete",
                "frozen": verdict,
                "frozen_at": "2026-01-01T00:00:00Z",
            }
            fh.write(json.dumps(row) + "\n")
    return path


def judge_config(path: Path, server: FakeOpenAI, anchors: Path, **judge: Any) -> Path:
    """A configuration whose judge is `server`, no retries (a failure is at once), checked every 0.05 s."""
    base = {"base_url": server.base_url, "model": "gpt-4o-mini", "timeout_s": 10, "max_retries": 0}
    section = {**base, "concurrency": 2, "api_key_env": "AGENTWATCH_TEST_JUDGE_KEY", **judge}
    path.write_text(
        yaml.safe_dump(
            {
                "judge": section,
                "anchors": {"path": str(anchors), "interval_s": 3600, "check_interval_s": 0.05},
            }
        )
    )
    return path


def edit_config(path: Path, change: Callable[[dict], None]) -> None:
    """Change the configuration file (its modification time moves: the job reads it again)."""
    data = yaml.safe_load(path.read_text())
    change(data)
    before = path.stat().st_mtime_ns
    while path.stat().st_mtime_ns == before:  # a coarse file system clock could hide a quick edit
        path.write_text(yaml.safe_dump(data))


class Judge:
    """Answers complete; `down` answers 503; `fail_from`: anchors numbered from it fail; `gate`: calls wait."""

    def __init__(self) -> None:
        self.down = False
        self.fail_from: int | None = None
        self.gate = threading.Event()
        self.gate.set()
        self.started = threading.Event()

    def __call__(self, body: dict) -> Reply | dict:
        self.started.set()
        self.gate.wait(30)
        text = json.dumps(body.get("messages") or [])
        number = int(text.split("order ")[1].split("?")[0])
        if self.down or (self.fail_from is not None and number >= self.fail_from):
            return Reply(status=503, body={"error": {"message": "overloaded"}})
        return verdict_reply("complete", 0.9, "answers")
