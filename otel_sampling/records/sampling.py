"""One sampling request, from arrival at the host to its ending: owns its span and metric points.

The MCP wrapper creates a :class:`SamplingRecord`, makes it current while the host's sampling
callback runs (``state.current_request``: each provider call made inside publishes one
:class:`~otel_sampling.rules.verdict.CallSummary` through :meth:`SamplingRecord.on_call`), then ends
it exactly once with the result, the error frame or the exception (one of the ``end_with_*``
methods). At the end the rules decide: :mod:`~otel_sampling.rules.endings` the ending,
:func:`~otel_sampling.rules.verdict.judge_request` the substitution, mode and reasons (once: the
span, the metric points and the request's run all read that one verdict), and
:mod:`~otel_sampling.rules.servers` the violations; the record only gathers their inputs and
writes their verdicts. Every method here is called from a wrapper that already guards against our
own failures; the record itself never raises into the host.

Which model the verdicts use (``docs/telemetry.md``): when provider calls ran inside the callback,
the response model of the last one that did not fail (what the provider served); without them,
the host's ``CreateMessageResult.model`` read as a model id
(:mod:`~otel_sampling.rules.verdict`). The host's report is kept beside it
(``otel_sampling.sampling.reported_model``), and a report no member of which names the provider's model is a
``reported_model_mismatch``.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from otel_sampling import locks, names, state
from otel_sampling.metrics import (
    INT64,
    Instruments,
    clean,
    operation_attributes,
    otlp_int,
    record_operation_duration,
    recorded_in,
)
from otel_sampling.records import run as run_records
from otel_sampling.records.failover import FailedModels
from otel_sampling.records.ledger import record_violation
from otel_sampling.rules import endings, servers, verdict
from otel_sampling.rules.scopes import SERVER as SCOPE_SERVER
from otel_sampling.rules.values import Ending, ProviderCalls
from otel_sampling.rules.verdict import (
    CallSummary,
    CallVerdict,
    Reference,
    RequestFacts,
    RequestVerdict,
    request_run_outcome,
)

if TYPE_CHECKING:
    from otel_sampling.policy import ServerPolicy
    from otel_sampling.records.ledger import Ledger
    from otel_sampling.settings import Settings

logger = logging.getLogger(__name__)
MAX_SERVED_CALLS = 16  # provider calls that served a request, remembered for the compliance boundary
# One lock for every record's short sections (no section takes another record's): a lock per
# request would cost its making and its fork-safety bookkeeping on every request.
_LOCK = locks.new()
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
SESSION_ATTRIBUTE_SETS = 256  # sessions whose shared start attributes are kept made fit (least recent dropped)


class SamplingRecord:
    """Span + metrics of one ``sampling/createMessage`` handled by the host.

    Args:
        instruments: the instrumentor's tracer, meter and label sets.
        server_name: ``serverInfo.name`` of the requesting server, or None when unknown.
        server_key: how the ledger and the identity store keep that server,
            :func:`~otel_sampling.records.ledger.server_key` of the first name it is known by
            (``policy_names``; a hash over a long name: the caller computes it once per session,
            not per request).
        server_label: what the ``mcp.server.name`` label is made of, the stable form of the name
            (:func:`otel_sampling.rules.servers.stable_name`); None: ``server_name``.
        policy_names: the ``[servers."<name>"]`` tables that may cover the server, the first
            present wins (:func:`otel_sampling.rules.servers.known_as`); None: ``server_name``.
        path: ``names.PATH_RPC`` or ``names.PATH_MRTR``.
        request_id: the JSON-RPC id (rpc path only), or None.
        protocol_version: the negotiated MCP protocol version, or None.
        params: the ``CreateMessageRequestParams``.
        parent: the context extracted from ``params._meta`` (None: the ambient context).
        ledger: the instrumentor's identity store and stall watch (None: no identity or stall
            tracking; the violations that need no earlier request are still recorded).
        server_version: ``serverInfo.version``, when known.
        session_id: the transport's MCP session id (streamable HTTP), when there is one.
        transport: ``network.transport`` (``pipe`` for stdio, ``tcp`` for HTTP), when known.
        tool_name: the tool call that triggered the request, when known.

    When the ledger has seen the request's fingerprint before, the span starts with a link to the
    span of that earlier request (span links can only be added at start).
    """

    __slots__ = (
        "_instruments",
        "_span",
        "_start",
        "_server_label",
        "_server_attributes",
        "_server_key",
        "_include_context",
        "_path",
        "_ended",
        "_attached",
        "_calls",
        "_failover",
        "_provider_model",
        "_canary",
        "_last_requested",
        "_provider_fallback",
        "_call_reasons",
        "_named",
        "_policy",
        "_reference",
        "_lock",
        "_outer_run",
        "_served_by",
        "_input_tokens",
        "_output_tokens",
        "_cost_usd",
        "_ledger",
        "_fingerprint",
        "_earlier",
        "_granted",
        "_violations",
        "_tool_name",
        "_run",
        "_operation",
    )

    def __init__(
        self,
        instruments: Instruments,
        *,
        server_name: str | None,
        server_key: str | None,
        path: str,
        request_id: object,
        protocol_version: str | None,
        params: Any,
        parent: otel_context.Context | None,
        ledger: Ledger | None = None,
        server_version: str | None = None,
        session_id: str | None = None,
        transport: str | None = None,
        tool_name: str | None = None,
        server_label: str | None = None,
        policy_names: tuple[str, ...] | None = None,
    ) -> None:
        self._instruments = instruments
        self._start = time.perf_counter()
        self._ended = False
        self._attached: tuple[object, object] | None = None
        self._calls = ProviderCalls()
        self._failover: FailedModels | None = None  # made at the first failed call
        self._provider_model: str | None = None  # response model of the last provider call that did not fail
        self._canary = False  # a provider call inside it, or the callback, ran in a canary block
        self._last_requested: str | None = None  # model the last successful provider call asked for
        self._provider_fallback = False  # the last successful provider call fell back server-side
        self._call_reasons: dict[str, None] = {}  # reasons of the calls inside it, first seen first
        self._lock = _LOCK  # provider calls from many threads and tasks publish into one request
        self._served_by: list[tuple[str, str | None]] = []  # (provider, endpoint host) of the calls that served it
        self._input_tokens = 0
        self._output_tokens = 0
        self._cost_usd = 0.0
        self._server_key = server_key
        self._server_label = instruments.server_label.value(server_label if server_label is not None else server_name)
        self._server_attributes = {names.MCP_SERVER_NAME: self._server_label}  # in_flight, both ways
        self._path = path
        hints = hint_names(params)
        settings = instruments.settings
        policy, policy_name = (
            _server_policy(
                settings, policy_names if policy_names is not None else ((server_name,) if server_name else ())
            )
            if settings.policy.servers
            else (None, None)
        )
        self._policy = policy
        self._reference = (
            Reference(hints, None, None, False, None, None)
            if policy is None
            else Reference(
                hints,
                policy.permitted_models,
                policy.primary_model,
                True,
                f"{SCOPE_SERVER}:{policy_name}",
                policy.primary_effort,
            )
        )
        # The named degradations around it as it starts (none, the common case, asks for nothing).
        self._named = state.active_reasons()
        self._include_context = include_context(params)
        self._ledger = ledger
        self._granted: str | None = None
        self._violations: set[str] = set()
        self._tool_name = tool_name
        # Kept made once only for short strings (what the cache may hold is bounded), else made now.
        cached = (protocol_version is None or (type(protocol_version) is str and len(protocol_version) <= 64)) and (
            transport is None or (type(transport) is str and len(transport) <= 64)
        )
        self._operation = (_operation_attributes if cached else operation_attributes)(protocol_version, transport)
        self._fingerprint, earlier = ledger.recall(params) if ledger is not None else (None, None)
        self._earlier = earlier
        attributes = self._describe(
            params, request_id, protocol_version, server_name, server_version, session_id, transport
        )
        links = (
            [
                Link(
                    SpanContext(
                        earlier.trace_id,
                        earlier.span_id,
                        is_remote=False,
                        trace_flags=_SAMPLED,
                    )
                )
            ]
            if earlier
            else None
        )
        # The attributes at the start, in the one call that starts the span (samplers see them too).
        span = instruments.tracer.start_span(
            names.SPAN_SAMPLING, context=parent, kind=SpanKind.SERVER, links=links, attributes=attributes
        )
        self._span = span
        try:  # last, so that a record whose start failed was never counted in flight
            instruments.sampling_in_flight.add(1, self._server_attributes)
        except BaseException:
            span.end()
            raise
        self._run = _own_run(span, self._named)  # its own run when no run owns it (records/run.py)
        # Where the costs and served models of the calls inside it go: its own run, else the run owning it.
        self._outer_run = self._run or _owning_run(span)
        if ledger is not None:
            try:  # the record is live now: our bookkeeping must not lose it
                ledger.pending.add(self)
                if self._earlier is not None:
                    for kind in servers.violations_at_start(self._earlier, self._server_key, self._include_context):
                        self._violate(kind)
            except Exception:
                logger.debug("otel-sampling: could not track a sampling request", exc_info=True)

    def _describe(
        self,
        params: Any,
        request_id: object,
        protocol_version: str | None,
        server_name: str | None,
        server_version: str | None,
        session_id: str | None,
        transport: str | None,
    ) -> dict[str, Any]:
        """The span's attributes known at the start."""
        settings = self._instruments.settings
        max_length = settings.attribute_max_length
        path = self._path
        attributes = start_attributes(params, path, self._reference.hints, max_length)
        shared = (protocol_version, server_name, server_version, session_id, transport)
        # Kept made fit when each is a string that fits (what a cache may hold is bounded), else made now.
        fits = True
        for value in shared:
            if value is not None and (type(value) is not str or len(value) > max_length):
                fits = False
                break
        attributes.update((_session_attributes if fits else _session_attributes.__wrapped__)(*shared, max_length))
        _put_facts(
            attributes,
            max_length,
            (
                (names.SAMPLING_TOOL_NAME, self._tool_name),
                (names.SAMPLING_FINGERPRINT, None if settings.omit_fingerprint else self._fingerprint),
                (names.POLICY_SCOPE, self._reference.scope),  # the server table that judges it, if any
                (  # a JSON-RPC id: a string or an int
                    names.JSONRPC_REQUEST_ID,
                    str(request_id) if request_id is not None and path == names.PATH_RPC else None,
                ),
            ),
        )
        return attributes

    def _violate(self, kind: str) -> None:
        """Record violation ``kind`` once for this request."""
        if kind in self._violations:
            return
        self._violations.add(kind)
        earlier = self._earlier if kind in _IDENTITY_VIOLATIONS else None
        record_violation(self._instruments, self._span, kind, self._server_label, earlier)

    # ------------------------------------------------------------------ while the callback runs
    def activate(self) -> None:
        """Make this record and its span current (call :meth:`deactivate` in the same task)."""
        ctx = trace.set_span_in_context(self._span)
        self._attached = (otel_context.attach(ctx), state.current_request.set(self))

    def deactivate(self) -> None:
        if self._attached is not None:
            otel_token, record_token = self._attached
            self._attached = None
            state.current_request.reset(record_token)  # type: ignore[arg-type]
            otel_context.detach(otel_token)  # type: ignore[arg-type]

    def on_call(self, call: CallSummary) -> CallVerdict:
        """A provider call started inside the callback ended: fold its summary into this request
        (under one lock: calls from many threads and tasks count exactly), pass its cost and served
        model on to the run, and return its verdict, judged against this request's hints and policy.
        A call that outlives the request (a stream) is judged, but no longer counted here."""
        failed = call.ending.error_type is not None
        with self._lock:  # one section: a call is counted with its reasons, or not at all
            if self._ended:
                judged = verdict.judge_call(call, self._reference, self._failed_over())
            else:
                self._calls = self._calls.after(call.ending)
                self._input_tokens += call.usage.input_tokens or 0
                self._output_tokens += call.usage.output_tokens or 0
                if call.usd is not None:
                    self._cost_usd += call.usd
                if failed and self._failover is None:
                    self._failover = FailedModels()
                if self._failover is not None:  # a success with no failure standing is no failover
                    self._failover.observe(call.requested, failed)
                if not failed:
                    self._provider_model = call.served
                    self._last_requested = call.requested
                    self._provider_fallback = call.provider_fallback
                    if state.canary.get():
                        self._canary = True
                    if len(self._served_by) < MAX_SERVED_CALLS:
                        self._served_by.append((call.provider, call.address))
                judged = verdict.judge_call(call, self._reference, self._failed_over())
                self._call_reasons.update(dict.fromkeys(judged.reasons))
        outer = self._outer_run
        if outer is not None:
            outer.absorb(call)
        return judged

    def _failed_over(self) -> bool:
        return self._failover is not None and self._failover.failed_over

    def note_canary(self) -> None:
        """The host entered ``otel_sampling.canary()`` while this request's callback runs."""
        self._canary = True

    def grant_context(self, scope: str) -> None:
        """The host granted ``includeContext`` ``scope`` (one of ``names.INCLUDE_CONTEXT_VALUES``);
        a scope above the server's policy ``context_ceiling`` is a ``context_above_ceiling``
        violation. The last grant before the request ends is the one recorded."""
        if self._ended:
            return
        self._granted = scope
        policy = self._policy
        ceiling = policy.context_ceiling if policy is not None else None
        if ceiling is not None and servers.wider(scope, ceiling):
            self._violate(names.VIOLATION_CONTEXT_ABOVE_CEILING)

    def mark_stalled(self, pending_seconds: float) -> None:
        """Called by the stall watchdog (another thread) once the request passed the threshold."""
        if self._ended:
            return
        self._instruments.sampling_stalls.add(1, self._server_attributes, context=recorded_in(self._span))
        if self._span.is_recording():
            max_length = self._instruments.settings.attribute_max_length
            attributes: dict[str, Any] = {
                names.MCP_SERVER_NAME: self._server_label,
                names.SAMPLING_PENDING_SECONDS: round(pending_seconds, 3),
            }
            if self._tool_name:
                attributes[names.SAMPLING_TOOL_NAME] = clean(self._tool_name, max_length)
            self._span.add_event(names.EVENT_SAMPLING_STALL, attributes)

    # ------------------------------------------------------------------ endings
    # Each ending has a fallback for when classifying it fails (a broken ending rule, a hostile
    # value): the record still ends, so its span ends and in-flight goes back down.
    def end_with_result(self, model: object, stop_reason: object) -> None:
        """The callback returned a ``CreateMessageResult`` (or ``...WithTools``)."""
        ending = endings.or_fallback(endings.from_result, endings.COMPLETED, stop_reason)
        self._end(ending, model if isinstance(model, str) else None, stop_reason, result=True)

    def end_with_error_frame(self, code: object, data: object, message: object = None) -> None:
        """The callback returned ``ErrorData`` (or a frame mcp reads as one)."""
        settings = self._instruments.settings
        ending = endings.or_fallback(
            endings.from_error_frame,
            endings.failed_frame(code),
            code,
            data,
            message,
            settings.policy.ending_rules,
            settings.policy_refusal_code,
        )
        self._end(
            ending, None, None, generic=endings.is_generic_frame(code, ending), status_code=endings.status_code(code)
        )

    def end_with_exception(self, exc: BaseException, cancel_reason: str | None) -> None:
        """The callback raised ``exc``; ``cancel_reason`` is the peer's cancel reason, if any."""
        if endings.is_cancellation(exc):
            self.end_with_cancellation(cancel_reason)
        else:
            settings = self._instruments.settings
            ending = endings.or_fallback(
                endings.from_exception, endings.FAILED, exc, settings.policy.ending_rules, settings.policy_refusal_code
            )
            self._end(
                ending,
                None,
                None,
                cancel_reason,
                generic=ending.ending == names.ENDING_ERROR,
                status_code=endings.status_code(endings.frame_code(exc)),
            )  # a raised MCPError's frame

    def end_with_cancellation(self, cancel_reason: str | None) -> None:
        """The request was cancelled (by the peer, with ``cancel_reason``, or by the host)."""
        self._end(
            endings.or_fallback(endings.from_cancellation, endings.CANCELLED, cancel_reason), None, None, cancel_reason
        )

    def _end(
        self,
        told: Ending,
        reported: str | None,
        stop_reason: Any,
        cancel_reason: str | None = None,
        *,
        result: bool = False,
        generic: bool = False,
        status_code: str | None = None,
    ) -> None:
        """End the request once; ``status_code`` is ``rpc.response.status_code``, the code of the error
        frame the host answered with (None: no frame)."""
        if self._ended:
            return
        if self._ledger is not None:
            self._ledger.pending.remove(self)  # first: no stall report once the request has ended
        with self._lock:  # from here on the calls' summaries are read, no longer written
            self._ended = True
        ending = endings.or_fallback(
            endings.from_what_happened, told, endings.Happened(told, result, generic, self._calls)
        )
        served, mismatch = self._served(reported) if result else (None, False)
        elapsed = time.perf_counter() - self._start  # the request's duration, its run's too
        now = state.around()
        try:
            judged = self._verdict(ending, served, now)
        except Exception:  # the ending is still recorded, without a verdict of its own
            logger.debug("otel-sampling: could not judge a sampling request", exc_info=True)
            judged = RequestVerdict(names.SUBSTITUTION_UNJUDGED, names.MODE_PRIMARY, ())

        context: Context | None = None  # the points of the request and of its own run are recorded in it
        try:
            try:
                self._track(ending.ending, judged.substitution, mismatch)
            except Exception:  # identity and violations are extras: the ending is still recorded
                logger.debug("otel-sampling: could not track a sampling request's ending", exc_info=True)
            context = recorded_in(self._span)
            self._record_metrics(ending.ending, judged, served, now.drill, context, elapsed)
            if ending.error_type is None and status_code is None:  # the common ending: no label to bound
                self._instruments.mcp_server_duration.record(elapsed, self._operation, context=context)
            else:
                record_operation_duration(
                    self._instruments.mcp_server_duration,
                    elapsed,
                    self._operation,
                    ending.error_type,
                    status_code,
                    self._instruments.error_type_label,
                    context,
                )
        finally:  # the span ends even when a metric call fails
            try:
                self._end_span(ending, judged, served, reported, stop_reason, cancel_reason, status_code)
            finally:
                self._end_run(ending.ending, judged, context, elapsed)

    def _verdict(self, ending: Ending, served: str | None, now: state.Around) -> RequestVerdict:
        """The request's one verdict (:func:`~otel_sampling.rules.verdict.judge_request`), from what
        the calls inside it published (no call counts here once ``_ended`` is set)."""
        named, around = self._named, now.reasons
        facts = RequestFacts(  # positional, in field order (one built per request: no keyword binding)
            served,
            self._last_requested if self._calls.produced is not None else None,  # requested
            ending.error_type is not None,  # failed
            self._failed_over(),
            self._canary or now.canary,  # canary
            self._provider_fallback,
            tuple(self._call_reasons),
            tuple(dict.fromkeys((*named, *around))) if named or around else (),  # named: distinct, first seen first
        )
        return verdict.judge_request(facts, self._reference)

    def _end_run(self, ending: str, judged: RequestVerdict, context: Context | None, elapsed: float) -> None:
        """End the request's own run, if it is one, with the outcome of its ending; else tell the
        run that owns it how it ended (an agent span's run ends with that outcome)."""
        own, self._run = self._run, None
        if own is None:
            outer = self._outer_run
            if outer is not None:
                try:
                    outer.note_request(request_run_outcome(ending))
                except Exception:
                    logger.debug("otel-sampling: could not tell a run how a request ended", exc_info=True)
            return
        try:
            run_records.end_request_run(
                own,
                request_run_outcome(ending),
                judged.reasons,
                judged.substitution == names.SUBSTITUTION_OUTSIDE_POLICY,
                elapsed,
                self._span.get_span_context(),
                context,
            )
        except Exception:
            logger.debug("otel-sampling: could not end a sampling request's run", exc_info=True)

    def _served(self, reported: str | None) -> tuple[str | None, bool]:
        """The normalised name of the model that served a result: the provider's, when a provider call
        inside the callback did not fail and named its model; None when every call failed; else the
        host's report, when it says which model served (never a composite's list of candidates). And
        whether the host's report names another model than the provider served."""
        try:
            calls = self._calls
            return verdict.served_by(
                calls.produced is not None, bool(calls.ended) and calls.produced is None, self._provider_model, reported
            )
        except Exception:  # a name the rules cannot read: judged as unknown
            logger.debug("otel-sampling: could not read a sampling request's served model", exc_info=True)
            return None, False

    def _track(self, ending: str, judged: str, mismatch: bool) -> None:
        """Violations visible at the end, then remember this request for the ones after it."""
        if judged == names.SUBSTITUTION_OUTSIDE_POLICY:
            self._violate(names.VIOLATION_MODEL_OUTSIDE_POLICY)
        if mismatch:
            self._violate(names.VIOLATION_REPORTED_MODEL_MISMATCH)
        policy = self._policy
        if (
            policy is not None
            and self._served_by
            and servers.crossed_boundary(
                self._served_by,
                policy.permitted_providers,
                policy.permitted_regions,
                self._instruments.settings.policy.region_of,
            )
        ):
            self._violate(names.VIOLATION_BOUNDARY_CROSSED)
        ledger = self._ledger
        if ledger is None:
            return
        earlier = self._earlier
        if earlier is not None:
            granted_since = False
            if ledger.grants_noted:  # no grant ever noted (the common case): no decision to read
                before = earlier.decision_for(self._server_key)
                granted_since = (
                    before is not None
                    and before.budget_denied
                    and ledger.granted_since(self._server_key, before.decided_at)
                )
            for kind in servers.violations_at_end(earlier, self._server_key, ending, self._granted, granted_since):
                self._violate(kind)
        ledger.remember(
            self._fingerprint,
            server=self._server_key,
            ending=ending,
            requested=self._include_context,
            granted=self._granted,
            span_context=self._span.get_span_context(),
            earlier=earlier,
        )

    def _record_metrics(
        self,
        ending: str,
        judged: RequestVerdict,
        served: str | None,
        drill: dict[str, str],
        context: Context,
        elapsed: float,
    ) -> None:
        instruments = self._instruments
        instruments.sampling_in_flight.add(-1, self._server_attributes)  # as added: no drill label
        bounded = {names.GEN_AI_RESPONSE_MODEL: instruments.model_label.value(served)}
        if judged.reasons:
            bounded[names.DEGRADATION_REASON] = state.api_instruments().reason_label.value(judged.reasons[0])
        instruments.sampling_duration.record(
            elapsed,
            {names.MCP_SERVER_NAME: self._server_label, names.SAMPLING_ENDING: ending, **drill},
            context=context,
        )
        instruments.sampling_requests.add(
            1,
            {
                names.MCP_SERVER_NAME: self._server_label,
                names.SAMPLING_PATH: self._path,
                names.SAMPLING_ENDING: ending,
                names.SAMPLING_SUBSTITUTION: judged.substitution,
                names.DEGRADATION_MODE: judged.mode,
                names.SAMPLING_INCLUDE_CONTEXT_REQUESTED: _context_label(self._include_context),
                names.SAMPLING_INCLUDE_CONTEXT_GRANTED: self._granted or names.INCLUDE_CONTEXT_UNREPORTED,
                **bounded,
                **drill,
            },
            context=context,
        )

    def _end_span(
        self,
        ending: Ending,
        judged: RequestVerdict,
        served: str | None,
        reported: str | None,
        stop_reason: Any,
        cancel_reason: str | None,
        status_code: str | None,
    ) -> None:
        instruments = self._instruments
        span = self._span
        try:
            if span.is_recording():
                max_length = instruments.settings.attribute_max_length
                attributes: dict[str, Any] = {
                    names.SAMPLING_ENDING: ending.ending,
                    names.SAMPLING_SUBSTITUTION: judged.substitution,
                    names.DEGRADATION_MODE: judged.mode,
                    names.SAMPLING_INCLUDE_CONTEXT_GRANTED: self._granted or names.INCLUDE_CONTEXT_UNREPORTED,
                }
                outside = (
                    (names.DEGRADATION_REASON, judged.reasons),
                    (names.SAMPLING_REPORTED_MODEL, reported),
                    (names.SAMPLING_CANCEL_REASON, cancel_reason),
                    (names.SAMPLING_PROVIDER_MODEL, self._provider_model),
                )
                add_result_attributes(attributes, ending, served, stop_reason, max_length, outside)
                if status_code is not None:
                    attributes[names.RPC_RESPONSE_STATUS_CODE] = status_code
                if self._calls.ended:
                    attributes[names.SAMPLING_PROVIDER_CALLS] = self._calls.ended
                    for key, tokens in (
                        (names.GEN_AI_USAGE_INPUT_TOKENS, self._input_tokens),
                        (names.GEN_AI_USAGE_OUTPUT_TOKENS, self._output_tokens),
                    ):
                        if tokens in INT64:  # summed ints; a hostile provider's counts can pass int64
                            attributes[key] = tokens
                if self._cost_usd:
                    attributes[names.COST_USD] = self._cost_usd
                if endings.receiver_failed(ending.error_type, status_code):  # the host receives the request
                    span.set_status(Status(StatusCode.ERROR))
                span.set_attributes(attributes)
        finally:
            span.end()


