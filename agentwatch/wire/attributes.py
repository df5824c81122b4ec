"""Every span attribute name agentwatch writes or reads first, named once.

The OpenTelemetry GenAI semantic conventions' names, then the `agentwatch.*` attributes of our own. The SDK
writes them; the collector's reading order (`agentwatch.collector.conventions`) starts with them and adds
the other conventions' names (OpenInference, Galtea) after. Dependency-free, like the rest of `wire`.
"""

from __future__ import annotations

from agentwatch.wire.contract import LABEL_OUTCOMES

# --------------------------------------------------------------------------- OpenTelemetry GenAI
OPERATION = "gen_ai.operation.name"
CONVERSATION_ID = "gen_ai.conversation.id"
AGENT_NAME = "gen_ai.agent.name"
AGENT_VERSION = "gen_ai.agent.version"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
# The agent's instructions (JSON parts or text).
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
# Of the input tokens, those read from and written to the provider's prompt cache (counted in INPUT_TOKENS).
CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
# Evaluation results: the event `gen_ai.evaluation.result` and its attributes.
EVALUATION_EVENT = "gen_ai.evaluation.result"
EVALUATION_NAME = "gen_ai.evaluation.name"
EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"

# `gen_ai.operation.name` values
INVOKE_AGENT = "invoke_agent"
EXECUTE_TOOL = "execute_tool"
CHAT = "chat"

# --------------------------------------------------------------------------- general OpenTelemetry
USER_ID = "user.id"
ERROR_TYPE = "error.type"
SERVICE_NAME = "service.name"  # resource
SERVICE_VERSION = "service.version"  # resource
# OpenInference-style generic input/output, for kind="chain" spans.
INPUT_VALUE = "input.value"
OUTPUT_VALUE = "output.value"

# --------------------------------------------------------------------------- agentwatch's own
TASK = "agentwatch.task"  # the task family
# Attempts at the same task instance are what pass^k is about.
TASK_INSTANCE = "agentwatch.task.instance"  # which instance: a benchmark's task id, a request's id
ATTEMPT = "agentwatch.attempt"  # which attempt at it, an integer >= 0: a benchmark's trial
CONVERSATION_END = "agentwatch.conversation.end"  # true on the last turn
EXPECTED = "agentwatch.expected"  # JSON expectation for this turn
CONVERSATION_EXPECTED = "agentwatch.conversation.expected"  # JSON expectation for the whole conversation
REFERENCE_ANSWER = "agentwatch.reference_answer"
OUTCOME = "agentwatch.outcome"  # a label from a person or a feedback widget
COST_USD = "agentwatch.cost.usd"
BUDGET_USD = "agentwatch.budget.usd"
TOOL_READ_ONLY = "agentwatch.tool.read_only"  # true on a tool span whose tool changes nothing
MARKER = "agentwatch.marker"
TAG_PREFIX = "agentwatch.tag."
JUDGE_ID = "agentwatch.judge"  # on an evaluation result: which judge
ANSWER_EVALUATION = "agentwatch.answer_correctness"  # an evaluation's name: answer correctness
# on a span the collector makes of message events logged as OTLP log records: the span id they belong to
MESSAGES_OF = "agentwatch.messages_of"

# Outcome labels the collector accepts (`agentwatch.wire.schema.Outcome` minus "unscored").
OUTCOMES = LABEL_OUTCOMES
