"""A score record slimmed to fit the broker keeps what the exporter counts."""

from __future__ import annotations

import pytest

from agentwatch.collector.score_fit import REVISION_ROOM, fit, stand_in
from agentwatch.report.failure_modes import failure_modes_of
from agentwatch.scorers import ConversationScorer, unscored
from agentwatch.wire.schema import Conversation, ConversationScore, Expectation


def _long_conversation(turns: int) -> Conversation:
    """Failing turns with errors, tool calls graded against expectations, and long texts."""
    expected = Expectation.model_validate(
        {"tools": [{"name": "refund_order", "arguments": {"id": "x" * 500}}]}
    )
    return Conversation.model_validate(
        {
            "conversation_id": "c" * 5000,
            "agent": "shop",
            "turns": [
                {
                    "input": f"question {i}",
                    "answer": None if i % 3 == 0 else f"answer {i}",
                    "error": "TimeoutError: " + "e" * 800 if i % 3 == 0 else None,
                    "tool_calls": [{"name": "lookup_order", "arguments": {"id": "y" * 300}, "result": "ok"}],
                    "expected": expected.model_dump() if i % 2 else None,
                }
                for i in range(turns)
            ],
        }
    )


def _kept(a: ConversationScore, b: ConversationScore) -> None:
    """What the exporter reads is the same in both."""
    for field in (
        "conversation_id",
        "outcome",
        "passed",
        "evidence",
        "cost_usd",
        "asr_credit",
        "turns",
        "ended_at",
    ):
        assert getattr(a, field) == getattr(b, field), field
    assert failure_modes_of(a) == failure_modes_of(b)


def _tool_sums(score: ConversationScore) -> list[float]:
    return [round(sum(t.tool.overall for t in score.turn_scores if t.tool is not None), 9)]


def test_a_score_that_fits_is_itself() -> None:
    score = ConversationScorer().score(_long_conversation(3))
    payload = score.model_dump_json().encode()
    assert fit(score, payload, len(payload), lambda why: pytest.fail(why)) == (score, payload)


@pytest.mark.parametrize(
    ("room", "step"),
    [
        (3_000_000, "long texts cut"),  # sizes after each step: 2.36 MB, 0.91 MB, 0.38 MB, 6 kB
        (1_000_000, "one reason per failure mode kept"),
        (500_000, "only the turns with tool scores kept"),
        (100_000, "turn scores left out"),
    ],
)
def test_details_are_left_out_in_steps_until_it_fits(room: int, step: str) -> None:
    conv = _long_conversation(3000)
    score = ConversationScorer().score(conv)
    payload = score.model_dump_json().encode()
    assert len(payload) > 3_800_000  # the whole score: far past a broker's record
    slim, out = fit(score, payload, room, lambda why: unscored(conv, why))
    assert len(out) <= room and out == slim.model_dump_json().encode()
    assert ConversationScore.model_validate_json(out) == slim
    _kept(score, slim)
    (note,) = [r for r in slim.reasons if r.startswith("note: the score was")]
    assert step in note and f"{len(payload):,} bytes" in note
    if "turn scores left out" not in step:
        assert _tool_sums(slim) == _tool_sums(score)  # every turn's tool score kept


def test_tags_are_left_out_last_and_a_score_no_step_fits_is_published_unscored_without_them() -> None:
    """1,500 tags of 1 KB made a 1.5 MB score whatever the steps left out, and the unscored stand-in carried them
    all (17,000 made one the producer refused, stopping the collector at every restart). Tags go in a fifth
    step, the verdict kept; a score no step fits is unscored without them."""
    tags = {f"t{i}": "v" * 1000 for i in range(30)}
    conv = _long_conversation(50).model_copy(update={"tags": tags})
    score = ConversationScorer().score(conv)
    assert score.tags == tags
    payload = score.model_dump_json().encode()
    slim, out = fit(score, payload, 20_000, lambda why: unscored(conv, why))
    assert (slim.outcome, slim.passed, slim.tags, slim.turn_scores) == (score.outcome, score.passed, {}, [])
    assert "turn scores and tags left out" in slim.reasons[-1] and len(out) <= 20_000
    slim, out = fit(score, payload, 4_000, lambda why: unscored(conv, why))  # its 5,000-character id is over
    assert slim.outcome.value == "unscored" and slim.reasons[0].startswith("record_too_large: the score is")
    assert slim.tags == {} and out == slim.model_dump_json().encode()


def test_a_revision_no_step_fits_keeps_its_verdict_without_details() -> None:
    """A revision (a late label on a score already published) has no conversation to be unscored from."""
    score = ConversationScorer().score(_long_conversation(40))
    bare = stand_in(score, None, "record_too_large: …")
    assert (bare.outcome, bare.passed, bare.evidence) == (score.outcome, score.passed, score.evidence)
    assert bare.reasons == ["record_too_large: …"] and bare.turn_scores == [] and bare.tags == {}


def test_a_slimmed_score_leaves_room_for_a_labels_revision() -> None:
    """The review service publishes a label's revision from the stored score: it must fit the same bound."""
    from agentwatch.config import OutcomeCredits
    from agentwatch.scorers.relabel import relabel
    from agentwatch.wire.schema import Outcome

    conv = _long_conversation(3000)
    score = ConversationScorer().score(conv)
    room = 1_000_000 - REVISION_ROOM
    slim, out = fit(score, score.model_dump_json().encode(), room, lambda why: unscored(conv, why))
    grown = []
    for outcome in Outcome:
        revised = relabel(slim, outcome, OutcomeCredits()) if outcome is not Outcome.UNSCORED else None
        if revised is not None:
            grown.append(len(revised.model_dump_json().encode()) - len(out))
    assert grown and max(grown) <= 100 < REVISION_ROOM
