"""Every telemetry name otel-sampling emits, in one place.

Attribute names, metric names, units, histogram bucket boundaries and the closed value sets
(endings, substitution judgements, modes). Dashboards, alert rules, docs and tests import these;
``docs/telemetry.md`` is checked against this module by ``tests/test_names.py``.

Sources, per name:

* ``gen_ai.*``: OpenTelemetry GenAI semantic conventions (semantic-conventions-genai; values as in
  opentelemetry-semantic-conventions 0.66b2 ``gen_ai_attributes``, except the cache-write count
  and token type, renamed to ``cache_write`` by semantic-conventions-genai #440 since).
* ``mcp.server.operation.duration``, ``mcp.client.operation.duration``, ``rpc.response.status_code``:
  the MCP semantic conventions (``model/mcp/metrics.yaml``, ``model/mcp/common.yaml``).
* ``mcp.method.name``, ``mcp.protocol.version``, ``jsonrpc.request.id``: the
  OpenTelemetry MCP semantic conventions (``docs/gen-ai/mcp.md``).
* ``error.type``, ``server.address``, ``server.port``: OpenTelemetry general conventions.
* ``otel_sampling.*``: ours, in the project namespace (the instrumentation scope), never in a
  namespace the conventions own; the conventions have no name for model hints, includeContext,
  denial endings, substitutions, costs or evaluation scores. ``mcp.server.name`` /
  ``mcp.server.version`` and ``gen_ai.usage.cost.*`` follow open upstream proposals (#437, #443);
  ``degradation.*``, ``agent.*``, ``cache.*`` are ours, outside every OpenTelemetry namespace.
  ``docs/telemetry.md`` ("Names: the conventions' and ours") gives each name's reason. Changing
  any of them is a breaking change (``CHANGELOG.md``).
"""

from __future__ import annotations

from typing import Final

# ---------------------------------------------------------------- instrumentation scope
SCOPE_NAME: Final = "otel_sampling"
# The semantic-conventions release whose gen_ai.* / mcp.* names we emit: 1.41 is the last release
# that carried the GenAI and MCP conventions (1.42 moved them to semantic-conventions-genai, which
# has published no release or schema since). Set on our tracer and meter.
SCHEMA_URL: Final = "https://opentelemetry.io/schemas/1.41.0"

# ---------------------------------------------------------------- span names
SPAN_SAMPLING: Final = "sampling/createMessage"  # MCP semconv: {mcp.method.name}, no target
METHOD_SAMPLING: Final = "sampling/createMessage"
OPERATION_CHAT: Final = "chat"  # gen_ai.operation.name; inference span name is "chat {model}"

# ---------------------------------------------------------------- MCP / JSON-RPC semconv attributes
MCP_METHOD_NAME: Final = "mcp.method.name"
MCP_PROTOCOL_VERSION: Final = "mcp.protocol.version"
JSONRPC_REQUEST_ID: Final = "jsonrpc.request.id"
ERROR_TYPE: Final = "error.type"
RPC_RESPONSE_STATUS_CODE: Final = "rpc.response.status_code"  # MCP semconv: the answer's JSON-RPC error code
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"

# ---------------------------------------------------------------- GenAI semconv attributes
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
GEN_AI_REQUEST_STREAM: Final = "gen_ai.request.stream"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS: Final = "gen_ai.usage.cache_write.input_tokens"
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"  # part of output_tokens
GEN_AI_REQUEST_REASONING_LEVEL: Final = "gen_ai.request.reasoning.level"  # the effort the request asked for
# ours: anthropic thinking.budget_tokens as asked (the conventions name the effort level only)
REQUEST_THINKING_BUDGET: Final = "otel_sampling.request.thinking.budget_tokens"
GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"
GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"  # seconds, streams only
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"  # opt-in content (JSON string)
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"  # opt-in content (JSON string)
GEN_AI_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"  # opt-in content (JSON string)
EVENT_INFERENCE_DETAILS: Final = "gen_ai.client.inference.operation.details"  # GenAI semconv event (log record)
OPENAI_API_TYPE: Final = "openai.api.type"  # GenAI semconv for openai (span only): OPENAI_API_TYPES

# ---------------------------------------------------------------- our sampling attributes
MCP_SERVER_NAME: Final = "mcp.server.name"  # serverInfo.name the client saw at initialize/discover
SAMPLING_PATH: Final = "otel_sampling.sampling.path"  # PATH_* below
SAMPLING_MODEL_HINTS: Final = "otel_sampling.sampling.model_hints"  # modelPreferences.hints[].name
SAMPLING_INCLUDE_CONTEXT_REQUESTED: Final = "otel_sampling.sampling.include_context.requested"
SAMPLING_ENDING: Final = "otel_sampling.sampling.ending"  # ENDINGS
SAMPLING_SUBSTITUTION: Final = "otel_sampling.sampling.substitution"  # SUBSTITUTIONS
SAMPLING_BUDGET_RESETS_AT: Final = "otel_sampling.sampling.budget.resets_at"  # ErrorData.data.resetsAt, as sent
SAMPLING_CANCEL_REASON: Final = "otel_sampling.sampling.cancel.reason"  # notifications/cancelled reason
SAMPLING_PROVIDER_CALLS: Final = "otel_sampling.sampling.provider.calls"  # provider calls made inside the callback
SAMPLING_PROVIDER_MODEL: Final = "otel_sampling.sampling.provider.response_model"  # last model a provider served
SAMPLING_REPORTED_MODEL: Final = "otel_sampling.sampling.reported_model"  # CreateMessageResult.model, the host's claim
DEGRADATION_MODE: Final = "degradation.mode"  # MODES

