"""Which value wins: a command's own values over AGENTWATCH_* variables, the variables over the file."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agentwatch.cli.app import settings_from_options
from agentwatch.config import ConfigError, load_settings, with_values


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENTWATCH_KAFKA__BOOTSTRAP_SERVERS", "env-broker:9092")
    monkeypatch.setenv("AGENTWATCH_EXPORTER__METRICS_PORT", "9999")
    path = tmp_path / "agentwatch.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "kafka": {"bootstrap_servers": "file-broker:9092", "client_id": "from-file"},
                "exporter": {"metrics_port": 9000, "regression_min_conversations": 40},
            }
        )
    )
    return path


def test_the_environment_wins_over_the_file(config: Path) -> None:
    settings = load_settings(config)
    assert settings.kafka.bootstrap_servers == "env-broker:9092" and settings.kafka.client_id == "from-file"
    assert settings.exporter.metrics_port == 9999 and settings.exporter.regression_min_conversations == 40


def test_a_commands_values_win_over_both_and_leave_the_rest(config: Path) -> None:
    settings = with_values(
        load_settings(config),
        kafka={"bootstrap_servers": "own:1"},
        exporter={"metrics_port": 0},
        policies=[{"id": "p", "task": "t"}],
    )
    assert settings.kafka.bootstrap_servers == "own:1" and settings.kafka.client_id == "from-file"
    assert settings.exporter.metrics_port == 0 and settings.exporter.regression_min_conversations == 40
    assert [p.id for p in settings.policies] == ["p"]
    options = settings_from_options(config, "flag:1", exporter={"metrics_port": 0, "max_series": None})
    assert options.kafka.bootstrap_servers == "flag:1" and options.exporter.metrics_port == 0


def test_a_bad_value_names_its_key(config: Path) -> None:
    settings = load_settings(config)
    with pytest.raises(ConfigError, match=r"exporter\.metrics_port"):
        with_values(settings, exporter={"metrics_port": "not a port"})
    with pytest.raises(ConfigError, match="used twice"):
        with_values(settings, policies=[{"id": "p"}, {"id": "p"}])