_IDENTITY_VIOLATIONS = frozenset(
    {names.VIOLATION_SCOPE_WIDENED, names.VIOLATION_DECISION_FLIPPED, names.VIOLATION_REROUTED_AFTER_DENIAL}
)


def _own_run(span: trace.Span, named: tuple[str, ...]) -> run_records.Run | None:
    try:
        return run_records.open_request_run(span, named)
    except Exception:  # the request is recorded without a run of its own
        logger.debug("otel-sampling: could not open a sampling request's run", exc_info=True)
        return None


def _owning_run(span: trace.Span) -> run_records.Run | None:
    try:
        return run_records.run_owning(span)
    except Exception:  # the calls inside it are recorded without a run to tell
        logger.debug("otel-sampling: could not find a sampling request's run", exc_info=True)
        return None


def _server_policy(settings: Settings, policy_names: tuple[str, ...]) -> tuple[ServerPolicy | None, str | None]:
    """The policy for the requesting server and its table's name: the first of its policy names
    the policy has a table for (None, None: no policy covers it, or the server is unnamed). The
    scope of the calls inside it (:mod:`otel_sampling.rules.scopes`, rule 1)."""
    tables = settings.policy.servers
    for name in policy_names:
        found = tables.get(name)
        if found is not None:
            return found, name
    return None, None


