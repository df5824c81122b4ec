"""Traces that only set an agent up (`create_agent`, embeddings) are no conversation; anything that runs an agent,
a tool or a model, or says something, makes one."""

from __future__ import annotations

from typing import Any

import pytest

from agentwatch.collector.span_record import SpanRecord
from agentwatch.collector.span_tree import setup_only

TRACE = "0af7651916cd43dd8448eb211c80319c"


def _span(i: int, attrs: dict[str, Any], name: str = "span") -> SpanRecord:
    return SpanRecord(TRACE, f"{i:016x}", None, name, i, i + 5, None, attrs, {}, TRACE)


CREATE = {"gen_ai.operation.name": "create_agent", "gen_ai.agent.name": "a"}
EMBED = {"gen_ai.operation.name": "embeddings", "gen_ai.request.model": "text-embedding-3-small"}
EMBEDDING_KIND = {"openinference.span.kind": "embedding"}


@pytest.mark.parametrize(
    "spans",
    [[CREATE], [EMBED, EMBED], [EMBEDDING_KIND], [CREATE, {}], [EMBED, {"http.route": "/index"}]],
    ids=["create_agent", "embeddings", "openinference_embedding", "with_a_plain_span", "under_an_http_span"],
)
def test_setting_up_alone_is_no_conversation(spans: list[dict[str, Any]]) -> None:
    assert setup_only([_span(i, a) for i, a in enumerate(spans)])


@pytest.mark.parametrize(
    "spans",
    [
        [],
        [{}],  # nothing GenAI at all: not ours to drop
        [CREATE, {"gen_ai.operation.name": "invoke_agent"}],
        [EMBED, {"gen_ai.operation.name": "chat"}],
        [EMBED, {"gen_ai.operation.name": "execute_tool"}],
        [EMBED, {"openinference.span.kind": "LLM"}],
        [EMBED, {"input.value": "what is in my documents?"}],  # a chain that says something
        [CREATE, {"gen_ai.output.messages": '[{"role": "assistant", "content": "hi"}]'}],
    ],
    ids=["empty", "plain", "invoked", "chat", "tool", "llm_kind", "input_value", "messages"],
)
def test_anything_run_or_said_makes_a_conversation(spans: list[dict[str, Any]]) -> None:
    assert not setup_only([_span(i, a) for i, a in enumerate(spans)])
