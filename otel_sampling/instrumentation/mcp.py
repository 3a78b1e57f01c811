"""Host-side MCP sampling instrumentation (entry point ``otel_sampling_mcp``); this module is mcp 2.x,
:mod:`otel_sampling.instrumentation.mcp_v1` is mcp 1.x, and the instrumentor picks by the installed major.

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

Connection facts for the span (``network.transport``, ``mcp.session.id``): the SDK's
``ClientSession`` does not know its transport, so the transports mark the task that opens them
(``mcp.client.stdio._create_platform_compatible_process``: ``pipe``;
``StreamableHTTPTransport.__init__``: ``tcp`` and its ``session_id``) and the ``ClientSession``
created next in that task binds to that mark. The tool call that triggered a request
(``gen_ai.tool.name``): on the 2026-07-28 path, ``Client.call_tool`` marks its task and the
input-required driver's callbacks inherit the mark; on the legacy path the request carries no
related id the client can read, so the tool is named only when exactly one ``call_tool`` is in
flight on that session.
"""

from __future__ import annotations

import logging
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.propagate import extract

from otel_sampling import names, sampling_api
from otel_sampling.instrumentation._targets import Target, TargetTableInstrumentor
from otel_sampling.labels import clean
from otel_sampling.metrics import Instruments
from otel_sampling.records.ledger import Ledger
from otel_sampling.records.sampling import SamplingRecord

logger = logging.getLogger(__name__)

_MODERN_PROTOCOL_VERSIONS = ("2026-07-28",)  # mcp_types.version.MODERN_PROTOCOL_VERSIONS
CANCEL_REASONS_PER_DISPATCHER = 64  # cancel notifications remembered per connection until consumed
CANCEL_REASON_MAX_LENGTH = 256
INVALID_RESULT_CODE = -32602  # mcp answers INVALID_PARAMS for a callback return it cannot validate
TOOL_CALLS_PER_SESSION = 64  # tool calls remembered in flight per session

# The transport opened last in this task: names.TRANSPORT_PIPE, or the StreamableHTTPTransport.
_opened_transport: ContextVar[Any] = ContextVar("otel_sampling_opened_transport", default=None)
_calling_tool: ContextVar[str | None] = ContextVar("otel_sampling_calling_tool", default=None)


class _CancelReasons:
    """Recent ``notifications/cancelled`` reasons per connection (dispatcher), bounded, read once.

    Request ids are normalised the way mcp correlates them (``"7"`` and ``7`` are one id).
    """

    def __init__(self, normalise: Callable[[Any], Any]) -> None:
        self._by_dispatcher: weakref.WeakKeyDictionary[Any, OrderedDict[Any, str]] = weakref.WeakKeyDictionary()
        self._normalise = normalise

    def note(self, dispatcher: Any, params: Any) -> None:
        if not isinstance(params, Mapping):
            return
        request_id, reason = params.get("requestId"), params.get("reason")
        if not isinstance(request_id, (str, int)) or not isinstance(reason, str):
            return
        reasons = self._by_dispatcher.setdefault(dispatcher, OrderedDict())
        reasons[self._normalise(request_id)] = clean(reason, CANCEL_REASON_MAX_LENGTH)
        while len(reasons) > CANCEL_REASONS_PER_DISPATCHER:
            reasons.popitem(last=False)

    def pop(self, dispatcher: Any, request_id: Any) -> str | None:
        if dispatcher is None or not isinstance(request_id, (str, int)):
            return None
        reasons = self._by_dispatcher.get(dispatcher)
        return reasons.pop(self._normalise(request_id), None) if reasons else None


class _Connections:
    """What each ``ClientSession`` is connected through, and its tool calls in flight (weak keys)."""

    def __init__(self) -> None:
        self.transports: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self.tool_calls: weakref.WeakKeyDictionary[Any, list[str]] = weakref.WeakKeyDictionary()

    def describe(self, session: Any) -> tuple[str | None, str | None]:
        """``(network.transport, mcp.session.id)`` of a session, each None when unknown."""
        transport = self.transports.get(session)
        if transport is None:
            return None, None
        if isinstance(transport, str):
            return transport, None
        session_id = getattr(transport, "session_id", None)
        return names.TRANSPORT_TCP, session_id if isinstance(session_id, str) else None

    def tool_for(self, session: Any) -> str | None:
        calls = self.tool_calls.get(session)
        return calls[0] if calls and len(calls) == 1 else None