# The operation duration's start attributes of a session's requests, made once: shared, never changed.
_operation_attributes = functools.lru_cache(maxsize=SESSION_ATTRIBUTE_SETS)(operation_attributes)


@functools.lru_cache(maxsize=SESSION_ATTRIBUTE_SETS)
def _session_attributes(
    protocol_version: str | None,
    server_name: str | None,
    server_version: str | None,
    session_id: str | None,
    transport: str | None,
    max_length: int,
) -> tuple[tuple[str, Any], ...]:
    """The start attributes a session's requests share (the same for each request of a session:
    made fit once, not per request): each that is a non-empty string, cut to ``max_length``. The
    cache holds only values that already fit (at most ``SESSION_ATTRIBUTE_SETS`` sets of five
    strings of ``max_length``): a hostile name is made fit per request, never kept."""
    attributes: dict[str, Any] = {}
    _put_facts(
        attributes,
        max_length,
        (
            (names.MCP_PROTOCOL_VERSION, protocol_version),
            (names.MCP_SERVER_NAME, server_name),
            (names.MCP_SERVER_VERSION, server_version),
            (names.MCP_SESSION_ID, session_id),
            (names.NETWORK_TRANSPORT, transport),
        ),
    )
    return tuple(attributes.items())


def _context_label(value: str) -> str:
    return value if value in names.INCLUDE_CONTEXT_VALUES else names.OVERFLOW_LABEL


