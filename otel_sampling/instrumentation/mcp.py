"""Host-side MCP sampling instrumentation for mcp 2.x (entry point ``otel_sampling_mcp``).

Wraps ``mcp.client.session.ClientSession.dispatch_input_request``, the one method both sampling
paths reach in mcp 2.x: the legacy server-to-client JSON-RPC request (protocol <= 2025-11-25) and
the 2026-07-28 multi-round-trip path (``InputRequiredResult.input_requests``, dispatched by the
client's input-required driver). Each ``CreateMessageRequest`` gets one SERVER-kind
``sampling/createMessage`` span (MCP semantic conventions: the client reports the server span
for a server-initiated request), parented from the ``traceparent`` in ``params._meta`` when the
server sent one. The SDK emits no span of its own for an inbound request, so there is no duplicate.

Also wraps ``ClientSession._intercept_notification`` (private, synchronous; runs before a
cancelled callback resumes) to learn why a request was cancelled: the peer's
``notifications/cancelled`` reason ("timed out after 0.5s" means the server's deadline expired).
"""

from __future__ import annotations

import logging
import weakref
from collections import OrderedDict
from collections.abc import Collection, Mapping
from typing import Any

from opentelemetry.propagate import extract

from otel_sampling import names
from otel_sampling.instrumentation._targets import Target, TargetTableInstrumentor
from otel_sampling.instruments import Instruments
from otel_sampling.sampling_record import SamplingRecord

logger = logging.getLogger(__name__)

_MODERN_PROTOCOL_VERSIONS = ("2026-07-28",)  # mcp_types.version.MODERN_PROTOCOL_VERSIONS
CANCEL_REASONS_PER_SESSION = 64  # cancel notifications remembered per session until consumed


class _CancelReasons:
    """Recent ``notifications/cancelled`` reasons per session, bounded, consumed once."""

    def __init__(self) -> None:
        self._by_session: weakref.WeakKeyDictionary[Any, OrderedDict[Any, str]] = weakref.WeakKeyDictionary()

    def note(self, session: Any, params: Mapping[str, Any] | None) -> None:
        if not isinstance(params, Mapping):
            return
        request_id, reason = params.get("requestId"), params.get("reason")
        if request_id is None or not isinstance(reason, str):
            return
        reasons = self._by_session.setdefault(session, OrderedDict())
        reasons[request_id] = reason
        while len(reasons) > CANCEL_REASONS_PER_SESSION:
            reasons.popitem(last=False)

    def pop(self, session: Any, request_id: Any) -> str | None:
        reasons = self._by_session.get(session)
        return reasons.pop(request_id, None) if reasons else None


class _State:
    __slots__ = ("instruments", "cancel_reasons", "request_type")

    def __init__(self, instruments: Instruments) -> None:
        from mcp_types import CreateMessageRequest  # imported here: mcp is an optional extra

        self.instruments = instruments
        self.cancel_reasons = _CancelReasons()
        self.request_type = CreateMessageRequest


def _start_record(state: _State, session: Any, ctx: Any, request: Any) -> SamplingRecord | None:
    try:
        server_info = session.server_info
        protocol_version = session.protocol_version
        meta = getattr(ctx, "meta", None)
        parent = extract(meta) if isinstance(meta, Mapping) and "traceparent" in meta else None
        record = SamplingRecord(
            state.instruments,
            server_name=getattr(server_info, "name", None),
            path=names.PATH_MRTR if protocol_version in _MODERN_PROTOCOL_VERSIONS else names.PATH_RPC,
            request_id=getattr(ctx, "request_id", None),
            protocol_version=protocol_version,
            params=request.params,
            parent=parent,
        )
        record.activate()
        return record
    except Exception:
        logger.debug("otel-sampling: could not start the sampling record", exc_info=True)
        return None


def _dispatch_wrapper(state: _State):
    async def wrapper(wrapped, instance, args, kwargs):
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
            try:
                record.deactivate()
                reason = state.cancel_reasons.pop(instance, getattr(ctx, "request_id", None))
                record.end_with_exception(exc, reason)
            except Exception:
                logger.debug("otel-sampling: could not end the sampling record", exc_info=True)
            raise
        try:
            record.deactivate()
            record.end_with_result(result)
        except Exception:
            logger.debug("otel-sampling: could not end the sampling record", exc_info=True)
        return result

    return wrapper


def _intercept_wrapper(state: _State):
    def wrapper(wrapped, instance, args, kwargs):
        try:
            method = args[0] if args else kwargs.get("method")
            if method == "notifications/cancelled":
                state.cancel_reasons.note(instance, args[1] if len(args) > 1 else kwargs.get("params"))
        except Exception:
            logger.debug("otel-sampling: could not read a cancel notification", exc_info=True)
        return wrapped(*args, **kwargs)

    return wrapper


_TARGETS = (
    Target("mcp.client.session", "ClientSession.dispatch_input_request", _dispatch_wrapper),
    Target("mcp.client.session", "ClientSession._intercept_notification", _intercept_wrapper),
)


class MCPSamplingInstrumentor(TargetTableInstrumentor):
    """Instruments the host side of MCP sampling in mcp 2.x (see the module docstring).

    ``instrument(tracer_provider=None, meter_provider=None)``; providers default to the global ones.
    """

    targets = _TARGETS

    def instrumentation_dependencies(self) -> Collection[str]:
        return ("mcp >= 2.3, < 3",)

    def make_state(self, instruments: Instruments) -> _State:
        return _State(instruments)