class _State:
    __slots__ = ("instruments", "cancel_reasons", "request_type", "error_type", "result_types", "answer_types",
                 "client_response", "ledger", "connections")

    def __init__(self, instruments: Instruments) -> None:
        # Imported here: mcp is an optional extra.
        import mcp_types
        from mcp.client.session import ClientResponse
        from mcp.shared.dispatcher import coerce_request_id

        self.instruments = instruments
        self.cancel_reasons = _CancelReasons(coerce_request_id)
        self.request_type = mcp_types.CreateMessageRequest
        self.error_type = mcp_types.ErrorData
        self.result_types = (mcp_types.CreateMessageResult, mcp_types.CreateMessageResultWithTools)
        self.answer_types = (self.error_type, *self.result_types)  # what mcp reads without validating
        self.client_response = ClientResponse  # how mcp reads whatever the callback returned
        self.ledger = Ledger(instruments)
        self.connections = _Connections()

    def start(self) -> None:
        self.ledger.start()
        sampling_api.bind(self.ledger)

    def stop(self) -> None:
        self.ledger.stop()
        sampling_api.bind(None)


def _parent_of(meta: Any) -> otel_context.Context | None:
    """The context in ``params._meta``, or None (the ambient context) when there is no valid one."""
    if not isinstance(meta, Mapping) or "traceparent" not in meta:
        return None
    try:
        parent = extract(meta)
    except Exception:  # a hostile peer can put anything in _meta
        logger.debug("otel-sampling: unreadable trace context in params._meta", exc_info=True)
        return None
    return parent if trace.get_current_span(parent).get_span_context().is_valid else None


def _start_record(state: _State, session: Any, ctx: Any, request: Any) -> SamplingRecord | None:
    try:
        server_info = session.server_info
        protocol_version = session.protocol_version
        transport, session_id = state.connections.describe(session)
        version = getattr(server_info, "version", None)
        record = SamplingRecord(
            state.instruments,
            server_name=getattr(server_info, "name", None),
            path=names.PATH_MRTR if protocol_version in _MODERN_PROTOCOL_VERSIONS else names.PATH_RPC,
            request_id=getattr(ctx, "request_id", None),
            protocol_version=protocol_version,
            params=request.params,
            parent=_parent_of(getattr(ctx, "meta", None)),
            ledger=state.ledger,
            server_version=version if isinstance(version, str) else None,
            session_id=session_id,
            transport=transport,
            tool_name=_calling_tool.get() or state.connections.tool_for(session),
        )
        record.activate()
        return record
    except Exception:
        logger.debug("otel-sampling: could not start the sampling record", exc_info=True)
        return None


def _end_with_return(state: _State, record: SamplingRecord, result: Any) -> None:
    """Classify what the callback returned the way mcp will read it."""
    if not isinstance(result, state.answer_types):
        try:  # a dict or another shape: mcp validates it into a result or an error frame
            result = state.client_response.validate_python(result)
        except Exception:
            record.end_with_error_frame(INVALID_RESULT_CODE, None)
            return
    if isinstance(result, state.error_type):
        record.end_with_error_frame(result.code, result.data, result.message)
    elif isinstance(result, state.result_types):
        record.end_with_result(result.model, result.stop_reason)
    else:  # a valid client result of another kind: not an answer to sampling
        record.end_with_error_frame(INVALID_RESULT_CODE, None)


def _finish(state: _State, record: SamplingRecord, session: Any, ctx: Any,
            result: Any = None, exc: BaseException | None = None) -> None:
    """End the record with what the callback returned or raised; never raises."""
    # Each step on its own: a failure before the ending must not leave the request pending (its
    # span open, in-flight up) for the rest of the process.
    try:
        record.deactivate()
    except Exception:
        logger.debug("otel-sampling: could not deactivate the sampling record", exc_info=True)
    try:
        reason = state.cancel_reasons.pop(getattr(session, "_dispatcher", None), getattr(ctx, "request_id", None))
    except Exception:
        logger.debug("otel-sampling: could not read the peer's cancel reason", exc_info=True)
        reason = None
    try:
        if exc is not None:
            record.end_with_exception(exc, reason)
        elif reason is not None:  # the peer cancelled it and mcp will not send this answer
            record.end_with_cancellation(reason)
        else:
            _end_with_return(state, record, result)
    except Exception:
        logger.debug("otel-sampling: could not end the sampling record", exc_info=True)


