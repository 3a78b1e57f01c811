"""Degraded mode of runs, and the reasons of the state around a call. Pure functions.

The reasons are ``names.DEGRADATION_REASONS`` (``docs/telemetry.md`` "Degraded mode"). A named
degradation (``otel_sampling.degraded(...)``) adds its own host-chosen reason. The mode and reasons
of a provider call and of a sampling request are their verdicts (:mod:`.verdict`).

A run (:func:`run_mode`, :func:`silent_incident_causes`) is degraded when anything inside it was.
A run that ended degraded, or with a substitution outside policy, and told nobody
(``otel_sampling.disclose``) is a silent-degradation incident; a run nested in an open run leaves
the one incident to the outermost.

The state around a call (:func:`named_reasons`, given the reasons of the degradations active and
whether a canary block is open, which :mod:`otel_sampling.state` holds): every active named
degradation's reason, then ``canary`` inside a canary block.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from otel_sampling import names


def reasons_of(value: Any) -> tuple[str, ...]:
    """A ``degradation.reason`` attribute value as a tuple of strings, whatever another
    instrumentation put there (a string, a sequence, a number, a bool; None: ())."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)):
        return tuple(v if isinstance(v, str) else str(v) for v in value)
    return (str(value),)


def named_reasons(active: Iterable[str], canary: bool, cap: int) -> tuple[str, ...]:
    """The reasons of the state around a call: the first ``cap`` distinct reasons of the active
    named degradations in entry order, then ``canary`` when inside a canary block; () when primary."""
    reasons = tuple(dict.fromkeys(active))[:cap]
    return (*reasons, names.REASON_CANARY) if canary else reasons


def run_mode(degraded: bool) -> str:
    """``degraded`` for a run that saw anything degraded inside it, else ``primary``."""
    return names.MODE_DEGRADED if degraded else names.MODE_PRIMARY


def silent_incident_causes(
    *, degraded: bool, outside_policy: bool, disclosed: bool, inside_open_run: bool
) -> tuple[str, ...]:
    """Why a run that ended is a silent-degradation incident (``degradation.silent_incident.cause``
    values: ``degraded``, ``outside_policy``), or () when it is not one: it was disclosed, nothing
    degraded happened, or it is nested in a run still open (which counts the one incident)."""
    if disclosed or inside_open_run:
        return ()
    causes = ((names.MODE_DEGRADED, degraded), (names.SUBSTITUTION_OUTSIDE_POLICY, outside_policy))
    return tuple(cause for cause, seen in causes if seen)
