"""Endings: how a sampling request or a provider call ended. Pure functions over what was returned or raised.

The ending vocabulary is ``names.ENDINGS`` (``docs/telemetry.md`` "Endings"); one refusal
vocabulary, :data:`REFUSAL_REASONS`, serves both sides.

Sampling requests. Rules for error frames, first match wins
(``docs/telemetry.md`` "Ending rules"):

1. ``ErrorData.data.reason`` is itself an ending in the vocabulary other than ``completed`` (an
   error frame is never a completion): that ending (so a policy refusal code with ``data.reason``
   ``policy.budget_exhausted`` is ``policy.budget_exhausted``).
2. the host's own rules from the policy file (``[[ending_rules]]``), in file order.
3. a known host's decline frame (:data:`~otel_sampling.rules.host_frames.KNOWN_DECLINES`, one
   sourced row per host: a message, exactly, and its code or any code): that row's ending. Among
   them the MCP spec's text for a user's rejection, "User rejected sampling request" (2025-11-25,
   client/sampling, Error Handling), whatever the code: ``user.denied`` (fastmcp sends a handler's
   exception as ``-32603`` with the exception's text, so a host that declines by raising sends
   that text with the code of a crash); and ``-32600`` "Sampling not supported",
   ``host.unsupported``, the mcp SDK's own answer (1.x and 2.x ``_default_sampling_callback``)
   when the host set no sampling callback: the host's decision not to sample, not an error.
4. code ``-1``: ``user.denied`` (MCP spec 2025-11-25, client/sampling, Error Handling:
   "User rejected sampling request").
5. the policy refusal code (``refusal_code``: the setting ``OTEL_SAMPLING_POLICY_REFUSAL_CODE``,
   default ``-31003``, outside JSON-RPC's reserved range as MCP 2026-07-28 asks), or ``-32003``,
   the legacy code older hosts send: ``policy.denied``.
6. code ``-32001``: ``timeout`` (mcp SDK ``REQUEST_TIMEOUT``).
7. anything else: ``error``.

A callback that raises ``MCPError`` is classified by its error frame (the SDK sends that frame on
the wire); any other exception is ``user.denied`` when its text is the spec's rejection text (rule
3: mcp sends a raising callback's text as the frame's message), else ``error``. Cancellation is
``timeout`` when the peer's ``notifications/cancelled`` reason says the request timed out, else
``cancelled``. A result is ``completed``, or ``refused`` when its stopReason says the model refused.

Then what the host's provider calls inside the callback ended with (:func:`from_what_happened`,
the rows of :data:`WHAT_HAPPENED`, first match wins): a host reports a provider's failure in its
own words, so the frame alone is not the ending.

a. a generic failure (a ``-32603`` frame the rules above read as ``error``, or a raised exception
   they read as ``error``) after a last provider call that failed or was refused: that call's
   ending (``model.unavailable``, ``timeout``, ``refused``, ...); ``error.type`` stays the frame's.
b. a result while every provider call inside failed: the last failed call's ending and
   ``error.type`` (the host turned the failure into an answer).
c. a result read as ``completed`` whose last successful provider call ended ``refused``:
   ``refused`` (pydantic-ai reports no stopReason, fastmcp maps ``content_filter`` to ``endTurn``).

Provider calls (``docs/telemetry.md`` "Provider call endings"). A call that raised is classified
by its exception (:func:`failure_of`: ``cancelled``, ``timeout``, ``model.unavailable``, ``error``).
A call that raised nothing ends by its answer (:func:`answer_ending`). Provider answers, first
match wins:

1. It reports an error (:func:`reported_error_type`): anthropic ``type: "error"``; a Responses
   ``status: "failed"``, ``response.failed`` or ``error`` event; an ``error`` member of any JSON
   type (string, list, number, object) that is not null, false, 0, ``""``, ``[]`` or ``{}``.
   ``error.type``: its name (below); ending by that name as for a raised envelope
   (:func:`reported_ending`: ``timeout``, ``model.unavailable``, else ``error``).
2. It holds no answer: no choice object (Chat Completions), no ``content`` list (Messages), no
   ``output`` list (Responses), a body that is not a JSON object; a complete stream without its
   message (anthropic ``message_start``) or output (the Responses terminal event's).
   ``error``, ``error.type`` ``empty_response``.
3. A finish reason says the model declined (:data:`REFUSAL_REASONS`: anthropic ``refusal``,
   openai ``content_filter``): ``refused``.
4. The model's refusal came in a field of its own: Chat Completions ``message.refusal``
   (``delta.refusal`` in a stream) holds a non-empty string, a Responses output has a
   ``refusal`` content part: ``refused``.
5. Anything else, and an answer we never read (a raw response closed unparsed; the SDK raised
   nothing): ``completed``.

Rule 1 names the error by the first of the provider's naming fields (openai ``code`` then
``type``, anthropic ``type``) that is a non-empty string, or an integer written as its decimal
string (the openai SDK writes a raised error's ``code`` as ``str(code)``, so a body and a stream
chunk give one name; :func:`error_type_of` reads a raised one the same way); else ``error``
(``failed`` for a failed Responses status): one low-cardinality name for an error sent as a
string, a list or a number. The empty ``error`` values are the openai SDK's own test before it
raises an error sent in a stream, so a body and a chunk agree. Anthropic's documented empty answer
(``content: []`` with ``stop_reason: "end_turn"``, "Handling stop reasons") holds its ``content``
list: rule 5. A stream (:func:`stream_ending`): rule 1 however it ended; with its final event,
rules 2 to 5; read to its end without it, ``error`` (``incomplete_stream``); left early by the
host, ``cancelled``.

Fallbacks, for when classifying fails (our failure, never the host's): :data:`FAILED`,
:data:`CANCELLED`, :func:`failed_frame`. The server side's ``unanswered``: :data:`UNANSWERED`.

Span status
-----------

Whether an MCP span is an error (:func:`receiver_failed`, :func:`sender_failed`), by the JSON-RPC
code the answer carried (MCP semantic conventions, ``model/mcp/common.yaml``, read at
semantic-conventions-genai ``0e5e6a8``).

The receiver of a request (our host's SERVER ``sampling/createMessage`` span: the host receives the
server's request) follows ``mcp.server.status.attributes``: the codes of
:data:`RECEIVER_NOT_ERRORS` "indicate that the caller sent a request the receiver could not serve and
SHOULD NOT be considered errors"; any other code, or a failure without a code (a callback that
raised, a timeout), is an error. The sender (the MCP server's CLIENT span) follows
``mcp.client.status.attributes``: "All JSON-RPC error codes SHOULD be considered errors".
``error.type`` is set either way (the ending's own type, ``host.unsupported`` for ``-32600``
"Sampling not supported"); only the span status differs.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from otel_sampling import names
from otel_sampling.rules import host_frames
from otel_sampling.rules.values import Ending, Failure, ProviderCalls, Response

if TYPE_CHECKING:
    from otel_sampling.policy import EndingRule

if sys.version_info >= (3, 11):
    _GROUP: type = BaseExceptionGroup  # noqa: F821 - a builtin from 3.11, the only version this branch runs on
else:  # pragma: no cover - the backport, a dependency on 3.10
    from exceptiongroup import BaseExceptionGroup as _GROUP

logger = logging.getLogger(__name__)
NO_RULES: tuple[EndingRule, ...] = ()

USER_REJECTED_CODE = names.ERROR_CODE_USER_REJECTED  # MCP spec: user rejected the sampling request
POLICY_REFUSAL_CODE = names.ERROR_CODE_POLICY_REFUSAL  # the default; the setting may name another
LEGACY_POLICY_REFUSAL_CODE = names.ERROR_CODE_POLICY_REFUSAL_LEGACY  # older hosts' policy refusals
REQUEST_TIMEOUT_CODE = -32001  # mcp_types.REQUEST_TIMEOUT
INTERNAL_ERROR_CODE = -32603  # JSON-RPC 2.0 Internal error (mcp_types.INTERNAL_ERROR)
USER_REJECTED_MESSAGE = host_frames.USER_REJECTED_MESSAGE
CONNECTION_CLOSED_CODE = -32000  # mcp_types.CONNECTION_CLOSED
#: Codes the mcp SDK raises for a failure on its own side (a timeout, a closed connection), in an
#: ``MCPError`` no answer carried; its own span records no ``rpc.response.status_code`` for them.
_LOCAL_CODES = frozenset({REQUEST_TIMEOUT_CODE, CONNECTION_CLOSED_CODE})

# An error frame is never a completion, whatever its data.reason says: the requester got an error.
_FRAME_ENDINGS = frozenset(names.ENDINGS) - {names.ENDING_COMPLETED}
_CODE_ENDINGS: Mapping[int, str] = {
    USER_REJECTED_CODE: names.ENDING_USER_DENIED,
    LEGACY_POLICY_REFUSAL_CODE: names.ENDING_POLICY_DENIED,
    REQUEST_TIMEOUT_CODE: names.ENDING_TIMEOUT,
}
#: Stop / finish reasons that mean the model declined, for a sampling result's ``stopReason`` (an
#: open string in MCP) and a provider's finish reasons alike: anthropic ``stop_reason="refusal"``,
#: openai ``finish_reason="content_filter"``.
REFUSAL_REASONS = frozenset({"refusal", "content_filter"})
_TIMEOUT_MARKERS = ("timed out", "timeout")


COMPLETED = Ending(names.ENDING_COMPLETED)
REFUSED = Ending(names.ENDING_REFUSED)
#: Server side, 2026-07-28 path: no retry carried an answer (denied, abandoned or lost on the client).
UNANSWERED = Ending(names.ENDING_UNANSWERED, names.ENDING_UNANSWERED)
#: What an ending is when classifying it failed (a broken ending rule, a hostile value: our failure):
#: a cancellation stays ``cancelled``, anything else is ``error`` with an unknown type.
CANCELLED = Ending(names.ENDING_CANCELLED, names.ERROR_TYPE_CANCELLED)
FAILED = Ending(names.ENDING_ERROR, names.UNKNOWN_LABEL)


def failed_frame(code: object) -> Ending:
    """The fallback ending of an error frame whose classification failed: ``error`` with its code."""
    return Ending(names.ENDING_ERROR, str(code) if isinstance(code, int) else names.UNKNOWN_LABEL)


def from_error_frame(
    code: object,
    data: object,
    message: object = None,
    rules: Sequence[EndingRule] = NO_RULES,
    refusal_code: int = POLICY_REFUSAL_CODE,
) -> Ending:
    """Classify a JSON-RPC error frame (``ErrorData`` returned, or ``MCPError`` raised).

    ``rules`` are the policy file's ``[[ending_rules]]`` (tried after ``data.reason``, before the
    built-in codes); ``message`` is the frame's message, which only those rules read;
    ``refusal_code`` is the configured policy refusal code (``Settings.policy_refusal_code``).
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
        ending = host_frames.decline_ending(code, message) or _code_ending(code, refusal_code)
    return Ending(ending, str(code), resets_at)


