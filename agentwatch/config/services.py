"""Sections `kafka`, `collector` and `exporter`: the services and how they reach Kafka, and the consumer group
settings every service reading topics shares (`ConsumerGroupMember`; the `review` section is `config.review`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from agentwatch import wire
from agentwatch.config.base import Section, parse_duration


class KafkaConfig(Section):
    """Connection to the Kafka cluster, with TLS and SASL (docs/collector_service.md, "Connecting to a secured
    Kafka"). Secrets are SecretStr: never shown by `repr`, logs or errors."""

    bootstrap_servers: str = "127.0.0.1:9092"
    client_id: str = "agentwatch"
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    ssl_ca_file: str | None = Field(
        default=None, description="CA bundle (PEM) that signed the brokers' certificates"
    )
    ssl_cert_file: str | None = Field(default=None, description="client certificate (PEM), for mutual TLS")
    ssl_key_file: str | None = Field(default=None, description="private key (PEM) of ssl_cert_file")
    ssl_key_password: SecretStr | None = Field(
        default=None, description="password of an encrypted ssl_key_file"
    )
    ssl_check_hostname: bool = Field(
        default=True, description="verify that the broker certificate names its host"
    )
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = "PLAIN"
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None

    @field_validator("security_protocol", "sasl_mechanism", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.strip().upper() if isinstance(v, str) else v

    @model_validator(mode="after")
    def _security(self) -> KafkaConfig:
        from agentwatch.kafka.security import KafkaSecurity

        KafkaSecurity.from_config(self).check(prefix="kafka.")
        return self


class ConsumerGroupMember(Section):
    """The consumer group settings of a service that reads topics as a group member."""

    session_timeout_ms: int = Field(default=45_000, ge=1, description="consumer group session timeout")
    heartbeat_interval_ms: int = Field(default=3_000, ge=1, description="consumer group heartbeat interval")

    @model_validator(mode="after")
    def _heartbeat_within_session(self) -> ConsumerGroupMember:
        # a member whose heartbeats come later than its session lasts loses its partitions, again and again
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError(
                f"heartbeat_interval_ms ({self.heartbeat_interval_ms}) must be below session_timeout_ms "
                f"({self.session_timeout_ms}); a third of it or less is Kafka's advice"
            )
        return self


class CollectorConfig(ConsumerGroupMember):
    """The span collector."""

    input_topics: list[str] = Field(default_factory=lambda: [wire.SPANS_TOPIC])
    log_topics: list[str] = Field(
        default_factory=list,
        description="topics of OTLP log records (the OpenTelemetry Collector's kafka exporter writes them to "
        "`otlp_logs`): the GenAI message events among them are joined to their spans, other records skipped; "
        "when set, spans keyed by conversation are re-keyed too, so that the records of their traces join them",
    )
    scores_topic: str = wire.SCORES_TOPIC
    dead_letter_topic: str = wire.DEAD_LETTER_TOPIC
    rekey_topic: str = wire.REKEY_TOPIC
    transcripts_topic: str | None = Field(
        default=wire.TRANSCRIPTS_TOPIC,
        description="transcripts of the review sample and of flagged conversations, for `agentwatch review`; "
        "null: none are published",
    )
    max_transcript_bytes: int = Field(
        default=1_000_000,
        ge=10_000,
        description="a longer transcript record (key and headers included) is cut (texts, then turns); lowered at "
        "start to what the topic takes (its max.message.bytes; Kafka's default 1,048,588)",
    )
    max_score_bytes: int = Field(
        default=1_000_000,
        ge=10_000,
        description="a longer score record (key and headers included) leaves details out (long texts, turn "
        "reasons, turn scores) until it fits; lowered at start to what the topic takes (its "
        "max.message.bytes; Kafka's default 1,048,588)",
    )
    max_dead_letter_bytes: int = Field(
        default=1_000_000,
        ge=10_000,
        description="a longer dead letter (key and headers counted) is sent without the message's value, then "
        "without its own headers and key (the source topic, partition and offset say where it is); lowered "
        "at start to what the topic takes (its max.message.bytes)",
    )
    failing_transcripts: bool = Field(
        default=True,
        description="also publish the transcripts of failing conversations (a failed verdict or failure "
        "evidence), so that the review service lists a series' failing conversations (an alert's link); "
        "they are not queued for labelling",
    )
    failing_transcripts_per_minute: int | None = Field(
        default=60,
        ge=1,
        description="at most this many transcripts of failing conversations (listed, or queued for the evidence "
        "of sampling.review_evidence) are published a minute (of their end times) per series from each collector "
        "instance, so that an incident does not flood the transcripts topic and the review store; the rest are "
        "counted in agentwatch_transcripts_skipped_total; null: every one",
    )
    group_id: str = "agentwatch-collector"
    idle_timeout_s: float = Field(default=300.0, gt=0)
    end_grace_s: float = Field(default=2.0, ge=0)
    topic_partitions: int = Field(
        default=8, ge=1, description="partitions of the topics the collector creates"
    )
    topic_replication_factor: int = Field(default=-1, description="-1: the broker's default")
    max_open_conversations: int = Field(default=100_000, ge=1)
    max_spans_per_conversation: int = Field(default=10_000, ge=1)
    max_open_bytes: int = Field(
        default=256 * 1024 * 1024,
        ge=1024 * 1024,
        description="byte budget of the open conversations' decoded spans; over it the least recently active "
        "are finished early (`budget`, incomplete)",
    )
    max_open_age_s: float = Field(
        default=3600.0,
        gt=0,
        description="a conversation open this long is finished (`age`, incomplete), so its partition's "
        "offsets move and a restart replays at most this much",
    )
    max_attribute_bytes: int = Field(default=65_536, ge=256)
    trace_join_timeout_s: float = Field(
        default=60.0,
        gt=0,
        description="how long spans without a conversation key wait for their trace to name one",
    )
    loop_join_timeout_s: float = Field(
        default=60.0,
        ge=0,
        description="how long a loop fragment (a bare model call's trace asking for a tool, nothing joining it "
        "to the next call's trace) waits for the conversation that continues it before it is scored alone; "
        "0: not at all",
    )
    max_parked_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=0,
        description="bytes of the loop fragments waiting at once (counted like max_open_bytes); over it the "
        "oldest is scored alone",
    )
    max_held_spans: int = Field(default=100_000, ge=0, description="spans the trace join may hold at once")
    max_held_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=0,
        description="bytes of the spans the trace join may hold at once (counted like max_open_bytes)",
    )
    trace_memory: int = Field(
        default=100_000,
        ge=1,
        description="traces in the join window, and trace → conversation mappings remembered",
    )
    metrics_port: int | None = Field(default=None, ge=0, le=65535)
    metrics_host: str = Field(
        default="0.0.0.0", description="address /metrics listens on (every interface: Prometheus scrapes it)"
    )
    fetch_queue_kbytes: int = Field(
        default=32_768,
        ge=1024,
        le=2_097_151,  # librdkafka's own bound: past it, its error named its key, not this one
        description="records the consumer fetches ahead, in KiB (librdkafka queued.max.messages.kbytes): part "
        "of the memory beside max_open_bytes",
    )
    max_poll_interval_ms: int = Field(default=300_000, ge=1)
    max_poll_records: int = Field(default=2_000, ge=1)
    commit_interval_s: float = Field(default=1.0, gt=0, description="flush scores then commit this often")
    label_memory: int = Field(
        default=50_000, ge=0, description="published scores remembered so that a late label can revise them"
    )
    label_memory_bytes: int = Field(
        default=128 * 1024 * 1024,
        ge=1 << 20,
        description="bytes the label memory holds at most, as stored (score JSON, ids, containers; the oldest "
        "forgotten first): a score may "
        "be 1 MB (collector.max_score_bytes)",
    )
    max_pending_verdicts: int = Field(
        default=64, ge=1, description="conversations waiting for the judge before consumption pauses"
    )
    max_pending_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=1024 * 1024,
        description="bytes of the conversations waiting for the judge (counted like max_open_bytes) before "
        "consumption pauses",
    )
    verdict_wait_on_shutdown_s: float = Field(
        default=10.0,
        ge=0,
        description="how long shutdown waits for verdicts in flight (the rest is replayed)",
    )
    drain_on_shutdown: bool = Field(
        default=False, description="score open conversations on shutdown (else keep them uncommitted)"
    )
    evaluation_events_endpoint: str | None = Field(
        default=None,
        description="OTLP endpoint for gen_ai.evaluation.result log records, one per score "
        "(`http(s)://…/v1/logs` → HTTP, else gRPC); unset: none are sent",
    )

    @model_validator(mode="after")
    def _topics_read_once(self) -> CollectorConfig:
        both = sorted(set(self.log_topics) & {*self.input_topics, self.rekey_topic})
        if both:
            raise ValueError(f"log_topics: {', '.join(both)} also read as spans (input_topics, rekey_topic)")
        read = {*self.input_topics, *self.log_topics, self.rekey_topic}
        written = {"scores_topic": self.scores_topic, "dead_letter_topic": self.dead_letter_topic}
        if self.transcripts_topic is not None:
            written["transcripts_topic"] = self.transcripts_topic
        for key, topic in written.items():
            if not topic:
                raise ValueError(f"{key} is empty")
            if topic in read:  # a dead letter read back is dead-lettered again, without end
                raise ValueError(f"{key} {topic!r} is also a topic the collector reads")
        if not all(self.input_topics) or not self.rekey_topic:
            raise ValueError("input_topics and rekey_topic name topics: none may be empty")
        return self


