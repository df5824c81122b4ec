"""MLflow Tracing's span attributes (`mlflow.*`) folded into the GenAI attributes the collector reads.

MLflow 3 (`mlflow` or `mlflow-tracing`) traces with OpenTelemetry and, with `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
set, sends its spans by OTLP as they are: every value JSON-encoded, `mlflow.spanType` saying what a span is
(`AGENT`, `CHAT_MODEL`, `LLM`, `TOOL`, `CHAIN`, ...), `mlflow.spanInputs` / `mlflow.spanOutputs` its input and
output (a chat call's request and the provider's response, a decorated function's arguments by name and return
value), `mlflow.llm.model`, `mlflow.chat.tokenUsage` (`input_tokens` counting the prompt cache, as MLflow's
autologgers normalise every provider, `output_tokens`, `cache_read_input_tokens`,
`cache_creation_input_tokens`) and `mlflow.llm.cost` (`total_cost` in USD). An `AGENT` span becomes an agent
invocation, `CHAT_MODEL` and `LLM` a `chat` call with its messages and usage, `TOOL` an `execute_tool` span (the
span's name the tool's); other types fold into nothing. MLflow keeps a trace's session in the trace's metadata,
which no span carries: each trace is a conversation of its own unless a span names one. With
`MLFLOW_ENABLE_OTEL_GENAI_SEMCONV=true` MLflow writes the GenAI conventions instead, read as any span.
"""

from __future__ import annotations

from typing import Any

from agentwatch.collector.observations import parsed, put, put_messages, put_tokens, put_tool, total_cost
from agentwatch.wire import attributes as A
from agentwatch.wire.provider_usage import first_int

TYPE = "mlflow.spanType"
_INPUTS = "mlflow.spanInputs"
_OUTPUTS = "mlflow.spanOutputs"
_MODEL = "mlflow.llm.model"
_USAGE = "mlflow.chat.tokenUsage"
_COST = "mlflow.llm.cost"
# every key the decoders keep for the fold (besides the GenAI ones they always keep)
KEYS: frozenset[str] = frozenset({TYPE, _INPUTS, _OUTPUTS, _MODEL, _USAGE, _COST})
_OPERATIONS = {"AGENT": A.INVOKE_AGENT, "CHAT_MODEL": A.CHAT, "LLM": A.CHAT, "TOOL": A.EXECUTE_TOOL}


def fold(attrs: dict[str, Any], name: str, limit: int) -> None:
    """Replace one span's MLflow keys (it has a span type) with the GenAI attributes they stand for; `name` is
    the span's."""
    kind = parsed(attrs.pop(TYPE, None))
    given, said = parsed(attrs.pop(_INPUTS, None)), parsed(attrs.pop(_OUTPUTS, None))
    model, usage, cost = (parsed(attrs.pop(key, None)) for key in (_MODEL, _USAGE, _COST))
    operation = _OPERATIONS.get(kind) if isinstance(kind, str) else None
    if operation is None:
        return
    put(attrs, A.OPERATION, operation)
    if operation == A.EXECUTE_TOOL:
        put_tool(attrs, name, given, said)
        return
    if operation == A.CHAT:
        put(attrs, A.RESPONSE_MODEL, model if isinstance(model, str) else None)
        if isinstance(usage, dict):
            put_tokens(
                attrs,
                first_int(usage, "input_tokens"),
                first_int(usage, "output_tokens"),
                first_int(usage, "cache_read_input_tokens"),
                first_int(usage, "cache_creation_input_tokens"),
            )
        put(attrs, A.COST_USD, total_cost(cost, "total_cost"))
    put_messages(attrs, given, said, limit)
