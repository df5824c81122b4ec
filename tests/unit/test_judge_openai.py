"""OpenAIJudge against a real local HTTP server with scripted replies: verdicts, retries, failures."""

from __future__ import annotations

import json

import pytest

from agentwatch.config import JudgeConfig, Settings
from agentwatch.config.prices import PriceLookup
from agentwatch.judge.breaker import CircuitBreaker
from agentwatch.judge.client import OpenAIJudge, parse_retry_after
from agentwatch.judge.prompt import VERDICT_SCHEMA
from agentwatch.wire.schema import Conversation, Outcome
from tests.support.fake_openai import (
    FakeOpenAI,
    Reply,
    Script,
    SlowBodyServer,
    refusal_reply,
    text_reply,
    verdict_reply,
)


def conv(cid: str = "c1", answer: str = "It is 18 degrees in Paris.") -> Conversation:
    return Conversation.model_validate(
        {
            "conversation_id": cid,
            "agent": "weather",
            "turns": [
                {
                    "input": "Weather in Paris?",
                    "tool_calls": [
                        {"name": "get_weather", "arguments": {"city": "Paris"}, "result": {"temp_c": 18}}
                    ],
                    "answer": answer,
                    "expected": {"reference_answer": "18 degrees"},
                }
            ],
        }
    )


class Sleeps:
    def __init__(self):
        self.delays: list[float] = []

    def __call__(self, s: float) -> None:
        self.delays.append(s)


def make(server: FakeOpenAI | SlowBodyServer, **kw) -> tuple[OpenAIJudge, Sleeps]:
    sleeps = Sleeps()
    prices = PriceLookup(Settings().cost.prices.models)
    kw.setdefault("timeout_s", 2.0)
    judge = OpenAIJudge(
        base_url=server.base_url,
        model="gpt-4o-mini",
        api_key="sk-test",
        prices=prices,
        sleep=sleeps,
        rng=lambda: 0.5,
        **kw,
    )
    return judge, sleeps


def serve(*replies):
    return FakeOpenAI(Script(*replies))


def test_the_judges_cached_prompt_tokens_are_priced_at_the_cache_price():
    reply = verdict_reply("complete", 0.9, "right", usage=(1000, 100))
    reply["usage"]["prompt_tokens_details"] = {"cached_tokens": 768}
    with serve(reply) as server:
        judge, _ = make(server)
        v = judge.judge(conv())
    # gpt-4o-mini: 0.15 input, 0.075 cached input, 0.60 output per million
    assert v.cost_usd == pytest.approx((232 * 0.15 + 768 * 0.075 + 100 * 0.60) / 1e6, rel=1e-12)


def test_verdict_request_shape_and_usage():
    with serve(verdict_reply("partial_correct", 0.6, "missing the humidity", usage=(1000, 100))) as server:
        judge, _ = make(server)
        v = judge.judge(conv())
    assert v.ok and v.outcome is Outcome.PARTIAL_CORRECT and v.score == 0.6
    assert v.explanation == "missing the humidity" and v.judge_id == "openai:gpt-4o-mini:v1"
    assert (v.input_tokens, v.output_tokens) == (1000, 100)
    assert v.cost_usd == pytest.approx((1000 * 0.15 + 100 * 0.60) / 1e6)
    body = server.requests[0]
    assert body["temperature"] == 0 and body["model"] == "gpt-4o-mini"
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == VERDICT_SCHEMA
    system, user = body["messages"]
    assert "complete" in system["content"] and "abandoned" in system["content"]
    for piece in (
        "Weather in Paris?",
        "get_weather",
        "temp_c",
        "It is 18 degrees",
        "reference answer: 18 degrees",
    ):
        assert piece in user["content"]
    assert server.headers[0]["Authorization"] == "Bearer sk-test"


def test_fenced_json_and_prose_accepted():
    with serve(
        text_reply('```json\n{"outcome": "complete", "score": 1, "explanation": "ok"}\n```')
    ) as server:
        assert make(server)[0].judge(conv()).outcome is Outcome.COMPLETE


def test_malformed_json_gets_one_repair_attempt():
    with serve(text_reply("The answer looks right to me."), verdict_reply("complete", 0.95)) as server:
        v = make(server)[0].judge(conv())
    assert v.ok and v.score == 0.95 and len(server.requests) == 2
    repair = server.requests[1]["messages"]
    assert repair[-2]["role"] == "assistant" and "could not be used" in repair[-1]["content"]
    assert v.input_tokens == 240  # both calls are counted


def test_malformed_twice_is_bad_output():
    bad = text_reply('{"outcome": "great", "score": 2}')
    with serve(bad) as server:
        v = make(server)[0].judge(conv())
    assert v.failure == "judge_bad_output" and "after one repair attempt" in v.detail
    assert len(server.requests) == 2 and v.input_tokens == 240 and v.cost_usd is not None and v.cost_usd > 0


