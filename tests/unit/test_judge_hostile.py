"""OpenAIJudge against a real local server that misbehaves at the byte level: every wait bounded, every body
bounded, every failure a failed verdict (never an exception, never a grade)."""

from __future__ import annotations

import socket
import threading
import tracemalloc
import zlib

import httpx

from agentwatch.config import Settings
from agentwatch.config.prices import PriceLookup
from agentwatch.judge.breaker import CircuitBreaker
from agentwatch.judge.client import OpenAIJudge, parse_retry_after
from agentwatch.wire.schema import Conversation
from tests.support.hostile_http import Handler, RawServer, completion_body, response


def conv() -> Conversation:
    return Conversation.model_validate(
        {"conversation_id": "c1", "agent": "a", "turns": [{"input": "Weather?", "answer": "Sunny."}]}
    )


def judge_for(server: RawServer, **kw: object) -> OpenAIJudge:
    kw.setdefault("timeout_s", 1.0)
    kw.setdefault("max_retries", 0)
    return OpenAIJudge(base_url=server.base_url, model="gpt-4o-mini", api_key="sk-test", **kw)  # type: ignore[arg-type]


def test_headers_trickling_in_are_a_timeout_at_the_deadline() -> None:
    """Each byte of the status line and headers arrives well inside the read timeout, so only a deadline on the
    whole exchange can cut it: the headers alone take 70 s (350 bytes, one each 0.2 s), and the call gives up at
    its 1 s deadline, a few bytes in."""
    stop = threading.Event()
    sent = [0]
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Pad: " + b"a" * 300

    def trickle(sock: socket.socket, _head: bytes, _body: bytes) -> None:
        for byte in head:
            if stop.wait(0.2):
                return
            sock.sendall(bytes([byte]))
            sent[0] += 1

    with RawServer(trickle) as server:
        v = judge_for(server).judge(conv())
        stop.set()
    assert v.failure == "judge_timeout" and "within 1 s" in v.detail
    assert sent[0] < len(head) // 4, (
        f"{sent[0]} of the head's {len(head)} bytes were sent before the call ended"
    )


def _replying(reply: bytes) -> Handler:
    """A handler sending `reply` to every request."""

    def handle(sock: socket.socket, _head: bytes, _body: bytes) -> None:
        sock.sendall(reply)

    return handle


def _gzip(data_pieces: int, piece: bytes) -> bytes:
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return b"".join(z.compress(piece) for _ in range(data_pieces)) + z.flush()


def test_a_gzip_bomb_is_bad_output_inflated_no_further_than_the_bound() -> None:
    """100 MB of blanks in 100 KB of gzip (Content-Length honest and small): inflated at most to the 1 MiB bound,
    so the memory the call takes stays near the bound, not the bomb's size."""
    bomb = _gzip(100, b" " * 1_000_000)
    assert len(bomb) < 200_000

    def send(sock: socket.socket, head: bytes, body: bytes) -> None:
        sock.sendall(response("200 OK", bomb, "Content-Encoding: gzip"))

    with RawServer(send) as server:
        judge = judge_for(server, timeout_s=5.0)
        tracemalloc.start()
        try:
            v = judge.judge(conv())
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert v.failure == "judge_bad_output" and "over 1048576 bytes" in v.detail
    assert peak < 16_000_000, peak


def test_compressed_replies_within_the_bound_are_read_and_unreadable_ones_are_bad_output() -> None:
    verdict = completion_body()
    raw_deflate = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    replies = {
        "gzip": _gzip(1, verdict),
        "deflate": zlib.compress(verdict),
        "deflate raw": raw_deflate.compress(verdict) + raw_deflate.flush(),
    }
    for encoding, body in replies.items():
        name = encoding.split()[0]
        with RawServer(_replying(response("200 OK", body, f"Content-Encoding: {name}"))) as server:
            assert judge_for(server).judge(conv()).ok, encoding
    assert b"accept-encoding: gzip, deflate\r\n" in server.requests[0].lower()
    for encoding, body in [("gzip", b"not gzip at all"), ("zstd", verdict), ("br", verdict)]:
        with RawServer(_replying(response("200 OK", body, f"Content-Encoding: {encoding}"))) as server:
            judge = judge_for(server, breaker=CircuitBreaker(failures=1))
            v = judge.judge(conv())
        assert v.failure == "judge_bad_output" and "reply not readable" in v.detail, (encoding, v)
        assert judge.breaker.state == "closed"  # the judge answered: it is up


