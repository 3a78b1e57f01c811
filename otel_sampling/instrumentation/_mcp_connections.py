"""What a host's ``ClientSession`` is connected through, and which tool calls it has in flight
(host side, the same module and attribute names in mcp 1.10+ and 2.x).

``ClientSession`` does not know its transport, so the transports say what they open, as an
:class:`Opened`: ``network.transport``, the endpoint (the stdio command line or the HTTP URL, in
the form of :mod:`otel_sampling.rules.servers`, which keys a server whose name is a
placeholder) and, for streamable HTTP, the transport object (its ``session_id`` is set later).

* Where a transport starts: ``mcp.client.stdio._create_platform_compatible_process`` (``pipe``,
  its ``command`` and ``args``) and ``StreamableHTTPTransport.__init__`` (``tcp``, its ``url``).
  Each marks the task that opens the transport (a context variable).
* Where the host gets the streams: the transport context managers (``stdio_client``,
  ``streamable_http_client``, mcp 1.x's ``streamablehttp_client``) hand the host a transparent
  proxy of the context manager, which moves the mark of the task that entered it onto the read
  stream it yields.
* mcp 2.x's ``JSONRPCDispatcher.__init__`` moves its read stream's mark onto the dispatcher: mcp's
  own ``Client`` enters the transport it is given (``Client(stdio_client(params))``) and makes
  ``ClientSession(dispatcher=...)``, with no read stream.
* ``ClientSession.__init__`` binds the session to the mark of its read stream or of the dispatcher
  it is given, else to the mark of its own task. So a session binds whether the host opens the
  transport in the session's own task or in a task of its own (mcp-use runs each transport in a
  connection-manager task); a host that bound a transport function by name before
  ``instrument()`` still binds in the same task.

``ClientSession.call_tool`` notes the tool calls in flight per session: a server's JSON-RPC
request carries no related id the client can read, so the tool is named only when exactly one
call is in flight on that session. It also keeps the context each call was made in: on mcp 1.x,
whose servers send no trace context, the sampling request joins the trace of the one tool call in
flight (:meth:`Connections.tool_call_context`). On mcp 2.x's 2026-07-28 path it is also one round of a tool
call's input-required loop (:func:`continue_trace`).

The tool call a 2026-07-28 input-required loop runs for (mcp 2.x).
On the 2026-07-28 path a server's sampling request comes back in the result of ``tools/call``
(``InputRequiredResult.input_requests``); the client's driver dispatches it to the sampling callback
and retries the call with the answer. The driver runs in the task of the call, and the callbacks
in tasks it starts, so a context variable set around the call reaches them. It holds a
:class:`ToolCall`: the tool's name, and the trace context of the round whose result asked, so that
the sampling span is a child of the tool call it belongs to. By the time the callback runs, the
SDK's ``MCP send tools/call`` span of that round has ended and is no longer current, so the
context is caught while the SDK sends the round: ``mcp.shared.jsonrpc_dispatcher`` calls
``inject_trace_context`` inside that span (connections with no JSON-RPC dispatcher, such as an
in-process server, make no such span: the sampling span then has the ambient parent).

One trace per tool call: with a span of the host's current around the call, every round and
every sampling span is in its trace already. Without one, the SDK would start a trace per round;
the rounds after the first are sent in the context of the first round's span
(:func:`continue_trace`, called by the ``ClientSession.call_tool`` wrapper), so the retries, the
server's spans for them and the sampling spans all join the first round's trace.

Who runs the driver, and so where the mark is set:

* mcp's own ``Client.call_tool`` (:data:`MCP_TARGETS`);
* fastmcp's ``Client.call_tool_mcp``, which fastmcp's ``call_tool`` and hosts built on it
  (pydantic-ai) call, and which drives the loop itself (:data:`FASTMCP_TARGETS`, a
  :class:`~otel_sampling.instrumentation._targets.HostTargets`: wrapped only where fastmcp is
  installed within its range, once the host imports it).

A host driving ``ClientSession.call_tool(..., allow_input_required=True)`` itself sets no mark:
its requests get no tool name and the ambient parent.
"""

from __future__ import annotations

import logging
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextvars import ContextVar, Token
from typing import Any, NamedTuple

import wrapt
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_sampling import locks, names
from otel_sampling.instrumentation import _mcp_tool_outcomes as tool_outcomes
from otel_sampling.instrumentation._provider import guarded, instrumentation_enabled
from otel_sampling.instrumentation._targets import HostTargets, Target
from otel_sampling.records.run import current_run
from otel_sampling.records.tool_repeats import note_host_tool_call
from otel_sampling.rules.servers import stdio_endpoint, url_endpoint

