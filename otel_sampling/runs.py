"""Runs: one task of the agent, its mode, outcome, cost, and whether the person was told.

The public API of runs: :func:`run` scopes one task, :func:`disclose` records that the person was
told about a degradation. What a run is, how spans join one and what it records when it ends:
:mod:`otel_sampling.records.run`.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from opentelemetry import trace

from otel_sampling import content, names, state
from otel_sampling.records.run import Run, RunScope, add_cost, current_mode, current_reasons, current_run

__all__ = ["Run", "RunScope", "add_cost", "current_mode", "current_reasons", "current_run", "disclose", "run"]

logger = logging.getLogger(__name__)


def run(name: str, conversation_id: str | None = None) -> RunScope:
    """Scope one task of the agent: ``with run("ticket-triage") as r:`` (or ``async with``).

    Args:
        name: the task's name, a non-empty string; the ``agent.run.name`` label (capped like
            every host-named label: use a task kind, not an id) and the span's ``gen_ai.agent.name``.
        conversation_id: the host's own id of the conversation (session, thread) the task belongs
            to, when it has one: ``gen_ai.conversation.id`` on the span (GenAI semconv:
            conditionally required when readily available; never invented, so none without it).
            A span attribute only, never a metric label; cut to
            ``OTEL_SAMPLING_ATTRIBUTE_MAX_LENGTH`` characters.

    The block starts an INTERNAL span ``invoke_agent {name}`` (GenAI semconv operation
    ``invoke_agent``), current inside it. Leaving it by an exception ends the run ``failed``
    (unless :meth:`Run.set_outcome` was called), else ``completed``; the exception propagates.

    Raises:
        TypeError: ``name`` (or a given ``conversation_id``) is not a string.  ValueError: it is empty.
    """
    return RunScope(name, conversation_id)


def disclose(message: str, kind: str = "inline") -> None:
    """Record that the person was told about a degradation (tell the user, in one line).

    Args:
        message: what the person was shown. Its length is recorded (span event attribute
            ``degradation.disclosure.message.length``); the text itself only when content capture
            puts content on spans (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is
            ``SPAN_ONLY`` or ``SPAN_AND_EVENT``, the GenAI convention; ``true`` captures nothing).
        kind: ``"inline"`` (next to the output it explains) or ``"activity_log"`` (an entry to
            find later).

    Marks the current run disclosed and adds a ``degradation.disclosure`` event to the current span.
    The first call also marks the process as one that tracks disclosure: from then on its silent
    incidents carry ``degradation.disclosure.tracked=true``, which the critical alert pages on.

    Raises:
        TypeError: ``message`` is not a string.  ValueError: ``kind`` is not one of the two.
    """
    if not isinstance(message, str):
        raise TypeError(f"disclosure message must be a string, got {type(message).__name__}")
    if kind not in names.DISCLOSURE_KINDS:
        raise ValueError(f"disclosure kind must be one of {', '.join(names.DISCLOSURE_KINDS)}; got {kind!r}")
    state.note_disclosure_call()
    current = current_run()
    if current is not None:
        current.note_disclosure()
    try:
        span = trace.get_current_span()
        if span.is_recording():
            attributes: dict[str, Any] = {names.DISCLOSURE_KIND: kind, names.DISCLOSURE_MESSAGE_LENGTH: len(message)}
            if content.capture_mode(os.environ).span:  # the message is span content (GenAI opt-in)
                attributes[names.DISCLOSURE_MESSAGE] = message[: state.api_instruments().settings.attribute_max_length]
            span.add_event(names.EVENT_DISCLOSURE, attributes)
    except Exception:
        logger.debug("otel-sampling: could not record a disclosure", exc_info=True)
