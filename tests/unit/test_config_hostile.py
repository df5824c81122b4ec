"""Hostile configuration files: each is one clear ConfigError (exit 2 on the command line), fast, no traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentwatch.cli import app
from agentwatch.config import MAX_CONFIG_BYTES, MAX_CONFIG_DEPTH, MAX_CONFIG_NODES, ConfigError, load_settings


def _billion_laughs(levels: int = 9, at: str | None = None) -> str:
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels)]
    if at is not None:  # the bomb under a real key instead of unknown top-level keys
        lines = [line.replace(f"l{i}: ", f"  x{i}: ", 1) for i, line in enumerate(lines)]
        return "judge:\n" + "\n".join(lines) + f"\nexporter:\n  {at}: *l{levels - 1}\n"
    return "\n".join(lines) + "\n"


CASES: dict[str, tuple[bytes, str]] = {
    "billion_laughs": (_billion_laughs().encode(), "expands to more than"),
    "billion_laughs_in_a_key": (_billion_laughs(at="tasks").encode(), "expands to more than"),
    "self_reference": (b"exporter:\n  tasks: &a [*a]\n", "refers to a node that contains it"),
    "deep_flow_nesting": (b"exporter: " + b"[" * 50_000 + b"]" * 50_000 + b"\n", "nested"),
    "deep_block_nesting": ("".join("  " * i + f"k{i}:\n" for i in range(200)).encode(), "nested more than"),
    "binary": (bytes(range(256)) * 16, "not UTF-8 text"),
    "random_bytes": (os.urandom(8192), ""),
    "nul_in_text": (b"exporter:\n  windows: [\x00]\n", "not valid YAML"),
    "huge": (b"exporter:\n  tasks:\n" + b"  - task\n" * (MAX_CONFIG_BYTES // 9 + 10), "larger than"),
    "integer_top_level_keys": (b"1: 2\n", "top-level keys"),
    "top_level_list": (b"- a\n- b\n", "mapping at the top level"),
    # statistics settings that passed the start and failed at the first report: an allocation of 745 GiB, numpy
    # refusing a negative seed, a prior past a float's range
    "k_past_any_benchmark": (b"stats:\n  ks: [1, 99999999999]\n", "stats.ks"),
    "resamples_past_memory": (b"stats:\n  bootstrap_resamples: 100000000000\n", "stats.bootstrap_resamples"),
    "negative_seed": (b"stats:\n  seed: -1\n", "stats.seed"),
    "prior_of_1e308": (b"stats:\n  prior_alpha: 1.0e308\n", "stats.prior_alpha"),
    # YAML loaders keep the last of two equal keys: the first section was edited in vain
    "key_twice": (
        b"stats:\n  ks: [1]\nstats:\n  ks: [3]\n",
        "'stats' is written twice in one mapping (lines 1 and 3)",
    ),
    # a dead-letter topic the collector also reads re-read every bad record without end (20, 40, 79 rejects...)
    "dead_letters_read_back": (
        b"collector:\n  dead_letter_topic: agentwatch.spans\n",
        "dead_letter_topic 'agentwatch.spans' is also a topic the collector reads",
    ),
    "scores_read_back": (b"collector:\n  input_topics: [s, agentwatch.scores]\n", "scores_topic"),
    "empty_dead_letter_topic": (b"collector:\n  dead_letter_topic: ''\n", "dead_letter_topic is empty"),
    "heartbeat_past_session": (
        b"exporter:\n  session_timeout_ms: 1000\n  heartbeat_interval_ms: 5000\n",
        "heartbeat_interval_ms (5000) must be below session_timeout_ms (1000)",
    ),
    "fetch_queue_past_librdkafka": (
        b"collector:\n  fetch_queue_kbytes: 3000000\n",
        "collector.fetch_queue_kbytes",
    ),
    "key_twice_nested": (b"exporter:\n  windows: [1h]\n  windows: [5m]\n", "'windows' is written twice"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_config_file_is_one_clear_error(tmp_path: Path, name: str) -> None:
    content, expected = CASES[name]
    path = tmp_path / f"{name}.yaml"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as err:  # a hang or an expansion would meet the suite's timeout instead
        load_settings(path)
    message = str(err.value)
    assert str(path) in message
    assert expected in message
    assert len(message) < 2_000  # one error, not a dump of the file


def test_limits_leave_room_for_real_configurations(tmp_path: Path) -> None:
    tasks = [f"task-{i}" for i in range(2_000)]
    path = tmp_path / "big.yaml"
    path.write_text(
        "exporter:\n  windows: &w [1h, 24h]\n  tasks:\n"
        + "".join(f"    - {t}\n" for t in tasks)
        + "stats:\n  ks: [1, 3]\n"
    )
    settings = load_settings(path)
    assert settings.exporter.tasks == tasks and settings.exporter.windows == ["1h", "24h"]
    assert MAX_CONFIG_DEPTH >= 16 and MAX_CONFIG_NODES >= 100_000
    nested = tmp_path / "nested.yaml"
    nested.write_text("exporter:\n  windows: [" + "1h, " * 20 + "24h]\n")
    assert load_settings(nested).exporter.windows[-1] == "24h"


def test_a_directory_and_a_missing_file_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read configuration file"):
        load_settings(tmp_path)
    with pytest.raises(ConfigError, match="cannot read configuration file"):
        load_settings(tmp_path / "missing.yaml")


def test_infinite_device_is_refused_after_reading_the_cap() -> None:
    with pytest.raises(ConfigError, match="larger than"):
        load_settings("/dev/zero")


@pytest.mark.parametrize("name", ["billion_laughs", "binary", "deep_flow_nesting", "integer_top_level_keys"])
def test_the_command_line_prints_one_line_and_exits_2(tmp_path: Path, name: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(CASES[name][0])
    result = CliRunner().invoke(app, ["collector", "--config", str(path)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert f"error: configuration file {path}" in result.output
