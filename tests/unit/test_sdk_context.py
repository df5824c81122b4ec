"""`conversation`: stamping every span (ours and others'), propagation across tasks and threads, end/expect/label."""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from agentwatch import conversation, trace
from agentwatch.sdk import bind_context, current_conversation
from tests.support.sdk import attr_json, by_name, sdk_provider, spans  # noqa: F401
from tests.support.spans import attrs

CONV_KEYS = ("gen_ai.conversation.id", "agentwatch.task")


def test_every_span_inside_is_stamped_including_other_instrumentations(spans, sdk_provider):  # noqa: F811
    foreign = sdk_provider.get_tracer(
        "another.instrumentation"
    )  # any other instrumentation on the same provider

    @trace(kind="agent")
    def turn(q):
        with foreign.start_as_current_span("http GET"):
            pass
        return "ok"

    with conversation(
        id="c-1",
        task="billing",
        agent="support",
        version="2.0",
        user="u-9",
        budget_usd=0.5,
        tags={"category": "core"},
    ):
        turn("hi")
    turn("outside")
    finished = spans.get_finished_spans()
    inside = [s for s in finished if s.attributes.get("gen_ai.conversation.id") == "c-1"]
    assert {s.name for s in inside} == {"http GET", "invoke_agent support"}
    for s in inside:
        a = s.attributes
        assert a["agentwatch.task"] == "billing"
        assert a["user.id"] == "u-9"
        assert a["agentwatch.budget.usd"] == 0.5
        assert a["agentwatch.tag.category"] == "core"
        assert a["gen_ai.agent.name"] == "support" and a["gen_ai.agent.version"] == "2.0"
    outside = [s for s in finished if "gen_ai.conversation.id" not in s.attributes]
    # No conversation: nothing stamped, and the agent is named after the function.
    assert sorted(s.name for s in outside) == ["http GET", "invoke_agent turn"]


def test_instance_and_attempt_are_stamped_and_a_bad_attempt_is_left_out(spans, caplog):  # noqa: F811
    @trace(kind="agent")
    def turn(q):
        return "ok"

    with conversation(id="r-1", task="refund", instance=417, attempt=3):
        turn("again")
    with conversation(id="r-2", task="refund", instance="req-9", attempt=-1):  # never raised into the agent
        turn("again")
    first, second = spans.get_finished_spans()
    assert first.attributes["agentwatch.task.instance"] == "417"
    assert first.attributes["agentwatch.attempt"] == 3
    assert second.attributes["agentwatch.task.instance"] == "req-9"
    assert "agentwatch.attempt" not in second.attributes
    assert "attempt=-1 ignored" in caplog.text


def test_explicit_agent_name_wins_over_conversation_agent(spans):  # noqa: F811
    @trace(kind="agent", name="researcher")
    def sub():
        return 1

    with conversation(agent="supervisor"):
        sub()
    (span,) = spans.get_finished_spans()
    assert span.name == "invoke_agent researcher"
    assert span.attributes["gen_ai.agent.name"] == "researcher"


def test_generated_ids_are_unique_and_nesting_restores_outer(spans):  # noqa: F811
    @trace
    def f(tag):
        return tag

    with conversation(task="t") as outer:
        f("a")
        with conversation(task="t") as inner:
            f("b")
        f("c")
    assert outer.id != inner.id and len(outer.id) == 32
    ids = [s.attributes["gen_ai.conversation.id"] for s in spans.get_finished_spans()]
    assert ids == [outer.id, inner.id, outer.id]
    assert current_conversation() is None


def test_async_conversation_propagates_to_tasks(spans):  # noqa: F811
    @trace(kind="tool")
    async def tool(i):
        await asyncio.sleep(0.001 * (3 - i))
        return i

    @trace(kind="agent", name="a")
    async def turn():
        return await asyncio.gather(*(asyncio.create_task(tool(i)) for i in range(3)))

    async def main():
        async with conversation(id="async-c", task="t"):
            return await turn()

    assert asyncio.run(main()) == [0, 1, 2]
    finished = spans.get_finished_spans()
    root = next(s for s in finished if s.name == "invoke_agent a")
    tools = [s for s in finished if s.name == "execute_tool tool"]
    assert len(tools) == 3
    for t in tools:
        assert t.attributes["gen_ai.conversation.id"] == "async-c"
        assert t.parent.span_id == root.context.span_id


