"""The fake models `tests.support.record_agents` runs agent SDKs against: chat completions streamed as
server-sent chunks, replies shaped for smolagents and Semantic Kernel, and endpoints of the OpenAI Responses,
Gemini and Anthropic Messages APIs. Each asks for the weather tool, then (given its result) answers, with the
token counts of `tests.support.fake_openai` (`CACHE`: with some of them read from and written to a prompt
cache, as the vendors report it)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.fake_openai import FINAL_TEXT, RESPONSE_MODEL, TOOL_CALL_ID, USAGE, Reply, completion


def streamed(request: dict[str, Any]) -> Reply:
    """The fake model's completion as server-sent chunks: role and content or tool calls, the finish, and usage
    when the request asks for it."""
    body = completion(request)
    message = body["choices"][0]["message"]
    delta: dict[str, Any] = {"role": "assistant"}
    if message.get("content"):
        delta["content"] = message["content"]
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
    base = {
        "id": body["id"],
        "object": "chat.completion.chunk",
        "created": body["created"],
        "model": body["model"],
    }
    finish = body["choices"][0]["finish_reason"]
    chunks = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
    ]
    if (request.get("stream_options") or {}).get("include_usage"):  # as OpenAI: usage only when asked for
        chunks.append({**base, "choices": [], "usage": body["usage"]})
    text = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    return Reply(body=text, headers={"Content-Type": "text/event-stream"})


def named_tool_reply(request: dict[str, Any]) -> dict[str, Any]:
    """The fake model's completion, its tool call under the name the request's first tool has (Semantic Kernel
    names a plugin's function `Plugin-function`)."""
    body = completion(request)
    message = body["choices"][0]["message"]
    tools = request.get("tools") or []
    for call in message.get("tool_calls") or []:
        if tools:
            call["function"]["name"] = tools[0]["function"]["name"]
    return body


# Of each call's prompt tokens (USAGE), those (read from, written to) the prompt cache: the first call writes
# its first 16, the second reads them and writes 20 more.
CACHE = {"tool_call": (0, 16), "final": (16, 20)}


def cached_completion(request: dict[str, Any]) -> dict[str, Any]:
    """`completion` with OpenAI's count of the prompt tokens read from its cache (OpenAI writes without telling)."""
    body = completion(request)
    read = CACHE["final" if body["choices"][0]["finish_reason"] == "stop" else "tool_call"][0]
    body["usage"]["prompt_tokens_details"] = {"cached_tokens": read}
    return body


def cached_anthropic_reply(body: dict[str, Any]) -> dict[str, Any] | str:
    """`anthropic_reply` with Anthropic's prompt-cache counts: reads and writes apart from its `input_tokens`; as
    Anthropic's server-sent events when the request streams."""
    reply = anthropic_reply(body)
    read, write = CACHE["final" if reply["stop_reason"] == "end_turn" else "tool_call"]
    usage = reply["usage"]
    usage.update(
        input_tokens=usage["input_tokens"] - read - write,
        cache_read_input_tokens=read,
        cache_creation_input_tokens=write,
    )
    return _anthropic_events(reply) if body.get("stream") else reply


def _anthropic_events(reply: dict[str, Any]) -> str:
    """A Messages API reply as the events Anthropic streams it in: the message, each block's start, delta and
    stop, the stop reason with the output tokens."""
    usage = reply["usage"]
    start = {**reply, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 0}}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for i, block in enumerate(reply["content"]):
        if block["type"] == "tool_use":
            first = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            first, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": i, "content_block": first}),
            ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": i}),
        ]
    end = {"stop_reason": reply["stop_reason"], "stop_sequence": None}
    events += [
        (
            "message_delta",
            {"type": "message_delta", "delta": end, "usage": {"output_tokens": usage["output_tokens"]}},
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


def anthropic_reply(body: dict[str, Any]) -> dict[str, Any]:
    """A `tool_use` block, then (given its `tool_result`) the answer, with the token counts of the fake chat
    model."""
    said = [b for m in body.get("messages") or [] if isinstance(m.get("content"), list) for b in m["content"]]
    if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in said):
        content: list[dict[str, Any]] = [{"type": "text", "text": FINAL_TEXT}]
        stop, (prompt, output), n = "end_turn", USAGE["final"], 2
    else:
        content = [
            {"type": "tool_use", "id": "toolu_fake_1", "name": "get_weather", "input": {"city": "Paris"}}
        ]
        stop, (prompt, output), n = "tool_use", USAGE["tool_call"], 1
    return {
        "id": f"msg_fake_{n}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": output},
    }


