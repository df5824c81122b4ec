"""Property-based tests of the importers: published runs with odd values put in anywhere import as transcript
lines that read back and score, or are reported (an entry, a line, a task), never a crash or a lost line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentwatch.config import Settings, TaskPolicy
from agentwatch.importers.openai_chat import read_chat_lines
from agentwatch.importers.results_files import TauBenchFormatError
from agentwatch.importers.tau_bench import import_results
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import Conversation
from tests.support import published_runs
from tests.support.spoil import ODD, spoil

FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _load(name: str) -> Any:
    return json.loads(gzip.decompress(published_runs.require(name).read_bytes()))


@pytest.fixture(scope="module")
def runs() -> list[Any]:
    """Excerpts of the three published runs: three τ-bench entries each, three τ²-bench simulations."""
    tau2 = _load(published_runs.TAU2_AIRLINE)
    return [
        _load(published_runs.AIRLINE)[:3],
        _load(published_runs.RETAIL)[:3],
        {**tau2, "simulations": tau2["simulations"][:3]},
    ]


def _scored_without_error(lines: list[dict[str, Any]], policies: list[TaskPolicy]) -> None:
    scorer = ConversationScorer(Settings().model_copy(update={"policies": policies}))
    for line in lines:
        score = scorer.score(Conversation.model_validate(line))  # every line reads back
        assert not any(r.startswith("scorer_error") for r in score.reasons), score.reasons


@FAST
@given(data=st.data())
def test_a_benchmark_run_with_odd_values_imports_readable_lines_or_reports_them(
    runs: list[Any], data: st.DataObject
) -> None:
    """A run spoiled anywhere is either no results file at all (TauBenchFormatError), or imports: every line
    reads back and scores, every policy loads, and the entries it could not read are reported, none dropped."""
    document = spoil(data.draw(st.sampled_from(runs)), data)
    try:
        out = import_results(document, "agent", "1", "run")
    except TauBenchFormatError:
        return
    entries = document["simulations"] if isinstance(document, dict) else document
    if isinstance(entries, list):
        assert len(out.lines) + len(out.errors) == len(entries)
    _scored_without_error(out.lines, [TaskPolicy.model_validate(p) for p in out.policies])


@FAST
@given(data=st.data())
def test_a_chat_log_with_odd_values_imports_readable_lines_or_reports_them(
    runs: list[Any], data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Chat lines spoiled anywhere (the messages or the record's own fields) each become a line that reads back
    and scores, or an error with the line's number."""
    entries = [e["traj"] for e in runs[0] + runs[1]] + [s["messages"] for s in runs[2]["simulations"]]
    records = []
    for _ in range(3):
        record: dict[str, Any] = {"messages": data.draw(st.sampled_from(entries))}
        for key in data.draw(st.lists(st.sampled_from(["attempt", "instance", "agent", "tags", "id"]))):
            record[key] = data.draw(ODD)
        records.append(spoil(record, data))
    path: Path = tmp_path_factory.mktemp("chat") / "chat.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    errors: list[Any] = []
    lines = list(read_chat_lines(path, errors))
    assert len(lines) + len(errors) == len(records)
    assert all(1 <= e.line <= len(records) for e in errors)
    _scored_without_error(lines, [])
