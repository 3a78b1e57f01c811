"""How a sampling request ended: pure functions over what the callback returned or raised.

The ending vocabulary is ``names.ENDINGS``. Rules for error frames, first match wins
(``docs/telemetry.md`` "Ending rules"):

1. ``ErrorData.data.reason`` is itself an ending in the vocabulary other than ``completed`` (an
   error frame is never a completion): that ending.
   Then the host's own rules from the policy file (``[[ending_rules]]``), in file order.
2. code ``-1``: ``user.denied`` (MCP spec 2025-11-25, client/sampling, Error Handling:
   "User rejected sampling request").
3. code ``-32003``: ``policy.denied`` (the otel-sampling convention for policy refusals; its
   ``data.reason`` refines it by rule 1, e.g. ``policy.budget_exhausted``).
4. code ``-32001``: ``timeout`` (mcp SDK ``REQUEST_TIMEOUT``).
5. anything else: ``error``.

A callback that raises ``MCPError`` is classified by its error frame (the SDK sends that frame on
the wire); any other exception is ``error``. Cancellation is ``timeout`` when the peer's
``notifications/cancelled`` reason says the request timed out, else ``cancelled``.
A result is ``completed``, or ``refused`` when its stopReason says the model refused.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from otel_sampling import names

if TYPE_CHECKING:
    from otel_sampling.policy import EndingRule

if sys.version_info >= (3, 11):
    _GROUP: type = BaseExceptionGroup  # noqa: F821 - a builtin from 3.11, the only version this branch runs on
else:  # pragma: no cover - anyio brings the backport on 3.10
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
# stopReason values that mean the model declined (MCP stopReason is an open string; anthropic
# says "refusal", openai finish_reason says "content_filter").
_REFUSAL_STOP_REASONS = frozenset({"refusal", "content_filter"})
_TIMEOUT_MARKERS = ("timed out", "timeout")


class Ending(NamedTuple):
    """One classified ending: ``ending`` from ``names.ENDINGS``; ``error_type`` for ``error.type``
    (None when the request succeeded); ``resets_at`` from ``data.resetsAt`` when sent."""

    ending: str
    error_type: str | None = None
    resets_at: str | None = None


COMPLETED = Ending(names.ENDING_COMPLETED)


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
    if isinstance(stop_reason, str) and stop_reason in _REFUSAL_STOP_REASONS:
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