def test_two_concurrent_async_conversations_do_not_mix(spans):  # noqa: F811
    @trace
    async def step(i):
        await asyncio.sleep(0)
        return i

    async def one(cid):
        async with conversation(id=cid):
            for i in range(5):
                await step(i)

    async def main():
        await asyncio.gather(one("x"), one("y"))

    asyncio.run(main())
    finished = spans.get_finished_spans()
    assert sorted(s.attributes["gen_ai.conversation.id"] for s in finished) == ["x"] * 5 + ["y"] * 5


def test_threads_need_bind_context(spans):  # noqa: F811
    @trace(kind="tool")
    def work(i):
        return i

    @trace(kind="agent", name="threaded")
    def turn():
        with ThreadPoolExecutor(2) as pool:
            bound = list(pool.map(bind_context(work), range(4)))
        plain = threading.Thread(target=work, args=(99,))
        plain.start()
        plain.join()
        return bound

    with conversation(id="thr"):
        assert turn() == [0, 1, 2, 3]
    finished = spans.get_finished_spans()
    root = next(s for s in finished if s.name == "invoke_agent threaded")
    tools = [s for s in finished if s.name == "execute_tool work"]
    bound = [t for t in tools if json.loads(t.attributes["gen_ai.tool.call.arguments"])["i"] != 99]
    unbound = [t for t in tools if json.loads(t.attributes["gen_ai.tool.call.arguments"])["i"] == 99]
    assert len(bound) == 4 and len(unbound) == 1
    for t in bound:
        assert t.attributes["gen_ai.conversation.id"] == "thr"
        assert t.parent.span_id == root.context.span_id
    # A plain thread starts with an empty context: no conversation, no parent (documented).
    assert "gen_ai.conversation.id" not in unbound[0].attributes and unbound[0].parent is None


def test_expect_inside_turn_and_before_turn(spans):  # noqa: F811
    @trace(kind="agent", name="ag")
    def turn(q, expect_inside=False):
        if expect_inside:
            conversation.expect([("lookup", {"id": 2})], forbidden_tools=["delete"], reference_answer="two")
        return q

    with conversation(id="e"):
        conversation.expect(
            ["search", {"name": "lookup", "arguments": {"id": 1, "api_key": "k"}}],
            sequence_matters=False,
            uses_tool_results=True,
        )
        turn("first")
        turn("second", expect_inside=True)
        turn("third")
    first, second, third = spans.get_finished_spans()
    assert attr_json(first, "agentwatch.expected") == {
        "tools": [
            {"name": "search", "arguments": None},
            {"name": "lookup", "arguments": {"id": 1, "api_key": "[REDACTED]"}},
        ],
        "sequence_matters": False,
        "uses_tool_results": True,
        "forbidden_tools": [],
        "reference_answer": None,
    }
    exp2 = attr_json(second, "agentwatch.expected")
    assert exp2["tools"] == [{"name": "lookup", "arguments": {"id": 2}}]
    assert exp2["forbidden_tools"] == ["delete"] and exp2["reference_answer"] == "two"
    assert second.attributes["agentwatch.reference_answer"] == "two"
    assert "agentwatch.expected" not in third.attributes  # an expectation applies to one turn only


def test_end_inside_turn_sets_flag_on_the_turn(spans):  # noqa: F811
    @trace(kind="agent", name="ag")
    def turn(last):
        if last:
            conversation.end()
        return "x"

    with conversation(id="end-in"):
        turn(False)
        turn(True)
    first, second = spans.get_finished_spans()
    assert "agentwatch.conversation.end" not in first.attributes
    assert second.attributes["agentwatch.conversation.end"] is True


