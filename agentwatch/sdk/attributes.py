"""Span attribute keys the SDK writes (OpenTelemetry GenAI semantic conventions plus `agentwatch.*`)."""

from agentwatch.wire import (
    ATTEMPT_ATTRIBUTE,
    CONVERSATION_EXPECTED,
    LABEL_OUTCOMES,
    SYSTEM_INSTRUCTIONS,
    TASK_INSTANCE_ATTRIBUTE,
    TOOL_READ_ONLY,
)

OPERATION = "gen_ai.operation.name"
CONVERSATION_ID = "gen_ai.conversation.id"
AGENT_NAME = "gen_ai.agent.name"
AGENT_VERSION = "gen_ai.agent.version"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
USER_ID = "user.id"
ERROR_TYPE = "error.type"
# OpenInference-style generic input/output, for kind="chain" spans.
INPUT_VALUE = "input.value"
OUTPUT_VALUE = "output.value"

TASK = "agentwatch.task"
TASK_INSTANCE = TASK_INSTANCE_ATTRIBUTE
ATTEMPT = ATTEMPT_ATTRIBUTE
CONVERSATION_END = "agentwatch.conversation.end"
EXPECTED = "agentwatch.expected"
REFERENCE_ANSWER = "agentwatch.reference_answer"
OUTCOME = "agentwatch.outcome"
COST_USD = "agentwatch.cost.usd"
BUDGET_USD = "agentwatch.budget.usd"
MARKER = "agentwatch.marker"
# The names below live in agentwatch.wire (the collector reads them from there).
__all__ = ["CONVERSATION_EXPECTED", "SYSTEM_INSTRUCTIONS", "TOOL_READ_ONLY"]

INVOKE_AGENT = "invoke_agent"
EXECUTE_TOOL = "execute_tool"
CHAT = "chat"

# Outcome labels the collector accepts (the wire contract; agentwatch.schema.Outcome minus "unscored").
OUTCOMES = LABEL_OUTCOMES
