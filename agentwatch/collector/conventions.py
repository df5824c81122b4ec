"""Span attribute keys the collector reads, one tuple per concept, in priority order.

GenAI semantic conventions first (their names from `agentwatch.wire.attributes`), then OpenInference, then
others. Adding a convention is one line here:
the decoder reads exactly `NEEDED_KEYS` (plus `agentwatch.tag.*`) and skips every other attribute.
"""

from __future__ import annotations

from agentwatch.wire import attributes as A

# --------------------------------------------------------------------------- identity
# the Vercel AI SDK's `experimental_telemetry.metadata.sessionId`, as Langfuse and others read it; Traceloop's
# association property `session_id`, as its docs tag a conversation
CONVERSATION_KEYS = (
    A.CONVERSATION_ID,
    "session.id",
    "galtea.session.custom_id",
    "ai.telemetry.metadata.sessionId",
    "traceloop.association.properties.session_id",
)
AGENT_KEYS = (A.AGENT_NAME, "agent.name")
VERSION_KEYS = (A.AGENT_VERSION,)
RESOURCE_AGENT_KEYS = (A.AGENT_NAME, A.SERVICE_NAME)
RESOURCE_VERSION_KEYS = (A.AGENT_VERSION, A.SERVICE_VERSION)

# --------------------------------------------------------------------------- span role
OPERATION_KEY = A.OPERATION
OPENINFERENCE_KIND_KEY = "openinference.span.kind"
AGENT_OPERATIONS = frozenset({A.INVOKE_AGENT})
TOOL_OPERATIONS = frozenset({A.EXECUTE_TOOL})
MODEL_OPERATIONS = frozenset({A.CHAT, "text_completion", "generate_content", "responses"})
# what sets an agent up rather than runs it: a trace of these alone is no conversation (AutoGen traces each
# agent's creation on its own; indexing jobs embed documents)
SETUP_OPERATIONS = frozenset({"create_agent", "embeddings"})
SETUP_KINDS = frozenset({"EMBEDDING"})
AGENT_KINDS = frozenset({"AGENT"})
TOOL_KINDS = frozenset({"TOOL"})
MODEL_KINDS = frozenset({"LLM"})

# --------------------------------------------------------------------------- tool calls
TOOL_NAME_KEYS = (A.TOOL_NAME, "tool.name")
TOOL_CALL_ID_KEYS = (A.TOOL_CALL_ID, "tool_call.id")
TOOL_ARGUMENTS_KEYS = (A.TOOL_ARGUMENTS, "tool_call.function.arguments")
# OpenInference's `tool.parameters` is the tool's declared parameters (a JSON schema), not the call's arguments; a
# few loggers put the arguments there: read last, and never when it is a schema
TOOL_PARAMETERS_KEY = "tool.parameters"
TOOL_RESULT_KEYS = (A.TOOL_RESULT,)
TOOL_READ_ONLY_KEYS = (A.TOOL_READ_ONLY,)

# --------------------------------------------------------------------------- model calls
MODEL_KEYS = (A.RESPONSE_MODEL, A.REQUEST_MODEL, "llm.model_name")
INPUT_TOKEN_KEYS = (A.INPUT_TOKENS, "llm.token_count.prompt", "gen_ai.usage.prompt_tokens")
OUTPUT_TOKEN_KEYS = (
    A.OUTPUT_TOKENS,
    "llm.token_count.completion",
    "gen_ai.usage.completion_tokens",
)
COST_KEYS = (A.COST_USD, "llm.cost.total", "operation.cost")  # the last: Pydantic AI's, in USD
# Prompt-cache tokens: the GenAI conventions', OpenLLMetry's and Strands' older names, OpenInference's, the
# Vercel AI SDK's (5 and 6). Counted in the input tokens by the conventions; `call_usage._cached` checks.
CACHE_READ_KEYS = (
    A.CACHE_READ_INPUT_TOKENS,
    "gen_ai.usage.cache_read_input_tokens",
    "llm.token_count.prompt_details.cache_read",
    "ai.usage.inputTokenDetails.cacheReadTokens",
    "ai.usage.cachedInputTokens",
)
CACHE_WRITE_KEYS = (
    A.CACHE_CREATION_INPUT_TOKENS,
    "gen_ai.usage.cache_creation_input_tokens",
    "gen_ai.usage.cache_write_input_tokens",
    "llm.token_count.prompt_details.cache_write",
    "ai.usage.inputTokenDetails.cacheWriteTokens",
)
TOTAL_TOKEN_KEYS = ("gen_ai.usage.total_tokens", "llm.token_count.total")
# The OpenAI Agents SDK's handoff from one agent to another: OpenLLMetry's operation, OpenInference's TOOL span
HANDOFF_OPERATION = "handoff"
HANDOFF_SPAN = "handoff to "
# LiteLLM's OpenTelemetry callback: its call id on the span it writes a model call to, its own span's name (with a
# span current it writes to that span instead, unless USE_OTEL_LITELLM_REQUEST_SPAN is set)
LITELLM_CALL_KEY = "litellm.call_id"
LITELLM_SPAN_NAME = "litellm_request"