# ---------------------------------------------------------------- policy scopes (provider calls)
# The policy scope a provider call (and an explicit run) was judged against
# (otel_sampling.rules.scopes): "server:<name>", "tool:<server>/<tool>", "run:<name>", "default".
POLICY_SCOPE: Final = "otel_sampling.policy.scope"
# A provider call's own substitution judgement (SUBSTITUTIONS), against the model it asked for and its
# scope's policy: on every chat span (a sampling request's own is SAMPLING_SUBSTITUTION).
SUBSTITUTION: Final = "otel_sampling.substitution"
# Violations of a provider call outside a sampling request (VIOLATIONS: model_outside_policy,
# boundary_crossed): a span event on its chat span and a counter, by scope and kind.
EVENT_VIOLATION: Final = "otel_sampling.violation"
VIOLATION_KIND: Final = "otel_sampling.violation.kind"
METRIC_CLIENT_VIOLATIONS: Final = "otel_sampling.client.violations"

# ---------------------------------------------------------------- closed value sets
PATH_RPC: Final = "rpc"  # legacy server-to-client JSON-RPC request (protocol <= 2025-11-25)
PATH_MRTR: Final = "mrtr"  # 2026-07-28 InputRequiredResult.input_requests (multi-round-trip)
# Server side: a server-initiated JSON-RPC request the connection could not carry (NoBackChannelError).
PATH_NO_BACK_CHANNEL: Final = "no_back_channel"

ENDING_COMPLETED: Final = "completed"
ENDING_REFUSED: Final = "refused"
ENDING_POLICY_DENIED: Final = "policy.denied"
ENDING_USER_DENIED: Final = "user.denied"
ENDING_BUDGET_EXHAUSTED: Final = "policy.budget_exhausted"
ENDING_MODEL_UNAVAILABLE: Final = "model.unavailable"
ENDING_HOST_UNSUPPORTED: Final = "host.unsupported"  # the mcp SDK's default answer: no sampling callback set
ENDING_TIMEOUT: Final = "timeout"
ENDING_CANCELLED: Final = "cancelled"
ENDING_ERROR: Final = "error"
# gen_ai.response.finish_reasons where one was expected and none came (GenAI semconv, client-inference.md)
FINISH_REASON_ERROR: Final = "error"
ENDINGS: Final = (
    ENDING_COMPLETED,
    ENDING_REFUSED,
    ENDING_POLICY_DENIED,
    ENDING_USER_DENIED,
    ENDING_BUDGET_EXHAUSTED,
    ENDING_MODEL_UNAVAILABLE,
    ENDING_HOST_UNSUPPORTED,
    ENDING_TIMEOUT,
    ENDING_CANCELLED,
    ENDING_ERROR,
)
# The endings that are the host's decision not to sample (no model was asked): a run they end is
# ``denied``, and a repeat of the request after one is a repeat after a denial.
DECISION_ENDINGS: Final = (ENDING_POLICY_DENIED, ENDING_USER_DENIED, ENDING_BUDGET_EXHAUSTED)

SUBSTITUTION_NONE: Final = "none"
SUBSTITUTION_WITHIN_POLICY: Final = "within_policy"
SUBSTITUTION_OUTSIDE_POLICY: Final = "outside_policy"
SUBSTITUTION_UNJUDGED: Final = "unjudged"
SUBSTITUTION_WITHOUT_POLICY: Final = "without_policy"  # another model than asked, and no policy covers the server
SUBSTITUTIONS: Final = (
    SUBSTITUTION_NONE,
    SUBSTITUTION_WITHIN_POLICY,
    SUBSTITUTION_OUTSIDE_POLICY,
    SUBSTITUTION_WITHOUT_POLICY,
    SUBSTITUTION_UNJUDGED,
)

MODE_PRIMARY: Final = "primary"
MODE_DEGRADED: Final = "degraded"
MODES: Final = (MODE_PRIMARY, MODE_DEGRADED)

INCLUDE_CONTEXT_VALUES: Final = ("none", "thisServer", "allServers")  # MCP spec, widening order

TOKEN_TYPE_INPUT: Final = "input"
TOKEN_TYPE_OUTPUT: Final = "output"

OPENAI_API_TYPE_CHAT_COMPLETIONS: Final = "chat_completions"  # semconv OpenaiApiTypeValues
OPENAI_API_TYPE_RESPONSES: Final = "responses"
OPENAI_API_TYPES: Final = (OPENAI_API_TYPE_CHAT_COMPLETIONS, OPENAI_API_TYPE_RESPONSES)

