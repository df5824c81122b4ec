"""Importers: other formats → agentwatch transcripts (and task policies where the source holds ground truth).

- `openai_chat`: chat-format logs, one conversation of OpenAI messages per JSON line;
- `tau_bench`: τ-bench and τ²-bench result files, with one policy per task from its ground-truth actions;
- `swe_agent`: SWE-agent and mini-swe-agent trajectories (commands written in text), read by `openai_chat`.

The command line is `agentwatch import openai-chat|tau-bench ... --out DIR`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from agentwatch.safe_text import one_line
from agentwatch.wire.schema import MAX_ATTEMPT, Conversation, attempt_number, instance_text
from agentwatch.wire.transcripts import MAX_LINE_BYTES

TRANSCRIPTS = "transcripts.jsonl"
POLICIES = "policies.yaml"


def transcript_line(conv: Conversation) -> dict[str, Any]:
    """A conversation as a transcript line (defaults left out)."""
    line = conv.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    line["conversation_id"] = conv.conversation_id
    return line


def set_identity(
    conv: Conversation, attempt: Any, instance: Any = None, *, attempt_key: str = "attempt"
) -> None:
    """Give `conv` the attempt number and task instance a source logged; a value that is neither (a trial of
    1.5, an instance that is an object) is left out and said in its notes, so its transcript line still reads
    back (`attempt_key`: the source's name for the attempt, for the note)."""
    if attempt is not None:
        conv.attempt = attempt_number(attempt)
        if conv.attempt is None:
            conv.notes.append(
                f"{attempt_key} {str(attempt)[:40]!r} ignored: not an integer from 0 to {MAX_ATTEMPT:,}"
            )
    if instance is not None:
        text = instance_text(instance)
        conv.instance = text if isinstance(text, str) else None
        if conv.instance is None and text is not None:
            conv.notes.append(f"instance {str(instance)[:40]!r} ignored: not a text or a number")


def write_lines(path: Path, lines: Iterable[dict[str, Any]], skipped: list[str] | None = None) -> int:
    """Write transcript lines as JSON Lines; the number written. A line longer than `agentwatch score` reads
    (`MAX_LINE_BYTES`) is not written: it would be skipped there with no word of where it came from; it is
    named in `skipped` instead."""
    n = 0
    with open(path, "wb") as fh:
        for line in lines:
            raw = (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
            if len(raw) > MAX_LINE_BYTES:
                if skipped is not None:
                    skipped.append(
                        f"conversation {line.get('conversation_id')!r}: its transcript line would be "
                        f"{len(raw):,} bytes, over the {MAX_LINE_BYTES:,} `agentwatch score` reads; not written"
                    )
                continue
            fh.write(raw)
            n += 1
    return n


def write_policies(path: Path, policies: list[dict[str, Any]], header: str) -> None:
    """Write a configuration file holding only a `policies:` section (a `--config`), after a comment."""
    body = yaml.safe_dump({"policies": policies}, sort_keys=False, allow_unicode=True, width=110)
    # a task id is the results file's to choose: a control character left in a comment makes YAML refuse the file
    comment = "".join(f"# {one_line(line)}\n" if line else "#\n" for line in header.splitlines())
    path.write_text(comment + body, encoding="utf-8")
