"""Host-side MCP sampling on mcp 1.x: the target table and state that
:class:`~otel_sampling.instrumentation.mcp.MCPSamplingInstrumentor` (entry point ``otel_sampling_mcp``)
uses when the installed mcp is 1.x.

mcp 1.x has no ``dispatch_input_request`` and no 2026-07-28 path: a server's
``sampling/createMessage`` is a JSON-RPC request that ``BaseSession._receive_loop`` hands to
``ClientSession._received_request(responder)``, which awaits the host's sampling callback and sends
what it returned with ``responder.respond(...)`` (a ``ClientResult`` or ``ErrorData``), all inside
that one call. Two targets of its own, one job each:

* ``ClientSession.initialize``: remembers ``serverInfo`` (name, version) and the negotiated
  protocol version per session (mcp 1.x keeps only the capabilities), and has the session count
  the sampling requests its own validation rejects (:class:`_RejectionCounter`). Sessions initialised before
  ``instrument()`` report no server name or version.
* ``ClientSession._received_request``: one SERVER-kind ``sampling/createMessage`` span and the
  metrics per ``CreateMessageRequest``, through the same host state and :class:`SamplingRecord` as
  mcp 2.x (request identity and violations, stall watch, grants), so the telemetry is the same
  (path ``rpc``). Task-augmented requests (experimental ``params.task``, answered with a task
  handle instead of a message) are left alone. What the SDK sends back is read by shadowing
  ``respond`` on that one ``RequestResponder`` for the length of the call (not by wrapping the
  class: every response of every in-process server session would pass through it, and an
  ``uninstrument()`` under a running callback would hide the answer of a request that was already
  being recorded).

The connection targets (``network.transport``, ``mcp.session.id``, the endpoint, the tool calls
in flight per session) are mcp 2.x's, under the same names in mcp 1.x
(:mod:`~otel_sampling.instrumentation._mcp_connections`), plus mcp 1.x's own HTTP transport
function, ``streamablehttp_client``.

What mcp 1.x does differently, and what the telemetry shows for it:

* The receive loop awaits the callback inline, so a peer's ``notifications/cancelled`` cannot be
  read while the callback runs, and a server's read deadline (mcp 1.x raises ``McpError(408)`` on
  the server and sends no cancellation) is invisible to the host: the request ends the way the
  callback ended it. A session closing under the callback ends it ``cancelled``.
* The callback runs in the receive loop's task, not in the task of the host's ``call_tool``, so the
  tool is named only when exactly one ``call_tool`` is in flight on the session (as on mcp 2.x's
  JSON-RPC path). For the same reason the ambient context is the session's, not the tool call's,
  and an mcp 1.x server sends no trace context (an instrumented one may put a ``traceparent`` in
  ``params._meta``, which wins): the span's parent is then the context that one ``call_tool`` was
  made in, so the request joins the trace of the tool call that triggered it.
* A callback that raises, or returns something the SDK cannot validate, makes the SDK answer
  ``-32602 Invalid request parameters``; the ending is ``error`` with the exception's class name as
  ``error.type``, as on mcp 2.x (after a provider call that failed, that call's ending: the rules
  of :func:`~otel_sampling.rules.endings.from_what_happened`).
* Parameters use the wire's camelCase names (``maxTokens``); the record reads them through
  :class:`_SnakeCaseView`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Collection
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled
from pydantic.alias_generators import to_camel

from otel_sampling import names
from otel_sampling.instrumentation._mcp_connections import CONNECTION_TARGETS, HTTP_MANAGER_TARGETS_V1
from otel_sampling.instrumentation._mcp_host import (
    INVALID_RESULT_CODE,
    UNKNOWN_SERVER,
    HostState,
    ServerFacts,
    first_error_type,
    start_record,
)
from otel_sampling.instrumentation._provider import guarded
from otel_sampling.instrumentation._targets import Target
from otel_sampling.metrics import Instruments
from otel_sampling.records.sampling import SamplingRecord


class _Answer:
    """What the SDK sent for one request (set by the shadowed ``respond``)."""

    __slots__ = ("response", "sent")

    def __init__(self) -> None:
        self.response: Any = None
        self.sent = False


def _watch_respond(responder: Any, answer: _Answer) -> bool:
    """Shadow ``responder.respond`` on this instance so that ``answer`` gets what it sends.

    True once shadowed; raises (and changes nothing) when the responder cannot take the attribute.
    """
    send = responder.respond

    async def respond(*args: Any, **kwargs: Any) -> Any:
        if not getattr(responder, "cancelled", False):  # respond() sends nothing once cancelled
            answer.response = args[0] if args else kwargs.get("response")
            answer.sent = True
        return await send(*args, **kwargs)

    responder.respond = respond
    return True


class _SnakeCaseView:
    """Read-only view of an mcp 1.x pydantic model under mcp 2.x's snake_case field names.

    ``view.max_tokens`` reads ``model.maxTokens``; a name with no camelCase twin reads itself.
    """

    __slots__ = ("_model",)

    def __init__(self, model: Any) -> None:
        self._model = model

    def __getattr__(self, name: str) -> Any:
        camel = to_camel(name)
        return getattr(self._model, camel) if hasattr(self._model, camel) else getattr(self._model, name)

    def model_dump(self, *, include: Collection[str] | None = None, **kwargs: Any) -> dict[str, Any]:
        """``model.model_dump(include=..., **kwargs)`` with ``include`` given in snake_case (what the
        request fingerprint passes); the keys of the dump are the model's own."""
        fields = {to_camel(name) for name in include} if include is not None else None
        return self._model.model_dump(include=fields, **kwargs)  # type: ignore[no-any-return]


