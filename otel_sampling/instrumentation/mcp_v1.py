"""Host-side MCP sampling on mcp 1.x: the target table and state that
:class:`~otel_sampling.instrumentation.mcp.MCPSamplingInstrumentor` (entry point ``otel_sampling_mcp``)
uses when the installed mcp is 1.x.

mcp 1.x has no ``dispatch_input_request`` and no 2026-07-28 path: a server's
``sampling/createMessage`` is a JSON-RPC request that ``BaseSession._receive_loop`` hands to
``ClientSession._received_request(responder)``, which awaits the host's sampling callback and sends
what it returned with ``responder.respond(...)`` (a ``ClientResult`` or ``ErrorData``), all inside
that one call. So two targets, one job each:

* ``ClientSession.initialize``: remembers ``serverInfo.name`` and the negotiated protocol version
  per session (mcp 1.x keeps only the capabilities). Sessions initialised before ``instrument()``
  report no server name.
* ``ClientSession._received_request``: one SERVER-kind ``sampling/createMessage`` span and the
  metrics per ``CreateMessageRequest``, through the same :class:`SamplingRecord` as mcp 2.x, so
  the telemetry is the same (path ``rpc``). Task-augmented requests (experimental ``params.task``,
  answered with a task handle instead of a message) are left alone. What the SDK sends back is
  read by shadowing ``respond`` on that one ``RequestResponder`` for the length of the call (not
  by wrapping the class: every response of every in-process server session would pass through
  it, and an ``uninstrument()`` under a running callback would hide the answer of a request that
  was already being recorded).

What mcp 1.x does differently, and what the telemetry shows for it:

* The receive loop awaits the callback inline, so a peer's ``notifications/cancelled`` cannot be
  read while the callback runs, and a server's read deadline (mcp 1.x raises ``McpError(408)`` on
  the server and sends no cancellation) is invisible to the host: the request ends the way the
  callback ended it. A session closing under the callback ends it ``cancelled``.
* A callback that raises, or returns something the SDK cannot validate, makes the SDK answer
  ``-32602 Invalid request parameters``; the ending is ``error`` with the exception's class name as
  ``error.type``, as on mcp 2.x.
* Parameters use the wire's camelCase names (``maxTokens``); the record reads them through
  :class:`_SnakeCaseView`.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from typing import Any

from pydantic.alias_generators import to_camel

from otel_sampling import names
from otel_sampling.instrumentation._targets import Target
from otel_sampling.instrumentation.mcp import INVALID_RESULT_CODE, _parent_of
from otel_sampling.metrics import Instruments
from otel_sampling.records.sampling import SamplingRecord

logger = logging.getLogger(__name__)


class _Answer:
    """What the SDK sent for one request (set by the shadowed ``respond``)."""

    __slots__ = ("response", "sent")

    def __init__(self) -> None:
        self.response: Any = None
        self.sent = False


def _watch_respond(responder: Any, answer: _Answer) -> bool:
    """Shadow ``responder.respond`` on this instance so that ``answer`` gets what it sends.

    Returns False (and changes nothing) when the responder cannot take the attribute.
    """
    try:
        send = responder.respond

        async def respond(*args: Any, **kwargs: Any) -> Any:
            if not getattr(responder, "cancelled", False):  # respond() sends nothing once cancelled
                answer.response = args[0] if args else kwargs.get("response")
                answer.sent = True
            return await send(*args, **kwargs)

        responder.respond = respond
        return True
    except Exception:
        logger.debug("otel-sampling: could not watch the request's responder", exc_info=True)
        return False


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


class State:
    """The instrumentor's telemetry, the servers learned at initialize, and the mcp 1.x types."""

    __slots__ = ("instruments", "servers", "request_type", "error_type", "result_types")

    def __init__(self, instruments: Instruments) -> None:
        from mcp import types  # mcp is an optional extra

        self.instruments = instruments
        # ClientSession -> (serverInfo.name, protocol version), learned at initialize.
        self.servers: weakref.WeakKeyDictionary[Any, tuple[str | None, str | None]] = weakref.WeakKeyDictionary()
        self.request_type = types.CreateMessageRequest
        self.error_type = types.ErrorData
        # CreateMessageResultWithTools appeared during 1.x.
        self.result_types = tuple(getattr(types, name)
                                  for name in ("CreateMessageResult", "CreateMessageResultWithTools")
                                  if hasattr(types, name))


def _meta_mapping(meta: Any) -> dict[str, Any] | None:
    """``params._meta`` as a dict, extra keys (``traceparent``) included."""
    return meta.model_dump(by_alias=True, exclude_none=True) if meta is not None else None


def _start_record(state: State, session: Any, responder: Any, request: Any) -> SamplingRecord | None:
    try:
        server_name, protocol_version = state.servers.get(session, (None, None))
        record = SamplingRecord(
            state.instruments,
            server_name=server_name,
            path=names.PATH_RPC,
            request_id=responder.request_id,
            protocol_version=protocol_version,
            params=_SnakeCaseView(request.params),
            parent=_parent_of(_meta_mapping(responder.request_meta)),
        )
        record.activate()
        return record
    except Exception:
        logger.debug("otel-sampling: could not start the sampling record", exc_info=True)
        return None


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


def _finish(state: State, record: SamplingRecord, answer: _Answer, exc: BaseException | None = None) -> None:
    """End the record with what was sent or raised; never raises."""
    try:  # on its own: a failure here must not leave the request pending (span open, in-flight up)
        record.deactivate()
    except Exception:
        logger.debug("otel-sampling: could not deactivate the sampling record", exc_info=True)
    try:
        if exc is not None:
            record.end_with_exception(exc, None)
        else:
            _end_with_answer(state, record, answer)
    except Exception:
        logger.debug("otel-sampling: could not end the sampling record", exc_info=True)


def _received_request_wrapper(state: State) -> Callable[..., Any]:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        responder = args[0] if args else kwargs.get("responder")
        request = getattr(getattr(responder, "request", None), "root", None)
        if not isinstance(request, state.request_type) or getattr(request.params, "task", None) is not None:
            return await wrapped(*args, **kwargs)
        answer = _Answer()
        if not _watch_respond(responder, answer):
            return await wrapped(*args, **kwargs)
        try:
            record = _start_record(state, instance, responder, request)
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


def _initialize_wrapper(state: State) -> Callable[..., Any]:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        result = await wrapped(*args, **kwargs)
        try:
            state.servers[instance] = (getattr(result.serverInfo, "name", None), result.protocolVersion)
        except Exception:
            logger.debug("otel-sampling: could not read the initialize result", exc_info=True)
        return result

    return wrapper


TARGETS = (
    Target("mcp.client.session", "ClientSession.initialize", _initialize_wrapper),
    Target("mcp.client.session", "ClientSession._received_request", _received_request_wrapper),
)