def is_generic_frame(code: object, ending: Ending) -> bool:
    """True for a ``-32603`` (JSON-RPC internal error) frame the rules read as ``error``: what a
    host that turns every exception into a frame (fastmcp) sends for a provider's failure too."""
    return ending.ending == names.ENDING_ERROR and code == INTERNAL_ERROR_CODE


def _code_ending(code: object, refusal_code: int) -> str:
    if not isinstance(code, int):
        return names.ENDING_ERROR
    if code == refusal_code:
        return names.ENDING_POLICY_DENIED
    return _CODE_ENDINGS.get(code, names.ENDING_ERROR)


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
        return REFUSED
    return COMPLETED


def from_cancellation(peer_reason: str | None) -> Ending:
    """Classify a cancelled callback by the reason in the peer's ``notifications/cancelled``."""
    if peer_reason and any(marker in peer_reason.lower() for marker in _TIMEOUT_MARKERS):
        return Ending(names.ENDING_TIMEOUT, names.ENDING_TIMEOUT)
    return Ending(names.ENDING_CANCELLED, names.ENDING_CANCELLED)


class Happened(NamedTuple):
    """A sampling request's ending as its frame or result said it, and what was around it.

    Attributes:
        told: the ending the rules gave the frame, result or exception.
        result: the callback returned a result (not an error frame, not an exception).
        generic: the frame is a generic failure (:func:`is_generic_frame`, or a raised exception
            read as ``error``).
        calls: what the provider calls inside the callback ended with.
    """

    told: Ending
    result: bool
    generic: bool
    calls: ProviderCalls


