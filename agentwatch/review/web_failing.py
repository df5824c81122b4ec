"""The page of a series' failing conversations: what a quality alert links to (`/failing?agent=…&why=…`).

Query parameters, all optional: `agent`, `version`, `task` (the series), `window` (a duration; default the
service's, `alerts.window`, the evidence the quality alerts weigh) ending at `until` (Unix seconds, default now), `why` (one word of `review.failing.WHY`: the alert's kind of
failure; none: any), `alert` (the alert's name, shown as the page's reason), `offset` (paging). A wrong value is
said on the page, which then lists with the default. The reader opens a conversation from the list; its page
links back here.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from agentwatch.config import parse_duration
from agentwatch.review.failing import WHY, FailingQuery
from agentwatch.review.params import MAX_OFFSET, integer, unix_time
from agentwatch.review.store import Store
from agentwatch.review.templating import when

DEFAULT_WINDOW = "24h"
MAX_REASONS = 3  # reasons shown per conversation in the list (the conversation page has them all)


def failing_context(
    store: Store,
    params: Mapping[str, str],
    page_size: int,
    now: float | None = None,
    default_window: str = DEFAULT_WINDOW,
) -> dict[str, Any]:
    """The template context of the failing list for these query parameters."""
    now = time.time() if now is None else now
    problems: list[str] = []
    window = params.get("window") or default_window
    try:
        window_s = parse_duration(window)
    except ValueError as exc:
        problems.append(str(exc))
        window, window_s = default_window, parse_duration(default_window)
    until = now
    if params.get("until"):
        asked = unix_time(params["until"])
        if asked is None:
            problems.append(
                f"until {params['until']!r} is not a time in Unix seconds from 1970 to 9999: the window ends now"
            )
        else:
            until = asked
    why = params.get("why") or None
    if why is not None and why not in WHY:
        problems.append(f"why {why!r} is not one of {', '.join(WHY)}: every failing conversation is listed")
        why = None
    offset = integer(params.get("offset") or "0", MAX_OFFSET)
    if offset is None:
        problems.append(
            f"offset {params['offset']!r} is not an integer from 0 to {MAX_OFFSET:,}: the first page"
        )
        offset = 0
    since = max(0.0, until - window_s)  # a window reaching before 1970 starts there: nothing ended earlier
    query = FailingQuery(
        agent=params.get("agent") or None,
        version=params.get("version") or None,
        task=params.get("task") or None,
        since=since,
        until=until,
        why=why,
    )
    items, total = store.failing(query, page_size, offset)
    kept = {
        k: v
        for k, v in params.items()
        if k in ("agent", "version", "task", "window", "until", "why", "alert")
    }
    if not params.get("until"):
        kept["until"] = f"{until:.0f}"  # a link to this page shows the same window later
    here = "/failing?" + urlencode({**kept, "offset": offset} if offset else kept)
    more = None
    if offset + page_size < total:
        more = "/failing?" + urlencode({**kept, "offset": offset + page_size})
    previous = None
    if offset:
        previous = "/failing?" + urlencode({**kept, "offset": max(0, offset - page_size)})
    series = " ".join(v for v in (query.agent, query.version) if v) or "every agent"
    return {
        "items": items,
        "total": total,
        "first": offset + 1,
        "last": offset + len(items),
        "series": series,
        "task": query.task,
        "why": why,
        "whys": WHY,
        "alert": params.get("alert") or None,
        "window": window,
        "since": when(since),
        "until": when(until),
        "problems": problems,
        "choices": store.failing_choices(),
        "filters": {"agent": query.agent, "version": query.version, "task": query.task},
        "here": here,
        "back": urlencode({"back": here}),
        "more": more,
        "previous": previous,
        "max_reasons": MAX_REASONS,
    }