def handoff_reply(request: dict[str, Any]) -> dict[str, Any]:
    """A triage agent's model hands off (calls the one `transfer_to_*` tool it is given), the agent it hands off
    to calls the weather tool, then answers: the fake chat model of a two-agent run."""
    tools = [t["function"]["name"] for t in request.get("tools") or []]
    answered = {m.get("tool_call_id") for m in request.get("messages") or [] if m.get("role") == "tool"}
    body = completion({"messages": [{"role": "tool"}]})  # the final answer, with its token counts
    handoff = next((name for name in tools if name.startswith("transfer_to_")), None)
    if handoff is not None and "call_fake_handoff_1" not in answered:
        call = {"id": "call_fake_handoff_1", "name": handoff, "arguments": "{}"}
    elif "get_weather" in tools and TOOL_CALL_ID not in answered:
        call = {"id": TOOL_CALL_ID, "name": "get_weather", "arguments": json.dumps({"city": "Paris"})}
    else:
        return body
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": call["arguments"]},
            }
        ],
    }
    body["choices"][0].update(message=message, finish_reason="tool_calls")
    return body


def converse_reply(body: dict[str, Any]) -> dict[str, Any]:
    """Bedrock's Converse API: a `toolUse` block, then (given its `toolResult`) the answer, with the token counts
    of the fake chat model."""
    said = [b for m in body.get("messages") or [] for b in m.get("content") or [] if isinstance(b, dict)]
    if any("toolResult" in b for b in said):
        content: list[dict[str, Any]] = [{"text": FINAL_TEXT}]
        stop, (prompt, output) = "end_turn", USAGE["final"]
    else:
        content = [
            {"toolUse": {"toolUseId": "tooluse_fake_1", "name": "get_weather", "input": {"city": "Paris"}}}
        ]
        stop, (prompt, output) = "tool_use", USAGE["tool_call"]
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": prompt, "outputTokens": output, "totalTokens": prompt + output},
        "metrics": {"latencyMs": 12},
    }


def dspy_reply(request: dict[str, Any]) -> dict[str, Any]:
    """DSPy's ReAct through its chat adapter: the fields it asks for as `[[ ## field ## ]]` sections; the weather
    tool first, then (given its observation) `finish`, then the answer for the extraction step."""
    said = "\n".join(str(m.get("content")) for m in request.get("messages") or [])
    if "[[ ## next_tool_name ## ]]" not in said.split("[[ ## completed ## ]]")[0] and "`answer`" in said:
        fields = {"reasoning": "The tool said it.", "answer": FINAL_TEXT}
    elif "observation_0" in said:
        fields = {"next_thought": "I have the weather.", "next_tool_name": "finish", "next_tool_args": "{}"}
    else:
        fields = {
            "next_thought": "I look it up.",
            "next_tool_name": "get_weather",
            "next_tool_args": json.dumps({"city": "Paris"}),
        }
    text = (
        "".join(f"[[ ## {name} ## ]]\n{value}\n\n" for name, value in fields.items())
        + "[[ ## completed ## ]]"
    )
    body = completion({"messages": [{"role": "tool"}]})
    body["choices"][0]["message"] = {"role": "assistant", "content": text}
    return body


