"""The wire contract: what crosses a process boundary, named once; dependency-free on purpose.

- `agentwatch.wire.attributes`: every span attribute name the SDK writes and the collector reads first;
- `agentwatch.wire.contract` (re-exported here): outcome values, failure-evidence codes, Kafka header names,
  topic defaults, format versions, the score key;
- `agentwatch.wire.schema` (pydantic, service side): transcripts (`Conversation`, defined in `conversation`)
  and results (`ConversationScore`, defined in `scores`); `transcripts`, `transcript_keys`: reading transcript
  files; `review_records`: the records of the review path.

- `agentwatch.wire.provider_usage`: token usage as providers' responses give it (cache tokens included).

The SDK imports `agentwatch.wire`, `agentwatch.wire.attributes` and `agentwatch.wire.provider_usage` only: they
load nothing but the standard library.
"""

from agentwatch.wire.contract import (
    CONTENT_TYPE_HEADER,
    DEAD_LETTER_TOPIC,
    DETECTORS,
    EVIDENCE,
    FAILING,
    FLAGGED,
    INFORMATIONAL_REASONS,
    KEY_CONVERSATION,
    KEY_HEADER,
    LABEL_OUTCOMES,
    LABELS_TOPIC,
    PROTOBUF,
    REKEY_TOPIC,
    REVIEW_FORMAT_VERSION,
    REVIEW_SAMPLE,
    SCORE_FORMAT_VERSION,
    SCORE_OUTCOMES,
    SCORES_TOPIC,
    SPANS_TOPIC,
    TRANSCRIPTS_TOPIC,
    UNSCORED,
    score_key,
)

__all__ = [
    "CONTENT_TYPE_HEADER",
    "DEAD_LETTER_TOPIC",
    "DETECTORS",
    "EVIDENCE",
    "FAILING",
    "FLAGGED",
    "INFORMATIONAL_REASONS",
    "KEY_CONVERSATION",
    "KEY_HEADER",
    "LABELS_TOPIC",
    "LABEL_OUTCOMES",
    "PROTOBUF",
    "REKEY_TOPIC",
    "REVIEW_FORMAT_VERSION",
    "REVIEW_SAMPLE",
    "SCORES_TOPIC",
    "SCORE_FORMAT_VERSION",
    "SCORE_OUTCOMES",
    "SPANS_TOPIC",
    "TRANSCRIPTS_TOPIC",
    "UNSCORED",
    "score_key",
]
