"""Server-side MCP sampling instrumentation for mcp 2.x (entry point ``otel_sampling_mcp_server``).

What an MCP server sees of the sampling requests it sends, on both protocol paths: one
CLIENT-kind ``sampling/createMessage`` span per request (MCP semantic conventions: the server
reports the client span for a request it initiates) and ``otel_sampling.sampling.server.requests``.

* Legacy path (protocol <= 2025-11-25): ``mcp.server.session.ServerSession.send_request``, which
  ``ServerSession.create_message`` and the ``Sample`` resolver call **with keyword arguments**
  (``request=``, ``result_type=``, ...). The span is current while the SDK sends, so the SDK's
  own ``MCP send sampling/createMessage`` span is its child, never a sibling. The ending is the
  client's result or error frame as the server got it (``MCPError``) or a timeout (``-32001``),
  with path ``rpc``. A request the connection cannot carry (``NoBackChannelError``, ``-32600``:
  any 2026-07-28 connection, stateless or JSON-response streamable HTTP) was never sent: path
  ``no_back_channel``, neither an ``rpc`` request nor a multi-round-trip one.
* 2026-07-28 path: ``mcp.server.runner.ServerRunner._on_request`` (private; one call per inbound
  JSON-RPC request, before the server's middleware). A result with ``resultType``
  ``input_required`` starts a span for each ``sampling/createMessage`` in ``inputRequests``; the
  retried call whose ``requestState`` matches carries the answer in ``inputResponses[key]`` and
  ends it. A client denial never reaches the server on this path: a request whose retry never
  comes, or comes without its answer, ends ``unanswered`` (after
  ``OTEL_SAMPLING_UNANSWERED_AFTER_SECONDS``, default 300, or at once when the retry lacks it,
  or when the process exits or ``uninstrument()`` is called).
  Pending requests are bounded (``OTEL_SAMPLING_MAX_PENDING``; past it the oldest ends
  ``unanswered``) and swept by the shared watchdog thread.

Every ``tools/call`` the server handles (both paths: ``ServerRunner._on_request`` serves each) is
a run named ``<server>/<tool>`` (:class:`~otel_sampling.records.run.RunScope` with ``tool=``; the
``agent.run.name`` label bounded like every host-named label): the provider calls the tool makes
roll up into it, and it ends ``failed`` when the handler raises or the result has ``isError``
true. On the 2026-07-28 path a round that ends ``input_required`` is not a run of its own: the
retry carrying its ``requestState`` continues it (bounded and expiring like the pending requests;
a round whose retry never comes records no run). A sampling request from a tool that gave no
answer, followed by a provider call that serves in the same run, makes both ``degraded`` with
reason ``server_model`` (:mod:`otel_sampling.records.server_sampling`).

A separate entry point from the host side (``otel_sampling_mcp``) so that a process can switch
either side off with ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS``. Inside
``opentelemetry.instrumentation.utils.suppress_instrumentation()`` both wrappers pass straight
through: no span, no metric point, no pending request.
"""

from __future__ import annotations

import atexit
from collections.abc import Callable, Mapping
from contextvars import ContextVar, Token
from typing import Any, NamedTuple

from cachetools import TTLCache
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_sampling import locks, names
from otel_sampling import state as otel_state
from otel_sampling.bounded import EvictingTTLCache
from otel_sampling.instrumentation._mcp_host import parent_of
from otel_sampling.instrumentation._provider import guarded
from otel_sampling.instrumentation._targets import Target, TargetTableInstrumentor
from otel_sampling.metrics import LABEL_MAX_LENGTH, Instruments, clean
from otel_sampling.records.run import Run, RunScope, current_run
from otel_sampling.records.server_sampling import ServerSamplingRecord

# (server name, tool name) of the inbound request being handled in this task: ServerSession
# knows neither.
_NO_NAMES: tuple[str | None, str | None] = (None, None)
_handling: ContextVar[tuple[str | None, str | None]] = ContextVar("otel_sampling_server_handling", default=_NO_NAMES)