def test_end_between_turns_emits_marker_under_last_turn(spans):  # noqa: F811
    @trace(kind="agent", name="ag")
    def turn():
        return "x"

    with conversation(id="end-after", task="t"):
        turn()
        turn()
        assert conversation.end()
    *turns, marker = spans.get_finished_spans()
    assert marker.name == "agentwatch.conversation.end"
    assert marker.attributes["agentwatch.conversation.end"] is True
    assert marker.attributes["gen_ai.conversation.id"] == "end-after"
    assert "gen_ai.operation.name" not in marker.attributes  # never mistaken for a turn
    assert marker.parent.span_id == turns[-1].context.span_id
    assert marker.context.trace_id == turns[-1].context.trace_id
    assert not conversation.end()  # outside a conversation: ignored, no error


def test_label_on_turn_between_turns_and_by_id(spans):  # noqa: F811
    @trace(kind="agent", name="ag")
    def turn(label=None):
        if label:
            conversation.label(label)
        return "x"

    with conversation(id="lab"):
        turn("Partial-Correct")
        assert conversation.label("complete")
        assert not conversation.label("brilliant")  # unknown outcome: warned and ignored
    assert conversation.label("abandoned", conversation_id="old-conv")
    t, between, by_id = spans.get_finished_spans()
    assert t.attributes["agentwatch.outcome"] == "partial_correct"
    assert between.name == "agentwatch.label" and between.attributes["agentwatch.outcome"] == "complete"
    assert between.attributes["gen_ai.conversation.id"] == "lab"
    assert by_id.attributes["gen_ai.conversation.id"] == "old-conv"
    assert by_id.attributes["agentwatch.outcome"] == "abandoned"
    assert by_id.parent is None


def test_label_by_id_inside_another_conversation_keeps_given_id(spans):  # noqa: F811
    with conversation(id="current"):
        conversation.label("complete", conversation_id="other")
    (span,) = spans.get_finished_spans()
    assert span.attributes["gen_ai.conversation.id"] == "other"


def test_invalid_expectation_is_ignored_without_error(spans):  # noqa: F811
    with conversation(id="bad"):
        assert not conversation.expect([42])
        assert not conversation.expect([{"arguments": {}}])
    assert by_name(spans) == {}


def test_expect_for_the_whole_conversation_is_on_every_turn_after_it(spans):  # noqa: F811
    @trace(kind="agent", name="ag")
    def turn(q, again=False):
        if again:  # a revised expectation, set inside a turn, replaces the first from there on
            conversation.expect(["cancel"], scope="conversation", end="answer")
        return q

    with conversation(id="whole"):
        conversation.expect(
            [
                {
                    "name": "book",
                    "arguments": {"summary": "x"},
                    "match": {"summary": "ignore"},
                    "required": True,
                }
            ],
            scope="conversation",
            outputs=["HAT136"],
            end="handoff",
            extra_calls="none",
        )
        turn("first")
        turn("second", again=True)
        turn("third")
        conversation.expect(["refund"], scope="conversation")  # after the last turn: on a marker under it
    first, second, third, marker = spans.get_finished_spans()
    assert marker.name == "agentwatch.expect" and marker.parent.span_id == third.context.span_id
    later = attr_json(marker, "agentwatch.conversation.expected")
    assert later["tools"] == [{"name": "refund", "arguments": None}]
    whole = attr_json(first, "agentwatch.conversation.expected")
    assert whole["tools"] == [
        {"name": "book", "arguments": {"summary": "x"}, "match": {"summary": "ignore"}, "required": True}
    ]
    assert (whole["outputs"], whole["end"], whole["extra_calls"]) == (["HAT136"], "handoff", "none")
    assert "agentwatch.expected" not in first.attributes  # not a turn's expectation
    revised = attr_json(second, "agentwatch.conversation.expected")
    assert revised["tools"] == [{"name": "cancel", "arguments": None}]
    assert attr_json(third, "agentwatch.conversation.expected")["end"] == "answer"


def test_expect_rejects_what_it_cannot_mean_without_raising(spans, caplog):  # noqa: F811
    with conversation(id="bad"):
        assert conversation.expect(["x"], scope="session") is False
        assert conversation.expect(["x"], end="maybe", scope="conversation") is False
    assert not spans.get_finished_spans()
    assert "invalid expectation ignored" in caplog.text