def test_refusal_is_bad_output_without_repair():
    with serve(refusal_reply("I cannot grade this.")) as server:
        v = make(server)[0].judge(conv())
    assert v.failure == "judge_bad_output" and v.detail.startswith("refusal: I cannot grade")
    assert len(server.requests) == 1


def test_non_completion_body_is_bad_output():
    with serve(Reply(200, "<html>gateway</html>")) as server:
        v = make(server)[0].judge(conv())
    assert v.failure == "judge_bad_output"


@pytest.mark.parametrize(
    "body",
    [
        "[" * 100_000,  # deeper than the JSON decoder goes
        '{"choices": [{"message": "a string", "finish_reason": "stop"}]}',
        '{"choices": [{"message": [1], "finish_reason": "stop"}]}',
        '{"choices": [{"message": 7, "finish_reason": "stop"}], "usage": 0}',
    ],
)
def test_a_garbled_completion_is_bad_output_and_the_judge_counts_as_up(body: str) -> None:
    """A 200 whose body is no chat completion is the judge's bad output, said by `judge` (which never raises),
    where it escaped as an exception: the guard took it for an outage and the breaker heard nothing."""
    with serve(Reply(200, body)) as server:
        judge, _ = make(server, breaker=CircuitBreaker(failures=1))
        v = judge.judge(conv())
        assert v.failure == "judge_bad_output" and "not a chat completion" in v.detail
        assert judge.breaker.allow() is None  # the server answered: not a failure of the circuit


def test_a_score_or_usage_past_float_range_is_bad_output_or_uncounted() -> None:
    """An integer score too large for a float is out of [0, 1] (it raised OverflowError); usage counts the
    server garbled (infinite, huge) are left out while the verdict is kept."""
    huge = text_reply('{"outcome": "complete", "score": 1' + "0" * 400 + ', "explanation": "ok"}')
    with serve(huge) as server:
        v = make(server)[0].judge(conv())
    assert v.failure == "judge_bad_output" and "is not a number in [0, 1]" in v.detail
    assert len(server.requests) == 2  # the repair was asked for, as for any unusable verdict
    garbled = verdict_reply("complete", 0.9)
    garbled["usage"] = {"prompt_tokens": 1e999, "completion_tokens": 30}
    nested = "[" * 100_000
    with serve(Reply(200, json.dumps(garbled)), text_reply(nested), verdict_reply("complete", 0.8)) as server:
        judge = make(server)[0]
        v = judge.judge(conv())
        assert v.ok and v.score == 0.9 and v.input_tokens == 0
        v = judge.judge(conv())  # a reply nested too deep is repaired like any reply that is not JSON
        assert v.ok and v.score == 0.8 and len(server.requests) == 3


def test_429_honours_retry_after_then_succeeds():
    with serve(Reply(429, {"error": "slow down"}, {"Retry-After": "3"}), verdict_reply()) as server:
        judge, sleeps = make(server)
        v = judge.judge(conv())
    assert v.ok and len(server.requests) == 2
    assert len(sleeps.delays) == 1 and 3.0 <= sleeps.delays[0] <= 3.5


def test_5xx_exponential_backoff_with_jitter_then_unavailable():
    with serve(Reply(503, {"error": "down"})) as server:
        judge, sleeps = make(server, max_retries=3, backoff_s=1.0)
        v = judge.judge(conv())
    assert v.failure == "judge_unavailable" and "HTTP 503 after 3 retries" in v.detail
    assert len(server.requests) == 4
    assert sleeps.delays == [0.5, 1.0, 2.0]  # rng 0.5 × 1, 2, 4 (full jitter)


def test_500_then_success():
    with serve(Reply(500, {}), Reply(502, {}), verdict_reply()) as server:
        v = make(server)[0].judge(conv())
    assert v.ok and len(server.requests) == 3


def test_retry_after_too_long_gives_up():
    with serve(Reply(429, {}, {"Retry-After": "3600"})) as server:
        judge, sleeps = make(server, max_backoff_s=60)
        v = judge.judge(conv())
    assert v.failure == "judge_unavailable" and "Retry-After" in v.detail and sleeps.delays == []


def test_hang_is_timeout():
    # the server would answer a valid verdict after 5 s: getting judge_timeout instead proves the 0.3 s timeout
    # cut the call, whatever the machine's speed (no wall-clock assertion)
    with serve(Reply(200, verdict_reply(), delay_s=5.0)) as server:
        judge, _ = make(server, timeout_s=0.3)
        v = judge.judge(conv())
    assert v.failure == "judge_timeout" and not v.ok