ERROR_TYPE_TIMEOUT: Final = "timeout"  # a provider call or stream that timed out (OTel error.type example value)
ERROR_TYPE_CONNECTION: Final = "connection_error"  # the provider could not be reached or dropped the connection
ERROR_TYPE_INCOMPLETE_STREAM: Final = "incomplete_stream"  # a stream that ended without its terminal event
ERROR_TYPE_CANCELLED: Final = "cancelled"  # the caller cancelled the call (asyncio.CancelledError)
ERROR_TYPE_RESPONSE_FAILED: Final = "failed"  # openai Responses status failed without an error code
ERROR_TYPE_ERROR_EVENT: Final = "error"  # an error an answer reports without naming it (an error body, a stream event)
ERROR_TYPE_EMPTY_RESPONSE: Final = "empty_response"  # HTTP 200 without choices / content / output and without an error

OVERFLOW_LABEL: Final = "_OTHER"  # a label value past its cap (the conventions' fallback spelling)
UNKNOWN_LABEL: Final = "_unknown"  # a label value that was not observable

# ---------------------------------------------------------------- metrics
METRIC_SAMPLING_REQUESTS: Final = "otel_sampling.sampling.requests"
METRIC_SAMPLING_DURATION: Final = "otel_sampling.sampling.duration"
METRIC_SAMPLING_IN_FLIGHT: Final = "otel_sampling.sampling.in_flight"
# MCP semconv (model/mcp/metrics.yaml): the receiver's and the sender's duration of a request
METRIC_MCP_SERVER_OPERATION_DURATION: Final = "mcp.server.operation.duration"  # the host, for sampling
METRIC_MCP_CLIENT_OPERATION_DURATION: Final = "mcp.client.operation.duration"  # the MCP server, for sampling
METRIC_GEN_AI_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
METRIC_GEN_AI_TOKEN_USAGE: Final = "gen_ai.client.token.usage"
METRIC_GEN_AI_TIME_TO_FIRST_CHUNK: Final = "gen_ai.client.operation.time_to_first_chunk"  # GenAI semconv, streams
METRIC_GEN_AI_TIME_PER_OUTPUT_CHUNK: Final = "gen_ai.client.operation.time_per_output_chunk"  # GenAI semconv, streams
# semantic-conventions-genai #521 (inference latency) and #374 (token usage): emitted per
# OTEL_SEMCONV_STABILITY_OPT_IN (otel_sampling.records.provider_call); the four above are their v1.41 names.
METRIC_GEN_AI_INFERENCE_DURATION: Final = "gen_ai.client.inference.duration"
METRIC_GEN_AI_INFERENCE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.client.inference.time_to_first_chunk"  # streams
METRIC_GEN_AI_INFERENCE_TIME_PER_OUTPUT_CHUNK: Final = "gen_ai.client.inference.time_per_output_chunk"  # streams
METRIC_GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.client.inference.usage.input_tokens"  # counter
METRIC_GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.client.inference.usage.output_tokens"  # counter
METRIC_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.client.inference.usage.cache_read.input_tokens"
METRIC_GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS: Final = "gen_ai.client.inference.usage.cache_write.input_tokens"
METRIC_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.client.inference.usage.reasoning.output_tokens"
METRIC_GEN_AI_OPERATION_INPUT_TOKENS: Final = "gen_ai.client.inference.operation.input_tokens"  # histogram
METRIC_GEN_AI_OPERATION_OUTPUT_TOKENS: Final = "gen_ai.client.inference.operation.output_tokens"  # histogram
GEN_AI_TOKEN_MODALITY: Final = "gen_ai.token.modality"  # required on the usage counters (#374)
# Our providers' counts are totals over every modality they were given: not broken down, so
# recorded as "unknown" (a registry value), never as a guessed "text".
TOKEN_MODALITY_UNKNOWN: Final = "unknown"
ENV_SEMCONV_STABILITY_OPT_IN: Final = "OTEL_SEMCONV_STABILITY_OPT_IN"  # OpenTelemetry's transition switch
SEMCONV_GEN_AI_LATEST: Final = "gen_ai_latest_experimental"  # contrib's value: the newest GenAI names only
SEMCONV_GEN_AI_DUP: Final = "gen_ai/dup"  # both the v1.41 names and the newest (as http/dup, database/dup)

UNIT_REQUEST: Final = "{request}"
UNIT_SECONDS: Final = "s"
UNIT_TOKEN: Final = "{token}"

# MCP semconv operation-duration buckets (mcp.client/server.operation.duration), seconds.
MCP_DURATION_BUCKETS: Final = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
# GenAI semconv advice for gen_ai.client.operation.duration, seconds.
GEN_AI_DURATION_BUCKETS: Final = (
    0.01,
    0.02,
    0.04,
    0.08,
    0.16,
    0.32,
    0.64,
    1.28,
    2.56,
    5.12,
    10.24,
    20.48,
    40.96,
    81.92,
)
# GenAI semconv advice for gen_ai.client.token.usage, tokens.
# GenAI semconv advice for gen_ai.server.time_per_output_token, seconds: the inter-chunk gaps of
# gen_ai.client.inference.time_per_output_chunk, which has no advice of its own.
GEN_AI_CHUNK_BUCKETS: Final = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5)
GEN_AI_TOKEN_BUCKETS: Final = (
    1,
    4,
    16,
    64,
    256,
    1024,
    4096,
    16384,
    65536,
    262144,
    1048576,
    4194304,
    16777216,
    67108864,
)

