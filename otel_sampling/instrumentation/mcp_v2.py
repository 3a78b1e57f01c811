"""Host-side MCP sampling on mcp 2.x: the target table and state that
:class:`~otel_sampling.instrumentation.mcp.MCPSamplingInstrumentor` (entry point ``otel_sampling_mcp``)
uses when the installed mcp is 2.x.

Wraps ``mcp.client.session.ClientSession.dispatch_input_request``, the one method both sampling
paths reach in mcp 2.x: the legacy server-to-client JSON-RPC request (protocol <= 2025-11-25) and
the 2026-07-28 multi-round-trip path (``InputRequiredResult.input_requests``, dispatched by the
client's input-required driver). Each ``CreateMessageRequest`` gets one SERVER-kind
``sampling/createMessage`` span (MCP semantic conventions: the client reports the server span
for a server-initiated request), parented from the ``traceparent`` in ``params._meta`` when the
server sent a valid one. The SDK emits no span of its own for an inbound request: no duplicate.

Also wraps ``mcp.shared.jsonrpc_dispatcher.JSONRPCDispatcher._dispatch_notification`` (private;
looked up on every notification, so sessions opened before ``instrument()`` are covered) to learn
why a request was cancelled: the peer's ``notifications/cancelled`` reason ("timed out after
0.5s" means the server's deadline expired). It runs before the cancelled callback resumes.

The host state (identity, stall watch, grants), the connection facts (``network.transport``,
``mcp.session.id``) and the tool calls in flight per session are shared with mcp 1.x
(:mod:`~otel_sampling.instrumentation._mcp_host`). Only on mcp 2.x: on the 2026-07-28 path, the
client that drives the input-required loop (mcp's ``Client.call_tool``, fastmcp's
``Client.call_tool_mcp``) marks its task with the tool call, so the tool that triggered a request
is named however many calls are in flight, and the request's span is a child of the round of the
call that asked for it (:mod:`~otel_sampling.instrumentation._mcp_connections`).
"""

from __future__ import annotations

import logging
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_sampling import names
from otel_sampling.instrumentation._mcp_connections import (
    CONNECTION_TARGETS,
    DISPATCHER_TARGETS_V2,
    FASTMCP_TARGETS,
    HTTP_MANAGER_TARGETS_V2,
    MCP_TARGETS,
    tool_call,
)
from otel_sampling.instrumentation._mcp_host import (
    INVALID_RESULT_CODE,
    HostState,
    ServerFacts,
    first_error_type,
    start_record,
)
from otel_sampling.instrumentation._provider import guarded, instrumentation_enabled
from otel_sampling.instrumentation._targets import Target
from otel_sampling.metrics import Instruments, clean
from otel_sampling.records.sampling import SamplingRecord

logger = logging.getLogger(__name__)

CANCEL_REASONS_PER_DISPATCHER = 64  # cancel notifications remembered per connection until consumed
CANCEL_REASON_MAX_LENGTH = 256


class _CancelReasons:
    """Recent ``notifications/cancelled`` reasons per connection (dispatcher), bounded, read once.

    Request ids are normalised the way mcp correlates them (``"7"`` and ``7`` are one id).
    """

    def __init__(self, normalise: Callable[[Any], Any]) -> None:
        self._by_dispatcher: weakref.WeakKeyDictionary[Any, OrderedDict[Any, str]] = weakref.WeakKeyDictionary()
        self._normalise = normalise
        self._noted = False  # a cancellation was noted (until then, none is looked up)

    def note(self, dispatcher: Any, params: Any) -> None:
        if not isinstance(params, Mapping):
            return
        request_id, reason = params.get("requestId"), params.get("reason")
        if not isinstance(request_id, (str, int)) or not isinstance(reason, str):
            return
        self._noted = True
        reasons = self._by_dispatcher.setdefault(dispatcher, OrderedDict())
        reasons[self._normalise(request_id)] = clean(reason, CANCEL_REASON_MAX_LENGTH)
        while len(reasons) > CANCEL_REASONS_PER_DISPATCHER:
            reasons.popitem(last=False)

    def pop(self, dispatcher: Any, request_id: Any) -> str | None:
        if not self._noted or dispatcher is None or not isinstance(request_id, (str, int)):
            return None
        reasons = self._by_dispatcher.get(dispatcher)
        return reasons.pop(self._normalise(request_id), None) if reasons else None


