"""`agentwatch policy check POLICIES TRANSCRIPTS...`: what task policies would grade, before they are deployed."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Annotated, Any

import typer

from agentwatch.cli.app import app
from agentwatch.safe_text import one_line

policy_app = typer.Typer(help="Task policies: expectations kept in configuration.", no_args_is_help=True)
app.add_typer(policy_app, name="policy")


def load_policies(path: Path) -> list[Any]:
    """Policies from a YAML file holding either a `policies:` list (a configuration file) or a bare list, read
    with a configuration file's bounds (size, depth, aliases expanded)."""
    from pydantic import TypeAdapter, ValidationError

    from agentwatch.config import ConfigError, TaskPolicy
    from agentwatch.config.loading import read_yaml

    data = read_yaml(path)
    if isinstance(data, dict):
        data = data.get("policies")
    if not isinstance(data, list):
        raise ConfigError(f"{path}: expected a list of policies or a mapping with a `policies:` list")
    try:
        return TypeAdapter(list[TaskPolicy]).validate_python(data)
    except ValidationError as exc:
        lines = [f"invalid policies in {path}:"]
        for e in exc.errors():
            lines.append(f"  policies.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}")
        raise ConfigError("\n".join(lines)) from None


@policy_app.command("check")
def check(
    policies: Annotated[
        Path, typer.Argument(metavar="POLICIES", help="YAML file with a `policies:` list (or a bare list).")
    ],
    files: Annotated[
        list[Path], typer.Argument(metavar="FILE...", help="Transcript JSONL files to try the policies on.")
    ],
    config: Annotated[Path | None, typer.Option("--config", help="YAML configuration file.")] = None,
) -> None:
    """Per task: which policy matches, how many conversations it grades, how many pass, which rules fail most.

    The policies grade alone: an outcome label in the files never decides a verdict here; where conversations
    carry one, the table says how many verdicts agree with it (complete is a success)."""
    from rich.console import Console
    from rich.table import Table

    from agentwatch.config import ConfigError, load_settings
    from agentwatch.scorers import ConversationScorer
    from agentwatch.wire.contract import INFORMATIONAL_REASONS
    from agentwatch.wire.schema import Outcome
    from agentwatch.wire.transcripts import LineError, TranscriptFileError, iter_conversations

    try:
        settings = load_settings(config)
        settings.policies = load_policies(policies)
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    scorer = ConversationScorer(settings, labels="ignore")
    errors: list[LineError] = []
    rows: dict[tuple[str, str], dict[str, Any]] = defaultdict(
        lambda: {
            "conversations": 0,
            "graded": 0,
            "passed": 0,
            "labelled": 0,
            "agree": 0,
            "expectations": 0,
            "rules": Counter(),
        }
    )
    try:
        for path in files:
            for conv in iter_conversations(path, errors):
                s = scorer.score(conv)
                row = rows[(s.agent, s.task)]
                row["conversations"] += 1
                row["policy"] = s.policy or row.get("policy")
                if "expectations" in s.graded_by:
                    row["expectations"] += 1
                if s.policy is None or not s.scored:
                    continue
                row["graded"] += 1
                row["passed"] += bool(s.passed)
                row["rules"].update({r.split(":", 1)[0] for r in s.reasons} - INFORMATIONAL_REASONS)
                if conv.outcome is not None:
                    row["labelled"] += 1
                    row["agree"] += bool(s.passed) == (conv.outcome is Outcome.COMPLETE)
    except TranscriptFileError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    for err in errors[:20]:
        typer.echo(one_line(f"malformed: {err}"), err=True)

    table = Table(title=f"Policies of {policies} on {len(files)} file(s)")
    for name in (
        "agent",
        "task",
        "policy",
        "conversations",
        "graded",
        "passed",
        "labels agree",
        "failing rules (conversations)",
    ):
        table.add_column(name, overflow="fold")
    for (agent, task), row in sorted(rows.items()):
        ref = row.get("policy")
        policy = ref or "none matches"
        if row["expectations"]:
            policy += f" ({row['expectations']} with expectations: those win)"
        rate = f" ({row['passed'] / row['graded']:.1%})" if row["graded"] else ""
        rules = ", ".join(f"{code} {n}" for code, n in row["rules"].most_common(5)) or "—"
        table.add_row(
            agent,
            task,
            policy,
            str(row["conversations"]),
            str(row["graded"]),
            f"{row['passed']}{rate}",
            f"{row['agree']} of {row['labelled']}" if row["labelled"] else "—",
            rules,
        )
    Console(width=160).print(table)