# ---------------------------------------------------------------- request context, degraded mode, substitution, cost
# One set of names that the instrumentation, the dashboards and the alert rules share.
# Sources: ``network.transport`` and ``mcp.session.id`` are OTel general / MCP semconv;
# ``gen_ai.evaluation.name`` is GenAI semconv; the rest are ours.
MCP_SESSION_ID: Final = "mcp.session.id"  # MCP semconv; streamable HTTP session id
NETWORK_TRANSPORT: Final = "network.transport"  # OTel general: "pipe" (stdio) or "tcp" (HTTP)
MCP_SERVER_VERSION: Final = "mcp.server.version"  # ours; serverInfo.version
# The tool whose call triggered a sampling request: ours. The conventions' gen_ai.tool.name names the
# tool an operation is about (an execute_tool span, an MCP tools/call span), which a sampling request is not.
SAMPLING_TOOL_NAME: Final = "otel_sampling.sampling.tool.name"
GEN_AI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"  # GenAI semconv evaluation event attribute
# The GenAI semconv evaluation event (a log record) and its attributes, beside our score histogram.
EVENT_EVALUATION_RESULT: Final = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"  # only with content capture on events
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"  # GenAI semconv; an explicit run's name, on its invoke_agent span
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"  # GenAI semconv; given by the host, never invented

# INCLUDE_CONTEXT_VALUES + unreported
SAMPLING_INCLUDE_CONTEXT_GRANTED: Final = "otel_sampling.sampling.include_context.granted"
INCLUDE_CONTEXT_UNREPORTED: Final = "unreported"  # the host did not call grant_context()
SAMPLING_VIOLATION_KIND: Final = "otel_sampling.sampling.violation.kind"  # VIOLATIONS
VIOLATION_SCOPE_WIDENED: Final = "scope_widened"
VIOLATION_DECISION_FLIPPED: Final = "decision_flipped"
VIOLATION_REROUTED_AFTER_DENIAL: Final = "rerouted_after_denial"
VIOLATION_MODEL_OUTSIDE_POLICY: Final = "model_outside_policy"
VIOLATION_CONTEXT_ABOVE_CEILING: Final = "context_above_ceiling"
VIOLATION_BOUNDARY_CROSSED: Final = "boundary_crossed"
# the host reported another model than the provider served
VIOLATION_REPORTED_MODEL_MISMATCH: Final = "reported_model_mismatch"
# a grant offered for anything but a budget exhaustion
VIOLATION_GRANT_WITHOUT_EXHAUSTION: Final = "grant_without_exhaustion"
# the host sent a tool call the policy names in side_effect_tools again, same arguments, in one run
VIOLATION_REPEATED_SIDE_EFFECT: Final = "repeated_side_effect"
VIOLATIONS: Final = (
    VIOLATION_SCOPE_WIDENED,
    VIOLATION_DECISION_FLIPPED,
    VIOLATION_REROUTED_AFTER_DENIAL,
    VIOLATION_MODEL_OUTSIDE_POLICY,
    VIOLATION_CONTEXT_ABOVE_CEILING,
    VIOLATION_BOUNDARY_CROSSED,
    VIOLATION_GRANT_WITHOUT_EXHAUSTION,
    VIOLATION_REPORTED_MODEL_MISMATCH,
    VIOLATION_REPEATED_SIDE_EFFECT,
)
ENDING_UNANSWERED: Final = "unanswered"  # server side only: a 2026-07-28 request the client never answered

