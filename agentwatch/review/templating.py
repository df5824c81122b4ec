"""The review pages' Jinja2 templates: their folder, the filters they use (`when`, `pretty`, `clip`), and what
every value they print passes through (`shown`: a text's bidirectional controls shown as escapes)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from markupsafe import Markup
from starlette.templating import Jinja2Templates

from agentwatch.safe_text import no_reordering
from agentwatch.scorers.differences import clip_reason

TEMPLATES = Path(__file__).parent / "templates"


def page_templates() -> Jinja2Templates:
    """The pages' templates with their filters, every printed value `shown`."""
    templates = Jinja2Templates(directory=str(TEMPLATES))
    templates.env.filters["when"] = when
    templates.env.filters["pretty"] = pretty
    templates.env.filters["clip"] = clip_reason
    templates.env.finalize = shown  # every value a template prints
    return templates


def when(epoch: float) -> str:
    """A Unix time as the pages print it (to the minute, UTC)."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC")


def pretty(value: Any) -> str:
    """A text as it is, anything else as indented JSON."""
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, default=str)


def shown(value: object) -> object:
    """A value as a template prints it: a text's bidirectional overrides and isolates shown as escapes (a tool
    named with one would read as another name, and the page's own text after it run backwards)."""
    if isinstance(value, Markup):
        return Markup(no_reordering(str(value)))
    return no_reordering(value) if isinstance(value, str) else value
