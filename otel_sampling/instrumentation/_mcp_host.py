"""Host-side MCP sampling shared by the mcp 2.x table (:mod:`~otel_sampling.instrumentation.mcp_v2`)
and the mcp 1.x table (:mod:`~otel_sampling.instrumentation.mcp_v1`): one host state, built the same
way for both, and the connection facts both SDK majors expose under the same names.

* :class:`HostState`: the instrumentor's :class:`~otel_sampling.metrics.Instruments`, its
  :class:`~otel_sampling.records.ledger.Ledger` (request identity, stall watch, grants: bound in
  :mod:`otel_sampling.state` between ``start`` and ``stop``) and its :class:`Connections`.
  Each table subclasses it with the SDK types it reads and :meth:`HostState.server_facts`.
* :func:`start_record`: one :class:`~otel_sampling.records.sampling.SamplingRecord` per request,
  with the same arguments on both majors (server facts, transport, session id, tool name, parent).
* :data:`CONNECTION_TARGETS`: what a ``ClientSession`` is connected through and which tool calls it
  has in flight. ``ClientSession`` does not know its transport, so the transports mark the task
  that opens them (``mcp.client.stdio._create_platform_compatible_process``: ``pipe``;
  ``StreamableHTTPTransport.__init__``: ``tcp`` and its ``session_id``) and the ``ClientSession``
  created next in that task binds to that mark. ``ClientSession.call_tool`` notes the tool calls in
  flight per session: a server's JSON-RPC request carries no related id the client can read, so
  the tool is named only when exactly one call is in flight on that session.

Every wrapper of both tables passes straight through inside
``opentelemetry.instrumentation.utils.suppress_instrumentation()`` (no span, no metric point, no
in-flight change, no connection fact kept). Suppression is read in the context the callback is
called in: for a server's JSON-RPC request, the task that reads the session (the context the
session was opened in); on mcp 2.x's 2026-07-28 path, the task of the host's ``call_tool``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, NamedTuple

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_sampling import names
from otel_sampling import state as otel_state
from otel_sampling.instrumentation._guard import guarded
from otel_sampling.instrumentation._mcp_protocol import parent_of, path_of
from otel_sampling.instrumentation._targets import Target
from otel_sampling.metrics import Instruments
from otel_sampling.records.identity import server_key
from otel_sampling.records.ledger import Ledger
from otel_sampling.records.sampling import SamplingRecord

INVALID_RESULT_CODE = -32602  # mcp answers INVALID_PARAMS for a callback return it cannot validate
TOOL_CALLS_PER_SESSION = 64  # tool calls remembered in flight per session

# The transport opened last in this task: names.TRANSPORT_PIPE, or the StreamableHTTPTransport.
_opened_transport: ContextVar[Any] = ContextVar("otel_sampling_opened_transport", default=None)


class ServerFacts(NamedTuple):
    """What the host knows of the server that sent a request; each field None when unknown.

    Read once per session (each table keeps them per ``ClientSession``), so that ``key``, a hash
    over the whole name when it is long, is computed once per session rather than per request.
    """

    name: str | None  # serverInfo.name
    version: str | None  # serverInfo.version
    protocol_version: str | None  # the negotiated MCP protocol version
    key: str | None  # identity.server_key(name): how the identity store and the ledger keep the server

    @classmethod
    def of(cls, server_info: Any, protocol_version: Any) -> ServerFacts:
        """Read an ``Implementation`` (``serverInfo``) and a protocol version; non-strings are None."""
        name, version = getattr(server_info, "name", None), getattr(server_info, "version", None)
        name = name if isinstance(name, str) else None
        return cls(name, version if isinstance(version, str) else None,
                   protocol_version if isinstance(protocol_version, str) else None, server_key(name))


UNKNOWN_SERVER = ServerFacts(None, None, None, None)


class Connections:
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
        """The tool call in flight on ``session`` when there is exactly one, else None."""
        calls = self.tool_calls.get(session)
        return calls[0] if calls and len(calls) == 1 else None


class HostState:
    """The host-side state of one instrumentor, the same on mcp 2.x and 1.x.

    Args:
        instruments: the instrumentor's tracer, meter, settings and label sets.

    :meth:`start` starts the stall watch and binds the ledger in :mod:`otel_sampling.state`, where
    :mod:`otel_sampling.sampling_api` finds it (``record_grant`` records there); :meth:`stop` undoes both.
    """

    __slots__ = ("instruments", "ledger", "connections")

    def __init__(self, instruments: Instruments) -> None:
        self.instruments = instruments
        self.ledger = Ledger(instruments)
        self.connections = Connections()

    def server_facts(self, session: Any) -> ServerFacts:
        """The requesting server of ``session``, as far as this SDK major tells it."""
        raise NotImplementedError

    def start(self) -> None:
        self.ledger.start()
        otel_state.bind_host_ledger(self.ledger)

    def stop(self) -> None:
        self.ledger.stop()
        otel_state.bind_host_ledger(None)


def start_record(state: HostState, session: Any, *, request_id: object, params: Any, meta: Any,
                 tool_name: str | None = None) -> SamplingRecord:
    """Start and activate the record of one request on ``session`` (the tables call it through
    :func:`~otel_sampling.instrumentation._guard.guarded`: None when it failed).

    Args:
        request_id: the JSON-RPC id of the request (kept on the ``rpc`` path only).
        params: the ``CreateMessageRequestParams``, read under mcp 2.x's snake_case names.
        meta: ``params._meta`` as the SDK hands it over (see :func:`parent_of`).
        tool_name: the tool call that triggered the request, when the table knows it; else the one
            call in flight on the session, if there is exactly one.
    """
    server = state.server_facts(session)
    transport, session_id = state.connections.describe(session)
    record = SamplingRecord(
        state.instruments,
        server_name=server.name,
        server_key=server.key,
        path=path_of(server.protocol_version),
        request_id=request_id,
        protocol_version=server.protocol_version,
        params=params,
        parent=parent_of(meta),
        ledger=state.ledger,
        server_version=server.version,
        session_id=session_id,
        transport=transport,
        tool_name=tool_name or state.connections.tool_for(session),
    )
    record.activate()
    return record


def _stdio_opened_wrapper(state: HostState) -> Callable[..., Any]:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        process = await wrapped(*args, **kwargs)
        _opened_transport.set(names.TRANSPORT_PIPE)  # the ClientSession opened next in this task
        return process

    return wrapper


def _http_opened_wrapper(state: HostState) -> Callable[..., Any]:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return wrapped(*args, **kwargs)
        initialised = wrapped(*args, **kwargs)
        _opened_transport.set(instance)  # read its session_id at sampling time: it is set later
        return initialised
    return wrapper


def _bind_transport(state: HostState, session: Any) -> None:
    transport = _opened_transport.get()
    if transport is not None:
        state.connections.transports[session] = transport
        _opened_transport.set(None)  # one transport, one session


def _session_init_wrapper(state: HostState) -> Callable[..., Any]:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return wrapped(*args, **kwargs)
        wrapped(*args, **kwargs)
        guarded("bind a session to its transport", _bind_transport, state, instance)
        return None  # __init__
    return wrapper


def _note_tool_call(state: HostState, session: Any, name: Any) -> list[str] | None:
    """The session's tool calls in flight, ``name`` among them; None when it is not noted."""
    if not isinstance(name, str):
        return None
    calls = state.connections.tool_calls.setdefault(session, [])
    if len(calls) >= TOOL_CALLS_PER_SESSION:
        return None
    calls.append(name)
    return calls


def _call_tool_wrapper(state: HostState) -> Callable[..., Any]:
    """``ClientSession.call_tool``: the session's tool calls in flight."""
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        name = args[0] if args else kwargs.get("name")
        calls = guarded("note a tool call", _note_tool_call, state, instance, name)
        try:
            return await wrapped(*args, **kwargs)
        finally:
            if calls is not None and name in calls:
                calls.remove(name)
    return wrapper


# The same module and attribute names in mcp 1.10+ and 2.x.
CONNECTION_TARGETS = (
    Target("mcp.client.stdio", "_create_platform_compatible_process", _stdio_opened_wrapper),
    Target("mcp.client.streamable_http", "StreamableHTTPTransport.__init__", _http_opened_wrapper),
    Target("mcp.client.session", "ClientSession.__init__", _session_init_wrapper),
    Target("mcp.client.session", "ClientSession.call_tool", _call_tool_wrapper),
)
