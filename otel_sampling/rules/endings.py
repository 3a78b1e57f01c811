"""Endings: how a sampling request or a provider call ended. Pure functions over what was returned or raised.

The ending vocabulary is ``names.ENDINGS`` (``docs/telemetry.md`` "Endings"); one refusal
vocabulary, :data:`REFUSAL_REASONS`, serves both sides.

Sampling requests. Rules for error frames, first match wins
(``docs/telemetry.md`` "Ending rules"):

1. ``ErrorData.data.reason`` is itself an ending in the vocabulary other than ``completed`` (an
   error frame is never a completion): that ending (so ``-32003`` with ``data.reason``
   ``policy.budget_exhausted`` is ``policy.budget_exhausted``).
2. the host's own rules from the policy file (``[[ending_rules]]``), in file order.
3. code ``-1``: ``user.denied`` (MCP spec 2025-11-25, client/sampling, Error Handling:
   "User rejected sampling request").
4. code ``-32003``: ``policy.denied`` (the otel-sampling convention for policy refusals).
5. code ``-32001``: ``timeout`` (mcp SDK ``REQUEST_TIMEOUT``).
6. anything else: ``error``.

A callback that raises ``MCPError`` is classified by its error frame (the SDK sends that frame on
the wire); any other exception is ``error``. Cancellation is ``timeout`` when the peer's
``notifications/cancelled`` reason says the request timed out, else ``cancelled``.
A result is ``completed``, or ``refused`` when its stopReason says the model refused.

Provider calls (:func:`failure_of`, :func:`ending_of`): a failed call's ending follows from its
exception or its error envelope (``timeout``, ``model.unavailable``, ``cancelled``, ``error``); a
call that raised nothing is ``refused`` when a finish reason says so, else ``completed``
(``docs/telemetry.md`` "Provider call endings"). A stream that raised nothing (:func:`stream_ending`)
ends by its finish reasons when complete, ``error`` (``incomplete_stream``) when read to the end
without its final event, ``cancelled`` when the host left it early.

Fallbacks, for when classifying fails (our failure, never the host's): :data:`FAILED`,
:data:`CANCELLED`, :func:`failed_frame`. The server side's ``unanswered``: :data:`UNANSWERED`.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from otel_sampling import names
from otel_sampling.rules.values import Ending, Failure, Response

if TYPE_CHECKING:
    from otel_sampling.policy import EndingRule

if sys.version_info >= (3, 11):
    _GROUP: type = BaseExceptionGroup  # noqa: F821 - a builtin from 3.11, the only version this branch runs on
else:  # pragma: no cover - the backport, a dependency on 3.10
    from exceptiongroup import BaseExceptionGroup as _GROUP

logger = logging.getLogger(__name__)
NO_RULES: tuple[EndingRule, ...] = ()

USER_REJECTED_CODE = names.ERROR_CODE_USER_REJECTED  # MCP spec: user rejected the sampling request
POLICY_REFUSAL_CODE = names.ERROR_CODE_POLICY_REFUSAL  # otel-sampling convention (implementation-defined band)
REQUEST_TIMEOUT_CODE = -32001  # mcp_types.REQUEST_TIMEOUT

# An error frame is never a completion, whatever its data.reason says: the requester got an error.
_FRAME_ENDINGS = frozenset(names.ENDINGS) - {names.ENDING_COMPLETED}
_CODE_ENDINGS: Mapping[int, str] = {
    USER_REJECTED_CODE: names.ENDING_USER_DENIED,
    POLICY_REFUSAL_CODE: names.ENDING_POLICY_DENIED,
    REQUEST_TIMEOUT_CODE: names.ENDING_TIMEOUT,
}
#: Stop / finish reasons that mean the model declined, for a sampling result's ``stopReason`` (an
#: open string in MCP) and a provider's finish reasons alike: anthropic ``stop_reason="refusal"``,
#: openai ``finish_reason="content_filter"``.
REFUSAL_REASONS = frozenset({"refusal", "content_filter"})
_TIMEOUT_MARKERS = ("timed out", "timeout")


COMPLETED = Ending(names.ENDING_COMPLETED)
#: Server side, 2026-07-28 path: no retry carried an answer (denied, abandoned or lost on the client).
UNANSWERED = Ending(names.ENDING_UNANSWERED, names.ENDING_UNANSWERED)
#: What an ending is when classifying it failed (a broken ending rule, a hostile value: our failure):
#: a cancellation stays ``cancelled``, anything else is ``error`` with an unknown type.
CANCELLED = Ending(names.ENDING_CANCELLED, names.ERROR_TYPE_CANCELLED)
FAILED = Ending(names.ENDING_ERROR, names.UNKNOWN_LABEL)


def failed_frame(code: object) -> Ending:
    """The fallback ending of an error frame whose classification failed: ``error`` with its code."""
    return Ending(names.ENDING_ERROR, str(code) if isinstance(code, int) else names.UNKNOWN_LABEL)


def from_error_frame(code: object, data: object, message: object = None,
                     rules: Sequence[EndingRule] = NO_RULES) -> Ending:
    """Classify a JSON-RPC error frame (``ErrorData`` returned, or ``MCPError`` raised).

    ``rules`` are the policy file's ``[[ending_rules]]`` (tried after ``data.reason``, before the
    built-in codes); ``message`` is the frame's message, which only those rules read.
    ``error.type`` is the code as a string (MCP semantic conventions).
    """
    reason = resets_at = None
    if isinstance(data, Mapping):
        reason = data.get("reason")
        raw_resets = data.get("resetsAt")
        if isinstance(raw_resets, str):
            resets_at = raw_resets
    named = isinstance(reason, str) and reason in _FRAME_ENDINGS
    matched = None if named else next((rule for rule in rules if rule.matches(code, message)), None)
    if named:
        ending = str(reason)  # one of _FRAME_ENDINGS (checked above)
    elif matched is not None:
        ending = matched.ending
    else:
        ending = _CODE_ENDINGS.get(code, names.ENDING_ERROR) if isinstance(code, int) else names.ENDING_ERROR
    return Ending(ending, str(code), resets_at)


def or_fallback(classify_ending: Callable[..., Ending], fallback: Ending, *args: Any) -> Ending:
    """``classify_ending(*args)``, or ``fallback`` when it raises (a broken ending rule, a hostile
    value; logged at debug): a request whose ending cannot be classified still ends."""
    try:
        return classify_ending(*args)
    except Exception:
        logger.debug("otel-sampling: could not classify a sampling request's ending", exc_info=True)
        return fallback


def from_result(stop_reason: object) -> Ending:
    """Classify a ``CreateMessageResult`` by its ``stopReason``."""
    if isinstance(stop_reason, str) and stop_reason in REFUSAL_REASONS:
        return Ending(names.ENDING_REFUSED)
    return COMPLETED


def from_cancellation(peer_reason: str | None) -> Ending:
    """Classify a cancelled callback by the reason in the peer's ``notifications/cancelled``."""
    if peer_reason and any(marker in peer_reason.lower() for marker in _TIMEOUT_MARKERS):
        return Ending(names.ENDING_TIMEOUT, names.ENDING_TIMEOUT)
    return Ending(names.ENDING_CANCELLED, names.ENDING_CANCELLED)