class _Pending:
    """2026-07-28 requests awaiting the retry that answers them: ``requestState`` -> {input key:
    record}; bounded and expiring, every dropped request ends ``unanswered``. Records are ended
    after the lock is released: ending one runs the span processors (a synchronous exporter), and
    the event loop's ``add`` / ``take`` must not wait for the watchdog's export. A forked child
    starts with none (:func:`otel_sampling.state.forget_after_fork`)."""

    def __init__(self, max_entries: int, ttl_seconds: float) -> None:
        self._evicted: list[dict[str, ServerSamplingRecord]] = []  # dropped under the lock, ended after it
        self._by_state = EvictingTTLCache(
            max_entries, ttl_seconds, lambda state, records: self._evicted.append(records)
        )
        self._lock = locks.new()
        otel_state.forget_after_fork(self)

    @staticmethod
    def _end_unanswered(dropped: list[dict[str, ServerSamplingRecord]]) -> None:
        for records in dropped:
            for record in records.values():  # from the host's uninstrument() or exit, or the watchdog
                guarded("end an unanswered server-side request", record.end_unanswered)

    def _take_evicted(self) -> list[dict[str, ServerSamplingRecord]]:  # called with the lock held
        evicted, self._evicted = self._evicted, []
        return evicted

    def add(self, request_state: str | None, records: dict[str, ServerSamplingRecord]) -> None:
        """Wait for the retry carrying ``request_state``. A server that sends no state (None), or
        the same state twice, shares one entry: answers are then matched by input key only, and a
        request whose key is asked again is given up (unanswered)."""
        with self._lock:
            earlier = self._by_state.pop(request_state, None) or {}
            replaced = {key: earlier.pop(key) for key in records if key in earlier}
            self._by_state[request_state] = {**earlier, **records}
            dropped = self._take_evicted()
        self._end_unanswered([replaced, *dropped])

    def take(self, request_state: str | None) -> dict[str, ServerSamplingRecord]:
        with self._lock:
            return self._by_state.pop(request_state, None) or {}

    def sweep(self, now: float | None = None) -> None:
        """End every request whose answer did not come in time (``now``: the clock's time)."""
        with self._lock:
            self._by_state.expire(now)
            dropped = self._take_evicted()
        self._end_unanswered(dropped)

    def forget(self) -> None:
        """Drop every pending request without ending it (a forked child: the parent's requests
        end in the parent, where their retries arrive)."""
        with self._lock:
            self._by_state.clear()
            self._evicted = []

    def close(self) -> None:
        """End every pending request ``unanswered`` (the process is going away: no retry can come)."""
        with self._lock:
            self._by_state.expire()  # the expired ones first: reading values() would evict them after the take
            dropped = [*self._take_evicted(), *self._by_state.values()]
            self._by_state.clear()
        self._end_unanswered(dropped)

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_state)


class _State:
    def __init__(self, instruments: Instruments) -> None:
        import mcp_types  # mcp is an optional extra
        from mcp.shared.exceptions import NoBackChannelError

        self.instruments = instruments
        self.no_back_channel_type = NoBackChannelError
        self.request_type = mcp_types.CreateMessageRequest
        self.params_type = mcp_types.CreateMessageRequestParams
        self.result_types = (mcp_types.CreateMessageResult, mcp_types.CreateMessageResultWithTools)
        settings = instruments.settings
        self.pending = _Pending(settings.max_pending, settings.unanswered_after_seconds)
        # 2026-07-28 tool runs whose round ended input_required: requestState -> the round's run
        self.rounds: TTLCache[str, Run] = TTLCache(settings.max_pending, settings.unanswered_after_seconds)
        self.rounds_lock = locks.new()
        otel_state.forget_after_fork(self)

    def forget(self) -> None:
        """A forked child continues none of the parent's tool calls."""
        with self.rounds_lock:
            self.rounds.clear()

    def start(self) -> None:
        otel_state.watchdog.register(self.pending.sweep)
        # Before the SDK's own exit hook (registered earlier, so run later) flushes the spans.
        atexit.register(self.pending.close)

    def stop(self) -> None:
        otel_state.watchdog.unregister(self.pending.sweep)
        atexit.unregister(self.pending.close)
        self.pending.close()


