"""What the review pages read from a request: the client's address, the session's CSRF token (made once, checked
on every form post), a redirect target only when it stays on this site, and the queue's filters (from the query
string, and written back into one)."""

from __future__ import annotations

import hmac
import secrets
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request

from agentwatch.review.queries import Filters


def client_of(request: Request) -> str:
    """The client's address (behind trusted proxies, the one X-Forwarded-For names: `forwarded_allow_ips`)."""
    return request.client.host if request.client is not None else "unknown"


def csrf_ok(request: Request, form: Any) -> bool:
    """Whether a form post carries the session's CSRF token."""
    token, sent = request.session.get("csrf"), form.get("csrf")
    return isinstance(token, str) and isinstance(sent, str) and hmac.compare_digest(token, sent)


def csrf_token(request: Request) -> str:
    """The session's CSRF token, made on first use."""
    token = request.session.get("csrf")
    if not isinstance(token, str):
        token = request.session["csrf"] = secrets.token_urlsafe(24)
    return token


def filters_of(request: Request) -> Filters:
    """The queue's filters the query string names (`agent`, `version`, `task`; empty: any)."""
    q = request.query_params
    return Filters(q.get("agent") or None, q.get("version") or None, q.get("task") or None)


def filter_params(filters: Filters) -> dict[str, str]:
    """The query parameters of the filters that are set."""
    pairs = (("agent", filters.agent), ("version", filters.version), ("task", filters.task))
    return {k: v for k, v in pairs if v}


def filter_query(filters: Filters) -> str:
    """The filters as a query string (`?agent=…`), or "" when none is set."""
    params = filter_params(filters)
    return "?" + urlencode(params) if params else ""


def local_target(target: str | None) -> str:
    """`target` if it is a path on this site, else "" (no open redirect). Browsers drop tabs and line breaks
    from a URL before reading it (a tab between two slashes makes `//evil.example`), so no control character or
    space passes."""
    if (
        target
        and target.startswith("/")
        and not target.startswith("//")
        and "\\" not in target
        and not any(ch <= " " or ch == "\x7f" for ch in target)
    ):
        return target
    return ""