def is_cancellation(exc: BaseException) -> bool:
    """True for the task-cancellation exceptions of asyncio (which anyio uses there) and trio."""
    cls = type(exc)
    return isinstance(exc, asyncio.CancelledError) or (cls.__name__ == "Cancelled"
                                                       and cls.__module__.startswith("trio"))


def from_exception(exc: BaseException, rules: Sequence[EndingRule] = NO_RULES) -> Ending:
    """Classify an exception the callback raised that is not a cancellation (``KeyboardInterrupt``
    and ``SystemExit`` included: they are ``error``).

    An exception group holding exactly one exception (what anyio task groups raise, e.g. the
    mcp 2026-07-28 input-required driver) is classified by that exception.
    """
    exc = _single_leaf(exc)
    error = getattr(exc, "error", None)
    code = getattr(error, "code", None)
    if isinstance(code, int):  # mcp.MCPError carries its ErrorData
        return from_error_frame(code, getattr(error, "data", None), getattr(error, "message", None), rules)
    return Ending(names.ENDING_ERROR, qualified_name(type(exc)))


def _single_leaf(exc: BaseException) -> BaseException:
    for _ in range(32):  # groups nest; a hostile chain cannot loop us
        if not isinstance(exc, _GROUP) or len(exc.exceptions) != 1:
            break
        exc = exc.exceptions[0]
    return exc


def qualified_name(cls: type) -> str:
    """``module.QualName`` of an exception class, the general OTel ``error.type`` form."""
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def finish_reasons(stop_reason: Any) -> tuple[str, ...]:
    """``gen_ai.response.finish_reasons`` from one stop reason (empty when absent)."""
    return (stop_reason,) if isinstance(stop_reason, str) and stop_reason else ()


# ---------------------------------------------------------------------- provider calls
# Endings of failed provider calls (docs/telemetry.md "Provider call endings").
_UNAVAILABLE_ERROR_TYPES = frozenset({"overloaded_error", "rate_limit_error", "api_error", "server_error",
                                      "rate_limit_exceeded", "insufficient_quota"})