# ------------------------------ a request's span attributes and operation duration, on either side
# The span attributes of one ``sampling/createMessage``, on either side (its operation duration:
# :func:`otel_sampling.metrics.operation_attributes`).
#
# What the request asked (:func:`start_attributes`) and what its ending said
# (:func:`add_result_attributes`) are the same on both sides; each side adds the facts only it
# knows (the host: JSON-RPC id, server version, transport, fingerprint).
#

MAX_HINTS = 16  # model hints kept on the span (all are used to judge substitution)


def hint_names(params: Any) -> tuple[str, ...]:
    """``modelPreferences.hints[].name`` in order, the non-empty strings only."""
    preferences = getattr(params, "model_preferences", None)
    hints: Sequence[Any] = getattr(preferences, "hints", None) or ()
    found: list[str] = []
    for hint in hints:
        name = getattr(hint, "name", None)
        if isinstance(name, str) and name:
            found.append(name)
    return tuple(found)


def include_context(params: Any) -> str:
    """The ``includeContext`` the request asked for (``none`` when absent)."""
    return getattr(params, "include_context", None) or "none"


def start_attributes(
    params: Any, path: str, hints: Sequence[str], max_length: int, facts: Iterable[tuple[str, object]] = ()
) -> dict[str, Any]:
    """``mcp.method.name``, ``otel_sampling.sampling.path``, the requested ``includeContext``, the first
    ``MAX_HINTS`` hints, ``gen_ai.request.max_tokens`` (when an OTLP exporter can carry it), and each
    ``(key, value)`` of ``facts`` whose value is a non-empty string; every string cut to ``max_length``."""
    attributes: dict[str, Any] = {names.MCP_METHOD_NAME: names.METHOD_SAMPLING, names.SAMPLING_PATH: path}
    max_tokens = getattr(params, "max_tokens", None)  # mcp accepts any int
    if type(max_tokens) is not int or max_tokens not in INT64:
        max_tokens = otlp_int(max_tokens)
    if max_tokens is not None:
        attributes[names.GEN_AI_REQUEST_MAX_TOKENS] = max_tokens
    _put_texts(
        attributes,
        max_length,
        (
            (names.SAMPLING_INCLUDE_CONTEXT_REQUESTED, include_context(params)),
            (names.SAMPLING_MODEL_HINTS, hints[:MAX_HINTS]),
        ),
    )
    if facts:
        _put_facts(attributes, max_length, facts)
    return attributes


