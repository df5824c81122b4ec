"""`agentwatch score` on transcript lines spoiled at random places (tests.support.spoil): any value replaced by
one of another type, size or meaning, or taken out. Nothing escapes as a traceback, and every line is accounted
for: read as a record or reported as malformed, never lost in between.

Complements test_transcript_files_hostile.py (damaged files, each aimed at one weak spot) and
test_importer_properties.py (the importers' output): here the damage is inside well-formed JSON lines read by the
command a CI gate runs, where a field's validation, a grader's assumption or the report's counting could fail.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.score_cli import KINDS, conversation, run
from tests.support.spoil import ODD, spoil

# Beyond the odd values of any log: the edges of sizes and ranges, and values that mean something to a grader;
# containers built anew at each draw (a later spoiling may change what it finds inside them).
EDGES = st.one_of(
    st.sampled_from(
        [
            1e308,
            -1e-300,
            -0.0,
            2**63,
            -(2**63),
            "x" * 5000,
            "NaN",
            "日本語",
            "\u0000",
            "2026-05-20",
            "handoff",
            "transfer_to_human_agents",
        ]
    ),
    st.builds(lambda: ["a"] * 50),
    st.builds(lambda: [{"name": "x"}]),
    st.builds(lambda: {"name": "lookup_order", "arguments": {"order_id": 1}}),
)
BASES = [conversation(kind, i) for i, kind in enumerate(KINDS)]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_spoiled_conversations_are_scored_or_reported_and_none_is_lost(
    tmp_path_factory: Any, data: st.DataObject
) -> None:
    """Every line is read as a record or reported malformed; the report counts each record once, in its
    version's section; a file of which nothing could be read exits 2 and names every line."""
    count = data.draw(st.integers(min_value=1, max_value=12))
    lines = [spoil(data.draw(st.sampled_from(BASES)), data, st.one_of(ODD, EDGES)) for _ in range(count)]
    tmp: Path = tmp_path_factory.mktemp("spoiled")
    path = tmp / "t.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp / "report.json"
    code, _, stderr = run(path, "--format", "json", "--no-gate", "--out", out)
    if code == 2:  # nothing could be read: said so, each line named
        assert (
            f"error: no conversation could be read from {path} ({count} malformed line(s) skipped)" in stderr
        )
        assert stderr.count(f"malformed: {path}:") == count
        return
    assert code == 0, stderr[-2000:]
    report = json.loads(out.read_text())
    read = report["input"]
    assert read["records"] + read["malformed"] == count
    sections = report["versions"] or [report]  # a file of several agent versions: a section each
    assert sum(v["conversations"] for v in sections) == read["records"] - read["duplicate_records"]
    assert all(v["scored"] <= v["conversations"] for v in sections)