DEGRADATION_REASON: Final = "degradation.reason"  # DEGRADATION_REASONS, or a named degradation's reason
DEGRADATION_COMPONENT: Final = "degradation.component"  # the component a named degradation covers
DEGRADATION_OWNER: Final = "degradation.owner"  # span attribute only, never a metric label
DEGRADATION_EXPIRES_AT: Final = "degradation.expires_at"  # span attribute only, ISO 8601
DEGRADATION_DIRECTION: Final = "degradation.direction"  # DIRECTIONS
DIRECTION_ENTER: Final = "enter"
DIRECTION_EXIT: Final = "exit"
DIRECTIONS: Final = (DIRECTION_ENTER, DIRECTION_EXIT)
REASON_FALLBACK: Final = "fallback"  # served another model than asked (or than the primary), one the policy permits
REASON_PROVIDER_FALLBACK: Final = "provider_fallback"  # the provider reports its own server-side fallback
REASON_FAILOVER: Final = "failover"  # an error on one model, then a success on another
REASON_SUBSTITUTION: Final = "substitution"  # served another model than asked, and no policy permits it
REASON_CANARY: Final = "canary"  # deliberate traffic through the fallback
REASON_DRILL: Final = "drill"  # a drill is failing a model's calls on purpose
# A client library's router fell back to another model because the request did not fit the first
# one's context window / was refused by its content policy (LiteLLM Router context_window_fallbacks /
# content_policy_fallbacks): the fallback is about the request, not an outage.
REASON_CONTEXT_WINDOW_FALLBACK: Final = "context_window_fallback"
REASON_CONTENT_POLICY_FALLBACK: Final = "content_policy_fallback"
# An MCP server asked the client to sample, the request did not complete (refused, unsupported, no
# back-channel, failed), and the server answered from a model of its own: the user's model was replaced.
REASON_SERVER_MODEL: Final = "server_model"
# The call asked for less reasoning effort (or a smaller thinking budget) than its scope's primary_effort.
REASON_REDUCED_EFFORT: Final = "reduced_effort"
# Reasoning effort levels, lowest first (openai reasoning_effort / reasoning.effort values; anthropic
# output_config.effort's are among them): the policy's primary_effort and otel_sampling.rules.effort.
EFFORT_LEVELS: Final = ("none", "minimal", "low", "medium", "high", "xhigh")
DEGRADATION_REASONS: Final = (
    REASON_FALLBACK,
    REASON_PROVIDER_FALLBACK,
    REASON_FAILOVER,
    REASON_SUBSTITUTION,
    REASON_CANARY,
    REASON_DRILL,
    REASON_CONTEXT_WINDOW_FALLBACK,
    REASON_CONTENT_POLICY_FALLBACK,
    REASON_SERVER_MODEL,
    REASON_REDUCED_EFFORT,
)
# Drills (otel_sampling.drill, [[drills]] in the policy file): our own namespace.
DRILL_NAME: Final = "otel_sampling.drill.name"  # span attribute (list: every drill running) and metric label
DRILL_OUTCOME: Final = "otel_sampling.drill.outcome"  # DRILL_OUTCOMES
DRILL_OUTCOME_COMPLETED: Final = "completed"  # ran its whole window
DRILL_OUTCOME_STOPPED: Final = "stopped"  # stop() or the end of its with-block, before the window ran out
DRILL_OUTCOME_ABORTED: Final = "aborted"  # ended by uninstrument() or SIGTERM
DRILL_OUTCOMES: Final = (DRILL_OUTCOME_COMPLETED, DRILL_OUTCOME_STOPPED, DRILL_OUTCOME_ABORTED)
DRILL_FAILURE_OVERLOADED: Final = "overloaded"  # anthropic 529 OverloadedError, openai 503 InternalServerError
DRILL_FAILURE_RATE_LIMITED: Final = "rate_limited"  # 429 RateLimitError
DRILL_FAILURE_TIMEOUT: Final = "timeout"  # APITimeoutError
DRILL_FAILURES: Final = (DRILL_FAILURE_OVERLOADED, DRILL_FAILURE_RATE_LIMITED, DRILL_FAILURE_TIMEOUT)

AGENT_RUN_NAME: Final = "agent.run.name"
AGENT_RUN_OUTCOME: Final = "agent.run.outcome"  # OUTCOMES, or a value the host sets
AGENT_RUN_DISCLOSED: Final = "agent.run.disclosed"  # "true" | "false"
OUTCOME_COMPLETED: Final = "completed"
OUTCOME_FAILED: Final = "failed"
# declined by a decision (policy, the user, the budget): not attempted, so neither completed nor failed
OUTCOME_DENIED: Final = "denied"
OUTCOMES: Final = (OUTCOME_COMPLETED, OUTCOME_FAILED, OUTCOME_DENIED)
DISCLOSURE_KIND: Final = "degradation.disclosure.kind"  # DISCLOSURE_KINDS
DISCLOSURE_KINDS: Final = ("inline", "activity_log")
# "true" | "false": whether the host tracks disclosure (it called disclose() in this process, or
# OTEL_SAMPLING_DISCLOSURE_TRACKED=true); on degradation.silent_incidents and its span event
DISCLOSURE_TRACKED: Final = "degradation.disclosure.tracked"

CACHE_LOOKUP_RESULT: Final = "cache.lookup.result"  # "hit" | "miss"
CACHE_PROVENANCE_MODE: Final = "cache.provenance.mode"  # MODES, or "unstamped"
CACHE_PROVENANCE_MATCH: Final = "cache.provenance.match"  # "match" | "mismatch" | "unstamped"
CACHE_UNSTAMPED: Final = "unstamped"

COST_USD: Final = "otel_sampling.cost.usd"  # ours; the summed cost of a request's provider calls, USD
# A provider call's cost: semantic-conventions-genai proposal #443 (open), inference spans only.
GEN_AI_USAGE_COST_AMOUNT: Final = "gen_ai.usage.cost.amount"  # in GEN_AI_USAGE_COST_CURRENCY
GEN_AI_USAGE_COST_CURRENCY: Final = "gen_ai.usage.cost.currency"  # ISO 4217
CURRENCY_USD: Final = "USD"
GEN_AI_USAGE_COST_SOURCE: Final = "gen_ai.usage.cost.source"  # "provider" (sent in the answer) | "local"
COST_SOURCE_LOCAL: Final = "local"  # computed here from token counts and a price
COST_PRICE_SOURCE: Final = "otel_sampling.cost.price_source"  # ours; where the price came from
PRICE_SOURCE_POLICY: Final = "policy"  # the policy file's [prices] table
PRICE_SOURCE_GENAI_PRICES: Final = "genai-prices"  # recorded as genai-prices@<installed version>
ENDING: Final = "otel_sampling.ending"  # ENDINGS, on provider call spans and gen_ai.client.operation.duration

