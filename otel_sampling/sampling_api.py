"""The public API for the facts about MCP sampling that no wrapper can see.

* :func:`grant_context`: inside the host's sampling callback, the ``includeContext`` scope the
  host actually honoured (the protocol has no field for it).
* :func:`sampling_error`: a well-formed ``ErrorData`` for the host to return (or raise as
  ``MCPError``) when it denies a request, in the vocabulary the classification reads.
* :func:`record_grant`: a bounded consent increment (USD added to a server's sampling budget).

All three are exported from :mod:`otel_sampling`. They record through the host-side MCP
instrumentor (``otel_sampling_mcp``); without it they check their arguments and record nothing.
"""

from __future__ import annotations

import datetime
import logging
from typing import TYPE_CHECKING, Any

from opentelemetry import trace

from otel_sampling import instants, names, settings, state
from otel_sampling.metrics import clean, finite, recorded_in
from otel_sampling.records.ledger import record_violation

if TYPE_CHECKING:
    import mcp_types


logger = logging.getLogger(__name__)

#: Reasons :func:`sampling_error` accepts; all but the user's rejection get the policy refusal code.
REASONS = (
    names.ENDING_USER_DENIED,
    names.ENDING_POLICY_DENIED,
    names.ENDING_BUDGET_EXHAUSTED,
    names.ENDING_MODEL_UNAVAILABLE,
)
_GRANTED_BY_MAX_LENGTH = 128


def grant_context(scope: str) -> bool:
    """Report the ``includeContext`` scope the host granted to the sampling request being handled.

    Call it inside the sampling callback (the request is found through context variables). The
    scope becomes ``otel_sampling.sampling.include_context.granted`` on the request's span and on
    ``otel_sampling.sampling.requests``; requests without a call are recorded ``unreported``. A scope
    above the server's policy ``context_ceiling`` records a ``context_above_ceiling``
    violation; a retry granted a wider scope than the same request before, ``scope_widened``.

    Args:
        scope: ``"none"``, ``"thisServer"`` or ``"allServers"`` (the MCP spec's ``includeContext``
            values, narrowest first).

    Returns:
        True when a sampling request was current and the grant was recorded; False outside a
        sampling callback or without the MCP instrumentor.

    Raises:
        ValueError: ``scope`` is not one of the three values.
    """
    if scope not in names.INCLUDE_CONTEXT_VALUES:
        raise ValueError(f"scope must be one of {', '.join(names.INCLUDE_CONTEXT_VALUES)}; got {scope!r}")
    record = state.current_request.get()
    if record is None:
        return False
    try:
        record.grant_context(scope)
    except Exception:
        logger.debug("otel-sampling: could not record a context grant", exc_info=True)
    return True


def sampling_error(reason: str, message: str, resets_at: datetime.datetime | str | None = None) -> mcp_types.ErrorData:
    """A well-formed MCP ``ErrorData`` for denying a ``sampling/createMessage`` request.

    Return it from the sampling callback, or raise ``mcp.MCPError.from_error_data(...)``; both
    are classified alike (``docs/telemetry.md``, "Ending rules"). On mcp 1.x, return it: mcp 1.x
    answers any exception the callback raises with ``-32602``.

    Args:
        reason: the ending, one of ``"user.denied"`` (code ``-1``, the MCP spec's user rejection),
            ``"policy.denied"``, ``"policy.budget_exhausted"``, ``"model.unavailable"`` (the policy
            refusal code: ``OTEL_SAMPLING_POLICY_REFUSAL_CODE``, default ``-31003``, outside
            JSON-RPC's reserved range as MCP 2026-07-28 asks of codes it does not define; as read
            at ``instrument()`` of the MCP host instrumentor, else from the environment now).
            Sent as ``data.reason``, which the ending rules read first whatever the code.
        message: the human-readable ``message`` (not empty). It travels to the server; it is
            never recorded in telemetry.
        resets_at: when a budget resets: an aware ``datetime`` (sent as ISO 8601 UTC,
            ``2026-12-01T00:00:00Z``) or an ISO 8601 string with a UTC offset, sent as given.
            Sent as ``data.resetsAt``; recorded as ``otel_sampling.sampling.budget.resets_at``.

    Returns:
        ``ErrorData(code, message, data={"reason": reason[, "resetsAt": ...]})`` of the installed mcp:
        ``mcp_types.ErrorData`` on mcp 2.x, ``mcp.types.ErrorData`` on mcp 1.x.

    Raises:
        ValueError: an unknown reason, an empty message, a naive datetime or a string that is not
            an ISO 8601 date-time with an offset.
        ImportError: neither mcp 2.x nor mcp 1.x is installed.
    """
    if not isinstance(reason, str) or reason not in REASONS:
        raise ValueError(f"reason must be one of {', '.join(REASONS)}; got {reason!r}")
    if not isinstance(message, str) or not message.strip():
        raise ValueError("message must be a non-empty string")
    data: dict[str, Any] = {"reason": reason}
    if resets_at is not None:
        data["resetsAt"] = iso_instant(resets_at, "resets_at")
    code = names.ERROR_CODE_USER_REJECTED if reason == names.ENDING_USER_DENIED else _policy_refusal_code()
    return _error_data_type()(code=code, message=message, data=data)