def test_a_reply_trickling_in_is_a_timeout_at_the_deadline() -> None:
    """Each piece arrives well inside the read timeout, so only the deadline on the whole reply can cut it: the
    valid verdict would be read whole after about 4 s."""
    body = json.dumps(verdict_reply()).encode()
    with SlowBodyServer(body, piece=max(len(body) // 40, 1), every_s=0.1) as server:
        judge, _ = make(server, timeout_s=0.5)
        v = judge.judge(conv())
    assert v.failure == "judge_timeout" and "not read within 0.5 s" in v.detail
    assert server.sent < len(body)  # the client stopped reading: the rest was never sent


@pytest.mark.parametrize("declare_length", [True, False])
def test_a_reply_over_the_size_bound_is_bad_output_read_no_further(declare_length: bool) -> None:
    """A valid verdict padded past `max_response_bytes` (JSON allows the blanks) is refused, whether its length
    is declared up front or only shows as it is read; the judge counts as up."""
    body = json.dumps(verdict_reply()).encode() + b" " * 400_000
    with SlowBodyServer(body, piece=16_384, every_s=0.0, declare_length=declare_length) as server:
        judge, _ = make(server, max_response_bytes=100_000, breaker=CircuitBreaker(failures=1))
        v = judge.judge(conv())
        assert judge.breaker.allow() is None
    assert v.failure == "judge_bad_output" and "over 100000" in v.detail
    with SlowBodyServer(body, piece=16_384, every_s=0.0, declare_length=declare_length) as server:
        assert make(server, max_response_bytes=500_000)[0].judge(conv()).ok  # under the bound: read whole


def test_an_error_reply_is_read_only_as_far_as_its_detail() -> None:
    with serve(Reply(401, b"denied " + b"x" * 2_000_000)) as server:
        v = make(server, max_response_bytes=4096)[0].judge(conv())
    assert v.failure == "judge_unavailable" and v.detail.startswith("HTTP 401: denied xxx")


def test_client_error_is_unavailable_without_retry():
    with serve(Reply(401, {"error": "bad key"})) as server:
        judge, _sleeps = make(server)
        v = judge.judge(conv())
    assert v.failure == "judge_unavailable" and "HTTP 401" in v.detail and len(server.requests) == 1


def test_connection_refused_is_unavailable():
    judge = OpenAIJudge(
        base_url="http://127.0.0.1:9/v1", model="m", sleep=lambda s: None, max_retries=1, timeout_s=1.0
    )
    v = judge.judge(conv())
    assert v.failure == "judge_unavailable" and "connection error" in v.detail


def test_structured_outputs_fall_back_when_rejected():
    def responder(body):
        fmt = (body.get("response_format") or {}).get("type")
        if fmt == "json_schema":
            return Reply(400, {"error": {"message": "response_format json_schema is not supported"}})
        return verdict_reply()

    with FakeOpenAI(responder) as server:
        judge, _ = make(server)
        v = judge.judge(conv())
        assert v.ok and judge.response_format_mode == "json_object"
        judge.judge(conv("c2"))
    assert [(r.get("response_format") or {}).get("type") for r in server.requests] == [
        "json_schema",
        "json_object",
        "json_object",
    ]


def test_circuit_breaker_opens_and_recovers():
    now = [0.0]
    breaker = CircuitBreaker(failures=2, reset_s=10, clock=lambda: now[0])
    script = Script(Reply(503, {}), Reply(503, {}), verdict_reply())
    with FakeOpenAI(script) as server:
        judge, _ = make(server, max_retries=0, breaker=breaker)
        assert judge.judge(conv()).failure == "judge_unavailable"
        assert judge.judge(conv()).failure == "judge_unavailable"
        assert breaker.state == "open"
        v = judge.judge(conv())
        assert v.failure == "judge_unavailable" and "circuit open" in v.detail
        assert len(server.requests) == 2  # failed fast, no request
        now[0] = 11.0
        assert judge.judge(conv()).ok  # the trial call closes it
        assert breaker.state == "closed"


def test_fingerprint_stable_and_content_sensitive():
    judge = OpenAIJudge(base_url="http://127.0.0.1:9/v1", model="m")
    assert judge.fingerprint(conv()) == judge.fingerprint(conv())
    assert judge.fingerprint(conv()) != judge.fingerprint(conv(answer="It is 25 degrees."))
    other = OpenAIJudge(base_url="http://127.0.0.1:9/v1", model="m2")
    assert other.fingerprint(conv()) != judge.fingerprint(conv())


def test_from_config_reads_key_from_environment():
    with serve(verdict_reply()) as server:
        cfg = JudgeConfig(base_url=server.base_url, model="gpt-4o-mini", api_key_env="MY_JUDGE_KEY")
        judge = OpenAIJudge.from_config(cfg, environ={"MY_JUDGE_KEY": "sk-env"})
        assert judge.judge(conv()).ok
    assert server.headers[0]["Authorization"] == "Bearer sk-env"


def test_parse_retry_after():
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == pytest.approx(10.0)


def test_schema_matches_parser_classes():
    assert set(VERDICT_SCHEMA["properties"]["outcome"]["enum"]) == {
        "complete",
        "partial_correct",
        "partial_incorrect",
        "hallucinated",
        "abandoned",
    }
    json.dumps(VERDICT_SCHEMA)