class WhatHappenedRule(NamedTuple):
    """One row of :data:`WHAT_HAPPENED`: the ending it gives a request it applies to, or None."""

    name: str
    ending: Callable[[Happened], Ending | None]


def _after_a_failed_call(h: Happened) -> Ending | None:
    last = h.calls.last
    if h.generic and last is not None and (last.error_type is not None or last.ending == names.ENDING_REFUSED):
        return Ending(last.ending, h.told.error_type, h.told.resets_at)
    return None


def _every_call_failed(h: Happened) -> Ending | None:
    calls = h.calls
    return calls.last_failed if h.result and calls.produced is None else None


def _produced_by_a_refusal(h: Happened) -> Ending | None:
    produced = h.calls.produced
    refused = produced is not None and produced.ending == names.ENDING_REFUSED
    return REFUSED if h.result and refused and h.told.ending == names.ENDING_COMPLETED else None


#: Rules a., b. and c. of the module docstring, in order; first match wins, else the frame's ending.
WHAT_HAPPENED: tuple[WhatHappenedRule, ...] = (
    WhatHappenedRule("a generic failure after a provider call that failed or was refused", _after_a_failed_call),
    WhatHappenedRule("a result while every provider call failed", _every_call_failed),
    WhatHappenedRule("a completed result produced by a refused provider call", _produced_by_a_refusal),
)


