"""The HTML report without a browser: figures read from the model, escaping, the page's policy, cuts and
plots."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
from html.parser import HTMLParser

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from pydantic import Field

from agentwatch.config import Settings
from agentwatch.report.build import build_report
from agentwatch.report.cases import CaseKeeper
from agentwatch.report.charts import curve_figure
from agentwatch.report.figures import figures
from agentwatch.report.html import render_html
from agentwatch.report.html_tables import group_table
from agentwatch.report.model import BootstrapEstimate, GroupStats
from agentwatch.scorers import ConversationScorer
from agentwatch.wire.schema import Conversation, ConversationScore, Outcome, OutcomeSource

EVIL = "</details></pre><script>alert(1)</script><img src=x onerror=alert(2)>\"'"


def _hostile(i: int, long_result: bool = False) -> Conversation:
    result = "x" * 10_000 if long_result else {EVIL: EVIL}
    return Conversation.model_validate(
        {
            "conversation_id": f"{EVIL}-{i}",
            "agent": EVIL,
            "version": "1",
            "task": EVIL,
            "tags": {EVIL: EVIL},
            "system": EVIL,
            "notes": [EVIL],
            "turns": [
                {
                    "input": EVIL,
                    "answer": EVIL,
                    "error": EVIL,
                    "tool_calls": [
                        {"name": EVIL, "arguments": {EVIL: EVIL}, "result": result, "error": None}
                    ],
                    "expected": {
                        "tools": [{"name": "refund", "arguments": {"order": "A1"}}],
                        "reference_answer": "refunded",
                    },
                }
            ],
        }
    )


class _Tags(HTMLParser):
    """Counts start and end tags, and collects the text of script elements that run (data blocks apart)."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: dict[str, int] = {}
        self.ends: dict[str, int] = {}
        self.scripts: list[str] = []
        self.data_blocks: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        kind = dict(attrs).get("type") if tag == "script" else None
        if tag == "script" and kind is not None:
            assert kind in ("application/json", "application/octet-stream"), kind  # data, never run
            self.data_blocks.append(kind)
            tag = "data-block"
        self.starts[tag] = self.starts.get(tag, 0) + 1
        self._in_script = tag == "script"
        if any(name.startswith("on") for name, _ in attrs):
            self.starts["event-handler"] = self.starts.get("event-handler", 0) + 1

    def handle_endtag(self, tag: str) -> None:
        self.ends[tag] = self.ends.get(tag, 0) + 1
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)


def carried(page: str) -> list[str]:
    """The transcripts the page carries, decompressed as the page's script does (base64, gzip, JSON list)."""
    blocks = re.findall(r'<script type="application/octet-stream" id="aw-chunk-\d+">([^<]*)</script>', page)
    return [body for b in blocks for body in json.loads(gzip.decompress(base64.b64decode(b)))]


@pytest.fixture(scope="module")
def hostile_page() -> str:
    settings = Settings()
    scorer = ConversationScorer(settings)
    convs = [_hostile(i, long_result=i == 0) for i in range(3)]
    keeper = CaseKeeper()
    scores = []
    for conv in convs:
        score = scorer.score(conv)
        keeper.offer(conv, score)
        scores.append(score)
    return render_html(build_report(scores, settings), settings, title=EVIL, cases=keeper)


def test_everything_from_a_transcript_is_text(hostile_page: str) -> None:
    tags = _Tags()
    tags.feed(hostile_page)
    assert tags.starts.get("script") == 1 and tags.starts.get("img", 0) == 2  # the two plots, nothing else
    assert "event-handler" not in tags.starts
    assert tags.starts["details"] == tags.ends["details"]
    assert hostile_page.count("&lt;script&gt;alert(1)&lt;/script&gt;") > 5  # shown, many times, as text
    bodies = carried(hostile_page)
    assert len(bodies) == 3  # every failing conversation is carried
    for body in bodies:  # what the page inserts when a conversation is opened: escaped as well
        inside = _Tags()
        inside.feed(body)
        assert not inside.scripts and "script" not in inside.starts and "img" not in inside.starts
        assert "event-handler" not in inside.starts
        assert inside.starts["pre"] == inside.ends["pre"] and inside.starts.get("details") == inside.ends.get(
            "details"
        )
        assert body.count("&lt;script&gt;alert(1)&lt;/script&gt;") > 5
    # the lists are data: no transcript text can end their block
    for block in re.findall(r'<script type="application/json" id="[^"]*">([^<]*)</script>', hostile_page):
        assert json.loads(block)["rows"][0][0].startswith(EVIL)