METRIC_SAMPLING_STALLS: Final = "otel_sampling.sampling.stalls"
METRIC_SAMPLING_VIOLATIONS: Final = "otel_sampling.sampling.violations"
METRIC_SAMPLING_GRANTS: Final = "otel_sampling.sampling.grants"
METRIC_SAMPLING_GRANTED_USD: Final = "otel_sampling.sampling.granted.usd"
METRIC_SAMPLING_SERVER_REQUESTS: Final = "otel_sampling.sampling.server.requests"
# Sampling requests the mcp SDK answered -32602 (invalid params) before any callback ran: no span, no ending.
METRIC_SAMPLING_REJECTED: Final = "otel_sampling.sampling.rejected"
# On METRIC_SAMPLING_REJECTED: the validation error type of the request's first invalid field
# (pydantic's error ``type``: ``missing``, ``int_parsing``, ``list_type``...).
SAMPLING_REJECTION_REASON: Final = "otel_sampling.sampling.rejection.reason"
METRIC_CLIENT_COST: Final = "otel_sampling.client.cost.usd"
METRIC_CLIENT_UNPRICED: Final = "otel_sampling.client.unpriced"  # calls with token counts and no price
# The prompt-cache read share's pair where the host emits v1.41's GenAI names only (the default):
# v1.41 has no metric of cache parts, and the newest usage counters are emitted only under
# OTEL_SEMCONV_STABILITY_OPT_IN. Same points as gen_ai.client.inference.usage.input_tokens and
# .cache_read.input_tokens (without gen_ai.token.modality), never beside them.
METRIC_CLIENT_USAGE_INPUT_TOKENS: Final = "otel_sampling.client.usage.input_tokens"
METRIC_CLIENT_USAGE_CACHE_READ_INPUT_TOKENS: Final = "otel_sampling.client.usage.cache_read.input_tokens"
UNIT_CALL: Final = "{call}"
METRIC_DEGRADATION_ACTIVE: Final = "degradation.active"
METRIC_DEGRADATION_EXPIRED: Final = "degradation.expired"
METRIC_DEGRADATION_TRANSITIONS: Final = "degradation.transitions"
METRIC_SILENT_INCIDENTS: Final = "degradation.silent_incidents"
METRIC_AGENT_RUNS: Final = "agent.runs"
METRIC_AGENT_RUN_COST: Final = "agent.run.cost.usd"
METRIC_AGENT_RUN_DURATION: Final = "agent.run.duration"
METRIC_AGENT_RUN_STEPS: Final = "agent.run.steps"  # histogram: provider calls made inside a run
METRIC_AGENT_RUN_TOKENS: Final = "agent.run.tokens"  # histogram: tokens of a run, by gen_ai.token.type
# tool calls the host sent again in one run with the same tool and arguments fingerprint
METRIC_AGENT_RUN_REPEATED_TOOL_CALLS: Final = "agent.run.repeated_tool_calls"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"  # GenAI semconv: the tool an operation is about
TOOL_SIDE_EFFECT: Final = "otel_sampling.tool.side_effect"  # "true" | "false": the policy names the tool
METRIC_EVALUATION_SCORE: Final = "otel_sampling.evaluation.score"
METRIC_CACHE_LOOKUPS: Final = "otel_sampling.cache.lookups"
METRIC_DRILLS: Final = "otel_sampling.drills"

UNIT_USD: Final = "{USD}"  # an annotation: the Prometheus exporter adds no unit suffix
UNIT_ONE: Final = "1"
UNIT_VIOLATION: Final = "{violation}"
UNIT_GRANT: Final = "{grant}"
UNIT_RUN: Final = "{run}"
UNIT_INCIDENT: Final = "{incident}"
UNIT_LOOKUP: Final = "{lookup}"
UNIT_TRANSITION: Final = "{transition}"
UNIT_DRILL: Final = "{drill}"

# ---------------------------------------------------------------- runs, disclosure, evaluation, cache provenance
# Names these features add beyond the contract above. ``invoke_agent`` is the GenAI semconv
# operation for an agent invocation (span ``invoke_agent {name}``); the rest are ours.
OPERATION_INVOKE_AGENT: Final = "invoke_agent"  # gen_ai.operation.name of an explicit run's span
OPERATION_INVOKE_WORKFLOW: Final = "invoke_workflow"  # GenAI semconv: a workflow of agents
# gen_ai.operation.name of the GenAI agent spans (semconv "agent and framework spans"): one that no
# run owns starts an implicit run.
AGENT_OPERATIONS: Final = (OPERATION_INVOKE_AGENT, OPERATION_INVOKE_WORKFLOW)
EVENT_DISCLOSURE: Final = "degradation.disclosure"  # span event: the person was told
DISCLOSURE_MESSAGE_LENGTH: Final = "degradation.disclosure.message.length"  # characters; the text is not kept
DISCLOSURE_MESSAGE: Final = "degradation.disclosure.message"  # only with content capture on
EVENT_SILENT_INCIDENT: Final = "degradation.silent_incident"  # span event (and span, for an implicit run)
SILENT_INCIDENT_CAUSE: Final = "degradation.silent_incident.cause"  # SILENT_INCIDENT_CAUSES
SILENT_INCIDENT_CAUSES: Final = (MODE_DEGRADED, SUBSTITUTION_OUTSIDE_POLICY)
CACHE_HIT: Final = "hit"
CACHE_MISS: Final = "miss"
CACHE_MATCH: Final = "match"
CACHE_MISMATCH: Final = "mismatch"
# agent.run.duration buckets, seconds: an agent task runs from a fraction of a second to an hour.
RUN_DURATION_BUCKETS: Final = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
# agent.run.steps buckets, provider calls per run: one call to a long agent loop.
RUN_STEPS_BUCKETS: Final = (1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50, 100, 200)
# otel_sampling.evaluation.score buckets: scores in [0, 1], one bucket per tenth.
EVALUATION_SCORE_BUCKETS: Final = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)