def from_what_happened(happened: Happened) -> Ending:
    """The ending of a sampling request from what its provider calls ended with (:data:`WHAT_HAPPENED`,
    first match wins), else the ending its frame, result or exception was given."""
    for rule in WHAT_HAPPENED:
        ending = rule.ending(happened)
        if ending is not None:
            return ending
    return happened.told


def is_cancellation(exc: BaseException) -> bool:
    """True for the task-cancellation exceptions of asyncio (which anyio uses there) and trio."""
    cls = type(exc)
    return isinstance(exc, asyncio.CancelledError) or (
        cls.__name__ == "Cancelled" and cls.__module__.startswith("trio")
    )


def from_exception(
    exc: BaseException, rules: Sequence[EndingRule] = NO_RULES, refusal_code: int = POLICY_REFUSAL_CODE
) -> Ending:
    """Classify an exception the callback raised that is not a cancellation (``KeyboardInterrupt``
    and ``SystemExit`` included: they are ``error``).

    An exception group holding exactly one exception (what anyio task groups raise, e.g. the
    mcp 2026-07-28 input-required driver) is classified by that exception.
    """
    exc = _single_leaf(exc)
    code = frame_code(exc)
    if code is not None:  # mcp.MCPError carries its ErrorData
        error = getattr(exc, "error", None)
        return from_error_frame(
            code, getattr(error, "data", None), getattr(error, "message", None), rules, refusal_code
        )
    if _text_is(exc, USER_REJECTED_MESSAGE):  # mcp sends a raising callback's text as the frame's message
        return Ending(names.ENDING_USER_DENIED, qualified_name(type(exc)))
    return Ending(names.ENDING_ERROR, qualified_name(type(exc)))


def _text_is(exc: BaseException, text: str) -> bool:
    """``str(exc) == text``, read only for an exception holding one argument of that length (a
    hostile ``__str__`` or a huge message is never formatted)."""
    args = exc.args
    return len(args) == 1 and isinstance(args[0], str) and len(args[0]) == len(text) and args[0] == text


