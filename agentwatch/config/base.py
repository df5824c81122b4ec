"""What every configuration section shares: unknown keys refused, durations read, one error type."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict

from agentwatch.wire.contract import DETECTORS

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> float:
    """Seconds in a window name such as `90s`, `15m`, `1h`, `24h`, `7d`, `2w`; ValueError if malformed."""
    m = _DURATION.match(text)
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"window {text!r} is not a positive duration like 15m, 1h, 24h or 7d")
    return float(m.group(1)) * _UNIT_S[m.group(2)]


def _known_detectors(names: list[str]) -> list[str]:
    unknown = [d for d in names if d not in DETECTORS]
    if unknown:
        raise ValueError(f"unknown detector(s) {unknown}: choose from {list(DETECTORS)}")
    return names


# A list of detector names (`agentwatch.wire.contract.DETECTORS`), refused with the choices when one is unknown.
Detectors = Annotated[list[str], AfterValidator(_known_detectors)]


class ConfigError(ValueError):
    """A configuration file or variable is invalid; the message names the offending key."""


class Section(BaseModel):
    """A configuration section: an unknown key is an error naming it, defaults are validated too."""

    model_config = ConfigDict(extra="forbid", validate_default=True)