logger = logging.getLogger(__name__)

TOOL_CALLS_PER_SESSION = 64  # tool calls remembered in flight per session
HELD_STREAM_MARKS = 64  # marks on streams no weak reference can point to, held until a session takes them


class Opened(NamedTuple):
    """A transport the host opened: ``transport`` (``names.TRANSPORT_*``), ``endpoint`` (None when
    unreadable) and ``http``, the ``StreamableHTTPTransport`` (None for stdio)."""

    transport: str
    endpoint: str | None
    http: Any = None


# The transport opened last in this task, not yet bound to a session.
_opened: ContextVar[Opened | None] = ContextVar("otel_sampling_opened_transport", default=None)


class StreamMarks:
    """Marks on the read streams transports yielded, until the session made on them takes them.

    Kept weakly where the stream allows a weak reference; a stream that does not (mcp 2.x's HTTP
    transport yields a ``__slots__`` stream) is held with its mark, at most ``HELD_STREAM_MARKS``
    of them, oldest dropped (holding it keeps its ``id`` from being reused while it is a key).
    """

    def __init__(self) -> None:
        self._weak: weakref.WeakKeyDictionary[Any, Opened] = weakref.WeakKeyDictionary()
        self._held: OrderedDict[int, tuple[Any, Opened]] = OrderedDict()
        self._lock = locks.new()

    def put(self, stream: Any, mark: Opened) -> None:
        with self._lock:
            try:
                self._weak[stream] = mark
            except TypeError:
                self._held[id(stream)] = (stream, mark)
                while len(self._held) > HELD_STREAM_MARKS:
                    self._held.popitem(last=False)

    def take(self, stream: Any) -> Opened | None:
        with self._lock:
            try:
                mark = self._weak.pop(stream, None)
            except TypeError:
                mark = None
            if mark is None:
                held = self._held.pop(id(stream), None)
                mark = held[1] if held is not None and held[0] is stream else None
            return mark


class ToolCallInFlight(NamedTuple):
    """A tool call a session has in flight: its ``name``, and ``context``, the context it was made
    in (the trace it belongs to)."""

    name: str
    context: otel_context.Context


class Connections:
    """What each ``ClientSession`` is connected through, and its tool calls in flight (weak keys)."""

    def __init__(self) -> None:
        self.transports: weakref.WeakKeyDictionary[Any, Opened] = weakref.WeakKeyDictionary()
        self.streams = StreamMarks()
        self.tool_calls: weakref.WeakKeyDictionary[Any, list[ToolCallInFlight]] = weakref.WeakKeyDictionary()

    def describe(self, session: Any) -> tuple[str | None, str | None, str | None]:
        """``(network.transport, mcp.session.id, endpoint)`` of a session, each None when unknown."""
        opened = self.transports.get(session)
        if opened is None:
            return None, None, None
        session_id = getattr(opened.http, "session_id", None)
        return opened.transport, session_id if isinstance(session_id, str) else None, opened.endpoint

    def endpoint(self, session: Any) -> str | None:
        """The endpoint of the transport ``session`` is bound to, when known."""
        opened = self.transports.get(session)
        return opened.endpoint if opened is not None else None

    def tool_for(self, session: Any) -> str | None:
        """The tool call in flight on ``session`` when there is exactly one, else None."""
        calls = self.tool_calls.get(session)
        return calls[0].name if calls and len(calls) == 1 else None

    def tool_call_context(self, session: Any) -> otel_context.Context | None:
        """The context of the one tool call in flight on ``session`` when it has a valid span current
        (the trace that call belongs to), else None (no call, several, or no trace to join)."""
        calls = self.tool_calls.get(session)
        if not calls or len(calls) != 1:
            return None
        context = calls[0].context
        return context if trace.get_current_span(context).get_span_context().is_valid else None


