"""Host-side MCP sampling shared by the mcp 2.x table (:mod:`~otel_sampling.instrumentation.mcp_v2`)
and the mcp 1.x table (:mod:`~otel_sampling.instrumentation.mcp_v1`): one host state, built the same
way for both.

* :class:`HostState`: the instrumentor's :class:`~otel_sampling.metrics.Instruments`, its
  :class:`~otel_sampling.records.ledger.Ledger` (request identity, stall watch, grants: bound in
  :mod:`otel_sampling.state` between ``start`` and ``stop``) and its connections
  (:class:`~otel_sampling.instrumentation._mcp_connections.Connections`). Each table subclasses it
  with the SDK types it reads and :meth:`HostState.server_facts`.
* :func:`start_record`: one :class:`~otel_sampling.records.sampling.SamplingRecord` per request,
  with the same arguments on both majors (server facts, transport, session id, tool name, parent).
* The connection facts (``network.transport``, ``mcp.session.id``, the endpoint, the tool calls in
  flight) come from :mod:`~otel_sampling.instrumentation._mcp_connections`.
* What the MCP protocol says that the host side and the server side
  (:mod:`~otel_sampling.instrumentation.mcp_server`) both read: :data:`MODERN_PROTOCOL_VERSIONS` and
  :func:`path_of` (which negotiated versions take the 2026-07-28 multi-round-trip path,
  ``names.PATH_MRTR``, and which the JSON-RPC request path, ``names.PATH_RPC``; mcp 1.x negotiates
  none of the modern ones), and :func:`parent_of` (the W3C trace context a peer sent in
  ``params._meta``, as a parent for our span).
* :class:`ServerFacts`: which server a session talks to, read once per session. A server is kept
  (identity store, ledger, grants), labelled and matched to a policy table by the names
  :func:`otel_sampling.rules.servers.known_as` gives: its own name, or, for a name that is a
  placeholder (generated per process, or an SDK default), the endpoint the host reached it at and
  the stable form of the name.

Every wrapper of both tables passes straight through inside
``opentelemetry.instrumentation.utils.suppress_instrumentation()`` (no span, no metric point, no
in-flight change, no connection fact kept). Suppression is read in the context the callback is
called in: for a server's JSON-RPC request, the task that reads the session (the context the
session was opened in); on mcp 2.x's 2026-07-28 path, the task of the host's ``call_tool``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, NamedTuple

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.propagate import extract

from otel_sampling import names
from otel_sampling import state as otel_state
from otel_sampling.instrumentation._mcp_connections import Connections
from otel_sampling.metrics import Instruments
from otel_sampling.records.ledger import Ledger, server_key
from otel_sampling.records.sampling import SamplingRecord
from otel_sampling.rules.servers import names_of

logger = logging.getLogger(__name__)

INVALID_RESULT_CODE = -32602  # mcp answers INVALID_PARAMS for a callback return it cannot validate

# mcp_types.version.MODERN_PROTOCOL_VERSIONS (mcp 2.x); copied: mcp is an optional extra, and 1.x has none.
MODERN_PROTOCOL_VERSIONS = ("2026-07-28",)


def path_of(protocol_version: object) -> str:
    """``names.PATH_MRTR`` for a 2026-07-28 protocol version, else ``names.PATH_RPC`` (None included)."""
    return names.PATH_MRTR if protocol_version in MODERN_PROTOCOL_VERSIONS else names.PATH_RPC


def parent_of(meta: Any) -> otel_context.Context | None:
    """The context in ``params._meta``, or None (the ambient context) when there is no valid one.

    ``meta`` is a mapping (mcp 2.x hands ``_meta`` over as a dict) or a pydantic model keeping its
    extra keys (mcp 1.x's ``RequestParams.Meta``), or None. Never raises: a hostile peer can put
    anything there.
    """
    try:
        if type(meta) is not dict and hasattr(meta, "model_dump"):  # mcp 2.x: a dict, read as it is
            meta = meta.model_dump(by_alias=True, exclude_none=True)
        if not isinstance(meta, Mapping) or "traceparent" not in meta:
            return None
        parent = extract(meta)
    except Exception:
        logger.debug("otel-sampling: unreadable trace context in params._meta", exc_info=True)
        return None
    return parent if trace.get_current_span(parent).get_span_context().is_valid else None


class ServerFacts(NamedTuple):
    """What the host knows of the server that sent a request; each field None (or empty) when unknown.

    Read once per session (each table keeps them per ``ClientSession``), so that ``key``, a hash
    over the whole name when it is long, is computed once per session rather than per request.
    """

    name: str | None  # serverInfo.name, as the server reported it (the span attribute)
    version: str | None  # serverInfo.version
    protocol_version: str | None  # the negotiated MCP protocol version
    key: str | None  # ledger.server_key of the first name it is known by: how the identity store and ledger keep it
    label: str | None  # rules.servers.stable_name of the name: what the mcp.server.name label is made of
    known_as: tuple[str, ...] = ()  # rules.servers.known_as: the policy tables that may cover it, in order

    @classmethod
    def of(cls, server_info: Any, protocol_version: Any, endpoint: str | None = None) -> ServerFacts:
        """Read an ``Implementation`` (``serverInfo``) and a protocol version (non-strings are None),
        with the endpoint the session reached the server at, when known."""
        name, version = getattr(server_info, "name", None), getattr(server_info, "version", None)
        name = name if isinstance(name, str) else None
        names_known, label = names_of(name, endpoint)
        return cls(
            name,
            version if isinstance(version, str) else None,
            protocol_version if isinstance(protocol_version, str) else None,
            server_key(names_known[0] if names_known else None),
            label,
            names_known,
        )


UNKNOWN_SERVER = ServerFacts(None, None, None, None, None)


class HostState:
    """The host-side state of one instrumentor, the same on mcp 2.x and 1.x.

    Args:
        instruments: the instrumentor's tracer, meter, settings and label sets.

    :meth:`start` starts the stall watch and binds the ledger in :mod:`otel_sampling.state`, where
    :mod:`otel_sampling.sampling_api` finds it (``record_grant`` records there); :meth:`stop` undoes both.
    """

    __slots__ = ("instruments", "ledger", "connections", "running")

    def __init__(self, instruments: Instruments) -> None:
        self.instruments = instruments
        self.ledger = Ledger(instruments)
        self.connections = Connections()
        # Between start and stop: hooks left on sessions (mcp 1.x's request type) count nothing after.
        self.running = False

    def server_facts(self, session: Any, endpoint: str | None) -> ServerFacts:
        """The requesting server of ``session``, as far as this SDK major tells it; ``endpoint``: the
        one the session reached it at (:meth:`Connections.describe`), None when unknown."""
        raise NotImplementedError

    def count_rejected(self, session: Any, reason: str | None) -> None:
        """Count one sampling request of ``session`` that mcp rejected as invalid before any callback
        ran: ``otel_sampling.sampling.rejected`` with the server and ``reason`` (the type of its first
        validation error, pydantic's name), both bounded labels. No span: the request never reached
        the host, so it has no ending."""
        instruments = self.instruments
        server = self.server_facts(session, self.connections.endpoint(session))
        label = server.label if server.label is not None else server.name
        instruments.sampling_rejected.add(
            1,
            {
                names.MCP_SERVER_NAME: instruments.server_label.value(label),
                names.SAMPLING_REJECTION_REASON: instruments.rejection_reason_label.value(reason),
            },
        )

    def start(self) -> None:
        self.ledger.start()
        otel_state.bind_host_ledger(self.ledger)
        self.running = True

    def stop(self) -> None:
        self.running = False
        self.ledger.stop()
        otel_state.bind_host_ledger(None)


def first_error_type(error: Any, arm: str | None = None) -> str | None:
    """The type of the first error of a pydantic ``ValidationError`` (None when it has none); with
    ``arm``, of the first error located in that arm of a union (``CreateMessageRequest`` among the
    requests a server may send), when one is."""
    errors = error.errors(include_url=False, include_context=False, include_input=False)
    in_arm = [e for e in errors if arm is not None and arm in e.get("loc", ())]
    first = (in_arm or errors)[:1]
    return first[0].get("type") if first else None


def start_record(
    state: HostState,
    session: Any,
    *,
    request_id: object,
    params: Any,
    meta: Any,
    tool_name: str | None = None,
    round_parent: otel_context.Context | None = None,
) -> SamplingRecord:
    """Start and activate the record of one request on ``session`` (the tables call it through
    :func:`~otel_sampling.instrumentation._provider.guarded`: None when it failed).

    Args:
        request_id: the JSON-RPC id of the request (kept on the ``rpc`` path only).
        params: the ``CreateMessageRequestParams``, read under mcp 2.x's snake_case names.
        meta: ``params._meta`` as the SDK hands it over (see :func:`parent_of`).
        tool_name: the tool call that triggered the request, when the table knows it; else the one
            call in flight on the session, if there is exactly one.
        round_parent: the context of the tool call that asked for the request (its round on the
            2026-07-28 path; on mcp 1.x the one call in flight on the session), the parent when
            ``meta`` carries none; None: the ambient context.
    """
    transport, session_id, endpoint = state.connections.describe(session)
    server = state.server_facts(session, endpoint)
    parent = parent_of(meta)
    record = SamplingRecord(
        state.instruments,
        server_name=server.name,
        server_key=server.key,
        server_label=server.label,
        policy_names=server.known_as,
        path=path_of(server.protocol_version),
        request_id=request_id,
        protocol_version=server.protocol_version,
        params=params,
        parent=round_parent if parent is None else parent,
        ledger=state.ledger,
        server_version=server.version,
        session_id=session_id,
        transport=transport,
        tool_name=tool_name or state.connections.tool_for(session),
    )
    record.activate()
    return record