# --------------------------------------------------------------------------- messages
INPUT_MESSAGES_KEYS = (A.INPUT_MESSAGES,)
OUTPUT_MESSAGES_KEYS = (A.OUTPUT_MESSAGES,)
INPUT_VALUE_KEYS = (A.INPUT_VALUE,)
OUTPUT_VALUE_KEYS = (A.OUTPUT_VALUE,)
SYSTEM_KEYS = (A.SYSTEM_INSTRUCTIONS,)  # the agent's instructions: JSON parts, or text

# --------------------------------------------------------------------------- errors
ERROR_TYPE_KEYS = (A.ERROR_TYPE,)
EXCEPTION_EVENT = "exception"
EXCEPTION_TYPE_KEY = "exception.type"
EXCEPTION_MESSAGE_KEY = "exception.message"

# --------------------------------------------------------------------------- ours
TASK_KEYS = (A.TASK,)
TASK_INSTANCE_KEYS = (A.TASK_INSTANCE,)
ATTEMPT_KEYS = (A.ATTEMPT,)
END_KEYS = (A.CONVERSATION_END,)
EXPECTED_KEYS = (A.EXPECTED,)
CONVERSATION_EXPECTED_KEYS = (A.CONVERSATION_EXPECTED,)
REFERENCE_ANSWER_KEYS = (A.REFERENCE_ANSWER,)
OUTCOME_KEYS = (A.OUTCOME,)
BUDGET_KEYS = (A.BUDGET_USD,)
FRAGMENT_KEYS = (A.MESSAGES_OF,)  # `span_fragments`: kept through re-keying
TAG_PREFIX = A.TAG_PREFIX

# --------------------------------------------------------------------------- what the decoder keeps
RESOURCE_KEYS: frozenset[str] = frozenset(RESOURCE_AGENT_KEYS + RESOURCE_VERSION_KEYS)

NEEDED_KEYS: frozenset[str] = frozenset(
    CONVERSATION_KEYS
    + AGENT_KEYS
    + VERSION_KEYS
    + (OPERATION_KEY, OPENINFERENCE_KIND_KEY)
    + TOOL_NAME_KEYS
    + TOOL_CALL_ID_KEYS
    + TOOL_ARGUMENTS_KEYS
    + (TOOL_PARAMETERS_KEY,)
    + TOOL_RESULT_KEYS
    + TOOL_READ_ONLY_KEYS
    + MODEL_KEYS
    + INPUT_TOKEN_KEYS
    + OUTPUT_TOKEN_KEYS
    + COST_KEYS
    + CACHE_READ_KEYS
    + CACHE_WRITE_KEYS
    + TOTAL_TOKEN_KEYS
    + (LITELLM_CALL_KEY,)
    + INPUT_MESSAGES_KEYS
    + OUTPUT_MESSAGES_KEYS
    + INPUT_VALUE_KEYS
    + OUTPUT_VALUE_KEYS
    + SYSTEM_KEYS
    + ERROR_TYPE_KEYS
    + TASK_KEYS
    + TASK_INSTANCE_KEYS
    + ATTEMPT_KEYS
    + END_KEYS
    + EXPECTED_KEYS
    + CONVERSATION_EXPECTED_KEYS
    + REFERENCE_ANSWER_KEYS
    + OUTCOME_KEYS
    + BUDGET_KEYS
    + FRAGMENT_KEYS
)


def first(attrs: dict, keys: tuple[str, ...]) -> object:
    """The value of the first key of `keys` present (and not empty) in `attrs`, else None."""
    for key in keys:
        value = attrs.get(key)
        if value is not None and value != "":
            return value
    return None
