"""All sections together (`Settings`), read from a YAML file and `AGENTWATCH_*` environment variables."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

from agentwatch.config.alerts import AlertsConfig
from agentwatch.config.policies import TaskPolicy
from agentwatch.config.review import ReviewConfig
from agentwatch.config.sampling import AnchorsConfig, JudgeConfig, SamplingConfig
from agentwatch.config.scoring import (
    CostConfig,
    GateConfig,
    ReadinessTier,
    ScoringConfig,
    StatsConfig,
    _default_tiers,
)
from agentwatch.config.services import CollectorConfig, ExporterConfig, KafkaConfig

log = logging.getLogger(__name__)


class _SectionEnvironment(EnvSettingsSource):
    """`AGENTWATCH_<SECTION>__<KEY>` variables; `AGENTWATCH_<SECTION>` itself counts only when it holds JSON.

    The SDK reads `AGENTWATCH_EXPORTER=kafka` (its span exporter); that plain word is not the service's
    `exporter` section, and must not stop `agentwatch score` in the same shell.
    """

    def prepare_field_value(self, field_name: str, field: Any, value: Any, value_is_complex: bool) -> Any:
        if isinstance(value, str) and not value.lstrip().startswith(("{", "[")):
            log.debug(
                "AGENTWATCH_%s=%r is not JSON: not read as the %s section",
                field_name.upper(),
                value,
                field_name,
            )
            value = None
        return super().prepare_field_value(field_name, field, value, value_is_complex)


class Settings(BaseSettings):
    """All of agentwatch's configuration."""

    model_config = SettingsConfigDict(
        env_prefix="AGENTWATCH_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    cost: CostConfig = Field(default_factory=CostConfig)
    stats: StatsConfig = Field(default_factory=StatsConfig)
    gate: GateConfig = Field(default_factory=GateConfig)
    tiers: list[ReadinessTier] = Field(default_factory=_default_tiers)
    kafka: KafkaConfig = Field(default_factory=KafkaConfig)
    collector: CollectorConfig = Field(default_factory=CollectorConfig)
    exporter: ExporterConfig = Field(default_factory=ExporterConfig)
    alerts: AlertsConfig = Field(default_factory=AlertsConfig)
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    anchors: AnchorsConfig = Field(default_factory=AnchorsConfig)
    review: ReviewConfig = Field(default_factory=ReviewConfig)
    policies: list[TaskPolicy] = Field(
        default_factory=list, description="task policies; the first match wins"
    )

    @field_validator("policies")
    @classmethod
    def unique_policy_ids(cls, v: list[TaskPolicy]) -> list[TaskPolicy]:
        """The policies, or ValueError naming an id used twice."""
        seen: set[str] = set()
        for p in v:
            if p.id in seen:
                raise ValueError(f"policy id {p.id!r} is used twice")
            seen.add(p.id)
        return v

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Environment wins over the file (passed as init kwargs).
        return (_SectionEnvironment(settings_cls), init_settings)
