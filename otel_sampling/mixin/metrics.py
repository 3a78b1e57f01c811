"""The Prometheus names of every metric and label the mixin queries, in one place.

Each name is derived from ``otel_sampling.names`` through ``otel_sampling.mixin.prometheus_names`` (the
Python Prometheus exporter's translation), never typed by hand, so a renamed instrument or
attribute changes every dashboard and rule at the next ``make generate``.
"""

from __future__ import annotations

from otel_sampling import names
from otel_sampling.mixin.prometheus_names import SCOPE_NAME_LABEL, label_name, metric_name

# ---------------------------------------------------------------- series (counters end in _total)
SAMPLING_REQUESTS = metric_name(names.METRIC_SAMPLING_REQUESTS, names.UNIT_REQUEST, counter=True)
SAMPLING_DURATION = metric_name(names.METRIC_SAMPLING_DURATION, names.UNIT_SECONDS)  # histogram
SAMPLING_IN_FLIGHT = metric_name(names.METRIC_SAMPLING_IN_FLIGHT, names.UNIT_REQUEST)
SAMPLING_STALLS = metric_name(names.METRIC_SAMPLING_STALLS, names.UNIT_REQUEST, counter=True)
SAMPLING_VIOLATIONS = metric_name(names.METRIC_SAMPLING_VIOLATIONS, names.UNIT_VIOLATION, counter=True)
SAMPLING_GRANTS = metric_name(names.METRIC_SAMPLING_GRANTS, names.UNIT_GRANT, counter=True)
SAMPLING_GRANTED_USD = metric_name(names.METRIC_SAMPLING_GRANTED_USD, names.UNIT_USD, counter=True)
SAMPLING_SERVER_REQUESTS = metric_name(names.METRIC_SAMPLING_SERVER_REQUESTS, names.UNIT_REQUEST, counter=True)
OPERATION_DURATION = metric_name(names.METRIC_GEN_AI_OPERATION_DURATION, names.UNIT_SECONDS)  # histogram
TOKEN_USAGE = metric_name(names.METRIC_GEN_AI_TOKEN_USAGE, names.UNIT_TOKEN)  # histogram
# semantic-conventions-genai #521 / #374 names (otel_sampling.records.provider_call): the host emits them
# under OTEL_SEMCONV_STABILITY_OPT_IN; MixinConfig.gen_ai_semconv picks which the dashboards read.
INFERENCE_DURATION = metric_name(names.METRIC_GEN_AI_INFERENCE_DURATION, names.UNIT_SECONDS)  # histogram
USAGE_INPUT = metric_name(names.METRIC_GEN_AI_USAGE_INPUT_TOKENS, names.UNIT_TOKEN, counter=True)
USAGE_OUTPUT = metric_name(names.METRIC_GEN_AI_USAGE_OUTPUT_TOKENS, names.UNIT_TOKEN, counter=True)
USAGE_CACHE_READ = metric_name(names.METRIC_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, names.UNIT_TOKEN, counter=True)
USAGE_CACHE_WRITE = metric_name(names.METRIC_GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS, names.UNIT_TOKEN, counter=True)
USAGE_REASONING = metric_name(names.METRIC_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS, names.UNIT_TOKEN, counter=True)
# ours of the prompt-cache read share, where the host emits v1.41's names only (never beside the two above)
SHARE_INPUT = metric_name(names.METRIC_CLIENT_USAGE_INPUT_TOKENS, names.UNIT_TOKEN, counter=True)
SHARE_CACHE_READ = metric_name(names.METRIC_CLIENT_USAGE_CACHE_READ_INPUT_TOKENS, names.UNIT_TOKEN, counter=True)
PROVIDER_COST = metric_name(names.METRIC_CLIENT_COST, names.UNIT_USD, counter=True)
DEGRADATION_ACTIVE = metric_name(names.METRIC_DEGRADATION_ACTIVE, names.UNIT_ONE)
DEGRADATION_EXPIRED = metric_name(names.METRIC_DEGRADATION_EXPIRED, names.UNIT_ONE)
DEGRADATION_TRANSITIONS = metric_name(names.METRIC_DEGRADATION_TRANSITIONS, names.UNIT_TRANSITION, counter=True)
SILENT_INCIDENTS = metric_name(names.METRIC_SILENT_INCIDENTS, names.UNIT_INCIDENT, counter=True)
AGENT_RUNS = metric_name(names.METRIC_AGENT_RUNS, names.UNIT_RUN, counter=True)
AGENT_RUN_COST = metric_name(names.METRIC_AGENT_RUN_COST, names.UNIT_USD, counter=True)
AGENT_RUN_DURATION = metric_name(names.METRIC_AGENT_RUN_DURATION, names.UNIT_SECONDS)  # histogram
AGENT_RUN_STEPS = metric_name(names.METRIC_AGENT_RUN_STEPS, names.UNIT_CALL)  # histogram
AGENT_RUN_TOKENS = metric_name(names.METRIC_AGENT_RUN_TOKENS, names.UNIT_TOKEN)  # histogram
EVALUATION_SCORE = metric_name(names.METRIC_EVALUATION_SCORE, names.UNIT_ONE)  # histogram
CACHE_LOOKUPS = metric_name(names.METRIC_CACHE_LOOKUPS, names.UNIT_LOOKUP, counter=True)
DRILLS = metric_name(names.METRIC_DRILLS, names.UNIT_DRILL, counter=True)
# what the fallback breaks (otel_sampling.records.provider_call)
TOOL_CALLS = metric_name(names.METRIC_CLIENT_TOOL_CALLS, names.UNIT_TOOL_CALL, counter=True)
TOOL_CALL_ERRORS = metric_name(names.METRIC_CLIENT_TOOL_CALL_ERRORS, names.UNIT_TOOL_CALL, counter=True)
STRUCTURED_REQUESTS = metric_name(names.METRIC_CLIENT_STRUCTURED_OUTPUT_REQUESTS, names.UNIT_CALL, counter=True)
STRUCTURED_FAILURES = metric_name(names.METRIC_CLIENT_STRUCTURED_OUTPUT_FAILURES, names.UNIT_CALL, counter=True)
TRUNCATIONS = metric_name(names.METRIC_CLIENT_TRUNCATIONS, names.UNIT_CALL, counter=True)
CONTEXT_UTILIZATION = metric_name(names.METRIC_CLIENT_CONTEXT_UTILIZATION, names.UNIT_ONE)  # histogram
HOST_TOOL_CALLS = metric_name(names.METRIC_HOST_TOOL_CALLS, names.UNIT_TOOL_CALL, counter=True)
REPEATED_TOOL_CALLS = metric_name(names.METRIC_AGENT_RUN_REPEATED_TOOL_CALLS, names.UNIT_CALL, counter=True)