# ---------------------------------------------------------------- environment variables
ENV_POLICY: Final = "OTEL_SAMPLING_POLICY"
ENV_LABEL_VALUE_LIMIT: Final = "OTEL_SAMPLING_LABEL_VALUE_LIMIT"
ENV_ATTRIBUTE_MAX_LENGTH: Final = "OTEL_SAMPLING_ATTRIBUTE_MAX_LENGTH"
ENV_CAPTURE_MESSAGE_CONTENT: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"  # GenAI util convention
CAPTURE_NO_CONTENT: Final = "NO_CONTENT"
CAPTURE_SPAN_ONLY: Final = "SPAN_ONLY"
CAPTURE_EVENT_ONLY: Final = "EVENT_ONLY"
CAPTURE_SPAN_AND_EVENT: Final = "SPAN_AND_EVENT"
CAPTURE_MODES: Final = (CAPTURE_NO_CONTENT, CAPTURE_SPAN_ONLY, CAPTURE_EVENT_ONLY, CAPTURE_SPAN_AND_EVENT)

# ---------------------------------------------------------------- MCP sampling in depth: violations, stalls, grants
# Span events and their attributes (ours): violations, stalls, grants; request identity.
EVENT_SAMPLING_VIOLATION: Final = "otel_sampling.sampling.violation"  # one per violation, on the request's span
EVENT_SAMPLING_STALL: Final = "otel_sampling.sampling.stall"  # the request passed the stall threshold
EVENT_SAMPLING_GRANT: Final = "otel_sampling.sampling.grant"  # record_grant(), on the current span
SPAN_SAMPLING_GRANT: Final = "otel_sampling.sampling.grant"  # INTERNAL span for a grant recorded outside any span
SAMPLING_FINGERPRINT: Final = "otel_sampling.sampling.request.fingerprint"  # hash of the request, no content
# the earlier request a violation refers to
SAMPLING_EARLIER_TRACE_ID: Final = "otel_sampling.sampling.earlier.trace_id"
SAMPLING_EARLIER_SPAN_ID: Final = "otel_sampling.sampling.earlier.span_id"
SAMPLING_PENDING_SECONDS: Final = "otel_sampling.sampling.pending.seconds"  # on a stall event, seconds pending
SAMPLING_GRANT_ADD_USD: Final = "otel_sampling.sampling.grant.add_usd"
SAMPLING_GRANT_EXPIRES_AT: Final = "otel_sampling.sampling.grant.expires_at"  # ISO 8601
SAMPLING_GRANT_GRANTED_BY: Final = "otel_sampling.sampling.grant.granted_by"  # span event only, never a label
TRANSPORT_PIPE: Final = "pipe"  # network.transport for stdio
TRANSPORT_TCP: Final = "tcp"  # network.transport for streamable HTTP / SSE
ERROR_CODE_USER_REJECTED: Final = -1  # MCP spec 2025-11-25 client/sampling: user rejected
# Policy refusals (policy.denied, policy.budget_exhausted, model.unavailable from sampling_error()):
# MCP 2026-07-28 (basic/index.mdx, "Error Codes") leaves -32000..-32019 to legacy codes new
# implementations SHOULD NOT use and reserves -32020..-32099 for codes the specification defines; a
# code for another purpose SHOULD lie outside JSON-RPC's reserved -32768..-32000. The default does;
# OTEL_SAMPLING_POLICY_REFUSAL_CODE names another.
ERROR_CODE_POLICY_REFUSAL: Final = -31003
ERROR_CODE_POLICY_REFUSAL_LEGACY: Final = -32003  # what hosts sent before; still read as a policy refusal

ENV_IDENTITY_MAX_ENTRIES: Final = "OTEL_SAMPLING_IDENTITY_MAX_ENTRIES"
ENV_IDENTITY_TTL_SECONDS: Final = "OTEL_SAMPLING_IDENTITY_TTL_SECONDS"
ENV_MAX_PENDING: Final = "OTEL_SAMPLING_MAX_PENDING"
ENV_UNANSWERED_AFTER_SECONDS: Final = "OTEL_SAMPLING_UNANSWERED_AFTER_SECONDS"
ENV_FINGERPRINT_KEY: Final = "OTEL_SAMPLING_FINGERPRINT_KEY"  # shared HMAC key of the request fingerprint
# "true": the spans of the mcp SDK, fastmcp and anthropic's native tracing kept to our caps
ENV_GUARD_FOREIGN_SPANS: Final = "OTEL_SAMPLING_GUARD_FOREIGN_SPANS"
ENV_OMIT_FINGERPRINT: Final = "OTEL_SAMPLING_OMIT_FINGERPRINT"  # "true": no fingerprint attribute on spans
ENV_DISCLOSURE_TRACKED: Final = "OTEL_SAMPLING_DISCLOSURE_TRACKED"  # "true": disclosure tracked from the start
ENV_OMIT_PROVIDER_TRACE_CONTEXT: Final = "OTEL_SAMPLING_OMIT_PROVIDER_TRACE_CONTEXT"  # "true": none of ours on openai
ENV_POLICY_REFUSAL_CODE: Final = "OTEL_SAMPLING_POLICY_REFUSAL_CODE"  # the code of a policy refusal
ENV_PRICE_SOURCE: Final = "OTEL_SAMPLING_PRICE_SOURCE"  # PRICE_SOURCE_GENAI_PRICES (default) | PRICE_SOURCE_NONE
PRICE_SOURCE_NONE: Final = "none"  # no price source: only the policy's [prices] table prices calls
ENV_SERVED_MODEL_HEADERS: Final = "OTEL_SAMPLING_SERVED_MODEL_HEADERS"  # headers naming a gateway's served model

