"""Configuration: one YAML file and `AGENTWATCH_*` environment variables, validated at start.

Every section rejects unknown keys, so a typo fails at start with the key's dotted path instead of being
silently ignored. Environment variables override the file: `AGENTWATCH_COLLECTOR__IDLE_TIMEOUT_S=2`
(double underscore between nesting levels).

One module per group of sections: `scoring` (scoring, cost, stats, gate, tiers), `sampling` (sampling, judge),
`services` (kafka, collector, exporter), `review` (the review service and its reviewers), `alerts` (the quality
alerts), `policies` (task policies, which the importers also write); `settings` puts them together and `loading`
reads a file. Import from here.
"""

from agentwatch.config.alerts import AlertsConfig
from agentwatch.config.base import ConfigError, Section, parse_duration
from agentwatch.config.loading import (
    MAX_CONFIG_BYTES,
    MAX_CONFIG_DEPTH,
    MAX_CONFIG_NODES,
    load_settings,
    with_values,
)
from agentwatch.config.policies import ArgumentConstraint, PolicyTool, TaskPolicy
from agentwatch.config.review import ReviewConfig, Reviewer
from agentwatch.config.sampling import AnchorsConfig, JudgeConfig, SamplingConfig, SamplingRule
from agentwatch.config.scoring import (
    HANDOFF_TOOLS,
    READ_ONLY_TOOLS,
    CostConfig,
    GateConfig,
    ModelPrice,
    NameNormalization,
    OutcomeCredits,
    PriceTable,
    ReadinessTier,
    ScoringConfig,
    StatsConfig,
    ToolWeights,
)
from agentwatch.config.services import CollectorConfig, ExporterConfig, KafkaConfig
from agentwatch.config.settings import Settings

__all__ = [
    "AlertsConfig",
    "HANDOFF_TOOLS",
    "MAX_CONFIG_BYTES",
    "MAX_CONFIG_DEPTH",
    "MAX_CONFIG_NODES",
    "READ_ONLY_TOOLS",
    "AnchorsConfig",
    "ArgumentConstraint",
    "CollectorConfig",
    "ConfigError",
    "CostConfig",
    "ExporterConfig",
    "GateConfig",
    "JudgeConfig",
    "KafkaConfig",
    "ModelPrice",
    "NameNormalization",
    "OutcomeCredits",
    "PolicyTool",
    "PriceTable",
    "ReadinessTier",
    "ReviewConfig",
    "Reviewer",
    "SamplingConfig",
    "SamplingRule",
    "ScoringConfig",
    "Section",
    "Settings",
    "StatsConfig",
    "TaskPolicy",
    "ToolWeights",
    "load_settings",
    "parse_duration",
    "with_values",
]