def frame_code(exc: BaseException) -> int | None:
    """The JSON-RPC code of the error frame ``exc`` carries (``mcp.MCPError`` holds its
    ``ErrorData``; a group of one exception is read by that exception), else None."""
    code = getattr(getattr(_single_leaf(exc), "error", None), "code", None)
    return code if isinstance(code, int) else None


def status_code(code: object) -> str | None:
    """``rpc.response.status_code`` of an answer with error code ``code``: the code as a string,
    as the MCP semantic conventions and the mcp SDK write it (``"-32602"``); None for no integer."""
    if not isinstance(code, int) or isinstance(code, bool):
        return None
    try:
        return str(code)
    except ValueError:  # past Python's int-to-str digit limit (JSON parsers refuse such ints first)
        return None


def answered_code(exc: BaseException) -> int | None:
    """The code of the error frame the peer answered with, for an exception raised while waiting
    for the answer: :func:`frame_code`, except for the mcp SDK's own failures (a timeout, a closed
    connection, ``NoBackChannelError``), which no answer carried."""
    leaf = _single_leaf(exc)
    code = frame_code(leaf)
    if code in _LOCAL_CODES or type(leaf).__name__ == "NoBackChannelError":
        return None
    return code


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


#: ``gen_ai.response.finish_reasons`` of a provider call keeps its first reasons (one per choice or
#: candidate), up to this many: an answer asked for more candidates is rare, a hostile one is bounded.
MAX_FINISH_REASONS = 16


def inference_finish_reasons(reported: tuple[str, ...], ending: str) -> tuple[str, ...]:
    """``gen_ai.response.finish_reasons`` of a provider call: the reasons the answer reported, else
    ``("error",)`` when the call did not complete (it failed, timed out, was cancelled, or its
    stream ended before the final event): GenAI semconv (``client-inference.md``): "If a finish
    reason was expected but not received ... instrumentations SHOULD report `error` for that
    position instead of omitting it". A call that completed or was refused (a whole answer, such as
    a blocked prompt, which has no candidate to give a reason) and reported none has none.

    At most :data:`MAX_FINISH_REASONS` are kept, the first ones (openai ``n``, Gemini
    ``candidateCount``: one per choice or candidate): a hostile answer with thousands of candidates
    cannot make the attribute as long."""
    if reported:
        return reported[:MAX_FINISH_REASONS]
    return () if ending in _ANSWERED else (names.FINISH_REASON_ERROR,)


_ANSWERED = frozenset({names.ENDING_COMPLETED, names.ENDING_REFUSED})


# ---------------------------------------------------------------------- provider calls
# Endings of failed provider calls (docs/telemetry.md "Provider call endings").
# Google's names (google.rpc.Code, the status of a Gemini API / Vertex AI error) sit beside anthropic's and openai's.
_UNAVAILABLE_ERROR_TYPES = frozenset(
    {
        "overloaded_error",
        "rate_limit_error",
        "api_error",
        "server_error",
        "rate_limit_exceeded",
        "insufficient_quota",
        "RESOURCE_EXHAUSTED",
        "UNAVAILABLE",
        "INTERNAL",
    }
)
_TIMEOUT_ERROR_TYPES = frozenset({"timeout_error", "DEADLINE_EXCEEDED"})
EMPTY_RESPONSE = Ending(names.ENDING_ERROR, names.ERROR_TYPE_EMPTY_RESPONSE)
INCOMPLETE_STREAM = Ending(names.ENDING_ERROR, names.ERROR_TYPE_INCOMPLETE_STREAM)
LEFT_EARLY = Ending(names.ENDING_CANCELLED)  # the host closed a stream: its choice, no error