def _dispatch_wrapper(state: _State) -> Callable[..., Any]:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        request = args[1] if len(args) > 1 else kwargs.get("request")
        if not isinstance(request, state.request_type):
            return await wrapped(*args, **kwargs)
        ctx = args[0] if args else kwargs.get("ctx")
        record = _start_record(state, instance, ctx, request)
        if record is None:
            return await wrapped(*args, **kwargs)
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            _finish(state, record, instance, ctx, exc=exc)
            raise
        _finish(state, record, instance, ctx, result=result)
        return result

    return wrapper


def _notification_wrapper(state: _State) -> Callable[..., Any]:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            message = args[0] if args else kwargs.get("msg")
            if getattr(message, "method", None) == "notifications/cancelled":
                state.cancel_reasons.note(instance, getattr(message, "params", None))
        except Exception:
            logger.debug("otel-sampling: could not read a cancel notification", exc_info=True)
        return wrapped(*args, **kwargs)

    return wrapper


def _stdio_opened_wrapper(state: _State) -> Callable[..., Any]:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        process = await wrapped(*args, **kwargs)
        _opened_transport.set(names.TRANSPORT_PIPE)  # the ClientSession opened next in this task
        return process

    return wrapper


def _http_opened_wrapper(state: _State) -> Callable[..., Any]:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        wrapped(*args, **kwargs)
        _opened_transport.set(instance)  # read its session_id at sampling time: it is set later
    return wrapper


def _session_init_wrapper(state: _State) -> Callable[..., Any]:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        wrapped(*args, **kwargs)
        try:
            transport = _opened_transport.get()
            if transport is not None:
                state.connections.transports[instance] = transport
                _opened_transport.set(None)  # one transport, one session
        except Exception:
            logger.debug("otel-sampling: could not bind a session to its transport", exc_info=True)
    return wrapper


def _call_tool_wrapper(state: _State) -> Callable[..., Any]:
    """``ClientSession.call_tool``: the session's tool calls in flight (legacy path)."""
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        name = args[0] if args else kwargs.get("name")
        calls = None
        try:
            if isinstance(name, str):
                calls = state.connections.tool_calls.setdefault(instance, [])
                if len(calls) < TOOL_CALLS_PER_SESSION:
                    calls.append(name)
                else:
                    calls = None
        except Exception:
            logger.debug("otel-sampling: could not note a tool call", exc_info=True)
        try:
            return await wrapped(*args, **kwargs)
        finally:
            if calls is not None and name in calls:
                calls.remove(name)
    return wrapper


def _client_call_tool_wrapper(state: _State) -> Callable[..., Any]:
    """``Client.call_tool``: the input-required driver's callbacks run in this task's context."""
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        name = args[0] if args else kwargs.get("name")
        token = _calling_tool.set(name) if isinstance(name, str) else None
        try:
            return await wrapped(*args, **kwargs)
        finally:
            if token is not None:
                _calling_tool.reset(token)
    return wrapper


_TARGETS = (
    Target("mcp.client.session", "ClientSession.dispatch_input_request", _dispatch_wrapper),
    Target("mcp.shared.jsonrpc_dispatcher", "JSONRPCDispatcher._dispatch_notification", _notification_wrapper),
    Target("mcp.client.stdio", "_create_platform_compatible_process", _stdio_opened_wrapper),
    Target("mcp.client.streamable_http", "StreamableHTTPTransport.__init__", _http_opened_wrapper),
    Target("mcp.client.session", "ClientSession.__init__", _session_init_wrapper),
    Target("mcp.client.session", "ClientSession.call_tool", _call_tool_wrapper),
    Target("mcp.client.client", "Client.call_tool", _client_call_tool_wrapper),
)


class MCPSamplingInstrumentor(TargetTableInstrumentor):
    """Instruments the host side of MCP sampling in mcp 2.x (see the module docstring) and mcp 1.x
    (:mod:`otel_sampling.instrumentation.mcp_v1`), choosing the table by the installed mcp major.

    ``instrument(tracer_provider=None, meter_provider=None)``; providers default to the global ones.
    """

    targets = _TARGETS
    # The versions `make test-matrix` proves (2.0 is left out: untested).
    dependencies = ("mcp >= 1.10, != 2.0.*, < 3",)
    state_class = _State

    def _table(self) -> tuple[tuple[Target, ...], Callable[[Instruments], Any]]:
        if _installed_mcp_major() == 1:
            from otel_sampling.instrumentation import mcp_v1

            return mcp_v1.TARGETS, mcp_v1.State
        return self.targets, self.state_class


def _installed_mcp_major() -> int | None:
    try:
        return int(version("mcp").split(".", 1)[0])
    except (PackageNotFoundError, ValueError):
        return None