# ---------------------------------------------------------------- what the fallback breaks (tool calls, truncation)
# Per provider call, from its request (the tools offered, the structured output asked for) and its
# answer (the tool calls the model made, the text it answered with, its finish reason); counts and
# closed value sets only, never arguments or text (docs/telemetry.md, "What the fallback breaks").
METRIC_CLIENT_TOOL_CALLS: Final = "otel_sampling.client.tool_calls"  # tool calls a model made
METRIC_CLIENT_TOOL_CALL_ERRORS: Final = "otel_sampling.client.tool_call.errors"  # by TOOL_CALL_ERROR
METRIC_CLIENT_STRUCTURED_OUTPUT_REQUESTS: Final = "otel_sampling.client.structured_output.requests"
METRIC_CLIENT_STRUCTURED_OUTPUT_FAILURES: Final = "otel_sampling.client.structured_output.failures"
METRIC_CLIENT_TRUNCATIONS: Final = "otel_sampling.client.truncations"  # by TRUNCATION_KIND
METRIC_CLIENT_CONTEXT_UTILIZATION: Final = "otel_sampling.client.context.utilization"  # histogram, unit 1
METRIC_HOST_TOOL_CALLS: Final = "otel_sampling.host.tool_calls"  # MCP tools/call the host sent, by outcome
UNIT_TOOL_CALL: Final = "{tool_call}"
TOOL_CALL_ERROR: Final = "otel_sampling.tool_call.error"
TOOL_CALL_ERROR_NOT_OFFERED: Final = "not_offered"  # a tool the request did not offer
TOOL_CALL_ERROR_INVALID_ARGUMENTS: Final = "invalid_arguments"  # not JSON, or not the offered input schema
TOOL_CALL_ERRORS: Final = (TOOL_CALL_ERROR_NOT_OFFERED, TOOL_CALL_ERROR_INVALID_ARGUMENTS)
STRUCTURED_OUTPUT_FAILURE: Final = "otel_sampling.structured_output.failure"
STRUCTURED_OUTPUT_INVALID_JSON: Final = "invalid_json"  # the answer does not parse as JSON
STRUCTURED_OUTPUT_SCHEMA_MISMATCH: Final = "schema_mismatch"  # JSON, not the requested schema
STRUCTURED_OUTPUT_FAILURES: Final = (STRUCTURED_OUTPUT_INVALID_JSON, STRUCTURED_OUTPUT_SCHEMA_MISMATCH)
TRUNCATION_KIND: Final = "otel_sampling.truncation.kind"
TRUNCATION_MAX_TOKENS: Final = "max_tokens"  # finish reason length / max_tokens: the output limit cut it
TRUNCATION_CONTEXT_LENGTH: Final = "context_length"  # the input did not fit the served model's window
TRUNCATION_KINDS: Final = (TRUNCATION_MAX_TOKENS, TRUNCATION_CONTEXT_LENGTH)
TOOL_CALL_OUTCOME: Final = "otel_sampling.tool_call.outcome"
TOOL_CALL_OUTCOME_OK: Final = "ok"  # a result without isError
TOOL_CALL_OUTCOME_IS_ERROR: Final = "is_error"  # a result with isError: true
TOOL_CALL_OUTCOME_ERROR_FRAME: Final = "error_frame"  # a JSON-RPC error answer (-32602 ...)
TOOL_CALL_OUTCOMES: Final = (TOOL_CALL_OUTCOME_OK, TOOL_CALL_OUTCOME_IS_ERROR, TOOL_CALL_OUTCOME_ERROR_FRAME)
# On the chat span: counts and closed values (set only where the call offered tools, asked for
# structured output, was cut, or the served model's window is known).
TOOL_CALL_COUNT: Final = "otel_sampling.tool_call.count"
TOOL_CALL_NOT_OFFERED_COUNT: Final = "otel_sampling.tool_call.not_offered.count"
TOOL_CALL_INVALID_ARGUMENTS_COUNT: Final = "otel_sampling.tool_call.invalid_arguments.count"
STRUCTURED_OUTPUT_REQUESTED: Final = "otel_sampling.structured_output.requested"  # bool
CONTEXT_UTILIZATION: Final = "otel_sampling.context.utilization"  # input tokens / context window
# otel_sampling.client.context.utilization buckets: a share of the window, finer near full.
CONTEXT_UTILIZATION_BUCKETS: Final = (0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0)
