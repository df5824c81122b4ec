"""Helpers of the review tests: conversations scored by the real scorer (with a judge's verdict), transcript
records, reviewers, and a review service running on a thread."""

from __future__ import annotations

import re
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from agentwatch.config import SamplingConfig, Settings, load_settings
from agentwatch.judge.verdict import JudgeVerdict
from agentwatch.review.auth import hash_password, token_hash
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.review_records import TranscriptRecord, review_sample_of
from agentwatch.wire.schema import Conversation, ConversationScore

if TYPE_CHECKING:
    from agentwatch.review.queries import Stored
    from agentwatch.review.store import Store

PASSWORD = "correct horse battery"
TOKEN = "t0ken-for-bob-0123456789abcdef"
JUDGE_EXPLANATION = "The refund was promised but refund_order was never called."


def review_settings(bootstrap: str, tmp_path: Path, **review: Any) -> Settings:
    """Settings of a test review service (unique topics and group, SQLite in `tmp_path`, a fast consumer
    group, any free port, no /metrics unless asked), with an exporter on its scores topic."""
    prefix = f"review-{uuid.uuid4().hex[:12]}"
    fast = {"session_timeout_ms": 2000, "heartbeat_interval_ms": 500}
    values = {
        "database_url": f"sqlite:///{tmp_path / 'review.db'}",
        "port": 0,
        "metrics_port": None,
        "transcripts_topic": f"{prefix}-transcripts",
        "scores_topic": f"{prefix}-scores",
        "labels_topic": f"{prefix}-labels",
        "group_id": f"{prefix}-group",
        "reviewers": reviewers(),
        **fast,
        **review,
    }
    exporter = {"scores_topic": values["scores_topic"], "group_id": f"{prefix}-exporter", **fast}
    return load_settings(kafka={"bootstrap_servers": bootstrap}, review=values, exporter=exporter)


def reviewers() -> list[dict[str, str]]:
    """alice signs in with a password, bob with a token (cheap scrypt cost: tests, not production)."""
    return [
        {"name": "alice", "password_hash": hash_password(PASSWORD, n=2**12)},
        {"name": "bob", "token_sha256": token_hash(TOKEN)},
    ]


def conversation(
    cid: str,
    *,
    agent: str = "support-bot",
    version: str = "2.0",
    task: str = "refunds",
    turns: int = 2,
    ended: datetime | None = None,
    notes: list[str] | None = None,
    outcome: str | None = None,
) -> Conversation:
    """A support conversation: each turn looks an order up and answers; the last turn promises a refund."""
    ended = ended or datetime.now(UTC)
    start = ended - timedelta(seconds=5 * turns)
    items: list[dict[str, Any]] = []
    for i in range(turns):
        last = i == turns - 1
        items.append(
            {
                "input": f"Where is my order ORD-{1000 + i}?"
                if not last
                else "Please refund order ORD-1000.",
                "answer": f"Order ORD-{1000 + i} is shipped with DHL."
                if not last
                else "Done: your refund is on its way.",
                "tool_calls": [
                    {
                        "name": "lookup_order",
                        "arguments": {"order_id": f"ORD-{1000 + i}"},
                        "result": {"status": "shipped", "carrier": "DHL"},
                        "call_id": f"call_{i}",
                    }
                ],
                "started_at": (start + timedelta(seconds=5 * i)).isoformat(),
                "duration_ms": 1500,
                "usage": [{"model": "gpt-4o-mini", "input_tokens": 120, "output_tokens": 30}],
            }
        )
    return Conversation.model_validate(
        {
            "conversation_id": cid,
            "agent": agent,
            "version": version,
            "task": task,
            "turns": items,
            "ended_at": ended.isoformat(),
            "notes": notes or [],
            "outcome": outcome,
        }
    )


def scored(
    conv: Conversation, *, verdict: JudgeVerdict | None = None, review_rate: float = 1.0
) -> ConversationScore:
    """`conv` scored by the real scorer; every conversation is in the judge sample, `review_rate` of them in
    the review sample."""
    settings = Settings(sampling=SamplingConfig(judge_rate=1.0, review_rate=review_rate))
    return ConversationScorer(settings).score(conv, verdict)


def judged(outcome: str = "partial_incorrect", score: float = 0.35) -> JudgeVerdict:
    """A verdict of the stand-in judge."""
    return JudgeVerdict.graded(outcome, score, JUDGE_EXPLANATION, "stand-in:judge-model:v1")


def record(conv: Conversation, score: ConversationScore) -> TranscriptRecord:
    """The transcript record the collector publishes for `conv`."""
    sample = review_sample_of(score)
    assert sample is not None, "not a conversation for review"
    return TranscriptRecord(
        kind="transcript",
        sample=sample,
        conversation=conv,
        score=score,
        published_at=datetime.now(UTC),
    )


def get_stored(store: Store, row: int) -> Stored:
    """The stored conversation of a row the test knows is there (`Store.get` returns None for a missing one)."""
    found = store.get(row)
    assert found is not None, f"no conversation at row {row}"
    return found


class ServiceThread:
    """A ReviewService running on a thread; `url` is its page once started."""

    def __init__(self, settings: Settings) -> None:
        from agentwatch.review.service import ReviewService

        self.service = ReviewService(settings)
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.service.run(self.stop)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc

    def __enter__(self) -> ServiceThread:  # noqa: PYI034
        self.thread.start()
        assert self.service.started.wait(30), "the review service did not start"
        time.sleep(0.1)
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.service.port}"

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)


def csrf(html: str) -> str:
    """The CSRF token of a review page's form."""
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found is not None, "no CSRF field on the page"
    return found.group(1)


def sign_in(client: httpx.Client, name: str = "alice", secret: str = PASSWORD) -> httpx.Response:
    """Sign in through the review service's form."""
    page = client.get("/login")
    return client.post("/login", data={"csrf": csrf(page.text), "name": name, "secret": secret, "next": "/"})
