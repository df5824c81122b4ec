"""Importers: other formats → agentwatch transcripts (and task policies where the source holds ground truth).

- `openai_chat`: chat-format logs, one conversation of OpenAI messages per JSON line;
- `tau_bench`: τ-bench and τ²-bench result files, with one policy per task from its ground-truth actions.

The command line is `agentwatch import openai-chat|tau-bench ... --out DIR`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from agentwatch.wire.schema import Conversation

TRANSCRIPTS = "transcripts.jsonl"
POLICIES = "policies.yaml"


def transcript_line(conv: Conversation, **extra: Any) -> dict[str, Any]:
    """A conversation as a transcript line (defaults left out), plus keys the schema may not know yet (e.g.
    `attempt`: read once the schema has the field, ignored before)."""
    line = conv.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    line["conversation_id"] = conv.conversation_id
    line.update({k: v for k, v in extra.items() if v is not None})
    return line


def write_lines(path: Path, lines: Iterable[dict[str, Any]]) -> int:
    """Write transcript lines as JSON Lines; the number written."""
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
            n += 1
    return n


def write_policies(path: Path, policies: list[dict[str, Any]], header: str) -> None:
    """Write a configuration file holding only a `policies:` section (a `--config`), after a comment."""
    body = yaml.safe_dump({"policies": policies}, sort_keys=False, allow_unicode=True, width=110)
    comment = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    path.write_text(comment + body, encoding="utf-8")
