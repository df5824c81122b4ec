"""`agentwatch schema conversation|score`: print a JSON Schema."""

import json
from enum import Enum
from typing import Annotated

import typer

from agentwatch.cli.app import app


class SchemaKind(str, Enum):
    conversation = "conversation"
    score = "score"


@app.command()
def schema(
    kind: Annotated[
        SchemaKind, typer.Argument(metavar="KIND", help="conversation (transcript input) or score (result)")
    ],
) -> None:
    """Print the JSON Schema of a transcript line or of a score record."""
    from agentwatch.wire.schema import json_schema

    typer.echo(json.dumps(json_schema(kind.value), indent=2))
