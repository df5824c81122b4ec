"""An importer given a named pipe (`agentwatch import openai-chat <(zcat logs.jsonl.gz) --out DIR`) reads it once,
as it reads a file."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentwatch.cli import app

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")


def _import_through_pipe(tmp_path: Path, command: str, data: bytes) -> tuple[int, str]:
    """Run `agentwatch import COMMAND PIPE --out DIR` while a writer gives the pipe `data`, then offers it an
    end of file at each further open (a reader opening it again finds nothing more, as with `<(…)`)."""
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    done = threading.Event()

    def feed() -> None:
        with contextlib.suppress(BrokenPipeError), open(fifo, "wb") as fh:
            fh.write(data)
        while not done.is_set():
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # no reader has it open
                done.wait(0.005)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    result = CliRunner().invoke(app, ["import", command, str(fifo), "--out", str(tmp_path / "out")])
    done.set()
    with contextlib.suppress(OSError):  # a writer still waiting for a first reader must not hang the test
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    writer.join()
    return result.exit_code, result.output


def test_chat_logs_through_a_named_pipe_are_imported(tmp_path: Path) -> None:
    """The wrong-format check read the pipe first; the import then opened it again and waited for ever, or (the
    writer gone) found it empty: "no conversation could be imported"."""
    line = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    code, output = _import_through_pipe(tmp_path, "openai-chat", (json.dumps(line) + "\n").encode() * 3)
    assert code == 0, output
    assert "openai-chat: 3 conversation(s)" in output
    assert len((tmp_path / "out" / "transcripts.jsonl").read_text().splitlines()) == 3


def test_benchmark_results_through_a_named_pipe_are_imported(tmp_path: Path) -> None:
    entry = {
        "task_id": 1,
        "trial": 0,
        "reward": 1.0,
        "info": {"task": {"actions": [], "outputs": []}},
        "traj": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
    }
    code, output = _import_through_pipe(tmp_path, "tau-bench", json.dumps([entry]).encode())
    assert code == 0 and "tau-bench: 1 conversation(s)" in output, output