class State(HostState):
    """The shared host state, the mcp 2.x types the wrappers read, and the peers' cancel reasons."""

    __slots__ = (
        "cancel_reasons",
        "servers",
        "request_type",
        "error_type",
        "result_types",
        "answer_types",
        "client_response",
        "validation_error",
        "parse_server_request",
    )

    def __init__(self, instruments: Instruments) -> None:
        # Imported here: mcp is an optional extra.
        import mcp_types
        from mcp.client.session import ClientResponse
        from mcp.shared.dispatcher import coerce_request_id
        from mcp_types import methods
        from pydantic import ValidationError

        super().__init__(instruments)
        self.cancel_reasons = _CancelReasons(coerce_request_id)
        # session -> (the serverInfo object read, its facts): a session's facts are read once.
        self.servers: weakref.WeakKeyDictionary[Any, tuple[Any, ServerFacts]] = weakref.WeakKeyDictionary()
        self.request_type = mcp_types.CreateMessageRequest
        self.error_type = mcp_types.ErrorData
        self.result_types = (mcp_types.CreateMessageResult, mcp_types.CreateMessageResultWithTools)
        self.answer_types = (self.error_type, *self.result_types)  # what mcp reads without validating
        self.client_response = ClientResponse  # how mcp reads whatever the callback returned
        self.validation_error = ValidationError
        self.parse_server_request = methods.parse_server_request  # how mcp reads an inbound request

    def server_facts(self, session: Any, endpoint: str | None) -> ServerFacts:
        """mcp 2.x keeps ``serverInfo`` and the negotiated version on the session: read again only
        when the session holds another ``serverInfo`` object or version than last time."""
        info, version = session.server_info, session.protocol_version
        known = self.servers.get(session)
        if known is not None and known[0] is info and known[1].protocol_version == version:
            return known[1]
        facts = ServerFacts.of(info, version, endpoint)
        self.servers[session] = (info, facts)
        return facts


def _end_with_return(state: State, record: SamplingRecord, result: Any) -> None:
    """Classify what the callback returned the way mcp will read it."""
    if isinstance(result, state.result_types):  # the common answer, first
        record.end_with_result(result.model, result.stop_reason)
        return
    if not isinstance(result, state.answer_types):
        try:  # a dict or another shape: mcp validates it into a result or an error frame
            result = state.client_response.validate_python(result)
        except Exception:  # noqa: BLE001 - mcp answers what it cannot validate with INVALID_PARAMS, so do we
            record.end_with_error_frame(INVALID_RESULT_CODE, None)
            return
    if isinstance(result, state.error_type):
        record.end_with_error_frame(result.code, result.data, result.message)
    elif isinstance(result, state.result_types):
        record.end_with_result(result.model, result.stop_reason)
    else:  # a valid client result of another kind: not an answer to sampling
        record.end_with_error_frame(INVALID_RESULT_CODE, None)


def _end(state: State, record: SamplingRecord, session: Any, ctx: Any, result: Any, exc: BaseException | None) -> None:
    try:  # without the peer's reason, the request still ends
        reason = state.cancel_reasons.pop(getattr(session, "_dispatcher", None), getattr(ctx, "request_id", None))
    except Exception:
        logger.debug("otel-sampling: could not read the peer's cancel reason", exc_info=True)
        reason = None
    if exc is not None:
        record.end_with_exception(exc, reason)
    elif reason is not None:  # the peer cancelled it and mcp will not send this answer
        record.end_with_cancellation(reason)
    else:
        _end_with_return(state, record, result)