def _policy_refusal_code() -> int:
    ledger = state.host_ledger()
    if ledger is not None:
        return ledger.instruments.settings.policy_refusal_code
    return settings.policy_refusal_code()


def _error_data_type() -> type[mcp_types.ErrorData]:
    try:
        from mcp_types import ErrorData  # mcp 2.x
    except ImportError:
        from mcp.types import ErrorData  # mcp 1.x: the same fields
    return ErrorData


def record_grant(server: str, add_usd: float, expires_at: datetime.datetime | str, granted_by: str) -> None:
    """Record a grant: ``add_usd`` more USD of sampling for ``server`` until ``expires_at``.

    Emits an ``otel_sampling.sampling.grant`` event on the current span (outside any recording span, on an
    INTERNAL span ``otel_sampling.sampling.grant`` of its own) with every field (who granted is an
    event attribute only, never a metric label), ``otel_sampling.sampling.grants{mcp.server.name}`` +1 and
    ``otel_sampling.sampling.granted.usd{mcp.server.name}`` + ``add_usd``. A grant for a server whose
    last ended sampling request (within ``OTEL_SAMPLING_IDENTITY_TTL_SECONDS``) did not end
    ``policy.budget_exhausted`` records a ``grant_without_exhaustion`` violation: a grant should
    answer an exhausted budget. Inside the callback of the request the grant unblocks, that
    request has not ended yet, so the one before it is what counts.

    Args:
        server: the MCP server's ``serverInfo.name`` (not empty).
        add_usd: USD added, a finite number above 0.
        expires_at: when the grant ends: an aware ``datetime`` or an ISO 8601 string with an offset.
        granted_by: who granted it (a user or approver id; not empty, cut to 128 characters).

    Raises:
        ValueError: an empty server or granted_by, a non-positive or non-finite amount, a bad
            ``expires_at``.
    """
    if not isinstance(server, str) or not server.strip():
        raise ValueError("server must be a non-empty string (the MCP serverInfo.name)")
    if isinstance(add_usd, bool) or not isinstance(add_usd, (int, float)) or not finite(add_usd) or add_usd <= 0:
        raise ValueError(f"add_usd must be a finite number of USD above 0; got {add_usd!r:.40}")
    expires = iso_instant(expires_at, "expires_at")
    if not isinstance(granted_by, str) or not granted_by.strip():
        raise ValueError("granted_by must be a non-empty string")
    ledger = state.host_ledger()
    if ledger is None:
        return
    try:
        _record(ledger, server, float(add_usd), expires, granted_by)
    except Exception:
        logger.debug("otel-sampling: could not record a grant", exc_info=True)


def _record(ledger: state.HostLedger, server: str, add_usd: float, expires: str, granted_by: str) -> None:
    instruments = ledger.instruments
    label = instruments.server_label.value(server)
    attributes = {names.MCP_SERVER_NAME: label}
    ledger.note_grant(server)
    current = trace.get_current_span()
    # Outside any span (a host with no tracing of its own) the grant gets a short span of its own.
    own = None if current.is_recording() else instruments.tracer.start_span(names.SPAN_SAMPLING_GRANT)
    span = own or current
    try:
        context = recorded_in(span)  # the exemplars name the span that carries the grant event
        instruments.sampling_grants.add(1, attributes, context=context)
        instruments.sampling_granted_usd.add(add_usd, attributes, context=context)
        max_length = instruments.settings.attribute_max_length
        span.add_event(
            names.EVENT_SAMPLING_GRANT,
            {
                names.MCP_SERVER_NAME: clean(server, max_length),
                names.SAMPLING_GRANT_ADD_USD: add_usd,
                names.SAMPLING_GRANT_EXPIRES_AT: expires,
                names.SAMPLING_GRANT_GRANTED_BY: clean(granted_by, _GRANTED_BY_MAX_LENGTH),
            },
        )
        if ledger.last_ending(server) != names.ENDING_BUDGET_EXHAUSTED:
            record_violation(instruments, span, names.VIOLATION_GRANT_WITHOUT_EXHAUSTION, label)
    finally:
        if own is not None:
            own.end()


def iso_instant(value: datetime.datetime | str, what: str) -> str:
    """``value`` as an ISO 8601 instant string (:func:`otel_sampling.instants.parse` decides what is
    valid): a string is kept as given, an aware ``datetime`` becomes UTC with a ``Z``.

    Raises:
        ValueError: not an aware ``datetime`` nor an ISO 8601 date-time string with an offset.
    """
    try:
        parsed = instants.parse(value, what)
    except TypeError as exc:
        raise ValueError(str(exc)) from None
    return value if isinstance(value, str) else instants.iso(parsed)
