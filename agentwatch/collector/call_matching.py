"""Tool spans matched to the model's calls they answer: the call id, arguments and result a tool span did not
log, taken from the model calls' messages (content logged on the model calls only, as the GenAI
instrumentations' events do; tool spans without ids, as OpenInference's are); never a guess between two."""

from __future__ import annotations

from typing import Any

from agentwatch.collector.decode import SpanRecord
from agentwatch.collector.messages import ToolResponses, calls_asked, json_or_text


def from_model_messages(
    calls: list[dict[str, Any]], models: list[SpanRecord], responses: ToolResponses | None
) -> None:
    """Tool spans without a call id take the id of the model's call they answer (`_call_ids`). Those that logged
    no arguments, or logged them as text (LangChain's single-argument tools), take the arguments the model asked
    for under their call id; those that logged no result, the result a model call was given under it (content
    logged on the model calls only, as the GenAI instrumentations' events do)."""
    if not any(
        c["call_id"] is None
        or not isinstance(c["arguments"], dict)
        or (c["result"] is None and c["error"] is None)
        for c in calls
    ):
        return
    asked = calls_asked(models)
    if not asked:
        return
    _call_ids(calls, asked)
    _unasked_ids(calls, asked)
    if responses is None:
        responses = ToolResponses(lambda: models)
    for call in calls:
        if call["call_id"] is None:
            continue
        wanted = asked.get(call["call_id"], (None, None))[1]
        if isinstance(wanted, dict) and not isinstance(call["arguments"], dict):
            call["arguments"] = wanted
        if call["result"] is None and call["error"] is None:
            given, result = responses.get(call["call_id"])
            if given:
                call["result"] = json_or_text(result)


def _unasked_ids(calls: list[dict[str, Any]], asked: dict[str, tuple[str, Any]]) -> None:
    """Tool spans without arguments whose call id no model call asked under (OpenLLMetry's Responses API
    instrumentation logs the model's calls under the output item's id, `fc_…`, and their results under the
    call's, `call_…`) take the arguments of the one call of their tool under an id no span has, where they are
    the one such span of that tool; never a guess between two."""
    ids = {c["call_id"] for c in calls}
    strays = [
        c for c in calls if c["call_id"] is not None and c["call_id"] not in asked and c["arguments"] is None
    ]
    for call in strays:
        if sum(c["name"] == call["name"] for c in strays) != 1:
            continue
        free = [cid for cid, (name, _) in asked.items() if name == call["name"] and cid not in ids]
        if len(free) == 1 and isinstance(asked[free[0]][1], dict):
            call["arguments"] = asked[free[0]][1]


def _call_ids(calls: list[dict[str, Any]], asked: dict[str, tuple[str, Any]]) -> None:
    """Tool spans that logged no call id (OpenInference's OpenAI Agents and LlamaIndex tools) take the id of the
    model's call of the same tool whose arguments are theirs; a span that logged no arguments, where it and one
    unclaimed call are all there is of that tool, that call's; never a guess between two."""
    claimed = {c["call_id"] for c in calls if c["call_id"] is not None}
    idless = [c for c in calls if c["call_id"] is None]
    for call in idless:
        free = [cid for cid, (name, _) in asked.items() if name == call["name"] and cid not in claimed]
        if isinstance(call["arguments"], dict):  # logged arguments: the call with the same, or none
            same = [cid for cid in free if asked[cid][1] == call["arguments"]]
            if len(same) != 1:
                continue
            chosen = same[0]
        elif len(free) == 1 and sum(c["name"] == call["name"] for c in idless) == 1:
            chosen = free[0]
        else:
            continue
        call["call_id"] = chosen
        claimed.add(chosen)