def test_a_retry_after_of_nan_is_ignored_and_the_call_fails_as_unavailable() -> None:
    """`Retry-After: nan` parses as a float; waiting NaN seconds raised out of the judge. It is no wait: the
    backoff applies, and the breaker hears of the failure."""

    def send(sock: socket.socket, head: bytes, body: bytes) -> None:
        sock.sendall(response("503 Busy", b"", "Retry-After: nan"))

    now = [0.0]
    breaker = CircuitBreaker(failures=1, reset_s=10, clock=lambda: now[0])
    with RawServer(send) as server:
        judge = judge_for(server, max_retries=1, backoff_s=0.01, breaker=breaker)
        v = judge.judge(conv())
        assert v.failure == "judge_unavailable" and "HTTP 503 after 1 retries" in v.detail
        assert len(server.requests) == 2 and breaker.state == "open"
        now[0] = 11.0  # the trial call fails the same way and opens the breaker again
        assert judge.judge(conv()).failure == "judge_unavailable" and breaker.state == "open"
    assert parse_retry_after("NaN") is None and parse_retry_after("inf") == float("inf")


def test_an_unexpected_error_in_the_trial_call_reopens_the_breaker() -> None:
    """Whatever the call raises, the half-open breaker learns the trial's result: it must not wait forever for a
    trial that already ended."""
    now = [0.0]
    breaker = CircuitBreaker(failures=1, reset_s=10, clock=lambda: now[0])
    calls = [0]

    def explode(request: httpx.Request) -> httpx.Response:
        calls[0] += 1
        raise RuntimeError("the transport broke")

    client = httpx.Client(transport=httpx.MockTransport(explode))
    judge = OpenAIJudge(
        base_url="http://127.0.0.1:9/v1", model="m", client=client, breaker=breaker, max_retries=0
    )
    v = judge.judge(conv())
    assert v.failure == "judge_unavailable" and "RuntimeError: the transport broke" in v.detail
    assert breaker.state == "open"
    now[0] = 11.0
    assert judge.judge(conv()).failure == "judge_unavailable" and calls[0] == 2  # the trial call went out
    now[0] = 22.0  # the trial failed: after reset_s another trial goes out (not "a trial call is in flight")
    assert judge.judge(conv()).failure == "judge_unavailable" and calls[0] == 3


def test_a_negative_token_count_takes_nothing_off_the_spend() -> None:
    """A reply whose usage is negative is not counted: it would cancel what the repair call cost, and the spend
    cap would never see it."""
    replies = [
        completion_body("not json", usage={"prompt_tokens": -1_000_000_000, "completion_tokens": -5}),
        completion_body(usage={"prompt_tokens": 1000, "completion_tokens": 50}),
    ]

    def send(sock: socket.socket, head: bytes, body: bytes) -> None:
        sock.sendall(response("200 OK", replies.pop(0)))

    prices = PriceLookup(Settings().cost.prices.models)
    with RawServer(send) as server:
        v = judge_for(server, prices=prices).judge(conv())
    assert v.ok and (v.input_tokens, v.output_tokens) == (1000, 50)
    assert v.cost_usd is not None and v.cost_usd > 0


def test_the_repair_request_quotes_no_more_of_a_bad_reply_than_a_reply_can_hold() -> None:
    """A reply of 500 kB of prose (a server ignoring max_tokens) is quoted in the repair request cut to what
    `max_output_tokens` allows (4 characters a token), not sent back whole as input to pay for."""
    replies = [completion_body("blah " * 100_000), completion_body()]
    sizes: list[int] = []

    def send(sock: socket.socket, head: bytes, body: bytes) -> None:
        sizes.append(len(body))
        sock.sendall(response("200 OK", replies.pop(0)))

    with RawServer(send) as server:
        v = judge_for(server, max_output_tokens=400).judge(conv())
    assert v.ok and len(sizes) == 2
    assert sizes[1] - sizes[0] < 4 * 400 + 2_000  # the quote, the repair prompt and the JSON around them