_TIMEOUT_ERROR_TYPES = frozenset({"timeout_error"})

def ending_of(response: Response | None, error_type: str | None) -> str:
    """The ending of a call that raised nothing (``error_type`` None) or failed without an
    exception (a failure the answer reports: by its envelope type as in :func:`failure_of`, else
    ``error``; an incomplete stream: ``error``)."""
    if error_type is not None:
        if error_type in _TIMEOUT_ERROR_TYPES:
            return names.ENDING_TIMEOUT
        if error_type in _UNAVAILABLE_ERROR_TYPES:
            return names.ENDING_MODEL_UNAVAILABLE
        return names.ENDING_ERROR
    if response is not None and any(r in REFUSAL_REASONS for r in response.finish_reasons):
        return names.ENDING_REFUSED
    return names.ENDING_COMPLETED


def failure_of(exc: BaseException, timeout_types: tuple[type, ...], connection_types: tuple[type, ...],
               envelope_fields: tuple[str, ...] = ("type",)) -> Failure:
    """``error.type`` and ending of a provider SDK exception.

    Endings: ``cancelled`` for a cancellation (``asyncio.CancelledError``); ``timeout`` for a
    client timeout, HTTP 408 or 504, or an envelope ``timeout_error``; ``model.unavailable`` for
    a connection failure (including a raw ``httpx2`` transport error mid-stream), HTTP 429 or
    any 5xx (529 overloaded included), or an envelope that says overloaded / rate limited /
    server error (anthropic's mid-stream ``event: error`` arrives with status 200); else ``error``.
    """
    error_type = error_type_of(exc, timeout_types, connection_types, envelope_fields)
    if not isinstance(exc, Exception):
        return Failure(error_type, names.ENDING_CANCELLED)
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    if (isinstance(exc, timeout_types) or status in (408, 504) or error_type in _TIMEOUT_ERROR_TYPES):
        return Failure(error_type, names.ENDING_TIMEOUT)
    if (isinstance(exc, connection_types) or status == 429 or (status is not None and status >= 500)
            or error_type in _UNAVAILABLE_ERROR_TYPES):
        return Failure(error_type, names.ENDING_MODEL_UNAVAILABLE)
    return Failure(error_type, names.ENDING_ERROR)


def fallback_failure(exc: BaseException) -> Failure:
    """What a call ends with when classifying its error failed (our bug, not the host's)."""
    if not isinstance(exc, Exception):
        return Failure(names.ERROR_TYPE_CANCELLED, names.ENDING_CANCELLED)
    return Failure(qualified_name(type(exc)), names.ENDING_ERROR)


def error_type_of(exc: BaseException, timeout_types: tuple[type, ...], connection_types: tuple[type, ...],
                  envelope_fields: tuple[str, ...] = ("type",)) -> str:
    """Low-cardinality ``error.type`` for a provider SDK exception.

    ``cancelled`` for a cancellation; the first of ``envelope_fields`` the provider's error body
    set (anthropic ``type``: ``overloaded_error``; openai ``code``, then ``type``); else the HTTP
    status code; else ``timeout`` / ``connection_error`` for transport failures (including raw
    ``httpx2`` errors raised mid-stream); else the exception's qualified class name. Metric labels
    pass it through a bounded label set.
    """
    if not isinstance(exc, Exception):  # asyncio.CancelledError and other BaseExceptions
        return names.ERROR_TYPE_CANCELLED
    for field in envelope_fields:
        value = getattr(exc, field, None)
        if isinstance(value, str) and value:
            return value
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return str(status)
    if isinstance(exc, timeout_types):  # before connection: APITimeoutError subclasses APIConnectionError
        return names.ERROR_TYPE_TIMEOUT
    if isinstance(exc, connection_types):
        return names.ERROR_TYPE_CONNECTION
    return qualified_name(type(exc))


def stream_ending(response: Response | None, complete: bool, exhausted: bool) -> tuple[str | None, str]:
    """``(error.type, ending)`` of a stream that raised nothing, once it is closed or collected.

    Args:
        response: what its events said so far.
        complete: the stream delivered its final event (or its events could not be read at all and
            it was read to the end: nothing says it was cut short).
        exhausted: the host read it to the end (False: closed or dropped early).

    A complete stream ends by its finish reasons (:func:`ending_of`); one read to the end without
    its final event is ``error`` (``error.type`` ``incomplete_stream``); one the host left early is
    ``cancelled``.
    """
    if complete:
        return None, ending_of(response, None)
    if exhausted:
        return names.ERROR_TYPE_INCOMPLETE_STREAM, names.ENDING_ERROR
    return None, names.ENDING_CANCELLED