def smolagents_reply(request: dict[str, Any]) -> dict[str, Any]:
    """The fake model as smolagents needs it: the tool call, then (once an observation came back) the answer as
    a call of its `final_answer` tool."""
    said = request.get("messages") or []
    answered = any("Observation" in json.dumps(m.get("content")) for m in said[2:])
    body = completion({"messages": [{"role": "tool"}] if answered else []})
    if answered:
        arguments = json.dumps({"answer": FINAL_TEXT})
        call = {
            "id": "call_final_1",
            "type": "function",
            "function": {"name": "final_answer", "arguments": arguments},
        }
        body["choices"][0]["message"] = {"role": "assistant", "content": None, "tool_calls": [call]}
        body["choices"][0]["finish_reason"] = "tool_calls"
    return body


class FakeEndpoint:
    """A JSON endpoint on 127.0.0.1 answering every POST with `reply(request body)`; `base_url` ends in `root`."""

    def __init__(self, reply: Callable[[dict[str, Any]], dict[str, Any] | str], root: str = "") -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                found = reply(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                data = (found if isinstance(found, str) else json.dumps(found)).encode()
                self.send_response(200)
                kind = "text/event-stream" if isinstance(found, str) else "application/json"
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self._server.server_port}{root}"

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()


def responses_server() -> FakeEndpoint:
    """An OpenAI Responses endpoint (`POST /v1/responses`, the OpenAI Agents SDK's default model)."""
    return FakeEndpoint(responses_reply, "/v1")


def gemini_server() -> FakeEndpoint:
    """A Gemini `generateContent` endpoint."""
    return FakeEndpoint(gemini_reply)


def responses_reply(body: dict[str, Any]) -> dict[str, Any] | str:
    """A function call, then (given its output) the answer, with the token counts of the fake chat model; as
    server-sent events when the request streams (created, each output item added and done, completed)."""
    response = _response(body)
    if not body.get("stream"):
        return response
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**response, "status": "in_progress", "output": []}}
    ]
    for i, item in enumerate(response["output"]):
        events.append({"type": "response.output_item.added", "output_index": i, "item": item})
        events.append({"type": "response.output_item.done", "output_index": i, "item": item})
    events.append({"type": "response.completed", "response": response})
    return "".join(
        f"event: {e['type']}\ndata: {json.dumps({**e, 'sequence_number': n})}\n\n"
        for n, e in enumerate(events)
    )


def _response(body: dict[str, Any]) -> dict[str, Any]:
    given = body.get("input")
    said: list[Any] = given if isinstance(given, list) else []
    item: dict[str, Any]
    answered = any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in said)
    if answered:
        text = {"type": "output_text", "text": FINAL_TEXT, "annotations": []}
        item = {
            "type": "message",
            "id": "msg_fake_1",
            "role": "assistant",
            "status": "completed",
            "content": [text],
        }
        prompt, output = USAGE["final"]
    else:
        item = {
            "type": "function_call",
            "id": "fc_fake_1",
            "call_id": TOOL_CALL_ID,
            "name": "get_weather",
            "arguments": json.dumps({"city": "Paris"}),
            "status": "completed",
        }
        prompt, output = USAGE["tool_call"]
    return {
        "id": f"resp_fake_{2 if answered else 1}",  # ids differ between responses, as OpenAI's do
        "object": "response",
        "created_at": 1_700_000_000,
        "status": "completed",
        "model": RESPONSE_MODEL,
        "output": [item],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": body.get("tools") or [],
        "usage": {
            "input_tokens": prompt,
            "output_tokens": output,
            "total_tokens": prompt + output,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def gemini_reply(body: dict[str, Any]) -> dict[str, Any]:
    """A function call, then (given its response) the answer, with the token counts of the fake OpenAI model."""
    said = [p for c in body.get("contents", []) for p in c.get("parts", [])]
    parts: list[dict[str, Any]]
    if any("functionResponse" in p for p in said):
        parts, (prompt, output) = [{"text": FINAL_TEXT}], USAGE["final"]
    else:
        parts = [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]
        prompt, output = USAGE["tool_call"]
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
    usage = {"promptTokenCount": prompt, "candidatesTokenCount": output}
    return {"candidates": [candidate], "usageMetadata": usage}
