"""Span attribute keys the collector reads, one tuple per concept, in priority order.

GenAI semantic conventions first, then OpenInference, then others. Adding a convention is one line here:
the decoder reads exactly `NEEDED_KEYS` (plus `agentwatch.tag.*`) and skips every other attribute.
"""

from __future__ import annotations

from agentwatch import wire

# --------------------------------------------------------------------------- identity
CONVERSATION_KEYS = ("gen_ai.conversation.id", "session.id", "galtea.session.custom_id")
AGENT_KEYS = ("gen_ai.agent.name", "agent.name")
VERSION_KEYS = ("gen_ai.agent.version",)
RESOURCE_AGENT_KEYS = ("gen_ai.agent.name", "service.name")
RESOURCE_VERSION_KEYS = ("gen_ai.agent.version", "service.version")

# --------------------------------------------------------------------------- span role
OPERATION_KEY = "gen_ai.operation.name"
OPENINFERENCE_KIND_KEY = "openinference.span.kind"
AGENT_OPERATIONS = frozenset({"invoke_agent"})
TOOL_OPERATIONS = frozenset({"execute_tool"})
MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "responses"})
AGENT_KINDS = frozenset({"AGENT"})
TOOL_KINDS = frozenset({"TOOL"})
MODEL_KINDS = frozenset({"LLM"})

# --------------------------------------------------------------------------- tool calls
TOOL_NAME_KEYS = ("gen_ai.tool.name", "tool.name")
TOOL_CALL_ID_KEYS = ("gen_ai.tool.call.id", "tool_call.id")
TOOL_ARGUMENTS_KEYS = ("gen_ai.tool.call.arguments", "tool.parameters")
TOOL_RESULT_KEYS = ("gen_ai.tool.call.result",)
TOOL_READ_ONLY_KEYS = (wire.TOOL_READ_ONLY,)

# --------------------------------------------------------------------------- model calls
MODEL_KEYS = ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name")
INPUT_TOKEN_KEYS = ("gen_ai.usage.input_tokens", "llm.token_count.prompt", "gen_ai.usage.prompt_tokens")
OUTPUT_TOKEN_KEYS = (
    "gen_ai.usage.output_tokens",
    "llm.token_count.completion",
    "gen_ai.usage.completion_tokens",
)
COST_KEYS = ("agentwatch.cost.usd", "llm.cost.total")

# --------------------------------------------------------------------------- messages
INPUT_MESSAGES_KEYS = ("gen_ai.input.messages",)
OUTPUT_MESSAGES_KEYS = ("gen_ai.output.messages",)
INPUT_VALUE_KEYS = ("input.value",)
OUTPUT_VALUE_KEYS = ("output.value",)
SYSTEM_KEYS = (wire.SYSTEM_INSTRUCTIONS,)  # the agent's instructions: JSON parts, or text

# --------------------------------------------------------------------------- errors
ERROR_TYPE_KEYS = ("error.type",)
EXCEPTION_EVENT = "exception"
EXCEPTION_TYPE_KEY = "exception.type"
EXCEPTION_MESSAGE_KEY = "exception.message"

# --------------------------------------------------------------------------- ours
TASK_KEYS = ("agentwatch.task",)
TASK_INSTANCE_KEYS = (wire.TASK_INSTANCE_ATTRIBUTE,)
ATTEMPT_KEYS = (wire.ATTEMPT_ATTRIBUTE,)
END_KEYS = ("agentwatch.conversation.end",)
EXPECTED_KEYS = ("agentwatch.expected",)
CONVERSATION_EXPECTED_KEYS = (wire.CONVERSATION_EXPECTED,)
REFERENCE_ANSWER_KEYS = ("agentwatch.reference_answer",)
OUTCOME_KEYS = ("agentwatch.outcome",)
BUDGET_KEYS = ("agentwatch.budget.usd",)
TAG_PREFIX = "agentwatch.tag."

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
    + TOOL_RESULT_KEYS
    + TOOL_READ_ONLY_KEYS
    + MODEL_KEYS
    + INPUT_TOKEN_KEYS
    + OUTPUT_TOKEN_KEYS
    + COST_KEYS
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
)


def first(attrs: dict, keys: tuple[str, ...]) -> object:
    """The value of the first key of `keys` present (and not empty) in `attrs`, else None."""
    for key in keys:
        value = attrs.get(key)
        if value is not None and value != "":
            return value
    return None