# ---------------------------------------------------------------- labels
SERVER = label_name(names.MCP_SERVER_NAME)
PATH = label_name(names.SAMPLING_PATH)
ENDING = label_name(names.SAMPLING_ENDING)
SUBSTITUTION = label_name(names.SAMPLING_SUBSTITUTION)
MODE = label_name(names.DEGRADATION_MODE)
SCOPE_REQUESTED = label_name(names.SAMPLING_INCLUDE_CONTEXT_REQUESTED)
SCOPE_GRANTED = label_name(names.SAMPLING_INCLUDE_CONTEXT_GRANTED)
RESPONSE_MODEL = label_name(names.GEN_AI_RESPONSE_MODEL)
REQUEST_MODEL = label_name(names.GEN_AI_REQUEST_MODEL)
PROVIDER = label_name(names.GEN_AI_PROVIDER_NAME)
ERROR_TYPE = label_name(names.ERROR_TYPE)
TOKEN_TYPE = label_name(names.GEN_AI_TOKEN_TYPE)
VIOLATION_KIND = label_name(names.SAMPLING_VIOLATION_KIND)
COMPONENT = label_name(names.DEGRADATION_COMPONENT)
REASON = label_name(names.DEGRADATION_REASON)
DIRECTION = label_name(names.DEGRADATION_DIRECTION)
RUN_NAME = label_name(names.AGENT_RUN_NAME)
RUN_OUTCOME = label_name(names.AGENT_RUN_OUTCOME)
DISCLOSURE_TRACKED = label_name(names.DISCLOSURE_TRACKED)
EVALUATION_NAME = label_name(names.GEN_AI_EVALUATION_NAME)
CACHE_RESULT = label_name(names.CACHE_LOOKUP_RESULT)
CACHE_PROVENANCE_MODE = label_name(names.CACHE_PROVENANCE_MODE)
CACHE_PROVENANCE_MATCH = label_name(names.CACHE_PROVENANCE_MATCH)
DRILL_NAME = label_name(names.DRILL_NAME)
DRILL_OUTCOME = label_name(names.DRILL_OUTCOME)
TOOL_CALL_ERROR = label_name(names.TOOL_CALL_ERROR)
STRUCTURED_FAILURE = label_name(names.STRUCTURED_OUTPUT_FAILURE)
TRUNCATION_KIND = label_name(names.TRUNCATION_KIND)
TOOL_CALL_OUTCOME = label_name(names.TOOL_CALL_OUTCOME)
TOOL_SIDE_EFFECT = label_name(names.TOOL_SIDE_EFFECT)
JOB = "job"  # from the scrape configuration, not from the package
SCOPE_NAME = SCOPE_NAME_LABEL  # from the exporter: the instrumentation scope of the series
LE = "le"  # histogram bucket bound (Prometheus)

HISTOGRAMS = (
    SAMPLING_DURATION,
    OPERATION_DURATION,
    INFERENCE_DURATION,
    TOKEN_USAGE,
    EVALUATION_SCORE,
    AGENT_RUN_DURATION,
    AGENT_RUN_STEPS,
    AGENT_RUN_TOKENS,
    CONTEXT_UTILIZATION,
)
GAUGES = (SAMPLING_IN_FLIGHT, DEGRADATION_ACTIVE, DEGRADATION_EXPIRED)
COUNTERS = (
    SAMPLING_REQUESTS,
    SAMPLING_STALLS,
    SAMPLING_VIOLATIONS,
    SAMPLING_GRANTS,
    SAMPLING_GRANTED_USD,
    SAMPLING_SERVER_REQUESTS,
    PROVIDER_COST,
    DEGRADATION_TRANSITIONS,
    SILENT_INCIDENTS,
    AGENT_RUNS,
    AGENT_RUN_COST,
    CACHE_LOOKUPS,
    DRILLS,
    USAGE_INPUT,
    USAGE_OUTPUT,
    USAGE_CACHE_READ,
    USAGE_CACHE_WRITE,
    USAGE_REASONING,
    SHARE_INPUT,
    SHARE_CACHE_READ,
    TOOL_CALLS,
    TOOL_CALL_ERRORS,
    STRUCTURED_REQUESTS,
    STRUCTURED_FAILURES,
    TRUNCATIONS,
    HOST_TOOL_CALLS,
    REPEATED_TOOL_CALLS,
)
# Every raw series a query may name (a histogram is read through its _bucket/_sum/_count series).
SERIES = frozenset(COUNTERS + GAUGES + tuple(h + s for h in HISTOGRAMS for s in ("_bucket", "_sum", "_count")))
