"""What the judge's endpoint may be, and how what it says is read: the URL refused when it would send a key or
credentials in clear text, the URL as it may be shown (no credentials), the secrets taken out of any text the
server sends back, the `Retry-After` header, an error that is about `response_format`, a TLS certificate that does
not verify, a chat completion's text and usage."""

from __future__ import annotations

import base64
import email.utils
import ipaddress
import json
import math
import ssl
import time
from urllib.parse import unquote, urlsplit

from agentwatch.judge.verdict import JUDGE_BAD_OUTPUT, JUDGE_TLS_CERTIFICATE


class CallFailed(Exception):
    """A call that ends without a verdict: its failure code and what happened."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


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


def shown_url(url: str) -> str:
    """`url` with the credentials it carries (user and password) replaced by `***`, for logs and messages."""
    parsed = urlsplit(url.strip())
    if "@" not in parsed.netloc:
        return url
    return parsed._replace(netloc="***@" + parsed.netloc.rpartition("@")[2]).geturl()


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """`url` without the credentials it carries, and those (user, password) or None: given to the HTTP client
    apart, so that no log line of a request shows them."""
    parsed = urlsplit(url.strip())
    if "@" not in parsed.netloc:
        return url, None
    userinfo, _, host = parsed.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    return parsed._replace(netloc=host).geturl(), (unquote(user), unquote(password))


def url_credentials(url: str) -> list[str]:
    """The secrets a URL carries: its password, `user:password` and that in base64 (a Basic Authorization)."""
    parsed = urlsplit(url.strip())
    if parsed.password is None and "@" not in parsed.netloc:
        return []
    userinfo = parsed.netloc.rpartition("@")[0]
    user, _, password = userinfo.partition(":")
    basic = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
    return [s for s in (userinfo, unquote(userinfo), password, unquote(password), basic) if s]


class Redactor:
    """Replaces the secrets (API key, URL credentials) in a text with `[redacted]`: a server may echo them back
    (an error quoting the request's headers, a verdict quoting its instructions)."""

    def __init__(self, secrets: list[str]) -> None:
        # the longest first: a secret inside another is replaced as part of it
        self._secrets = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)

        self._raw = [s.encode() for s in self._secrets]

    def __call__(self, text: str) -> str:
        """`text` without the secrets."""
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, "[redacted]")
        return text

    def body(self, raw: bytes) -> bytes:
        """A reply's body without the secrets (before any part of it is cut, which could cut one in two)."""
        for secret in self._raw:
            if secret in raw:
                raw = raw.replace(secret, b"[redacted]")
        return raw


def refuse_plain_http_with_key(base_url: str) -> None:
    """ValueError when `base_url` would send an API key or the credentials it carries in clear text: `http://`
    to a host not on loopback."""
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
        f"judge.base_url {shown_url(base_url)!r} is plain http to {host or 'an unknown host'}: the API key would "
        "cross the "
        "network in clear text. Use https://, a loopback address, or set judge.allow_insecure_http: true "
        "(e.g. behind a sidecar that encrypts)"
    )


# What to check for each OpenSSL verification error (X509_V_ERR_*) a judge's endpoint is likely to give.
_CERTIFICATE_HINTS = {
    2: "its issuer is not trusted here: put its CA in the bundle SSL_CERT_FILE names",
    9: "it is not valid yet: check the server's certificate and this host's clock",
    10: "it has expired: the server's certificate needs renewing",
    18: "it is self-signed: put it, or its CA, in the bundle SSL_CERT_FILE names",
    19: "its chain ends in a CA not trusted here: put that CA in the bundle SSL_CERT_FILE names",
    20: "its issuer is not trusted here: put its CA in the bundle SSL_CERT_FILE names",
    21: "its issuer is not trusted here: put its CA in the bundle SSL_CERT_FILE names",
    62: "it does not name the host of judge.base_url",
    64: "it does not name the address of judge.base_url",
}