def _finish(
    state: State, record: SamplingRecord, session: Any, ctx: Any, result: Any = None, exc: BaseException | None = None
) -> None:
    """End the record with what the callback returned or raised; never raises."""
    # Each step on its own: a failure before the ending must not leave the request pending (its
    # span open, in-flight up) for the rest of the process.
    try:
        record.deactivate()
    except Exception:
        logger.debug("otel-sampling: could not deactivate a sampling record", exc_info=True)
    guarded("end a sampling record", _end, state, record, session, ctx, result, exc)


def _dispatch_wrapper(state: State) -> Callable[..., Any]:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        request = args[1] if len(args) > 1 else kwargs.get("request")
        if not isinstance(request, state.request_type):
            return await wrapped(*args, **kwargs)
        ctx = args[0] if args else kwargs.get("ctx")
        call = tool_call.get()  # the 2026-07-28 path: the tool call whose input-required loop dispatches it
        record = guarded(
            "start a sampling record",
            start_record,
            state,
            instance,
            request_id=getattr(ctx, "request_id", None),
            params=request.params,
            meta=getattr(ctx, "meta", None),
            tool_name=call.name if call else None,
            round_parent=call.round_context if call else None,
        )
        if record is None:
            return await wrapped(*args, **kwargs)
        outside = tool_call.set(None)  # what the callback itself sends is no round of the tool call
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            tool_call.reset(outside)
            _finish(state, record, instance, ctx, exc=exc)
            raise
        tool_call.reset(outside)
        _finish(state, record, instance, ctx, result=result)
        return result

    return wrapper


HANDSHAKE_VERSION = "2025-11-25"  # what mcp parses an inbound request under before a version is negotiated


def _rejected(state: State, session: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Count the request if mcp's own parse rejects it: a validation error raised after the
    callback (mcp reading the callback's return) is the callback's, already on its span."""
    method = args[1] if len(args) > 1 else kwargs.get("method")
    if method != names.METHOD_SAMPLING:
        return
    params = args[2] if len(args) > 2 else kwargs.get("params")
    try:
        state.parse_server_request(method, session.protocol_version or HANDSHAKE_VERSION, params)
    except state.validation_error as error:
        state.count_rejected(session, first_error_type(error))


def _request_wrapper(state: State) -> Callable[..., Any]:
    """``ClientSession._on_request``: a server-to-client request on the legacy path. mcp parses it
    there and answers a validation error -32602 before ``dispatch_input_request`` runs."""

    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            return await wrapped(*args, **kwargs)
        except state.validation_error:
            if is_instrumentation_enabled():
                guarded("count a rejected sampling request", _rejected, state, instance, args, kwargs)
            raise

    return wrapper


def _note_cancel(state: State, dispatcher: Any, message: Any) -> None:
    if getattr(message, "method", None) == "notifications/cancelled":
        state.cancel_reasons.note(dispatcher, getattr(message, "params", None))


def _notification_wrapper(state: State) -> Callable[..., Any]:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return wrapped(*args, **kwargs)
        guarded("read a cancel notification", _note_cancel, state, instance, args[0] if args else kwargs.get("msg"))
        return wrapped(*args, **kwargs)

    return wrapper


TARGETS = (
    Target("mcp.client.session", "ClientSession.dispatch_input_request", _dispatch_wrapper),
    Target("mcp.client.session", "ClientSession._on_request", _request_wrapper),
    Target("mcp.shared.jsonrpc_dispatcher", "JSONRPCDispatcher._dispatch_notification", _notification_wrapper),
    *CONNECTION_TARGETS,
    *HTTP_MANAGER_TARGETS_V2,
    *DISPATCHER_TARGETS_V2,
    *MCP_TARGETS,
)
HOST_TARGETS = (FASTMCP_TARGETS,)
