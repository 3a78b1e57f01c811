"""What an openai Responses API call reports (``responses.create`` / ``.stream()`` / ``.parse()``).

The GenAI semantic conventions use ``gen_ai.operation.name`` ``chat`` for both openai APIs and
tell them apart with ``openai.api.type`` (``chat_completions`` / ``responses``, set on the span). A
``Response`` has no finish reason; it is mapped onto the Chat Completions vocabulary so that one
query covers both APIs:

=================================================  ==========================================
``status`` (``incomplete_details.reason``)         ``gen_ai.response.finish_reasons``
=================================================  ==========================================
``completed`` with a ``function_call`` output item ``["tool_calls"]``
``completed``                                      ``["stop"]``
``incomplete`` (``max_output_tokens``)             ``["length"]``
``incomplete`` (``content_filter``)                ``["content_filter"]``
``incomplete`` (another reason)                    ``[reason]`` as sent
``failed``, ``cancelled``, ``queued``...           none
=================================================  ==========================================

Usage: ``input_tokens`` already includes ``input_tokens_details.cached_tokens`` (and
``cache_write_tokens``), as the semconv's ``gen_ai.usage.input_tokens`` does.

A ``Response`` with status ``failed`` is a failure without an exception: ``error.type`` is its
``error.code`` (``server_error``; an integer as its decimal string), else ``failed``
(``Response.error_type``). A stream ends on ``response.completed``, ``response.incomplete`` or
``response.failed``, or on an ``error`` event; the last two are errors the SDK yields as events
instead of raising: ``error.type`` the error's ``code``, else ``failed`` / ``error``. A
``Response`` without an ``output`` list holds no answer; one with a ``refusal`` content part is
the model's refusal (``rules/endings.py``, "Provider answers").
"""

from __future__ import annotations

from typing import Any

from otel_sampling import names
from otel_sampling.instrumentation._provider import sequence
from otel_sampling.instrumentation.openai_content import responses_output
from otel_sampling.instrumentation.openai_fields import as_str, error_envelope, field, usage_of
from otel_sampling.rules.endings import reported_error_type
from otel_sampling.rules.values import Response, Usage

_INCOMPLETE_REASONS = {"max_output_tokens": "length", "content_filter": "content_filter"}
_TOOL_CALL_ITEMS = frozenset({"function_call", "custom_tool_call"})
_TERMINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})
_STARTED_EVENTS = frozenset({"response.created", "response.in_progress", "response.queued"})


def to_usage(usage: Any) -> Usage:
    """Semantic-convention usage from a ``ResponseUsage`` (or its JSON); None: nothing reported."""
    return usage_of(usage, "input_tokens", "output_tokens", "input_tokens_details", "output_tokens_details")


def finish_reasons(response: Any) -> tuple[str, ...]:
    """The table above."""
    status = field(response, "status")
    if status == "completed":
        items = sequence(field(response, "output"))
        return ("tool_calls",) if any(field(i, "type") in _TOOL_CALL_ITEMS for i in items) else ("stop",)
    if status == "incomplete":
        reason = as_str(field(field(response, "incomplete_details"), "reason"))
        return (_INCOMPLETE_REASONS.get(reason, reason),) if reason else ()
    return ()


def _failed(response: Any, failed: bool) -> str | None:
    """``error.type`` of a ``Response`` with status ``failed`` or sent in a ``response.failed`` event
    (``failed``; its ``error.code``, else ``failed``), or of the error member of any other (an
    error body the SDK parsed as a ``Response`` because it came with HTTP 200: ``code``, then
    ``type``, else ``error``); None when it reports none."""
    if failed or field(response, "status") == "failed":
        return error_envelope(response, marked=True, named_by=("code",), fallback=names.ERROR_TYPE_RESPONSE_FAILED)
    return error_envelope(response)


def _has_refusal(output: Any) -> bool:
    """An output item holds a ``refusal`` content part (the model declined, in its own words)."""
    return any(field(part, "type") == "refusal" for item in output for part in sequence(field(item, "content")))


def response_of(response: Any, failed: bool = False) -> Response:
    """What a ``Response`` (or its JSON body) reports (output content not read); ``failed``: it came
    in a ``response.failed`` event. ``answered`` when it has an ``output`` list (the SDK does not
    validate answers: it may be null, or the body not a JSON object at all)."""
    output = field(response, "output")
    items = sequence(output)
    return Response(
        as_str(field(response, "model")) or None,
        as_str(field(response, "id")),
        finish_reasons(response),
        to_usage(field(response, "usage")),
        error_type=_failed(response, failed),
        answered=isinstance(output, (list, tuple)),
        refusal=_has_refusal(items),
    )


def output_of(response: Any, seen: Response) -> list[Any]:
    """The output messages of a ``Response`` (content capture on)."""
    return responses_output(response, seen.finish_reasons)


class ResponsesStreamAccumulator:
    """Reads ``ResponseStreamEvent``s: model and id from the first response snapshot, everything
    else from the terminal event's full ``response`` (with ``capture``, its output too). The first
    terminal or ``error`` event ends the stream."""

    __slots__ = ("complete", "_error_type", "_response", "_failed", "_capture")

    def __init__(self, capture: bool = False) -> None:
        self.complete = False
        self._error_type: str | None = None
        self._response: Any = None
        self._failed = False  # the terminal event was response.failed, whatever its response's status says
        self._capture = capture

    def observe(self, event: Any) -> None:
        if self.complete:  # the stream ended at its terminal or error event: what follows is no part of it
            return
        kind = field(event, "type")
        if kind in _TERMINAL_EVENTS:
            self._response = field(event, "response")
            self._failed = kind == "response.failed"
            self.complete = True
        elif kind in _STARTED_EVENTS and self._response is None:
            self._response = field(event, "response")
        elif kind == "error":  # the stream's last event
            self._error_type = reported_error_type(event, (field(event, "code"),), marked=True)
            self.complete = True

    def response(self) -> Response:
        """What the terminal event's response reports; without one, nothing was answered."""
        if self._response is None:
            return Response(None, None, (), Usage(), error_type=self._error_type, answered=False)
        seen = response_of(self._response, self._failed)
        if self._error_type is not None:
            seen = seen._replace(error_type=self._error_type)
        if self._capture and self.complete:
            seen = seen._replace(output=output_of(self._response, seen))
        return seen