def test_read_only_tools_say_so_on_their_spans(spans):  # noqa: F811
    @trace(kind="tool", read_only=True)
    def lookup(order_id: str) -> str:
        return "shipped"

    @trace(kind="tool", read_only=False)
    def get_refund(order_id: str) -> str:  # named like a lookup, but it pays out
        return "ok"

    @trace(kind="tool")
    def plain() -> None:
        return None

    lookup("1"), get_refund("1"), plain()
    got = by_name(spans)
    assert attrs(got["execute_tool lookup"])["agentwatch.tool.read_only"] is True
    assert attrs(got["execute_tool get_refund"])["agentwatch.tool.read_only"] is False
    assert "agentwatch.tool.read_only" not in attrs(got["execute_tool plain"])
    with pytest.raises(ValueError, match="read_only"):
        trace(kind="agent", read_only=True)(lambda: None)


def test_values_the_agent_gets_wrong_are_logged_and_left_out_never_raised(spans, caplog):  # noqa: F811
    """`record_usage(input_tokens=math.inf)` raised OverflowError, `conversation(budget_usd="$0.50")` ValueError,
    a tag whose `__str__` fails its error, into the agent's code; and `@trace` above `@staticmethod` or
    `@classmethod` made the method raise TypeError. Each is now logged and left out, or traced as meant."""
    import math

    from agentwatch.sdk import record_usage

    class NoText:
        def __str__(self) -> str:
            raise RuntimeError("no text")

    class Tools:
        @trace(kind="tool")
        @staticmethod
        def weather(city):
            return {"city": city}

        @trace(kind="tool")
        @classmethod
        def clock(cls, tz):
            return f"12:00 {tz} {cls.__name__}"

    @trace(kind="llm")
    def think(q):
        assert record_usage(input_tokens=math.inf, output_tokens=10) is False  # type: ignore[arg-type]
        return "ok"

    with conversation(id="w-1", budget_usd="$0.50", tags={"k": NoText()}):
        think("q")
        assert Tools.weather("Paris") == {"city": "Paris"} and Tools().weather("Oslo") == {"city": "Oslo"}
        assert Tools.clock("UTC") == "12:00 UTC Tools"
    finished = spans.get_finished_spans()
    assert sorted(s.name for s in finished) == [
        "chat",
        "execute_tool clock",
        "execute_tool weather",
        "execute_tool weather",
    ]
    stamped = finished[0].attributes
    assert "agentwatch.budget.usd" not in stamped and stamped["agentwatch.tag.k"] == "<NoText>"
    assert "budget_usd='$0.50' ignored" in caplog.text and "invalid value ignored" in caplog.text


def test_an_exception_deep_in_a_recursion_keeps_its_innermost_frames_and_its_own_line(spans):  # noqa: F811
    """Each traced level formatted the whole traceback twice (an exception at depth 400 took 8 s to surface),
    and the stack cut from the top lost the innermost frames and the `ConnectionError: …` line. Each level keeps
    the innermost `STACK_FRAMES` frames and the text's tail."""
    from agentwatch.sdk.spans import STACK_FRAMES

    class Upstream(ConnectionError):
        pass

    @trace(kind="tool")
    def search(depth):
        if depth == 0:
            raise Upstream("upstream timed out")
        return search(depth - 1)

    with pytest.raises(Upstream):
        search(80)
    finished = spans.get_finished_spans()
    assert len(finished) == 81
    for span in finished:
        (event,) = [e for e in span.events if e.name == "exception"]
        stack = event.attributes["exception.stacktrace"]
        assert stack.rstrip().splitlines()[-1].endswith("Upstream: upstream timed out")
        assert stack.count('File "') <= STACK_FRAMES
        assert event.attributes["exception.type"].endswith("Upstream")


