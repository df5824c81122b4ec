"""`agentwatch reconstruct FILE...`: show what agentwatch makes of OTLP trace files, as `Conversation` JSONL."""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from agentwatch.cli.app import app


def _note_kind(note: str) -> str:
    """A note without its turn list and numbers, to count notes of the same kind."""
    return re.sub(r"\d+", "N", note.split(" for turn(s) ")[0])


@app.command("reconstruct")
def reconstruct(
    files: Annotated[
        list[Path],
        typer.Argument(
            metavar="FILE...",
            help="OTLP trace files, and log files whose GenAI message events join their spans: protobuf, "
            "OTLP/JSON, or JSON lines (gzip ok).",
        ),
    ],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the JSONL here instead of stdout.")
    ] = None,
    max_attribute_bytes: Annotated[
        int, typer.Option(help="Truncate attribute strings longer than this.")
    ] = 65536,
) -> None:
    """Rebuild conversations from OTLP trace (and log) files and print one `Conversation` JSON per line.

    A summary of what could not be read or seen goes to stderr. Exit code 1 when a file or record could not
    be decoded (the rest is still printed), or when no span was found at all.
    """
    from agentwatch.collector.loop_join import drop_continued
    from agentwatch.collector.otlp_files import group_by_conversation, read_otlp_files
    from agentwatch.collector.reconstruct import build_conversation
    from agentwatch.collector.span_tree import setup_only

    read = read_otlp_files(list(files), max_attribute_bytes=max_attribute_bytes)
    groups = group_by_conversation(read.spans)
    setup = [key for key, spans in groups.items() if setup_only(spans)]
    for key in setup:  # an agent created, documents embedded: nothing ran, no conversation
        del groups[key]
    ordered = sorted(groups.items(), key=lambda kv: (min(s.start_ns for s in kv[1]), kv[0]))
    # a loop the caller runs, each model call a trace: the earlier traces are parts of the last one's
    conversations, continued = drop_continued(build_conversation(spans) for _, spans in ordered)
    notes: Counter[str] = Counter()
    sink = open(out, "w", encoding="utf-8") if out is not None else sys.stdout  # noqa: SIM115
    try:
        for conversation in conversations:
            notes.update({_note_kind(n) for n in conversation.notes})
            sink.write(conversation.model_dump_json() + "\n")
    finally:
        if out is not None:
            sink.close()
        else:
            sink.flush()
    err = typer.echo
    err(
        f"{len(read.spans)} span(s) in {read.records} record(s) of {len(files)} file(s) -> "
        f"{len(conversations)} conversation(s)",
        err=True,
    )
    if continued:
        err(
            f"  {continued} trace(s) of a loop the caller runs, continued in a later trace's conversation: "
            "left out (docs/collector.md, loop join)",
            err=True,
        )
    if setup:
        err(
            f"  {len(setup)} trace(s) only setting agents up (create_agent, embeddings): no conversation",
            err=True,
        )
    for kind, count in notes.most_common():
        err(f"  {count} conversation(s): {kind}", err=True)
    for problem in read.problems[:50]:
        err(f"  unreadable: {problem}", err=True)
    if len(read.problems) > 50:
        err(f"  ... and {len(read.problems) - 50} more unreadable record(s)", err=True)
    if read.problems or not read.spans:
        raise typer.Exit(code=1)