def test_only_the_pages_own_script_may_run_and_nothing_is_fetched(hostile_page: str) -> None:
    tags = _Tags()
    tags.feed(hostile_page)
    (script,) = tags.scripts
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', hostile_page)
    assert csp is not None
    assert (
        csp.group(1)
        == f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; "
        "base-uri 'none'; form-action 'none'"
    )
    assert not re.search(r'(src|href)="(?!data:|#)', hostile_page)  # no URL but data: ones and the page's own


def test_long_values_are_cut_and_the_page_says_so(hostile_page: str) -> None:
    bodies = "".join(carried(hostile_page))
    assert "x" * 2_000 + '<span class="cut"> … 8,000 more characters cut</span>' in bodies
    assert "x" * 2_001 not in bodies
    assert "Values longer than 2,000 characters" in hostile_page
    assert "every failing conversation (3)" in hostile_page and "without their transcript" not in hostile_page


class _WithNewFigure(GroupStats):
    """A report group with one more estimate, as a later change to the model would add."""

    corrected_rate: BootstrapEstimate = Field(description="A figure the page has never heard of.")


def test_a_new_estimate_in_the_model_gets_a_column_and_a_card() -> None:
    settings = Settings()
    scorer = ConversationScorer(settings)
    report = build_report([scorer.score(_hostile(i)) for i in range(2)], settings)
    plain = GroupStats.model_validate(report.model_dump(include=set(GroupStats.model_fields)))
    group = _WithNewFigure(
        **plain.model_dump(), corrected_rate=BootstrapEstimate(value=0.25, lower=0.125, upper=0.5)
    )
    found = {f.key: f for f in figures(group)}
    assert (found["corrected_rate"].value, found["corrected_rate"].lower, found["corrected_rate"].upper) == (
        0.25,
        0.125,
        0.5,
    )
    assert found["corrected_rate"].about == "A figure the page has never heard of."
    table = group_table([("a", group), ("b", plain)], "group", "t")
    assert '<th title="A figure the page has never heard of.">corrected rate</th>' in table
    assert 'data-v="0.25">0.250 <span class="ci">[0.125, 0.500]</span>' in table


def _repeated_attempts() -> list[ConversationScore]:
    out = []
    for unit in range(12):
        for attempt in range(4):
            passed = (unit + attempt) % 3 != 0
            out.append(
                ConversationScore(
                    conversation_id=f"u{unit}-a{attempt}",
                    agent="a",
                    version="1",
                    task="t",
                    instance=str(unit),
                    attempt=attempt,
                    turns=1,
                    passed=passed,
                    outcome=Outcome.COMPLETE if passed else Outcome.PARTIAL_INCORRECT,
                    outcome_source=OutcomeSource.RULES,
                    graded_by=["expectations"],
                    asr_credit=float(passed),
                )
            )
    return out


@pytest.mark.parametrize("repeats", [False, True])
def test_plot_legends_sit_outside_the_bands(repeats: bool) -> None:
    settings = Settings()
    scores = _repeated_attempts()
    if not repeats:
        scores = [s.model_copy(update={"instance": None, "attempt": None}) for s in scores]
    fig = curve_figure(build_report(scores, settings), settings)
    FigureCanvasAgg(fig).draw()
    (ax,) = fig.axes
    legend, plotted = ax.get_legend().get_window_extent(), ax.get_window_extent()
    assert legend.x0 >= plotted.x1  # wholly right of the plotted area: no band behind it
    bands = [c for c in ax.collections if c.get_label().endswith(("interval", "band"))]
    assert len(bands) == 2
