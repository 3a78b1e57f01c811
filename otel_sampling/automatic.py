"""Automatic degraded mode: why a sampling request or a provider call was degraded, with no host code.

A sampling request served by something other than the configured primary is degraded with one of
``names.DEGRADATION_REASONS``, first match wins:

1. ``canary``: the host marked the call as deliberate traffic through the fallback
   (``otel_sampling.canary()``), so an untested fallback stays visible;
2. ``failover``: a provider call failed and a call on another model then succeeded;
3. ``substitution``: the served model is outside the server's ``permitted_models``;
4. ``provider_fallback``: the host asked the provider for one model and it served another;
5. ``fallback``: served by a permitted model that is not the primary.

Active named degradations add their own reasons. The same module checks the compliance boundary
(policy ``permitted_providers`` / ``permitted_regions``): a request served by a provider, or from
an endpoint region, outside them is the violation ``boundary_crossed``.

:mod:`otel_sampling.records.sampling` calls :func:`resolve` when a request ends;
:mod:`otel_sampling.records.provider_call` calls :func:`call_mode` and :func:`observe_call`.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from otel_sampling import api_instruments, degradation, names, runs
from otel_sampling.records import sampling as sampling_record
from otel_sampling.rules import substitution

logger = logging.getLogger(__name__)

MAX_CALLS = 16  # served calls remembered per request
# What a request's provider calls did lives on its record (``_degradation_calls``): it goes away
# with the record, and cannot reach another request (a table keyed by id() could, once the id is reused).
_lock = threading.Lock()


@dataclass
class _Calls:
    canary: bool = False
    last_requested: str | None = None  # model asked for in the last call that succeeded
    last_served: str | None = None  # model the provider reported for it
    served: list[tuple[str, str | None]] = field(default_factory=list)  # (provider, endpoint host) that served


# What _resolve reads for a request that made no provider call (most do not): never written to.
_NO_CALLS = _Calls()


def _calls_of(record: Any) -> _Calls:
    with _lock:
        calls = getattr(record, "_degradation_calls", None)
        if calls is None:
            calls = record._degradation_calls = _Calls()
        return calls


def note_canary() -> None:
    """The host entered ``canary()``: the sampling request current here is canary traffic."""
    record = sampling_record.current_sampling()
    if record is not None:
        _calls_of(record).canary = True


def call_mode(stamped: tuple[str, ...]) -> str:
    """Mode of a provider call from the state around it as it ends (named degradations, a canary
    block), or ``degraded`` when the span processor ``stamped`` its span so as it started
    (:func:`stamped_reasons`). Never raises."""
    try:
        if stamped or degradation.active_reasons():
            return names.MODE_DEGRADED
    except Exception:
        logger.debug("otel-sampling: could not read the call's mode", exc_info=True)
    return names.MODE_PRIMARY


def stamped_reasons(span: Any) -> tuple[str, ...]:
    """The reasons the span processor put on ``span`` when it started (an SDK span), else ().
    Never raises."""
    try:
        attributes = getattr(span, "attributes", None) or {}
        if attributes.get(names.DEGRADATION_MODE) != names.MODE_DEGRADED:
            return ()
        return degradation.reasons_of(attributes.get(names.DEGRADATION_REASON))
    except Exception:
        logger.debug("otel-sampling: could not read the span's degradation stamp", exc_info=True)
        return ()


def observe_call(record: Any, provider: str, address: str | None, requested: str | None,
                 served: str | None, failed: bool) -> None:
    """A provider call ended: remember who served it (for the request and for the current run). Never raises."""
    try:
        _observe_call(record, provider, address, requested, served, failed)
    except Exception:
        logger.debug("otel-sampling: could not note the provider call", exc_info=True)


def _observe_call(record: Any, provider: str, address: str | None, requested: str | None,
                  served: str | None, failed: bool) -> None:
    if failed:
        return
    current = runs.current_run()
    if current is not None:
        current.last_served = (served or requested, provider,
                               _region(api_instruments.current().settings.policy, address))
    if record is None or getattr(record, "_ended", False):  # a stream that outlived its request
        return
    calls = _calls_of(record)
    if degradation.in_canary():
        calls.canary = True
    calls.last_requested, calls.last_served = requested, served
    if len(calls.served) < MAX_CALLS:
        calls.served.append((provider, address))


def resolve(record: Any, mode: str, served: str | None, judged: str) -> tuple[str, tuple[str, ...]]:
    """The request's final mode and its ``degradation.reason`` values (most specific first).

    Args:
        record: the ending :class:`~otel_sampling.records.sampling.SamplingRecord`.
        mode: the mode the record computed (non-primary model, or failover: degraded).
        served: the model the result names, or None.
        judged: the substitution judgement.

    Never raises: on our own failure the record's mode stands, without a reason.
    """
    try:
        return _resolve(record, mode, served, judged)
    except Exception:
        logger.debug("otel-sampling: could not resolve the degradation reason", exc_info=True)
        return mode, ()


def _resolve(record: Any, mode: str, served: str | None, judged: str) -> tuple[str, tuple[str, ...]]:
    with _lock:
        calls = getattr(record, "_degradation_calls", None) or _NO_CALLS
        record._degradation_calls = None
    reasons: list[str] = []
    if calls.canary or degradation.in_canary():
        reasons.append(names.REASON_CANARY)
    elif mode == names.MODE_DEGRADED:
        if record.failed_over():
            reasons.append(names.REASON_FAILOVER)
        elif judged == names.SUBSTITUTION_OUTSIDE_POLICY:
            reasons.append(names.REASON_SUBSTITUTION)
        elif calls.last_requested and served and not substitution.same_family(calls.last_requested, served):
            reasons.append(names.REASON_PROVIDER_FALLBACK)
        else:
            reasons.append(names.REASON_FALLBACK)
    # named degradations active now, or when the request started (stamped on its span)
    for reason in (*degradation.active_reasons(), *stamped_reasons(getattr(record, "_span", None))):
        if reason not in reasons:
            reasons.append(reason)
    try:
        server_policy = record.server_policy()
        if server_policy is not None and _crossed_boundary(record._instruments.settings.policy, server_policy,
                                                           calls.served):
            record._violate(names.VIOLATION_BOUNDARY_CROSSED)  # counted and on the span, once
    except Exception:
        logger.debug("otel-sampling: could not check the compliance boundary", exc_info=True)
    return (names.MODE_DEGRADED if reasons else mode), tuple(reasons)


def reason_label(reasons: tuple[str, ...]) -> str:
    """The one ``degradation.reason`` metric label of a request: the most specific reason."""
    try:
        return api_instruments.current().reason_label.value(reasons[0]) if reasons else names.UNKNOWN_LABEL
    except Exception:
        logger.debug("otel-sampling: could not label the degradation reason", exc_info=True)
        return names.UNKNOWN_LABEL


def _crossed_boundary(policy: Any, server_policy: Any, served: list[tuple[str, str | None]]) -> bool:
    providers, regions = server_policy.permitted_providers, server_policy.permitted_regions
    for provider, address in served:
        if providers is not None and provider not in providers:
            return True
        if regions is not None and _region(policy, address) not in regions:
            return True  # an endpoint with no known region cannot be shown to be inside
    return False


def _region(policy: Any, address: str | None) -> str | None:
    endpoint = policy.endpoints.get(address) if address else None
    return endpoint.region if endpoint is not None else None