def test_a_traced_stream_keeps_only_what_its_output_can_hold(spans):  # noqa: F811
    """400 chunks of 1 MiB streamed through a traced generator were all held until it ended (424 MiB against 24
    plain); the items kept for the span's output stop at four times what it keeps."""
    from agentwatch.sdk.decorators import _Kept
    from agentwatch.sdk.runtime import RUNTIME

    big = _Kept()
    for _ in range(400):
        big.add(bytearray(1 << 10 << 10))
    assert len(big.items) == 1
    text = _Kept()
    for i in range(5000):
        text.add(f"{i:04d}" + "x" * 96)  # 100 characters a chunk
    room = 4 * RUNTIME.capture.max_bytes
    assert room < text.held <= room + 100 and len(text.items) == room // 100 + 1

    @trace(kind="tool")
    def words():
        yield from ("one ", "two ", "three")

    assert "".join(words()) == "one two three"
    (span,) = spans.get_finished_spans()
    assert json.loads(span.attributes["gen_ai.tool.call.result"]) == ["one ", "two ", "three"]


def test_one_conversation_entered_by_two_tasks_is_left_by_each():
    """Two tasks entering one `conversation` object interleave its tokens; the second to leave reset the other
    task's token, and both were still "in" the conversation after their `with` blocks."""
    shared = conversation(id="session-42")
    after: dict[str, object] = {}

    async def task(name: str, pause: float) -> None:
        async with shared:
            await asyncio.sleep(pause)
        after[name] = conversation.current()

    async def both() -> None:
        await asyncio.gather(task("a", 0.01), task("b", 0.03))

    asyncio.run(both())
    assert after == {"a": None, "b": None}


def test_concurrent_turns_of_one_conversation_each_annotate_their_own(spans, sdk_provider):  # noqa: F811
    """Two turns of one conversation run through `asyncio.gather` shared its "current turn" (the innermost
    open one): `expect()` and `end()` inside the first landed on the second."""
    foreign = sdk_provider.get_tracer("another.instrumentation")

    @trace
    def note(q):
        conversation.expect(["lookup_" + q], reference_answer=q)  # two spans under the turn

    @trace(kind="tool")
    async def look(q):
        note(q)
        return q

    @trace(kind="agent", name="a")
    async def turn(q, pause, last):
        await asyncio.sleep(pause)  # the other turn starts meanwhile
        await look(q)
        if last:
            conversation.end()
        return q

    async def other_turn(q):
        # another instrumentation's turn: its span is current while expect() runs
        with foreign.start_as_current_span(
            "invoke_agent b", attributes={"gen_ai.operation.name": "invoke_agent"}
        ):
            await asyncio.sleep(0.02)
            conversation.expect(["lookup_" + q])
            await asyncio.sleep(0.02)

    async def main():
        async with conversation(id="gathered"):
            await asyncio.gather(turn("first", 0.0, True), turn("second", 0.01, False), other_turn("third"))

    asyncio.run(main())
    by_q = {}  # the attributes of each turn, by the question it answered
    for s in spans.get_finished_spans():
        if s.name == "invoke_agent b":
            by_q["third"] = s.attributes
        elif s.name == "invoke_agent a":
            by_q[json.loads(s.attributes["gen_ai.output.messages"])[0]["parts"][0]["content"]] = s.attributes
    for q in ("first", "second", "third"):
        expected = json.loads(by_q[q]["agentwatch.expected"])
        assert [t["name"] for t in expected["tools"]] == ["lookup_" + q], q
    assert by_q["first"].get("agentwatch.conversation.end") is True
    assert "agentwatch.conversation.end" not in by_q["second"]