def _send_request_wrapper(state: _State) -> Callable[..., Any]:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        request = kwargs.get("request", args[0] if args else None)
        if not isinstance(request, state.request_type):
            return await wrapped(*args, **kwargs)
        record = guarded("start a server-side sampling record", _start_rpc, state, instance, request)
        if record is None:
            return await wrapped(*args, **kwargs)
        token = guarded("make the server-side sampling span current", _make_current, record)
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            ending = (
                record.end_without_back_channel
                if isinstance(exc, state.no_back_channel_type)
                else record.end_with_exception
            )
            guarded("end a server-side sampling record", ending, exc)
            raise
        finally:
            if token is not None:
                otel_context.detach(token)
        if isinstance(result, state.result_types):
            guarded("end a server-side sampling record", record.end_with_result, result.model, result.stop_reason)
        else:
            guarded("end a server-side sampling record", record.end_with_result, None, None)
        return result

    return wrapper


def _make_current(record: ServerSamplingRecord) -> Token[otel_context.Context]:
    """Make the record's span current while the SDK sends, so its "MCP send sampling/createMessage"
    span is our child; the context token (when this fails, the send goes on without it)."""
    return otel_context.attach(trace.set_span_in_context(record.span))


def _start_rpc(state: _State, session: Any, request: Any) -> ServerSamplingRecord:
    protocol_version = session.protocol_version
    connection = getattr(session, "_connection", None)
    server_name, tool_name = _handling.get()
    return ServerSamplingRecord(
        state.instruments,
        path=names.PATH_RPC,  # ServerSession.send_request sends a JSON-RPC request, on any connection
        params=request.params,
        protocol_version=protocol_version,
        server_name=server_name,
        session_id=getattr(connection, "session_id", None),
        tool_name=tool_name,
        run=current_run(),
    )


def _on_request_wrapper(state: _State) -> Callable[..., Any]:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        method = args[1] if len(args) > 1 else kwargs.get("method")
        params = args[2] if len(args) > 2 else kwargs.get("params")
        if isinstance(params, Mapping) and "inputResponses" in params:
            guarded("end the server-side requests a retry answers", _answer, state, params)
        # The names are extras: when reading them fails, the request is handled without them.
        handling = guarded("read the server and tool names", _names_of, instance, method, params, fallback=_NO_NAMES)
        token = _handling.set(handling)
        opened = guarded("open the tool call's run", _open_tool_run, state, params, handling) if handling[1] else None
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            if opened is not None:
                guarded("end the tool call's run", _leave_tool_run, opened, exc)
            raise
        finally:
            _handling.reset(token)
        if opened is not None:
            guarded("end the tool call's run", _end_tool_run, state, opened, result)
        if isinstance(result, Mapping) and result.get("resultType") == "input_required":
            guarded(
                "start the server-side requests of an input-required result",
                _ask,
                state,
                instance,
                method,
                params,
                result,
            )
        return result

    return wrapper


class _ToolRun(NamedTuple):
    scope: RunScope
    run: Run
    caller: Token[otel_context.Context] | None  # the caller's context, attached around the run (None: none sent)


def _open_tool_run(state: _State, params: Any, handling: tuple[str | None, str | None]) -> _ToolRun:
    """Enter the run of a ``tools/call`` (``handling`` names its tool): ``<server>/<tool>``, in the
    caller's trace when ``params._meta`` carries its context (mcp's own server span, started later
    under that context, is then its sibling in the same trace), continuing the round its
    ``requestState`` answers, if any."""
    server, tool = (clean(part, LABEL_MAX_LENGTH) or names.UNKNOWN_LABEL for part in handling)
    scope = RunScope(f"{server}/{tool}", tool=(server, tool))
    parent = parent_of(params.get("_meta")) if isinstance(params, Mapping) else None
    caller = otel_context.attach(parent) if parent is not None else None
    try:
        run = scope.__enter__()
    except BaseException:
        if caller is not None:
            otel_context.detach(caller)
        raise
    key = _state_key(params.get("requestState")) if isinstance(params, Mapping) else None
    if key is not None:
        with state.rounds_lock:
            earlier = state.rounds.pop(key, None)
        if earlier is not None:
            run.take_over(earlier)
    return _ToolRun(scope, run, caller)


