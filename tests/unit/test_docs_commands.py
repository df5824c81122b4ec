"""The commands the docs show exist as shown: every `agentwatch ...` subcommand and option in README.md, docs/
and deploy/README.md is one the CLI has, every `python -m benchmarks.NAME --option` is one that benchmark
parses, and every `agentwatch_*` metric the docs name is one the code emits."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer

from agentwatch.cli import app

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "deploy" / "README.md"]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
# a command starts a line of a code block (after `$ ` or a pipe into it), or an inline code span
COMMAND = re.compile(r"(?:^|\$ |\$\(|\| |&& )agentwatch(?![\w./-])((?:[ \t]+[^\s|;&)`#]+)*)", re.MULTILINE)
PLACEHOLDER = re.compile(r"^(?:\.\.\.|…|<[^>]*>?)$")


def _snippets(text: str) -> list[str]:
    """Code blocks, line continuations joined, then the inline code spans outside them."""
    blocks = [re.sub(r"\\\n\s*", " ", m.group(1)) for m in FENCE.finditer(text)]
    rest = FENCE.sub("", text)
    return blocks + re.findall(r"`([^`\n]+)`", rest)


def _commands() -> dict[tuple[str, ...], set[str]]:
    """Every command path of the CLI with the options it takes."""
    out: dict[tuple[str, ...], set[str]] = {}

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        options = [p for p in cmd.params if p.param_type_name == "option"]  # Typer's own click, not `click`
        out[path] = {o for p in options for o in (*p.opts, *p.secondary_opts)} | {"--help"}
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return out


def _doc_commands() -> list[tuple[str, str]]:
    """(doc, the words after `agentwatch`) of every command line the docs show."""
    found = []
    for doc in DOCS:
        for snippet in _snippets(doc.read_text(encoding="utf-8")):
            for m in COMMAND.finditer(snippet):
                found.append((doc.name, m.group(1).strip()))
    return found


def test_every_agentwatch_command_and_option_in_the_docs_exists() -> None:
    commands = _commands()
    wrong = []
    seen = set()
    for doc, words in _doc_commands():
        path: tuple[str, ...] = ()
        tokens = words.split()
        while tokens and (*path, tokens[0]) in commands:
            path = (*path, tokens.pop(0))
        seen.add(path)
        if tokens and not path and not tokens[0].startswith("-") and not PLACEHOLDER.match(tokens[0]):
            wrong.append(f"{doc}: agentwatch {words}: no command {tokens[0]!r}")
            continue
        for token in tokens:
            option = token.split("=", 1)[0].strip("[]")
            if option.startswith("-") and option not in commands[path]:
                wrong.append(f"{doc}: agentwatch {words}: {' '.join(path) or 'agentwatch'} has no {option}")
    assert wrong == []
    # the docs show most of the CLI, so a change in how commands are found cannot pass by finding none
    assert len(seen) >= 15, sorted(seen)


def test_the_check_finds_a_command_or_option_the_cli_lacks() -> None:
    commands = _commands()
    assert ("score",) in commands and "--no-gate" in commands[("score",)]
    assert ("judge", "anchors", "run") in commands and "--serve" in commands[("judge", "anchors", "run")]
    assert "--no-such-option" not in commands[("score",)] and ("scores",) not in commands
    assert [w for _, w in _doc_commands() if w.startswith("score ")], "no `agentwatch score` example found"


def _benchmark_options(name: str) -> set[str]:
    source = (ROOT / "benchmarks" / f"{name}.py").read_text(encoding="utf-8")
    options = {"-h", "--help"}
    for call in re.finditer(r"add_argument\(\s*((?:\"-[^\"]*\"\s*,?\s*)+)", source):
        options |= set(re.findall(r"\"(-[^\"]*)\"", call.group(1)))
    return options


def test_every_benchmark_command_in_the_docs_takes_its_options() -> None:
    wrong = []
    checked = 0
    for doc in DOCS:
        text = re.sub(r"\s*\n\s*", " ", doc.read_text(encoding="utf-8"))
        for m in re.finditer(
            r"python -m benchmarks\.(\w+)((?:\s+\[?-{1,2}[\w-]+\]?(?:\s+[\w.,/-]+)*)*)", text
        ):
            name, args = m.group(1), m.group(2)
            if not (ROOT / "benchmarks" / f"{name}.py").exists():
                wrong.append(f"{doc.name}: {m.group(0)}: no benchmarks/{name}.py")
                continue
            options = _benchmark_options(name)
            for option in re.findall(r"(?<![\w-])(-{1,2}[a-z][\w-]*)", args):
                checked += 1
                if option not in options:
                    wrong.append(f"{doc.name}: {m.group(0)}: benchmarks.{name} has no {option}")
    assert wrong == []
    assert checked > 50
    assert "--n" in _benchmark_options("score") and "--n" not in _benchmark_options("alerts")


SUFFIX = re.compile(r"_(?:total|bucket|sum|count|created)$")


def test_every_metric_the_docs_name_is_emitted_by_the_code() -> None:
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "agentwatch").rglob("*.py"))
    names = set()
    for doc in DOCS:
        for name in re.findall(r"\bagentwatch_[a-z0-9_]*[a-z0-9](?![\w.*])", doc.read_text(encoding="utf-8")):
            if "__" not in name:
                names.add(name)
    missing = sorted(n for n in names if n not in source and SUFFIX.sub("", n) not in source)
    assert missing == []
    assert len(names) > 100
    assert "agentwatch_success_rate" in names and "agentwatch_no_such_metric" not in source