def test_values_whose_text_fails_are_logged_and_left_out_never_raised(spans, caplog):  # noqa: F811
    """An id, user or instance whose `__str__` fails, tags given as pairs, an expected tool, output or reference
    answer with no text, an outcome with none, and a model or token count that cannot be read each raised its
    error into the agent's code (only tags' values were guarded). Each is logged and left out."""
    from agentwatch.sdk import record_usage

    class NoText:
        def __str__(self) -> str:
            raise RuntimeError("no text")

        def __int__(self) -> int:
            raise RuntimeError("no number")

    @trace(kind="agent", name="helper")
    def turn(q):
        assert conversation.expect([(NoText(), {})]) is False
        assert conversation.expect(outputs=[NoText()]) is False
        assert conversation.expect(["lookup"], reference_answer=NoText()) is False
        assert conversation.label(NoText()) is False
        assert conversation.label("complete", conversation_id=NoText()) is False
        return "ok"

    @trace(kind="llm")
    def think(q):
        assert record_usage(model=NoText(), output_tokens=3) is False  # type: ignore[arg-type]
        assert record_usage(input_tokens=NoText()) is False  # type: ignore[arg-type]
        return "ok"

    talk = conversation(id=NoText(), user=NoText(), instance=NoText(), tags=[("k", "v")])
    with talk:
        assert turn("q") == "ok" and think("q") == "ok"
    assert len(talk.id) == 32  # a generated id, as when none is given
    finished = by_name(spans)
    stamped = attrs(finished["invoke_agent helper"])
    assert stamped["gen_ai.conversation.id"] == talk.id
    assert "user.id" not in stamped and "agentwatch.task.instance" not in stamped
    assert stamped["agentwatch.tag.k"] == "v"  # tags as (key, value) pairs are read as a mapping
    assert "agentwatch.expected" not in stamped and "agentwatch.outcome" not in stamped
    assert "gen_ai.response.model" not in attrs(finished["chat"])
    assert caplog.text.count("RuntimeError") >= 9, caplog.text


def test_tags_whose_truth_value_raises_are_logged_and_left_out_never_raised(spans, caplog):  # noqa: F811
    """`conversation(tags=...)` asked `not tags` before its guard: tags in a pandas Series or a numpy array
    ("the truth value ... is ambiguous") raised into the agent's code instead of being logged and left out."""

    class Ambiguous(dict):
        def __bool__(self) -> bool:
            raise ValueError("the truth value of a Series is ambiguous")

    @trace(kind="tool")
    def lookup(q):
        return q

    with conversation(id="c-tags", tags=Ambiguous(region="eu")):
        assert lookup("q") == "q"
    (span,) = spans.get_finished_spans()
    stamped = attrs(span)
    assert stamped["gen_ai.conversation.id"] == "c-tags"
    assert not any(k.startswith("agentwatch.tag.") for k in stamped)
    assert "the truth value of a Series is ambiguous" in caplog.text


def test_ids_names_and_tags_are_bounded_in_bytes_and_long_ones_stay_distinct(spans, caplog):  # noqa: F811
    """Ids, names and tags are stamped on every span: a megabyte id went out with each. Past MAX_NAME_BYTES a text
    is cut and ends in its SHA-256 digest (two long ids sharing their first kilobyte stay two conversations), and
    at most MAX_TAGS tags are kept."""
    import hashlib

    from agentwatch.sdk.lenient import MAX_NAME_BYTES, MAX_TAGS

    @trace(kind="tool")
    def lookup(q):
        return q

    prefix = "é" * 600_000  # 2-byte characters: 1.2 MB, the cut falls inside one
    long_a, long_b = prefix + "a", prefix + "b"
    tags = {f"k{i}": "v" * 5000 for i in range(MAX_TAGS + 10)}
    with conversation(id=long_a, task="t" * 5000, user="u" * 5000, instance="i" * 5000, tags=tags):
        lookup("q")
    with conversation(id=long_b, task="tb"):
        lookup("q")
        assert conversation.label(
            "complete", conversation_id=long_b
        )  # the current one, told by its bounded id
    first, second, label = spans.get_finished_spans()
    a, b = attrs(first), attrs(second)
    for span in (first, second, label):
        for key, value in attrs(span).items():
            if isinstance(value, str):
                assert len(value.encode("utf-8")) <= MAX_NAME_BYTES, key
    id_a, id_b = str(a["gen_ai.conversation.id"]), str(b["gen_ai.conversation.id"])
    assert id_a != id_b
    assert id_a.endswith(hashlib.sha256(long_a.encode()).hexdigest()) and id_a.startswith("é" * 100)
    # labelled as the current conversation (stamped with its task), not as another one named by id
    assert attrs(label)["gen_ai.conversation.id"] == id_b and attrs(label)["agentwatch.task"] == "tb"
    assert str(a["agentwatch.task"]).startswith("t" * 100) and str(a["user.id"]).startswith("u" * 100)
    assert sum(k.startswith("agentwatch.tag.") for k in a) == MAX_TAGS
    assert "the conversation id of 1200001 bytes cut to 1024" in caplog.text
