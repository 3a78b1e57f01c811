"""The MCP floor: the least a host-side instrumentation must do to report what otel-sampling reports
per sampling request (mcp 2.x).

A hand-written ``wrapt`` wrapper on the method ours wraps, ``ClientSession.dispatch_input_request``:
for a ``CreateMessageRequest``, one SERVER span ``sampling/createMessage`` (parented from the
``traceparent`` in ``params._meta``) with the same attributes otel-sampling sets on the bench's
requests (same keys, same count: request, server, path, tool, fingerprint at the start; ending,
substitution, mode, granted scope, response and reported model at the end), a link to the span of the last request
with the same fingerprint (a plain dict), the in-flight count kept in process and read by an
observable up-down counter, and the same metric points: ``otel_sampling.sampling.duration`` and
``otel_sampling.sampling.requests`` with the same labels and buckets, and the MCP conventions'
``mcp.server.operation.duration`` (method and protocol version). The fingerprint is the contract's
(:func:`otel_sampling.records.ledger.fingerprint`).

Runs (``install(runs=True)``, the default): like ours, a sampling request's span or an agent's span
(``gen_ai.operation.name`` ``invoke_agent`` or ``invoke_workflow``) whose trace no open run owns
ends a run with it, recording ``agent.runs``, ``agent.run.cost.usd`` and ``agent.run.duration`` (a
span processor that does that and nothing else). ``runs=False`` leaves them out: the difference is
what the implicit-run points cost.

The tool name comes the way ours gets it: on the JSON-RPC path from the one ``ClientSession.call_tool``
in flight on the session, on the 2026-07-28 path from ``Client.call_tool``'s task. No
classification beyond the bench's successful answers, no label bounding, no error handling.
"""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Iterable
from contextvars import ContextVar
from typing import Any

import wrapt
from opentelemetry import metrics, propagate, trace
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import Link, SpanKind

from otel_sampling import names
from otel_sampling.records.ledger import fingerprint

SCOPE = "bench.mcp_floor"
_KEY = os.urandom(32)  # the fingerprint key: per process, as ours without OTEL_SAMPLING_FINGERPRINT_KEY
_tool: ContextVar[str | None] = ContextVar("bench_mcp_floor_tool", default=None)


