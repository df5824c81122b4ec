"""The judge's API key and the credentials of its URL never reach a verdict, the verdict cache or a log line,
even when the server echoes them back; and credentials in a URL never cross the network in clear text."""

from __future__ import annotations

import base64
import json
import logging
import socket
from pathlib import Path

import pytest

from agentwatch.config import load_settings
from agentwatch.judge.cache import JudgeCache
from agentwatch.judge.client import OpenAIJudge
from agentwatch.judge.runner import JudgeRunner
from agentwatch.wire.schema import Conversation
from tests.support.hostile_http import RawServer, completion_body, response

KEY = "sk-live-0123456789abcdef"
PASSWORD = "hunter2-pw"
BASIC = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()


def conv(said: str) -> Conversation:
    return Conversation.model_validate(
        {"conversation_id": said, "turns": [{"input": said, "answer": "hello"}]}
    )


def echo(sock: socket.socket, head: bytes, body: bytes) -> None:
    """An error quoting the request's headers, the Authorization first; then a verdict quoting it again."""
    auth = next(line for line in head.split(b"\r\n") if line.lower().startswith(b"authorization"))
    if b"refuse me" in body:
        sock.sendall(response("401 Unauthorized", b"invalid credentials: " + auth + b"\r\n" + head))
        return
    said = json.dumps({"outcome": "complete", "score": 0.9, "explanation": f"I was sent {auth.decode()}"})
    sock.sendall(response("200 OK", completion_body(said)))


def test_a_key_echoed_by_the_server_is_in_no_detail_explanation_cache_or_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = tmp_path / "verdicts.jsonl"
    with caplog.at_level(logging.DEBUG), RawServer(echo) as server:
        judge = OpenAIJudge(base_url=server.base_url, model="m", api_key=KEY, max_retries=0)
        runner = JudgeRunner(judge, cache=JudgeCache(10, cache))
        failed, graded = runner.judge_many([conv("refuse me"), conv("grade me")])
        runner.close()
    assert failed.failure == "judge_unavailable" and "Bearer [redacted]" in failed.detail
    assert graded.ok and graded.explanation == "I was sent Authorization: Bearer [redacted]"
    for text in (failed.detail, graded.explanation, cache.read_text(), caplog.text):
        assert "sk-live" not in text  # not even the part of the key before the detail's cut


def test_url_credentials_are_sent_but_never_shown(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG), RawServer(echo) as server:
        url = server.base_url.replace("http://", f"http://alice:{PASSWORD}@")
        judge = OpenAIJudge(base_url=url, model="m", max_retries=0)
        failed, graded = judge.judge(conv("refuse me")), judge.judge(conv("grade me"))
        settings = load_settings(judge={"base_url": url, "api_key_env": "AGENTWATCH_TEST_NO_SUCH_KEY"})
        OpenAIJudge.from_config(settings.judge, environ={})  # warns that the key is not set, naming the URL
    assert f"Authorization: Basic {BASIC}".encode() in server.requests[0]  # the server got them
    assert failed.failure == "judge_unavailable" and "Basic [redacted]" in failed.detail
    assert graded.ok and "[redacted]" in graded.explanation
    assert "calling http://***@127.0.0.1" in caplog.text
    for text in (failed.detail, graded.explanation, caplog.text):
        assert PASSWORD not in text and BASIC not in text


def test_url_credentials_are_never_sent_over_plain_http_off_loopback() -> None:
    with pytest.raises(ValueError, match="clear text") as refused:
        OpenAIJudge(base_url=f"http://alice:{PASSWORD}@judge.example.com/v1", model="m")
    assert PASSWORD not in str(refused.value) and "***@judge.example.com" in str(refused.value)
    OpenAIJudge(base_url=f"https://alice:{PASSWORD}@judge.example.com/v1", model="m")
    OpenAIJudge(base_url=f"http://alice:{PASSWORD}@judge.example.com/v1", model="m", allow_insecure_http=True)