def _put_facts(attributes: dict[str, Any], max_length: int, facts: Iterable[tuple[str, object]]) -> None:
    """Each ``(key, value)`` of ``facts`` whose value is a non-empty string into ``attributes``, cut
    to ``max_length`` (:func:`otel_sampling.metrics.clean`; a value already fit is kept as it is)."""
    for key, value in facts:
        if isinstance(value, str) and value:
            fit = len(value) <= max_length and value.isprintable()  # the common case: no call
            attributes[key] = value if fit else clean(value, max_length)


def _put_texts(attributes: dict[str, Any], max_length: int, values: Iterable[tuple[str, object]]) -> None:
    """Each ``(key, value)`` of ``values`` into ``attributes``, made fit for the span as
    :func:`otel_sampling.metrics.clean_texts` makes it (left out when None, empty or an empty list or
    tuple); a string, or a list of strings, that is already fit is kept as it is, without a call."""
    for key, value in values:
        if value is None:  # the common case for most of them
            continue
        if type(value) is str:
            if value:
                fit = len(value) <= max_length and value.isprintable()
                attributes[key] = value if fit else clean(value, max_length)
        elif isinstance(value, (list, tuple)):
            if value:
                attributes[key] = [
                    item
                    if type(item) is str and len(item) <= max_length and item.isprintable()
                    else clean(item, max_length)
                    for item in value
                ]
        elif value != "":
            attributes[key] = clean(value, max_length)


def add_result_attributes(
    attributes: dict[str, Any],
    ending: Ending,
    served: str | None,
    stop_reason: object,
    max_length: int,
    facts: Iterable[tuple[str, object]] = (),
) -> None:
    """What a sampling request's ending says, on either side's span: ``gen_ai.response.model``,
    ``gen_ai.response.finish_reasons`` (from ``stopReason``), ``otel_sampling.sampling.budget.resets_at`` and
    ``error.type``, and each ``(key, value)`` of ``facts`` that is not None or empty (a string or a
    sequence of strings); every string cut to ``max_length``."""
    _put_texts(
        attributes,
        max_length,
        (
            (names.GEN_AI_RESPONSE_MODEL, served),
            (names.GEN_AI_RESPONSE_FINISH_REASONS, endings.finish_reasons(stop_reason)),
            (names.SAMPLING_BUDGET_RESETS_AT, ending.resets_at),
            (names.ERROR_TYPE, ending.error_type),
            *facts,
        ),
    )