def _stdio_mark(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Opened:
    command = kwargs.get("command", args[0] if args else None)
    arguments = kwargs.get("args", args[1] if len(args) > 1 else ())
    if isinstance(command, str) and isinstance(arguments, Sequence) and all(isinstance(a, str) for a in arguments):
        return Opened(names.TRANSPORT_PIPE, stdio_endpoint(command, arguments))
    return Opened(names.TRANSPORT_PIPE, None)


def _stdio_opened_wrapper(state: Any) -> Callable[..., Any]:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        process = await wrapped(*args, **kwargs)
        mark = guarded(
            "read a stdio server's command", _stdio_mark, args, kwargs, fallback=Opened(names.TRANSPORT_PIPE, None)
        )
        _opened.set(mark)
        return process

    return wrapper


def _http_mark(transport: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Opened:
    url = kwargs.get("url", args[0] if args else None)
    return Opened(names.TRANSPORT_TCP, url_endpoint(url) if isinstance(url, str) else None, transport)


def _http_opened_wrapper(state: Any) -> Callable[..., Any]:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return wrapped(*args, **kwargs)
        initialised = wrapped(*args, **kwargs)
        _opened.set(
            guarded(
                "read an HTTP server's URL",
                _http_mark,
                instance,
                args,
                kwargs,
                fallback=Opened(names.TRANSPORT_TCP, None, instance),
            )
        )
        return initialised

    return wrapper


def _move_mark_to_stream(connections: Connections, streams: Any) -> None:
    """The mark this task got while the transport opened goes onto the read stream it yielded."""
    mark = _opened.get()
    if mark is not None and isinstance(streams, tuple) and streams:
        connections.streams.put(streams[0], mark)
        _opened.set(None)


class _OpeningTransport(wrapt.ObjectProxy):  # type: ignore[type-arg]  # wrapt 1.x cannot subscript it at run time
    """A transport context manager, unchanged but for where its mark goes once it is entered."""

    def __init__(self, manager: Any, connections: Connections) -> None:
        super().__init__(manager)
        self._self_connections = connections

    async def __aenter__(self) -> Any:
        streams = await self.__wrapped__.__aenter__()
        guarded("mark a transport's streams", _move_mark_to_stream, self._self_connections, streams)
        return streams

    async def __aexit__(self, *exc_info: Any) -> Any:
        return await self.__wrapped__.__aexit__(*exc_info)


def _transport_manager_wrapper(state: Any) -> Callable[..., Any]:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return wrapped(*args, **kwargs)
        manager = wrapped(*args, **kwargs)
        if not hasattr(manager, "__aenter__"):
            return manager
        return guarded("follow a transport's streams", _OpeningTransport, manager, state.connections, fallback=manager)

    return wrapper


def _take_stream_mark(state: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Opened | None:
    """The mark of what a session is made on: its read stream, else (mcp 2.x) the dispatcher it is
    given. Taken before the session is made, since mcp 2.x's session wraps its read stream in a
    dispatcher of its own, whose ``__init__`` would otherwise move the mark onto that dispatcher."""
    source = args[0] if args else kwargs.get("read_stream")
    if source is None:
        source = kwargs.get("dispatcher")
    return state.connections.streams.take(source) if source is not None else None


def _bind_transport(state: Any, session: Any, mark: Opened | None) -> None:
    if mark is None:
        mark = _opened.get()
        _opened.set(None)  # one transport, one session
    if mark is not None:
        state.connections.transports[session] = mark


def _session_init_wrapper(state: Any) -> Callable[..., Any]:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return wrapped(*args, **kwargs)
        mark = guarded("take the mark of a session's streams", _take_stream_mark, state, args, kwargs)
        wrapped(*args, **kwargs)
        guarded("bind a session to its transport", _bind_transport, state, instance, mark)
        return None  # __init__

    return wrapper


def _move_mark_to_dispatcher(
    connections: Connections, dispatcher: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    read_stream = args[0] if args else kwargs.get("read_stream")
    mark = connections.streams.take(read_stream) if read_stream is not None else None
    if mark is not None:
        connections.streams.put(dispatcher, mark)


def _dispatcher_init_wrapper(state: Any) -> Callable[..., Any]:
    """mcp 2.x's ``JSONRPCDispatcher(read_stream, write_stream)``: the read stream's mark goes onto
    the dispatcher, for the session it is handed to (``ClientSession(dispatcher=...)``, what mcp's
    own ``Client`` makes of a transport)."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return wrapped(*args, **kwargs)
        wrapped(*args, **kwargs)
        guarded("mark a dispatcher's streams", _move_mark_to_dispatcher, state.connections, instance, args, kwargs)
        return None  # __init__

    return wrapper


# A tool call noted in flight: the session's list of them it is in, and the call.
_Noted = tuple[list[ToolCallInFlight], ToolCallInFlight]


def _forget_tool_call(calls: list[ToolCallInFlight], call: ToolCallInFlight) -> None:
    if calls and calls[-1] is call:  # the common case: the last call noted ends first
        calls.pop()
        return
    for i, noted in enumerate(calls):
        if noted is call:
            del calls[i]
            return


def _call_tool_wrapper(state: Any) -> Callable[..., Any]:
    """``ClientSession.call_tool``: the session's tool calls in flight, and a round of a 2026-07-28
    loop sent in the trace of the call's first round."""

    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        name = args[0] if args else kwargs.get("name")
        noted, token = guarded("note a tool call", _before_call, state, instance, name, args, kwargs, fallback=_NOTHING)
        try:
            result = await wrapped(*args, **kwargs)
        except Exception as exc:
            guarded("count rejected input requests", _count_rejected_inputs, state, instance, exc)
            guarded("count a tool call's outcome", tool_outcomes.count_failure, state.instruments, exc)
            raise
        finally:
            if token is not None:
                otel_context.detach(token)
            if noted is not None:
                try:
                    _forget_tool_call(*noted)
                except Exception:
                    logger.debug("otel-sampling: could not forget a tool call", exc_info=True)
        guarded("count a tool call's outcome", tool_outcomes.count_result, state.instruments, result)
        return result

    return wrapper


_NOTHING: tuple[_Noted | None, Token[otel_context.Context] | None] = (None, None)


def _before_call(
    state: Any, session: Any, name: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[_Noted | None, Token[otel_context.Context] | None]:
    """Before a tool call is sent: the call noted in flight on the session, with the session's list
    it is in (None: not noted), the run's memory of tool calls told, and the token of the trace it
    continues (None: none). Each step on its own: one failing leaves the others done (one guard
    frame for the three, per call)."""
    noted: _Noted | None = None
    token: Token[otel_context.Context] | None = None
    try:  # the call noted in flight (a name that is no string is not noted)
        if isinstance(name, str):
            calls: list[ToolCallInFlight] = state.connections.tool_calls.setdefault(session, [])
            if len(calls) < TOOL_CALLS_PER_SESSION:
                call = ToolCallInFlight(name, otel_context.get_current())
                calls.append(call)
                noted = calls, call
    except Exception:
        logger.debug("otel-sampling: could not note a tool call in flight", exc_info=True)
    try:
        _note_repeat(state, session, name, args, kwargs)
    except Exception:
        logger.debug("otel-sampling: could not note a repeated tool call", exc_info=True)
    try:
        token = continue_trace()
    except Exception:
        logger.debug("otel-sampling: could not continue a tool call's trace", exc_info=True)
    return noted, token


def _note_repeat(state: Any, session: Any, name: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """The run's memory of the tool calls sent in it (``call_tool(name, arguments=None, ...)``, both
    majors): a repeat is counted (:mod:`otel_sampling.records.tool_repeats`). Nothing outside a run.
    The rounds of one input-required loop (each a ``call_tool`` with the same name and arguments)
    are one call: only its first round is noted."""
    if current_run() is None:
        return
    loop = tool_call.get()
    if loop is not None:  # a 2026-07-28 loop sends its call again each round: one call, noted once
        if loop.noted:
            return
        loop.noted = True
    server = state.server_facts(session, state.connections.endpoint(session))
    arguments = args[1] if len(args) > 1 else kwargs.get("arguments")
    label = server.label if server.label is not None else server.name
    note_host_tool_call(state.instruments, state.ledger.fingerprint_key, name, arguments, server.known_as, label)


def _count_rejected_inputs(state: Any, session: Any, exc: Exception) -> None:
    """The 2026-07-28 path: mcp validates the sampling requests a tool call's ``InputRequiredResult``
    embeds with the result, so a malformed one fails the whole call with a pydantic
    ``ValidationError`` (and is never answered); each such request is counted once, by the type of
    its first error (errors located at ``inputRequests.<key>.CreateMessageRequest``)."""
    errors = getattr(exc, "errors", None)
    if not callable(errors) or type(exc).__name__ != "ValidationError":
        return
    reasons: dict[object, str | None] = {}
    for error in errors(include_url=False, include_context=False, include_input=False):
        loc = error.get("loc", ())
        if len(loc) > 3 and loc[1] == INPUT_REQUESTS and loc[3] == CREATE_MESSAGE_REQUEST:
            reasons.setdefault(loc[2], error.get("type"))
    for reason in reasons.values():
        state.count_rejected(session, reason)


INPUT_REQUESTS = "inputRequests"  # where a validation error locates an InputRequiredResult's requests
CREATE_MESSAGE_REQUEST = "CreateMessageRequest"  # the union arm of a sampling request

# Both majors. stdio_client is also re-exported as mcp.stdio_client (a binding of its own).
CONNECTION_TARGETS = (
    Target("mcp.client.stdio", "_create_platform_compatible_process", _stdio_opened_wrapper),
    Target("mcp.client.stdio", "stdio_client", _transport_manager_wrapper),
    Target("mcp", "stdio_client", _transport_manager_wrapper),
    Target("mcp.client.streamable_http", "StreamableHTTPTransport.__init__", _http_opened_wrapper),
    Target("mcp.client.session", "ClientSession.__init__", _session_init_wrapper),
    Target("mcp.client.session", "ClientSession.call_tool", _call_tool_wrapper),
)
# streamable_http_client: mcp 2.x, and mcp 1.x from 1.2x on; streamablehttp_client: mcp 1.x only
# (from 1.2x on it calls streamable_http_client: its streams are then marked once, by the inner one).
HTTP_MANAGER_TARGETS_V2 = (Target("mcp.client.streamable_http", "streamable_http_client", _transport_manager_wrapper),)
# mcp 2.x also hands a session its streams inside a dispatcher (what mcp's own ``Client`` does).
DISPATCHER_TARGETS_V2 = (
    Target("mcp.shared.jsonrpc_dispatcher", "JSONRPCDispatcher.__init__", _dispatcher_init_wrapper),
)
HTTP_MANAGER_TARGETS_V1 = (
    Target("mcp.client.streamable_http", "streamablehttp_client", _transport_manager_wrapper),
    Target("mcp.client.streamable_http", "streamable_http_client", _transport_manager_wrapper, optional=True),
)


# ---------------------------------------------------------------------- the tool call of an input-required loop
class ToolCall:
    """One tool call whose input-required loop is running: ``name`` (None when not a string),
    ``round_context``, the context of its last round's ``MCP send tools/call`` span, and
    ``first_context``, its first round's (each None until the SDK made one); ``noted``: the run's
    memory of tool calls has seen it (its first round)."""

    __slots__ = ("name", "round_context", "first_context", "noted")

    def __init__(self, name: object) -> None:
        self.name = name if isinstance(name, str) else None
        self.round_context: otel_context.Context | None = None
        self.first_context: otel_context.Context | None = None
        self.noted = False


#: The tool call whose loop dispatches the request at hand (None: not inside one). The sampling
#: callback runs with it set to None: a request the callback itself sends is not a round of the call.
tool_call: ContextVar[ToolCall | None] = ContextVar("otel_sampling_tool_call", default=None)


def continue_trace() -> Token[otel_context.Context] | None:
    """Inside a tool call's loop with no span current, make its first round's span current for the
    next round (detach the token after the round); None when there is nothing to continue."""
    call = tool_call.get()
    if call is None or call.first_context is None or trace.get_current_span().get_span_context().is_valid:
        return None
    return otel_context.attach(call.first_context)


def _tool_call_wrapper(state: Any) -> Callable[..., Any]:
    """A client's tool call (``name`` first, or as a keyword): its loop's callbacks see the mark."""

    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        token = tool_call.set(ToolCall(args[0] if args else kwargs.get("name")))
        try:
            return await wrapped(*args, **kwargs)
        finally:
            tool_call.reset(token)

    return wrapper


def _note_round(call: ToolCall) -> None:
    context = otel_context.get_current()
    if trace.get_current_span(context).get_span_context().is_valid:
        call.round_context = context
        if call.first_context is None:
            call.first_context = context


def _inject_wrapper(state: Any) -> Callable[..., Any]:
    """The SDK injects the trace context of a request it sends, inside that request's span: inside
    a tool call (its loop), that request is a round of the call."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        call = tool_call.get()  # most sends (the server's, a session's own) are no round: nothing to note
        if call is not None and instrumentation_enabled():
            guarded("note a tool call's round", _note_round, call)
        return wrapped(*args, **kwargs)

    return wrapper


# mcp 2.x: its own driver, and where its dispatcher injects the trace context of what it sends.
MCP_TARGETS = (
    Target("mcp.client.client", "Client.call_tool", _tool_call_wrapper),
    Target("mcp.shared.jsonrpc_dispatcher", "inject_trace_context", _inject_wrapper),
)

# fastmcp's client drives the loop in call_tool_mcp (what its call_tool calls). The code is in the
# fastmcp-slim distribution since the split; "fastmcp" alone before. Range: the versions the
# real-host suite runs.
FASTMCP_TARGETS = HostTargets(
    ("fastmcp-slim", "fastmcp"),
    ">= 4.2, < 5",
    (Target("fastmcp.client.mixins.tools", "ClientToolsMixin.call_tool_mcp", _tool_call_wrapper),),
)