class State(HostState):
    """The shared host state, the servers learned at initialize, and the mcp 1.x types."""

    __slots__ = ("servers", "request_type", "error_type", "result_types")

    def __init__(self, instruments: Instruments) -> None:
        from mcp import types  # mcp is an optional extra

        super().__init__(instruments)
        self.servers: weakref.WeakKeyDictionary[Any, ServerFacts] = weakref.WeakKeyDictionary()
        self.request_type = types.CreateMessageRequest
        self.error_type = types.ErrorData
        # CreateMessageResultWithTools appeared during 1.x.
        self.result_types = tuple(
            getattr(types, name)
            for name in ("CreateMessageResult", "CreateMessageResultWithTools")
            if hasattr(types, name)
        )

    def server_facts(self, session: Any, endpoint: str | None) -> ServerFacts:
        """mcp 1.x keeps ``serverInfo`` only in the initialize result (read by the initialize target)."""
        return self.servers.get(session, UNKNOWN_SERVER)


def _end_with_answer(state: State, record: SamplingRecord, answer: _Answer) -> None:
    if not answer.sent:  # the responder was cancelled: nothing went back to the server
        record.end_with_cancellation(None)
        return
    response = getattr(answer.response, "root", answer.response)  # ClientResult wraps the result
    if isinstance(response, state.error_type):
        record.end_with_error_frame(response.code, response.data, response.message)
    elif isinstance(response, state.result_types):
        record.end_with_result(response.model, response.stopReason)
    else:  # a valid client result of another kind: not an answer to sampling
        record.end_with_error_frame(INVALID_RESULT_CODE, None)


def _end(state: State, record: SamplingRecord, answer: _Answer, exc: BaseException | None) -> None:
    if exc is not None:
        record.end_with_exception(exc, None)
    else:
        _end_with_answer(state, record, answer)


def _finish(state: State, record: SamplingRecord, answer: _Answer, exc: BaseException | None = None) -> None:
    """End the record with what was sent or raised; never raises."""
    # On its own: a failure here must not leave the request pending (span open, in-flight up).
    guarded("deactivate a sampling record", record.deactivate)
    guarded("end a sampling record", _end, state, record, answer, exc)


def _received_request_wrapper(state: State) -> Callable[..., Any]:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        responder: Any = args[0] if args else kwargs.get("responder")
        request = getattr(getattr(responder, "request", None), "root", None)
        if not isinstance(request, state.request_type) or getattr(request.params, "task", None) is not None:
            return await wrapped(*args, **kwargs)
        answer = _Answer()
        if not guarded("watch the request's responder", _watch_respond, responder, answer, fallback=False):
            return await wrapped(*args, **kwargs)
        try:
            record = guarded(
                "start a sampling record",
                start_record,
                state,
                instance,
                request_id=responder.request_id,
                params=_SnakeCaseView(request.params),
                meta=responder.request_meta,
                round_parent=state.connections.tool_call_context(instance),
            )
            if record is None:
                return await wrapped(*args, **kwargs)
            try:
                result = await wrapped(*args, **kwargs)
            except BaseException as exc:
                _finish(state, record, answer, exc)
                raise
            _finish(state, record, answer)
            return result
        finally:
            vars(responder).pop("respond", None)  # the class's method again (and no reference cycle)

    return wrapper


def _note_server(state: State, session: Any, result: Any) -> None:
    state.servers[session] = ServerFacts.of(
        result.serverInfo, result.protocolVersion, state.connections.endpoint(session)
    )


class _RejectionCounter:
    """A session's ``_receive_request_type`` (mcp 1.x validates every request the server sends with
    its ``model_validate`` in ``BaseSession._receive_loop`` and answers a failure -32602 there, with
    no hook before the callback): the same type, counting each ``sampling/createMessage`` it rejects.
    Holds the session weakly."""

    __slots__ = ("_type", "_state", "_session")

    def __init__(self, request_type: Any, state: State, session: Any) -> None:
        self._type, self._state, self._session = request_type, state, weakref.ref(session)

    def model_validate(self, data: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return self._type.model_validate(data, *args, **kwargs)
        except Exception as error:
            session = self._session()
            if session is not None and isinstance(data, dict) and data.get("method") == names.METHOD_SAMPLING:
                guarded("count a rejected sampling request", _count_rejected, self._state, session, error)
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._type, name)


def _count_rejected(state: State, session: Any, error: Any) -> None:
    if state.running and is_instrumentation_enabled() and callable(getattr(error, "errors", None)):
        state.count_rejected(session, first_error_type(error, "CreateMessageRequest"))


def _watch_rejections(state: State, session: Any) -> None:
    current = getattr(session, "_receive_request_type", None)
    if current is not None and not isinstance(current, _RejectionCounter):
        session._receive_request_type = _RejectionCounter(current, state, session)


def _initialize_wrapper(state: State) -> Callable[..., Any]:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        guarded("watch rejected sampling requests", _watch_rejections, state, instance)
        result = await wrapped(*args, **kwargs)
        guarded("read the initialize result", _note_server, state, instance, result)
        return result

    return wrapper


TARGETS = (
    Target("mcp.client.session", "ClientSession.initialize", _initialize_wrapper),
    Target("mcp.client.session", "ClientSession._received_request", _received_request_wrapper),
    *CONNECTION_TARGETS,
    *HTTP_MANAGER_TARGETS_V1,
)
