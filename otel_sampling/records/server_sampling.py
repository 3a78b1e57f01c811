"""One sampling request as the MCP server that sent it saw it: a CLIENT span and its metric points.

The server side of ``sampling/createMessage`` (MCP semantic conventions: the server reports the
client span for a request it initiates). Endings are the host's vocabulary as far as the server
can see them, plus ``unanswered``: on the 2026-07-28 path a client that denies a request (or
gives up) never tells the server, which only sees that no retry carried the answer.

A request sent from a server tool run (:attr:`otel_sampling.records.run.Run.tool`) that gave no
answer (:func:`~otel_sampling.rules.verdict.sampling_gave_no_answer`) keeps its span open, its
end time taken, until the run knows whether the server answered from its own model: a provider
call that serves in the run makes the span (and the run) ``degraded`` with reason
``server_model``; the run's end without one ends the span as it was.
"""

from __future__ import annotations

import time
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from otel_sampling import locks, names, state
from otel_sampling.metrics import Instruments, operation_attributes, record_operation_duration, recorded_in
from otel_sampling.records.run import Run
from otel_sampling.records.sampling import (
    add_result_attributes,
    hint_names,
    start_attributes,
)
from otel_sampling.rules import endings
from otel_sampling.rules.values import Ending
from otel_sampling.rules.verdict import sampling_gave_no_answer


class ServerSamplingRecord:
    """Span + ``otel_sampling.sampling.server.requests`` of one request a server sent; ends exactly once
    (thread-safe: an ``unanswered`` ending comes from the watchdog thread).

    Args:
        instruments: the server instrumentor's tracer, meter and label sets.
        path: ``names.PATH_RPC`` or ``names.PATH_MRTR`` (``PATH_NO_BACK_CHANNEL`` once
            :meth:`end_without_back_channel` says the request could not be sent).
        params: the ``CreateMessageRequestParams`` (typed), or None when unreadable.
        protocol_version: the negotiated protocol version, when known.
        server_name: this server's own name (``serverInfo.name``), when known.
        session_id: the connection's MCP session id (streamable HTTP), when there is one.
        tool_name: the tool call the request belongs to, when known.
        parent: the parent context (None: the ambient one).
        run: the server tool run the request is sent from (None: none, or not a tool run).
    """

    __slots__ = ("_instruments", "_span", "_path", "_ended", "_lock", "_start", "_operation", "_run", "_around")

    def __init__(
        self,
        instruments: Instruments,
        *,
        path: str,
        params: Any,
        protocol_version: str | None,
        server_name: str | None,
        session_id: str | None,
        tool_name: str | None,
        parent: otel_context.Context | None = None,
        run: Run | None = None,
    ) -> None:
        self._instruments = instruments
        self._run = run if run is not None and run.tool is not None else None
        # the named degradations around it (as the span processor stamps them), for a later server_model
        self._around = () if self._run is None else state.active_reasons()
        self._path = path
        self._ended = False
        self._lock = locks.new()
        self._start = time.perf_counter()
        self._operation = operation_attributes(protocol_version)
        self._span = span = instruments.tracer.start_span(names.SPAN_SAMPLING, context=parent, kind=SpanKind.CLIENT)
        if span.is_recording():
            facts = (
                (names.MCP_PROTOCOL_VERSION, protocol_version),
                (names.MCP_SERVER_NAME, server_name),
                (names.MCP_SESSION_ID, session_id),
                (names.SAMPLING_TOOL_NAME, tool_name),
            )
            attributes = start_attributes(
                params, path, hint_names(params), instruments.settings.attribute_max_length, facts
            )
            span.set_attributes(attributes)

    @property
    def span(self) -> Span:
        """The request's span (the wrapper makes it current while the SDK sends)."""
        return self._span

    def end_with_result(self, model: object, stop_reason: object) -> None:
        """The client's ``CreateMessageResult`` reached the server."""
        ending = endings.or_fallback(endings.from_result, endings.COMPLETED, stop_reason)
        self._end(ending, model if isinstance(model, str) else None, stop_reason)

    def end_with_exception(self, exc: BaseException) -> None:
        """Sending failed: an ``MCPError`` (the client's error frame, a timeout, ``NoBackChannelError``),
        a cancellation, or anything else."""
        if endings.is_cancellation(exc):
            self._end(endings.or_fallback(endings.from_cancellation, endings.CANCELLED, None), None, None)
        else:
            settings = self._instruments.settings
            self._end(
                endings.or_fallback(
                    endings.from_exception,
                    endings.FAILED,
                    exc,
                    settings.policy.ending_rules,
                    settings.policy_refusal_code,
                ),
                None,
                None,
                endings.status_code(endings.answered_code(exc)),
            )

    def end_without_back_channel(self, exc: BaseException) -> None:
        """The request was never sent: the connection has no back-channel for a server-initiated
        request (mcp's ``NoBackChannelError``: any 2026-07-28 connection, stateless or JSON-response
        streamable HTTP). Its path becomes ``no_back_channel``; the ending is the exception's."""
        with self._lock:
            if not self._ended:
                self._path = names.PATH_NO_BACK_CHANNEL
        self.end_with_exception(exc)

    def end_unanswered(self) -> None:
        """No retry carried an answer (2026-07-28 path): denied, abandoned or lost on the client."""
        self._end(endings.UNANSWERED, None, None)

    def _end(self, ending: Ending, served: str | None, stop_reason: Any, status_code: str | None = None) -> None:
        """End the request once; ``status_code`` is ``rpc.response.status_code``, the code of the
        client's error frame (None: no frame answered)."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
        instruments = self._instruments
        span = self._span
        try:
            context = recorded_in(span)
            instruments.sampling_server_requests.add(
                1,
                {
                    names.SAMPLING_PATH: self._path,
                    names.SAMPLING_ENDING: ending.ending,
                    names.GEN_AI_RESPONSE_MODEL: instruments.model_label.value(served),
                },
                context=context,
            )
            record_operation_duration(
                instruments.mcp_client_duration,
                time.perf_counter() - self._start,
                self._operation,
                ending.error_type,
                status_code,
                instruments.error_type_label,
                context,
            )
        finally:
            try:
                if span.is_recording():
                    max_length = instruments.settings.attribute_max_length
                    attributes: dict[str, Any] = {names.SAMPLING_ENDING: ending.ending, names.SAMPLING_PATH: self._path}
                    add_result_attributes(attributes, ending, served, stop_reason, max_length)
                    if status_code is not None:
                        attributes[names.RPC_RESPONSE_STATUS_CODE] = status_code
                    if endings.sender_failed(ending.error_type, status_code):  # the server sends the request
                        span.set_status(Status(StatusCode.ERROR))
                    span.set_attributes(attributes)
            finally:
                if not self._await_server_model(ending):
                    span.end()

    def _await_server_model(self, ending: Ending) -> bool:
        """Hand the span to the tool run when the request gave no answer; False: end it now."""
        run = self._run
        if run is None or not sampling_gave_no_answer(ending.ending):
            return False
        end_time = time.time_ns()
        span = self._span

        def settle(server_model: bool) -> None:
            try:
                if server_model and span.is_recording():
                    reasons = list(dict.fromkeys((*self._around, names.REASON_SERVER_MODEL)))
                    degraded = {names.DEGRADATION_MODE: names.MODE_DEGRADED, names.DEGRADATION_REASON: reasons}
                    span.set_attributes(degraded)
            finally:
                span.end(end_time=end_time)

        try:
            return run.await_server_model(settle)
        except Exception:  # noqa: BLE001 - the span ends now, as it would without a run
            return False
