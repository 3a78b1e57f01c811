"""Degraded mode: the one table that says whether a sampling request or a provider call ran degraded, and why.

The reasons are ``names.DEGRADATION_REASONS`` (``docs/telemetry.md`` "Degraded mode"). A named
degradation (``otel_sampling.degraded(...)``) adds its own host-chosen reason.

A sampling request (:func:`request_mode`), first match wins for its own reason:

====================  =====================================================================
``canary``            the host marked the traffic as a deliberate trip through the fallback
                      (``otel_sampling.canary()``)
``failover``          a provider call failed, then a call on another model succeeded
``substitution``      the served model is outside the server's ``permitted_models`` (the
                      substitution judgement ``outside_policy``, :mod:`.substitution`)
``provider_fallback`` the provider fell back: the last call that succeeded was served another
                      model than it asked for
``fallback``          served by a model other than the server policy's ``primary_model``
====================  =====================================================================

The last three apply only when the request ran degraded at all: it failed over, or the served
model is not the primary (``primary_model`` up to a snapshot suffix). Then every named
degradation active as it ends, or stamped on its span as it started, adds its reason. A request
with any reason is ``degraded``, else ``primary``.

A provider call (:func:`call_reason`, :func:`call_mode`), first match wins:

=====================  ====================================================================
``provider_fallback``  the provider fell back: it reports it served the call with another
                       model server-side (anthropic's ``fallback`` content)
``failover``           it succeeded after a call on another model failed
``fallback``           it was served another model than requested, one the requesting
                       server's policy permits
``substitution``       it was served another model than requested, and no policy permits it
=====================  ====================================================================

A call with none of these is still ``degraded`` while a named degradation or a canary block is
around it (as it started or as it ends), without a reason of its own.

A run (:func:`run_mode`, :func:`silent_incident_causes`) is degraded when anything inside it was.
A run that ended degraded, or with a substitution outside policy, and told nobody
(``otel_sampling.disclose``) is a silent-degradation incident; a run nested in an open run leaves
the one incident to the outermost.

The state around a call (:func:`named_reasons`, given the reasons of the degradations active and
whether a canary block is open, which :mod:`otel_sampling.state` holds): every active named
degradation's reason, then ``canary`` inside a canary block.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from otel_sampling import names
from otel_sampling.rules.substitution import is_permitted, same_family


def request_mode(
    *,
    canary: bool,
    failed_over: bool,
    judged: str,
    served: str | None,
    primary: str | None,
    last_requested: str | None,
    named: Sequence[str] = (),
) -> tuple[str, tuple[str, ...]]:
    """The mode of a sampling request as it ends, and its ``degradation.reason`` values (most specific first).

    Args:
        canary: the request, or a provider call inside it, ran in a canary block.
        failed_over: a call succeeded on another model after a call on some model failed.
        judged: the substitution judgement (``names.SUBSTITUTIONS``).
        served: the model the request was served by, or None.
        primary: the server policy's ``primary_model``, or None.
        last_requested: the model the last successful provider call inside it asked for, or None.
        named: reasons of the named degradations around it (active now, or stamped at its start).

    Returns:
        ``(names.MODE_DEGRADED | names.MODE_PRIMARY, reasons)``.
    """
    reasons: list[str] = []
    off_primary = bool(served and primary and not same_family(primary, served))
    if canary:
        reasons.append(names.REASON_CANARY)
    elif failed_over:
        reasons.append(names.REASON_FAILOVER)
    elif off_primary:
        if judged == names.SUBSTITUTION_OUTSIDE_POLICY:
            reasons.append(names.REASON_SUBSTITUTION)
        elif last_requested and served and not same_family(last_requested, served):
            reasons.append(names.REASON_PROVIDER_FALLBACK)
        else:
            reasons.append(names.REASON_FALLBACK)
    for reason in named:
        if reason not in reasons:
            reasons.append(reason)
    # Failing over or leaving the primary always names a reason above: any reason means degraded.
    return (names.MODE_DEGRADED if reasons else names.MODE_PRIMARY), tuple(reasons)


def call_reason(
    *,
    provider_fallback: bool,
    failed: bool,
    failed_over: bool,
    requested: str | None,
    served: str | None,
    compare_models: bool,
    permitted: Sequence[str] | None,
) -> str | None:
    """The ``degradation.reason`` of one provider call by what it did, or None when it did nothing degraded.

    Args:
        provider_fallback: the provider reported a server-side fallback.
        failed: the call failed.
        failed_over: it followed a failure on another model (same request, or same parent span).
        requested: ``gen_ai.request.model``, or None.
        served: ``gen_ai.response.model``, or None.
        compare_models: False when ``requested`` names a deployment, not a model (Azure OpenAI).
        permitted: the requesting server's ``permitted_models``, or None (no request, or no policy).
    """
    if provider_fallback:
        return names.REASON_PROVIDER_FALLBACK
    if failed_over and not failed:
        return names.REASON_FAILOVER
    if failed or not served or not requested or not compare_models or same_family(requested, served):
        return None
    if permitted is not None and is_permitted(permitted, served):
        return names.REASON_FALLBACK
    return names.REASON_SUBSTITUTION


def call_mode(reason: str | None, stamped: Sequence[str], around: Sequence[str]) -> str:
    """The mode of a provider call: degraded when it has a :func:`call_reason`, or when named
    degradations or a canary block were around it as it started (``stamped``) or as it ends (``around``)."""
    return names.MODE_DEGRADED if reason or stamped or around else names.MODE_PRIMARY


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


def stamped_reasons(attributes: Any) -> tuple[str, ...]:
    """The reasons a span's attributes say it started degraded with (``degradation.mode=degraded``), else ()."""
    if not attributes or attributes.get(names.DEGRADATION_MODE) != names.MODE_DEGRADED:
        return ()
    return reasons_of(attributes.get(names.DEGRADATION_REASON))


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