class ExporterConfig(ConsumerGroupMember):
    """The rolling estimator and its Prometheus endpoint."""

    scores_topic: str = wire.SCORES_TOPIC
    group_id: str = "agentwatch-exporter"
    metrics_port: int = Field(default=9464, ge=0, le=65535)
    windows: list[str] = Field(default_factory=lambda: ["1h", "24h", "7d"])
    tasks: list[str] = Field(default_factory=list, description="known tasks; others fold into 'other'")
    max_tasks: int = Field(
        default=50, ge=1, description="distinct tasks when `tasks` is empty; rest -> other"
    )
    max_agents: int = Field(default=100, ge=1, description="distinct agent labels; rest -> other")
    max_versions_per_agent: int = Field(
        default=20, ge=1, description="distinct version labels per agent; rest -> other"
    )
    max_series: int = Field(
        default=2_000,
        ge=1,
        description="(agent, version, task) series in the longest window; a score of any other is counted in "
        "(other, other, other)",
    )
    regression_min_conversations: int = Field(default=30, ge=1)
    regression_ks: list[int] = Field(default_factory=lambda: [3], description="k of the regression gauge")
    buckets_per_window: int = Field(default=60, ge=1, description="time buckets per window (resolution W/n)")
    max_label_length: int = Field(
        default=64, ge=16, description="longer label values are cut and hash-suffixed"
    )
    max_failure_modes: int = Field(
        default=32, ge=1, description="distinct failure-mode labels; rest -> other"
    )
    max_judges: int = Field(
        default=20, ge=1, description="distinct judge labels in the longest window; rest -> other"
    )
    max_sample_rates: int = Field(
        default=256,
        ge=1,
        description="distinct (judge_rate, review_rate) pairs scores record in the longest window; a score with "
        'any other weighs as one that records no rate (agentwatch_labels_folded_total{label="rates"}): each '
        "pair is a stratum of the weighted estimates in every bucket it has conversations in",
    )
    max_conversations: int = Field(
        default=1_000_000,
        ge=1,
        description="conversations remembered (about 600 bytes each) to recognise duplicates and revisions; "
        "past it the oldest are forgotten (agentwatch_exporter_conversations_forgotten_total)",
    )
    max_units: int = Field(
        default=5_000,
        ge=1,
        description="task instances with repeated attempts tracked per agent version in the longest window; "
        "a conversation of any other counts as a unit of its own (agentwatch_units_folded_total)",
    )
    max_units_total: int = Field(
        default=500_000,
        ge=1,
        description="task instances tracked over every agent version in the longest window (1 to 2 KB "
        "each); a conversation of any other counts as a unit of its own (agentwatch_units_folded_total)",
    )
    max_unit_entries: int = Field(
        default=5_000_000,
        ge=1,
        description="(unit, bucket) entries over every window bucket of every series (about 200 bytes each, "
        "window totals included); a graded conversation that would add one more counts as a unit of its own "
        "(agentwatch_units_folded_total)",
    )
    metrics_host: str = "0.0.0.0"
    poll_timeout_ms: int = Field(default=500, ge=1)
    max_poll_records: int = Field(default=2_000, ge=1)
    otlp_endpoint: str | None = Field(default=None, description="push metrics over OTLP to this endpoint")
    otlp_interval_s: float = Field(default=15.0, gt=0)

    @field_validator("windows")
    @classmethod
    def _windows(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("windows must not be empty")
        for w in v:
            parse_duration(w)
        return v

    @field_validator("regression_ks")
    @classmethod
    def _regression_ks(cls, v: list[int]) -> list[int]:
        if any(k < 1 for k in v):
            raise ValueError("regression_ks must hold integers >= 1")
        return sorted(set(v))