class _Floor:
    def __init__(self) -> None:
        import mcp_types

        self.request_type = mcp_types.CreateMessageRequest
        self.tracer = trace.get_tracer(SCOPE)
        meter = metrics.get_meter(SCOPE)
        self.duration = meter.create_histogram(
            names.METRIC_SAMPLING_DURATION,
            unit=names.UNIT_SECONDS,
            explicit_bucket_boundaries_advisory=list(names.MCP_DURATION_BUCKETS),
        )
        self.requests = meter.create_counter(names.METRIC_SAMPLING_REQUESTS, unit=names.UNIT_REQUEST)
        self.operation = meter.create_histogram(
            names.METRIC_MCP_SERVER_OPERATION_DURATION,
            unit=names.UNIT_SECONDS,
            explicit_bucket_boundaries_advisory=list(names.MCP_DURATION_BUCKETS),
        )
        self.in_flight: dict[str, int] = {}
        meter.create_observable_up_down_counter(
            names.METRIC_SAMPLING_IN_FLIGHT, [self._observe_in_flight], unit=names.UNIT_REQUEST
        )
        self.seen: dict[str, Any] = {}  # fingerprint -> span context of the last such request
        self.tool_calls: weakref.WeakKeyDictionary[Any, list[str]] = weakref.WeakKeyDictionary()
        self.host_tool_calls = meter.create_counter(names.METRIC_HOST_TOOL_CALLS, unit=names.UNIT_TOOL_CALL)

    def _observe_in_flight(self, options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(n, {names.MCP_SERVER_NAME: server}) for server, n in self.in_flight.items()]

    async def dispatch(self, wrapped: Any, session: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        ctx, request = args
        if not isinstance(request, self.request_type):
            return await wrapped(*args, **kwargs)
        params = request.params
        info, version = session.server_info, session.protocol_version
        server = info.name
        path = names.PATH_MRTR if version == "2026-07-28" else names.PATH_RPC
        hints = [hint.name for hint in params.model_preferences.hints]
        tool = _tool.get()
        if tool is None:
            calls = self.tool_calls.get(session)
            tool = calls[0] if calls and len(calls) == 1 else None
        key = fingerprint(params, _KEY)
        attributes = {
            names.MCP_METHOD_NAME: names.METHOD_SAMPLING,
            names.SAMPLING_PATH: path,
            names.SAMPLING_INCLUDE_CONTEXT_REQUESTED: params.include_context or "none",
            names.SAMPLING_MODEL_HINTS: hints,
            names.GEN_AI_REQUEST_MAX_TOKENS: params.max_tokens,
            names.MCP_PROTOCOL_VERSION: version,
            names.MCP_SERVER_NAME: server,
            names.MCP_SERVER_VERSION: info.version,
            names.SAMPLING_TOOL_NAME: tool,
            names.SAMPLING_FINGERPRINT: key,
        }
        if path == names.PATH_RPC:
            attributes[names.JSONRPC_REQUEST_ID] = str(ctx.request_id)
        meta = ctx.meta
        parent = propagate.extract(meta) if meta and "traceparent" in meta else None
        earlier = self.seen.get(key)
        span = self.tracer.start_span(
            names.SPAN_SAMPLING,
            context=parent,
            kind=SpanKind.SERVER,
            links=[Link(earlier)] if earlier else None,
            attributes=attributes,
        )
        start = time.perf_counter()
        self.in_flight[server] = self.in_flight.get(server, 0) + 1
        with trace.use_span(span, end_on_exit=False):
            result = await wrapped(*args, **kwargs)
        self.in_flight[server] -= 1
        context = trace.set_span_in_context(span)
        ending = names.ENDING_COMPLETED
        substitution = (
            names.SUBSTITUTION_NONE if any(result.model.startswith(h) for h in hints) else names.SUBSTITUTION_UNJUDGED
        )
        elapsed = time.perf_counter() - start
        self.duration.record(elapsed, {names.MCP_SERVER_NAME: server, names.SAMPLING_ENDING: ending}, context=context)
        self.operation.record(
            elapsed,
            {names.MCP_METHOD_NAME: names.METHOD_SAMPLING, names.MCP_PROTOCOL_VERSION: version},
            context=context,
        )
        self.requests.add(
            1,
            {
                names.MCP_SERVER_NAME: server,
                names.SAMPLING_PATH: path,
                names.SAMPLING_ENDING: ending,
                names.SAMPLING_SUBSTITUTION: substitution,
                names.DEGRADATION_MODE: names.MODE_PRIMARY,
                names.SAMPLING_INCLUDE_CONTEXT_REQUESTED: params.include_context or "none",
                names.SAMPLING_INCLUDE_CONTEXT_GRANTED: names.INCLUDE_CONTEXT_UNREPORTED,
                names.GEN_AI_RESPONSE_MODEL: result.model,
            },
            context=context,
        )
        span.set_attributes(
            {
                names.SAMPLING_ENDING: ending,
                names.SAMPLING_SUBSTITUTION: substitution,
                names.DEGRADATION_MODE: names.MODE_PRIMARY,
                names.SAMPLING_INCLUDE_CONTEXT_GRANTED: names.INCLUDE_CONTEXT_UNREPORTED,
                names.GEN_AI_RESPONSE_MODEL: result.model,
                names.SAMPLING_REPORTED_MODEL: result.model,
                names.GEN_AI_RESPONSE_FINISH_REASONS: [result.stop_reason],
            }
        )
        span.end()
        self.seen[key] = span.get_span_context()
        return result

    async def session_call_tool(self, wrapped: Any, session: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        calls = self.tool_calls.setdefault(session, [])
        calls.append(args[0])
        try:
            return await wrapped(*args, **kwargs)
        finally:
            calls.remove(args[0])

    async def client_call_tool(self, wrapped: Any, client: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        token = _tool.set(args[0])
        try:
            result = await wrapped(*args, **kwargs)
        finally:
            _tool.reset(token)
        outcome = names.TOOL_CALL_OUTCOME_IS_ERROR if result.is_error else names.TOOL_CALL_OUTCOME_OK
        self.host_tool_calls.add(1, {names.DEGRADATION_MODE: names.MODE_PRIMARY, names.TOOL_CALL_OUTCOME: outcome})
        return result


class _Runs(SpanProcessor):
    """A sampling request's or an agent's span that no open run owns the trace of ends a run with it."""

    def __init__(self) -> None:
        meter = metrics.get_meter(SCOPE)
        self.runs = meter.create_counter(names.METRIC_AGENT_RUNS, unit=names.UNIT_RUN)
        self.cost = meter.create_counter(names.METRIC_AGENT_RUN_COST, unit=names.UNIT_USD)
        self.duration = meter.create_histogram(
            names.METRIC_AGENT_RUN_DURATION,
            unit=names.UNIT_SECONDS,
            explicit_bucket_boundaries_advisory=list(names.RUN_DURATION_BUCKETS),
        )
        self.steps = meter.create_histogram(
            names.METRIC_AGENT_RUN_STEPS,
            unit=names.UNIT_CALL,
            explicit_bucket_boundaries_advisory=list(names.RUN_STEPS_BUCKETS),
        )
        self.tokens = meter.create_histogram(
            names.METRIC_AGENT_RUN_TOKENS,
            unit=names.UNIT_TOKEN,
            explicit_bucket_boundaries_advisory=list(names.GEN_AI_TOKEN_BUCKETS),
        )
        self.open: dict[int, int] = {}  # trace id -> span id of the run's root

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        operation = (span.attributes or {}).get(names.GEN_AI_OPERATION_NAME)
        starts_a_run = span.name == names.SPAN_SAMPLING or operation in names.AGENT_OPERATIONS
        if starts_a_run and span.context.trace_id not in self.open:
            self.open[span.context.trace_id] = span.context.span_id

    def on_end(self, span: ReadableSpan) -> None:
        context = span.context
        if self.open.get(context.trace_id) != context.span_id:
            return
        del self.open[context.trace_id]
        labels = {
            names.AGENT_RUN_NAME: span.name,
            names.DEGRADATION_MODE: names.MODE_PRIMARY,
            names.AGENT_RUN_OUTCOME: "failed" if span.status.status_code.name == "ERROR" else "completed",
        }
        in_span = trace.set_span_in_context(trace.NonRecordingSpan(context))
        self.runs.add(1, {**labels, names.AGENT_RUN_DISCLOSED: "false"}, context=in_span)
        self.cost.add(0.0, labels, context=in_span)
        self.duration.record((span.end_time - span.start_time) / 1e9, labels, context=in_span)
        self.steps.record(0, labels, context=in_span)  # the bench's callback calls no provider
        self.tokens.record(0, {**labels, names.GEN_AI_TOKEN_TYPE: "input"}, context=in_span)
        self.tokens.record(0, {**labels, names.GEN_AI_TOKEN_TYPE: "output"}, context=in_span)


def install(runs: bool = True) -> None:
    """Wrap mcp 2.x's host-side sampling dispatch (global tracer and meter providers); with ``runs``,
    add the run processor to the global tracer provider."""
    floor = _Floor()
    wrapt.wrap_function_wrapper("mcp.client.session", "ClientSession.dispatch_input_request", floor.dispatch)
    wrapt.wrap_function_wrapper("mcp.client.session", "ClientSession.call_tool", floor.session_call_tool)
    wrapt.wrap_function_wrapper("mcp.client.client", "Client.call_tool", floor.client_call_tool)
    if runs:
        trace.get_tracer_provider().add_span_processor(_Runs())  # type: ignore[attr-defined]
