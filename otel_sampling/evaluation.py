"""Evaluation scores by mode: the quality delta between primary and degraded is one PromQL expression.

The quality delta, primary versus degraded, on the same eval suite, is the number that turns
degradation into a decision. The host (or its eval
harness) reports each score; the mode comes from the state the score was produced in. Each score
is also the GenAI semantic conventions' ``gen_ai.evaluation.result`` event.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from otel_sampling import content, names, state
from otel_sampling.metrics import clean, finite
from otel_sampling.records import run as runs
from otel_sampling.rules.verdict import run_mode

logger = logging.getLogger(__name__)

_LABEL_MAX_LENGTH = 128  # a label is a category ("pass", "relevant"), not a text


def record_evaluation(
    name: str,
    score: float,
    run: runs.Run | None = None,
    *,
    label: str | None = None,
    explanation: str | None = None,
    response_id: str | None = None,
) -> None:
    """Record one evaluation score in ``otel_sampling.evaluation.score`` (histogram, unit ``1``) and
    as a ``gen_ai.evaluation.result`` event.

    Args:
        name: the evaluation (suite) name, ``gen_ai.evaluation.name`` (GenAI semantic
            conventions); a non-empty string, capped like every host-named label.
        score: the score, a finite non-negative number (an OpenTelemetry histogram drops
            negative values, so a negative score would vanish); the buckets assume [0, 1].
        run: the run whose output was scored, when the score arrives after the run has ended;
            its mode is used. Default: the current state (degraded inside a degraded run, a named
            degradation or a canary block, else primary).
        label: the score's category (``"pass"``, ``"relevant"``), ``gen_ai.evaluation.score.label``
            on the event; cut to 128 characters. Never a metric label.
        explanation: why the evaluator gave the score, ``gen_ai.evaluation.explanation`` on the
            event, only when content capture puts content on events
            (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` = ``EVENT_ONLY`` or
            ``SPAN_AND_EVENT``): it may quote what was evaluated. Cut to
            ``OTEL_SAMPLING_ATTRIBUTE_MAX_LENGTH`` characters.
        response_id: the evaluated answer's ``gen_ai.response.id``, for backends to join the event
            to its call when the event is not emitted inside that call's span.

    The event (GenAI semconv ``gen_ai.evaluation.result``, a log record through the logger provider
    given to ``instrument(logger_provider=...)`` or the global one) is emitted in the current
    context, so it belongs to the span current where the host calls this; it carries
    ``gen_ai.evaluation.name``, ``gen_ai.evaluation.score.value`` (the score), the optional
    attributes above and ``degradation.mode``.

    Raises:
        TypeError: ``name`` is not a string, ``score`` is not a number (a bool is not one), ``run``
            is not a :class:`~otel_sampling.records.run.Run`, or ``label``, ``explanation`` or
            ``response_id`` is given and not a string.
        ValueError: ``name`` is empty, or ``score`` is negative or not finite (also an int too
            large for a float).
    """
    if not isinstance(name, str):
        raise TypeError(f"evaluation name must be a string, got {type(name).__name__}")
    if not name.strip():
        raise ValueError("evaluation name must not be empty")
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise TypeError(f"evaluation score must be a number, got {type(score).__name__}")
    if not finite(score) or score < 0:
        raise ValueError(f"evaluation score must be a finite, non-negative number, got {score!r:.40}")
    if run is not None and not isinstance(run, runs.Run):
        raise TypeError(f"run must be the Run of `with otel_sampling.run(...) as run`, got {type(run).__name__}")
    for what, value in (("label", label), ("explanation", explanation), ("response_id", response_id)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"evaluation {what} must be a string, got {type(value).__name__}")
    if run is not None:
        mode = run_mode(run.degraded)
    else:
        mode = runs.current_mode()
    try:
        telemetry = state.api_instruments()
        try:
            telemetry.evaluation_score.record(
                float(score),
                {
                    names.GEN_AI_EVALUATION_NAME: telemetry.evaluation_name_label.value(name),
                    names.DEGRADATION_MODE: mode,
                },
            )
        finally:  # the event goes out even when the histogram failed
            _emit_result(telemetry, name, float(score), mode, label, explanation, response_id)
    except Exception:  # our failure is not the host's
        logger.debug("otel-sampling: could not record an evaluation", exc_info=True)


def _emit_result(
    telemetry: Any,
    name: str,
    score: float,
    mode: str,
    label: str | None,
    explanation: str | None,
    response_id: str | None,
) -> None:
    max_length = telemetry.settings.attribute_max_length
    attributes: dict[str, Any] = {
        names.GEN_AI_EVALUATION_NAME: clean(name, max_length),
        names.GEN_AI_EVALUATION_SCORE_VALUE: score,
        names.DEGRADATION_MODE: mode,
    }
    for key, value, limit in (
        (names.GEN_AI_EVALUATION_SCORE_LABEL, label, _LABEL_MAX_LENGTH),
        (names.GEN_AI_RESPONSE_ID, response_id, max_length),
    ):
        if value:
            attributes[key] = clean(value, limit)
    if explanation and content.capture_mode(os.environ).event:  # it may quote content: GenAI opt-in
        attributes[names.GEN_AI_EVALUATION_EXPLANATION] = clean(explanation, max_length)
    telemetry.event_logger.emit(event_name=names.EVENT_EVALUATION_RESULT, attributes=attributes)
