"""What crosses a process boundary besides span attributes: outcomes, evidence codes, headers, topics, versions.

Dependency-free on purpose: the SDK imports it (through `agentwatch.wire`) and nothing of the services; the
services import it instead of restating it. Span attribute names live in `agentwatch.wire.attributes`.
"""

from __future__ import annotations

# Outcome classes a label may carry (the ASR classes); a score may also be "unscored".
LABEL_OUTCOMES: frozenset[str] = frozenset(
    {"complete", "partial_correct", "partial_incorrect", "hallucinated", "abandoned"}
)
UNSCORED = "unscored"
SCORE_OUTCOMES: frozenset[str] = LABEL_OUTCOMES | {UNSCORED}

# Failure evidence, found on any conversation and reported as rates over all of them.
EVIDENCE: tuple[str, ...] = ("error", "no_answer", "loop", "hallucination", "over_budget", "forbidden_tool")
# The evidence found by deterministic detectors (the rest comes from rules a person configured, or the cost):
# each fails a graded conversation only where `scoring.failing_evidence` (or its policy's `fail_on`) says so.
DETECTORS: tuple[str, ...] = ("error", "no_answer", "loop", "hallucination")
# Reason codes that describe rather than fail, never failure modes: a person's label, how the user ended the
# conversation, a detector's finding that does not fail it, a note on the ground truth, a grader the source's
# capture left out, a cost the price table cannot tell.
INFORMATIONAL_REASONS: frozenset[str] = frozenset(
    {"label", "ending", "evidence", "note", "not_captured", "cost_unknown"}
)

# Kafka record headers of span messages.
CONTENT_TYPE_HEADER = "content-type"
PROTOBUF = b"application/x-protobuf"
KEY_HEADER = "agentwatch-key"  # what the record's key is
KEY_CONVERSATION = b"conversation"  # ... the conversation id: no re-keying needed

# Default topics.
SPANS_TOPIC = "agentwatch.spans"
SCORES_TOPIC = "agentwatch.scores"
DEAD_LETTER_TOPIC = "agentwatch.deadletter"
REKEY_TOPIC = "agentwatch.spans.rekeyed"
TRANSCRIPTS_TOPIC = "agentwatch.transcripts"  # transcripts to review with their first score, by conversation
LABELS_TOPIC = "agentwatch.labels"  # labels people saved in the review service, by conversation id

# Why a conversation is in the review queue: the blind review sample (`sampling.review_rate`, a random sample
# whose labels may estimate success), or a person's label/flag when it was scored (not a random sample).
REVIEW_SAMPLE = "review_sample"
FLAGGED = "flagged"
# Not for the queue: a conversation that failed (a failed verdict or failure evidence), kept so that a page about
# its series leads to it (`collector.failing_transcripts`); labels on it are not a random sample either.
FAILING = "failing"

SCORE_FORMAT_VERSION = 1  # `schema_version` of ConversationScore records
REVIEW_FORMAT_VERSION = 1  # `format_version` of transcript and label records


def score_key(agent: str, version: str, task: str) -> bytes:
    """Kafka key of a score record: `agent|version|task`, so one estimator instance owns each series."""
    return f"{agent}|{version}|{task}".encode()
