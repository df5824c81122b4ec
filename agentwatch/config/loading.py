"""Reading a configuration file: bounded in size, depth and alias expansion, every error naming its key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import TypeAdapter, ValidationError

from agentwatch.config.base import ConfigError
from agentwatch.config.settings import Settings


def _format_error(err: ValidationError, source: str, section: str | None = None) -> str:
    lines = [f"invalid configuration in {source}:"]
    for e in err.errors():
        key = ".".join(str(p) for p in ([section] if section else []) + list(e["loc"])) or "<root>"
        msg = e["msg"].removeprefix("Value error, ")
        lines.append(f"  {msg}" if msg.startswith(f"{key}.") else f"  {key}: {e['msg']}")
    return "\n".join(lines)


MAX_CONFIG_BYTES = 1 << 20  # a configuration file is a few KB; a bigger one is the wrong file (or an attack)
MAX_CONFIG_DEPTH = 32
MAX_CONFIG_NODES = 200_000  # YAML nodes after expanding aliases (a billion-laughs file expands to 10^9)


def _no_key_twice(mapping: yaml.MappingNode, path: object) -> None:
    seen: dict[str, int] = {}
    for key, _value in mapping.value:
        if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
            line = key.start_mark.line + 1
            if key.value in seen:
                raise ConfigError(
                    f"configuration file {path}: key {key.value!r} is written twice in one mapping (lines "
                    f"{seen[key.value]} and {line}); only one can hold"
                )
            seen[key.value] = line


def _check_yaml_node(node: yaml.Node, path: object) -> None:
    """Refuse documents nested too deeply, referring to themselves, too large once aliases are expanded, or
    with a key written twice in one mapping (YAML loaders keep the last silently: half a section edited in
    vain)."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(n: yaml.Node, depth: int) -> int:
        key = id(n)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise ConfigError(f"configuration file {path}: an alias refers to a node that contains it")
        if depth > MAX_CONFIG_DEPTH:
            raise ConfigError(
                f"configuration file {path} is nested more than {MAX_CONFIG_DEPTH} levels deep "
                f"(line {n.start_mark.line + 1})"
            )
        active.add(key)
        total = 1
        if isinstance(n, yaml.SequenceNode):
            children = n.value
        elif isinstance(n, yaml.MappingNode):
            children = [c for pair in n.value for c in pair]
            _no_key_twice(n, path)
        else:
            children = []
        for child in children:
            total += size(child, depth + 1)
            if total > MAX_CONFIG_NODES:
                raise ConfigError(
                    f"configuration file {path} expands to more than {MAX_CONFIG_NODES:,} values "
                    "(aliases repeating aliases?)"
                )
        active.discard(key)
        sizes[key] = total
        return total

    size(node, 0)


def read_yaml(path: str | Path) -> Any:
    """The YAML document of a configuration file, bounded in size, depth and alias expansion; raise ConfigError."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read configuration file {path}: {exc}") from exc
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"configuration file {path} is larger than {MAX_CONFIG_BYTES >> 20} MiB: "
            "not a configuration file?"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"configuration file {path} is not UTF-8 text (byte {exc.start}): not a configuration file?"
        ) from None
    try:
        loader = yaml.SafeLoader(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"configuration file {path} is not valid YAML: {exc}") from exc
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_yaml_node(node, path)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise ConfigError(f"configuration file {path} is not valid YAML: {exc}") from exc
    except RecursionError:
        raise ConfigError(f"configuration file {path} is nested too deeply") from None
    finally:
        loader.dispose()


def load_settings(path: str | Path | None = None, **overrides: Any) -> Settings:
    """Load settings from an optional YAML file, `AGENTWATCH_*` variables and overrides; raise ConfigError."""
    data: dict[str, Any] = {}
    source = "defaults/environment"
    if path is not None:
        source = str(path)
        loaded = read_yaml(path) or {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"configuration file {path} must hold a mapping at the top level")
        bad = [k for k in loaded if not isinstance(k, str)]
        if bad:
            raise ConfigError(
                f"configuration file {path}: top-level keys must be section names, not {bad[0]!r}"
            )
        data.update(loaded)
    for dotted, value in overrides.items():
        if value is None:
            continue
        section, _, key = dotted.partition("__")
        if key:
            data.setdefault(section, {})[key] = value
        else:
            data[section] = value
    try:
        return Settings(**data)
    except ValidationError as exc:
        raise ConfigError(_format_error(exc, source)) from exc


def with_values(settings: Settings, **sections: Any) -> Settings:
    """A copy of `settings` with these sections' keys set, winning over the file and the environment (the values
    a command line or a command gives); raise ConfigError naming the key."""
    updates: dict[str, Any] = {}
    for name, values in sections.items():
        current = getattr(settings, name)
        merged = {**current.model_dump(), **values} if isinstance(values, dict) else values
        field: Any = Settings.model_fields[name].annotation
        try:
            updates[name] = TypeAdapter(field).validate_python(merged)
        except ValidationError as exc:
            raise ConfigError(_format_error(exc, "the command's options", name)) from None
    if "policies" in updates:
        try:
            Settings.unique_policy_ids(updates["policies"])
        except ValueError as exc:
            raise ConfigError(f"invalid configuration in the command's options:\n  policies: {exc}") from None
    return settings.model_copy(update=updates)
