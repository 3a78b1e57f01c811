"""Evaluation scores by mode: the quality delta between primary and degraded is one PromQL expression.

The quality delta, primary versus degraded, on the same eval suite, is the number that turns
degradation into a decision. The host (or its eval
harness) reports each score; the mode comes from the state the score was produced in.
"""

from __future__ import annotations

import logging

from otel_sampling import names, state
from otel_sampling.labels import finite
from otel_sampling.records import run as runs
from otel_sampling.rules.degraded_mode import run_mode

logger = logging.getLogger(__name__)


def record_evaluation(name: str, score: float, run: runs.Run | None = None) -> None:
    """Record one evaluation score in ``otel_sampling.evaluation.score`` (histogram, unit ``1``).

    Args:
        name: the evaluation (suite) name, ``gen_ai.evaluation.name`` (GenAI semantic
            conventions); a non-empty string, capped like every host-named label.
        score: the score, a finite non-negative number (an OpenTelemetry histogram drops
            negative values, so a negative score would vanish); the buckets assume [0, 1].
        run: the run whose output was scored, when the score arrives after the run has ended;
            its mode is used. Default: the current state (degraded inside a degraded run, a named
            degradation or a canary block, else primary).

    Raises:
        TypeError: ``name`` is not a string, ``score`` is not a number (a bool is not one), or
            ``run`` is not a :class:`~otel_sampling.records.run.Run`.
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
    if run is not None:
        mode = run_mode(run.degraded)
    else:
        mode = runs.current_mode()
    try:
        telemetry = state.api_instruments()
        telemetry.evaluation_score.record(float(score), {
            names.GEN_AI_EVALUATION_NAME: telemetry.evaluation_name_label.value(name),
            names.DEGRADATION_MODE: mode,
        })
    except Exception:  # our failure is not the host's
        logger.debug("otel-sampling: could not record an evaluation", exc_info=True)
