"""What the judge's endpoint may be, and how what it says is read: the URL refused when it would send a key in
clear text, the `Retry-After` header, an error that is about `response_format`."""

from __future__ import annotations

import email.utils
import ipaddress
import math
import time
from urllib.parse import urlsplit


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or an HTTP date); None if absent or invalid."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:  # "nan" is no number of seconds; "inf" is a wait longer than any bound
        return None if math.isnan(seconds) else max(seconds, 0.0)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)


def refuse_plain_http_with_key(base_url: str) -> None:
    """ValueError when `base_url` would send an API key in clear text: `http://` to a host not on loopback."""
    parsed = urlsplit(base_url.strip())
    if parsed.scheme.lower() != "http":
        return
    host = (parsed.hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise ValueError(
        f"judge.base_url {base_url!r} is plain http to {host or 'an unknown host'}: the API key would cross the "
        "network in clear text. Use https://, a loopback address, or set judge.allow_insecure_http: true "
        "(e.g. behind a sidecar that encrypts)"
    )


def about_format(text: str) -> bool:
    """Whether an error's text is about `response_format` (the server rejects structured outputs)."""
    low = text.lower()
    return "response_format" in low or "json_schema" in low or "structured" in low