def error_name(value: object) -> str | None:
    """A value that names an error: a non-empty string as sent, an integer as its decimal string
    (as the openai SDK writes a raised error's ``code``); None for anything else (null, a bool, a
    float, an object, a list)."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return str(value)
        except ValueError:  # past Python's int-to-str digit limit (JSON parsers refuse such ints first)
            return None
    return None


def reported_error_type(
    error: object,
    named_by: Sequence[object] = (),
    *,
    marked: bool = False,
    fallback: str = names.ERROR_TYPE_ERROR_EVENT,
) -> str | None:
    """``error.type`` of the error an answer reports in its body (rule 1), or None when it reports none.

    Args:
        error: the answer's ``error`` member as sent, any JSON value (None: absent).
        named_by: the values of the fields that may name it, in the provider's order (openai
            ``code`` then ``type``, anthropic ``type``), as sent (None when absent).
        marked: the answer says it failed, whatever its ``error`` member (anthropic
            ``type: "error"``, Responses ``status: "failed"``, a Responses stream ``error`` event).
        fallback: the name when no field names it.

    An answer reports an error when it is ``marked`` or its ``error`` member is JSON-truthy (not
    null, false, 0, ``""``, ``[]`` or ``{}``: the openai SDK's own test before it raises an error
    sent in a stream). It is named by the first :func:`error_name` of ``named_by``, else ``fallback``.
    """
    if not marked and not error:
        return None
    return next((name for value in named_by if (name := error_name(value)) is not None), fallback)


def reported_ending(error_type: str) -> str:
    """The ending of a failure named ``error_type``: ``timeout`` for ``timeout_error``;
    ``model.unavailable`` for an overloaded, rate-limited or server error; else ``error``."""
    if error_type in _TIMEOUT_ERROR_TYPES:
        return names.ENDING_TIMEOUT
    if error_type in _UNAVAILABLE_ERROR_TYPES:
        return names.ENDING_MODEL_UNAVAILABLE
    return names.ENDING_ERROR


def answer_ending(response: Response | None, error_type: str | None = None) -> Ending:
    """Ending and ``error.type`` of a call that raised nothing: the table in the module docstring.

    Args:
        response: what its answer reported (None: we never read it, rule 5).
        error_type: a failure found without an exception (an incomplete stream), which ends the
            call as rule 1 does, before what the answer reports.
    """
    if response is None:
        return Ending(reported_ending(error_type), error_type) if error_type is not None else COMPLETED
    # The fields read below, each once (a tuple's unpacking, cheaper than a read of each by name).
    _, _, finish_reasons, _, _, _, reported_error, answered, refusal = response
    if error_type is None:
        error_type = reported_error
    if error_type is not None:
        return Ending(reported_ending(error_type), error_type)
    if not answered:
        return EMPTY_RESPONSE
    if refusal or not REFUSAL_REASONS.isdisjoint(finish_reasons):
        return REFUSED
    return COMPLETED


def failure_of(
    exc: BaseException,
    timeout_types: tuple[type, ...],
    connection_types: tuple[type, ...],
    envelope_fields: tuple[str, ...] = ("type",),
    status_field: str = "status_code",
) -> Failure:
    """``error.type`` and ending of a provider SDK exception whose HTTP status, if any, is its
    ``status_field`` (anthropic and openai ``status_code``, google-genai ``code``).

    Endings: ``cancelled`` for a cancellation (``asyncio.CancelledError``); ``timeout`` for a
    client timeout, HTTP 408 or 504, or an envelope ``timeout_error``; ``model.unavailable`` for
    a connection failure (including a raw ``httpx2`` transport error mid-stream), HTTP 429 or
    any 5xx (529 overloaded included), or an envelope that says overloaded / rate limited /
    server error (anthropic's mid-stream ``event: error`` arrives with status 200); else ``error``.
    """
    error_type = error_type_of(exc, timeout_types, connection_types, envelope_fields, status_field)
    if not isinstance(exc, Exception):
        return Failure(error_type, names.ENDING_CANCELLED)
    status = getattr(exc, status_field, None)
    status = status if isinstance(status, int) else None
    if isinstance(exc, timeout_types) or status in (408, 504) or error_type in _TIMEOUT_ERROR_TYPES:
        return Failure(error_type, names.ENDING_TIMEOUT)
    if (
        isinstance(exc, connection_types)
        or status == 429
        or (status is not None and status >= 500)
        or error_type in _UNAVAILABLE_ERROR_TYPES
    ):
        return Failure(error_type, names.ENDING_MODEL_UNAVAILABLE)
    return Failure(error_type, names.ENDING_ERROR)


def fallback_failure(exc: BaseException) -> Failure:
    """What a call ends with when classifying its error failed (our bug, not the host's)."""
    if not isinstance(exc, Exception):
        return Failure(names.ERROR_TYPE_CANCELLED, names.ENDING_CANCELLED)
    return Failure(qualified_name(type(exc)), names.ENDING_ERROR)


def error_type_of(
    exc: BaseException,
    timeout_types: tuple[type, ...],
    connection_types: tuple[type, ...],
    envelope_fields: tuple[str, ...] = ("type",),
    status_field: str = "status_code",
) -> str:
    """Low-cardinality ``error.type`` for a provider SDK exception (its HTTP status in ``status_field``).

    ``cancelled`` for a cancellation; the first of ``envelope_fields`` the provider's error body
    set that is an :func:`error_name` (anthropic ``type``: ``overloaded_error``; openai ``code``,
    then ``type``; an integer as its decimal string, as in an answer's body); else the HTTP
    status code; else ``timeout`` / ``connection_error`` for transport failures (including raw
    ``httpx2`` errors raised mid-stream); else the exception's qualified class name. Metric labels
    pass it through a bounded label set.
    """
    if not isinstance(exc, Exception):  # asyncio.CancelledError and other BaseExceptions
        return names.ERROR_TYPE_CANCELLED
    for field in envelope_fields:
        name = error_name(getattr(exc, field, None))
        if name is not None:
            return name
    status = getattr(exc, status_field, None)
    if isinstance(status, int) and not isinstance(status, bool):
        return str(status)
    if isinstance(exc, timeout_types):  # before connection: APITimeoutError subclasses APIConnectionError
        return names.ERROR_TYPE_TIMEOUT
    if isinstance(exc, connection_types):
        return names.ERROR_TYPE_CONNECTION
    return qualified_name(type(exc))


def stream_ending(response: Response | None, complete: bool, exhausted: bool, blind: bool = False) -> Ending:
    """Ending and ``error.type`` of a stream that raised nothing, once it is closed or collected.

    Args:
        response: what its events said so far.
        complete: the stream delivered its final event.
        exhausted: the host read it to the end (False: closed or dropped early).
        blind: an event could not be read (our failure, not the provider's): nothing says the
            stream was cut short or held no answer, so one that is complete or read to its end
            is judged by rules 1 and 3 to 5 only.

    An error its events reported (rule 1) ends it, however it ended; a complete stream ends by its
    answer (:func:`answer_ending`); one read to the end without its final event is ``error``
    (``error.type`` ``incomplete_stream``); one the host left early is ``cancelled``.
    """
    if response is not None and response.error_type is not None:
        return answer_ending(response)
    if blind and (complete or exhausted):
        return answer_ending(response._replace(answered=True) if response is not None else None)
    if complete:
        return answer_ending(response)
    if exhausted:
        return INCOMPLETE_STREAM
    return LEFT_EARLY


# ---------------------------------------------------------------------- span status
#: Parse error, Invalid Request, Method not found, Invalid params, Resource not found: as
#: ``rpc.response.status_code`` spells them (the code as a string).
RECEIVER_NOT_ERRORS: Final = frozenset({"-32700", "-32600", "-32601", "-32602", "-32002"})


def receiver_failed(error_type: str | None, status_code: str | None) -> bool:
    """Whether the receiver's span is an error: it failed (``error_type``) and its answer's JSON-RPC
    code (``status_code``, ``rpc.response.status_code``; None: no error frame was answered) is not
    one of :data:`RECEIVER_NOT_ERRORS`."""
    return error_type is not None and status_code not in RECEIVER_NOT_ERRORS


def sender_failed(error_type: str | None, status_code: str | None) -> bool:
    """Whether the sender's span is an error: it failed, or the answer carried any JSON-RPC error code."""
    return error_type is not None or status_code is not None