def _leave_tool_run(opened: _ToolRun, exc: BaseException | None = None) -> None:
    """Exit the run's scope (with the exception that left the tool call, if any), then the caller's context."""
    try:
        if exc is None:
            opened.scope.__exit__(None, None, None)
        else:
            opened.scope.__exit__(type(exc), exc, exc.__traceback__)
    finally:
        if opened.caller is not None:
            otel_context.detach(opened.caller)


def _end_tool_run(state: _State, opened: _ToolRun, result: Any) -> None:
    """End a tool call's run: ``failed`` on an ``isError`` result; an ``input_required`` result
    hands the run over to the retry that answers it."""
    run = opened.run
    try:
        if isinstance(result, Mapping):
            key = _state_key(result.get("requestState"))
            if result.get("resultType") == "input_required" and key is not None:  # no state: no retry to match
                run.hand_over()
                with state.rounds_lock:
                    state.rounds[key] = run
            elif result.get("isError") is True:
                run.set_outcome(names.OUTCOME_FAILED)
    finally:
        _leave_tool_run(opened)


def _answer(state: _State, params: Mapping[str, Any]) -> None:
    """A retried call: end the requests of the round it answers (missing answers: unanswered)."""
    responses = params.get("inputResponses")
    responses = responses if isinstance(responses, Mapping) else {}
    for key, record in state.pending.take(_state_key(params.get("requestState"))).items():
        answer = responses.get(key)
        if isinstance(answer, Mapping) and "model" in answer:
            record.end_with_result(answer.get("model"), answer.get("stopReason"))
        else:
            record.end_unanswered()


def _ask(state: _State, runner: Any, method: Any, params: Any, result: Mapping[str, Any]) -> None:
    """An ``InputRequiredResult``: one record per embedded ``sampling/createMessage``."""
    requests = result.get("inputRequests")
    if not isinstance(requests, Mapping):
        return
    connection = getattr(runner, "connection", None)
    server_name, tool = _names_of(runner, method, params)
    parent = parent_of(params.get("_meta")) if isinstance(params, Mapping) else None
    records: dict[str, ServerSamplingRecord] = {}
    for key, request in requests.items():
        if not isinstance(request, Mapping) or request.get("method") != names.METHOD_SAMPLING:
            continue
        try:
            typed = state.params_type.model_validate(request.get("params") or {}, by_name=False)
        except Exception:  # noqa: BLE001 - params the server sent but we cannot type: recorded without them
            typed = None
        records[str(key)] = ServerSamplingRecord(
            state.instruments,
            path=names.PATH_MRTR,
            params=typed,
            protocol_version=getattr(connection, "protocol_version", None),
            server_name=server_name,
            session_id=getattr(connection, "session_id", None),
            tool_name=tool,
            parent=parent,
        )
    if records:
        state.pending.add(_state_key(result.get("requestState")), records)


def _names_of(runner: Any, method: Any, params: Any) -> tuple[str | None, str | None]:
    """(server name, tool name) of an inbound request; never raises."""
    name = getattr(getattr(runner, "server", None), "name", None)
    tool = params.get("name") if method == "tools/call" and isinstance(params, Mapping) else None
    return (name if isinstance(name, str) else None), (tool if isinstance(tool, str) else None)


def _state_key(request_state: Any) -> str | None:
    return request_state if isinstance(request_state, str) else None


_TARGETS = (
    Target("mcp.server.session", "ServerSession.send_request", _send_request_wrapper),
    Target("mcp.server.runner", "ServerRunner._on_request", _on_request_wrapper),
)


class MCPServerSamplingInstrumentor(TargetTableInstrumentor):
    """Instruments the server side of MCP sampling in mcp 2.x (see the module docstring).

    ``instrument(tracer_provider=None, meter_provider=None)``; providers default to the global ones.
    Supported range: ``mcp >= 2.1, < 3`` (``instrumentation_dependencies``; outside it, nothing is
    wrapped and that is logged at DEBUG).
    """

    targets = _TARGETS
    dependencies = ("mcp >= 2.1, < 3",)
    # Every host on mcp 1.x loads this instrumentor too, and has no server side to instrument.
    warns_outside_range = False
    state_class = _State