# The alerts a server sends when it wants a client certificate (mutual TLS): the judge sends none, so every
# retry is refused the same way. TLS 1.3 says so with `certificate_required`; servers of TLS 1.2 with
# `handshake_failure` (which is also what a server that shares no cipher with us says: no retry passes that
# either), and some proxies with `bad_certificate` or `certificate_unknown`.
_CLIENT_CERTIFICATE_ALERTS = {
    "TLSV13_ALERT_CERTIFICATE_REQUIRED": "it asks for a client certificate (mutual TLS)",
    "SSLV3_ALERT_BAD_CERTIFICATE": "it asks for a client certificate (mutual TLS)",
    "SSLV3_ALERT_CERTIFICATE_UNKNOWN": "it asks for a client certificate (mutual TLS)",
    "SSLV3_ALERT_HANDSHAKE_FAILURE": "it asks for a client certificate (mutual TLS) or shares no cipher with this host",
}


def certificate_failure(exc: BaseException, where: str) -> CallFailed | None:
    """A `judge_tls_certificate` failure saying which check failed when `exc` comes of a TLS certificate of
    `where` that does not verify, or of `where` asking for a client certificate; None for any other error (a
    reset handshake, say, which a retry may pass)."""
    cause: BaseException | None = exc
    for _ in range(8):  # httpx's error is caused by httpcore's, caused by the ssl module's
        if cause is None:
            return None
        if isinstance(cause, ssl.SSLCertVerificationError):
            code = cause.verify_code
            check = cause.verify_message or str(cause)
            hint = _CERTIFICATE_HINTS.get(code, "the certificate is refused")
            return CallFailed(
                JUDGE_TLS_CERTIFICATE,
                f"the TLS certificate of {where} does not verify: {check} (X509 error {code}; {hint}); "
                "not retried",
            )
        if isinstance(cause, ssl.SSLError) and cause.reason in _CLIENT_CERTIFICATE_ALERTS:
            return CallFailed(
                JUDGE_TLS_CERTIFICATE,
                f"{where} refuses the TLS handshake ({cause.reason}): {_CLIENT_CERTIFICATE_ALERTS[cause.reason]}; "
                "the judge sends no client certificate, so point judge.base_url at a proxy that holds one; "
                "not retried",
            )
        cause = cause.__cause__ or cause.__context__
    return None


def about_format(text: str) -> bool:
    """Whether an error's text is about `response_format` (the server rejects structured outputs)."""
    low = text.lower()
    return "response_format" in low or "json_schema" in low or "structured" in low


def read_completion(body: bytes, usage: list[int]) -> str | None:
    """The text content of a chat completion's first choice; its token usage added to `usage` (input,
    output, input served from the provider's cache); `CallFailed` for a refusal or a body that is no completion."""
    try:
        data = json.loads(body)
        choice = data["choices"][0]
        message = choice.get("message") or {}
        if not isinstance(message, dict):
            raise TypeError("the message is not an object")
    # RecursionError: a body nested deeper than the JSON decoder goes
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError):
        raise CallFailed(
            JUDGE_BAD_OUTPUT,
            f"response is not a chat completion: {body.decode('utf-8', 'replace')[:200]!r}",
        ) from None
    u = data.get("usage") or {}
    try:
        details = u.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else 0
        counts = [
            int(u.get("prompt_tokens") or 0),
            int(u.get("completion_tokens") or 0),
            int(cached or 0),
        ]
        if min(counts) < 0:  # would take off what other calls cost, and the spend cap with it
            raise ValueError("a negative token count")
        usage[:] = [a + b for a, b in zip(usage, counts, strict=True)]
    except (TypeError, ValueError, AttributeError, OverflowError):
        pass  # usage the server garbled is not counted; the verdict still is
    refusal = message.get("refusal")
    if refusal:
        raise CallFailed(JUDGE_BAD_OUTPUT, f"refusal: {str(refusal)[:200]}")
    content = message.get("content")
    if choice.get("finish_reason") == "content_filter":
        raise CallFailed(JUDGE_BAD_OUTPUT, "refusal: content filter")
    if content is not None and not isinstance(content, str):
        content = str(content)
    return content
