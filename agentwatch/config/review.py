"""Section `review`: the review service (`agentwatch review`) and the reviewers who may sign in to it."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, SecretStr, field_validator, model_validator

from agentwatch import wire
from agentwatch.config.base import Section
from agentwatch.config.services import ConsumerGroupMember


class Reviewer(Section):
    """A person who may sign in to the review service: a name and one hashed secret (never the secret)."""

    name: str = Field(min_length=1, max_length=64, pattern=r"^[^:\s]+$", description="shown beside labels")
    password_hash: SecretStr | None = Field(
        default=None,
        description="scrypt hash of a password, from `agentwatch review-hash` (sign in with name and "
        "password, or HTTP basic auth)",
    )
    token_sha256: SecretStr | None = Field(
        default=None,
        description="SHA-256 (hex) of a random token (sign in with it, or `Authorization: Bearer`)",
    )

    @model_validator(mode="after")
    def _one_secret(self) -> Reviewer:
        if (self.password_hash is None) == (self.token_sha256 is None):
            raise ValueError(f"reviewer {self.name!r}: give exactly one of password_hash and token_sha256")
        if self.password_hash is not None and not self.password_hash.get_secret_value().startswith("scrypt$"):
            raise ValueError(
                f"reviewer {self.name!r}: password_hash must come from `agentwatch review-hash` (scrypt$...)"
            )
        token = self.token_sha256.get_secret_value() if self.token_sha256 is not None else None
        if token is not None and not re.fullmatch(r"[0-9a-f]{64}", token.lower()):
            raise ValueError(f"reviewer {self.name!r}: token_sha256 must be 64 hex digits (its SHA-256)")
        return self


class ReviewConfig(ConsumerGroupMember):
    """The review service (`agentwatch review`): the review queue in the browser, the labels it publishes."""

    database_url: str = Field(
        default="sqlite:///agentwatch-review.db",
        description="sqlite:///PATH (embedded, the default) or postgresql://USER:PASSWORD@HOST/DB (shared)",
    )
    transcripts_topic: str = wire.TRANSCRIPTS_TOPIC
    scores_topic: str = Field(default=wire.SCORES_TOPIC, description="revised scores are published here")
    labels_topic: str | None = Field(default=wire.LABELS_TOPIC, description="saved labels; null: none sent")
    group_id: str = "agentwatch-review"
    host: str = Field(default="127.0.0.1", description="address the page is served on")
    port: int = Field(default=8080, ge=0, le=65535, description="port of the page (0: any free port)")
    metrics_host: str = Field(
        default="127.0.0.1",
        description="address /metrics listens on (loopback, like the page; 0.0.0.0 where Prometheus scrapes "
        "it from another host, as in deploy/)",
    )
    metrics_port: int | None = Field(default=9466, ge=0, le=65535, description="/metrics; null: not served")
    reviewers: list[Reviewer] = Field(default_factory=list, description="who may sign in (none: nobody can)")
    session_secret: SecretStr | None = Field(
        default=None,
        description="key that signs session cookies; unset: a random one (sign-ins end at restart)",
    )
    session_max_age_s: int = Field(default=12 * 3600, ge=60, description="a sign-in lasts this long")
    session_idle_s: int = Field(
        default=2 * 3600, ge=60, description="a session unused this long ends (sessions live in the store)"
    )
    signin_free_failures: int = Field(
        default=5, ge=1, description="consecutive failed sign-ins of a client or name before backoff starts"
    )
    signin_backoff_s: float = Field(
        default=1.0, gt=0, description="first wait after the free failures; doubles with each further one"
    )
    signin_max_backoff_s: float = Field(default=900.0, gt=0, description="longest wait between sign-in tries")
    max_concurrent_hashes: int = Field(
        default=1,
        ge=1,
        description="password checks (scrypt, 32 MiB and a core for ~0.1 s each) running at once; one leaves "
        "the other cores to the pages",
    )
    max_waiting_hashes: int = Field(
        default=8, ge=0, description="password checks queued for a slot; more are refused at once (503)"
    )
    forwarded_allow_ips: list[str] = Field(
        default_factory=list,
        description="addresses of reverse proxies whose X-Forwarded-For names the client (for per-client "
        "sign-in limits); empty: the peer address is the client",
    )
    max_body_bytes: int = Field(default=65_536, ge=4096, description="larger request bodies get 413")
    max_connections: int = Field(
        default=256,
        ge=8,
        description="concurrent connections served; more get 503 (uvicorn limit_concurrency)",
    )
    max_connections_per_client: int = Field(
        default=32,
        ge=1,
        description="connections one client address holds at once; more are closed as they open (a proxy in "
        "forwarded_allow_ips is not capped)",
    )
    secure_cookies: bool = Field(default=False, description="send the session cookie over HTTPS only")
    retention_days: float = Field(default=30.0, gt=0, description="conversations older than this are deleted")
    failing_retention_days: float = Field(
        default=7.0,
        gt=0,
        description="failing conversations held only to be listed (not in the review sample, not flagged, "
        "not labelled) are deleted after this long (at most retention_days)",
    )
    retention_interval_s: float = Field(default=3600.0, gt=0, description="how often old rows are deleted")
    publish_retry_s: float = Field(default=5.0, gt=0, description="pause before resending what Kafka refused")
    page_size: int = Field(default=100, ge=1, le=1000, description="conversations listed per queue page")

    @field_validator("session_secret", mode="before")
    @classmethod
    def _session_secret(cls, v: Any) -> Any:
        text = v.get_secret_value() if isinstance(v, SecretStr) else v
        if text is None or text == "":
            return None  # unset (an empty environment variable counts as unset)
        if len(str(text)) < 16:
            raise ValueError("session_secret must be at least 16 characters (or unset: a random one)")
        return v

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, v: str) -> str:
        scheme = v.partition("://")[0].partition("+")[0]
        if scheme not in ("sqlite", "postgresql", "postgres"):
            raise ValueError(f"database_url must start with sqlite:/// or postgresql://, got {scheme or v!r}")
        return v

    @field_validator("reviewers")
    @classmethod
    def _unique_reviewers(cls, v: list[Reviewer]) -> list[Reviewer]:
        names = [r.name for r in v]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"reviewer {twice[0]!r} is listed twice")
        return v
