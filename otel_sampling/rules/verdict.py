"""One verdict per logical unit: a provider call, a sampling request. Pure functions over summaries.

A provider call ends with one immutable :class:`CallSummary` (what it asked for, what it was
served, how it ended, its usage and cost). Its scope (the sampling request it serves, else the
run it is made in) judges it with :func:`judge_call` against the scope's :class:`Reference`, and a
sampling request is judged once as it ends with :func:`judge_request` from :class:`RequestFacts`,
built from the summaries of the calls inside it. Every signal of the unit (span attributes,
metric labels, its run, its incident, log fields) reads that one verdict.

Model names are read once, by :func:`~otel_sampling.rules.model_names.normalise` (paths, gateway
and provider prefixes, Bedrock ids), and compared up to a snapshot suffix
(:func:`~otel_sampling.rules.substitution.same_family`), at both levels.

``degradation.reason`` (``docs/telemetry.md`` "Degraded mode"), one name per cause at every level,
first match wins for the unit's own reason:

=====================  ====================================================================
``canary``             (request) the traffic ran inside ``otel_sampling.canary()``
``failover``           a provider call failed, then a call on another model succeeded
``provider_fallback``  the provider reports it fell back server-side (anthropic's ``fallback``
                       content); the served model is what it fell back to
``substitution``       served another model than asked (:mod:`.substitution` ``outside_policy``
                       or ``without_policy``): no policy permits it
``fallback``           served another model than asked, or than the policy's ``primary_model``,
                       one the policy permits (``within_policy``, or off the primary)
=====================  ====================================================================

A request also carries every reason of the calls inside it, then every named degradation around
it (as it started or as it ends): a call inside a request is never degraded while the request is
primary. A unit with any reason is ``degraded``, else ``primary``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from otel_sampling import names
from otel_sampling.rules import model_names, substitution
from otel_sampling.rules.values import Ending, Usage


class CallSummary(NamedTuple):
    """What one provider call did, published once as it ends.

    Attributes:
        provider: ``gen_ai.provider.name``.
        address: ``server.address`` of the API endpoint, or None.
        region: the policy's region of that endpoint (``[endpoints]``), or None.
        requested: ``gen_ai.request.model`` as asked, or None.
        served: ``gen_ai.response.model`` (a gateway's served-model header wins), or None.
        ending: its ending and ``error.type`` (``error_type`` set exactly when it failed).
        usage: its token counts (None: not reported).
        usd: its cost in US dollars, or None when not priced.
        provider_fallback: the provider reported a server-side fallback.
        compare_models: False when ``requested`` names a deployment, not a model (Azure OpenAI).
        named: reasons of the named degradations and canary block around it (at start or end).
    """

    provider: str
    address: str | None
    region: str | None
    requested: str | None
    served: str | None
    ending: Ending
    usage: Usage
    usd: float | None
    provider_fallback: bool = False
    compare_models: bool = True
    named: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return self.ending.error_type is not None


class Reference(NamedTuple):
    """What a unit is judged against: the server's hints, and the policy covering the server
    (``covered``; ``permitted`` None: it names no permitted models, every model is permitted)."""

    hints: tuple[str, ...] = ()
    permitted: tuple[str, ...] | None = None
    primary: str | None = None
    covered: bool = False


NO_POLICY = Reference()


class CallVerdict(NamedTuple):
    """The verdict of one provider call: ``degradation.mode`` and its reasons (own reason first)."""

    mode: str
    reasons: tuple[str, ...]


class RequestFacts(NamedTuple):
    """What happened in one sampling request, as it ends.

    Attributes:
        served: the normalised served model (:func:`served_model`), or None.
        requested: the model the last provider call that served it asked for (raw), or None.
        failed: the request failed (its ending has an ``error.type``).
        failed_over: a call succeeded on another model after a call failed.
        canary: the request, or a call inside it, ran inside a canary block.
        provider_fallback: the last call that served it reported a server-side fallback.
        call_reasons: the reasons of every call inside it, in order.
        named: reasons of the named degradations around it (as it started or as it ends).
    """

    served: str | None
    requested: str | None
    failed: bool
    failed_over: bool = False
    canary: bool = False
    provider_fallback: bool = False
    call_reasons: tuple[str, ...] = ()
    named: tuple[str, ...] = ()


class RequestVerdict(NamedTuple):
    """The verdict of one sampling request: ``otel_sampling.sampling.substitution``, mode, reasons."""

    substitution: str
    mode: str
    reasons: tuple[str, ...]


def _normalised(name: str | None) -> str | None:
    return model_names.normalise(name) if name else None


def _judge(reference: Reference, served: str | None, failed: bool, requested: str | None) -> str:
    judged = substitution.judge(reference.hints, served, reference.permitted, failed=failed, requested=requested)
    if judged == names.SUBSTITUTION_WITHOUT_POLICY and reference.covered:
        return names.SUBSTITUTION_WITHIN_POLICY  # a policy that names no permitted models permits them all
    return judged


def _own_reason(judged: str, served: str | None, primary: str | None) -> str | None:
    if judged in (names.SUBSTITUTION_OUTSIDE_POLICY, names.SUBSTITUTION_WITHOUT_POLICY):
        return names.REASON_SUBSTITUTION
    if served and primary and model_names.same_model_name(model_names.normalise(primary), served):
        return None  # the primary is never degraded, however the hints read
    if judged == names.SUBSTITUTION_WITHIN_POLICY or (served and primary):
        return names.REASON_FALLBACK
    return None


def _verdict(own: str | None, *more: Iterable[str]) -> tuple[str, tuple[str, ...]]:
    reasons = dict.fromkeys((own,) if own else ())
    for group in more:
        reasons.update(dict.fromkeys(group))
    ordered = tuple(reasons)
    return (names.MODE_DEGRADED if ordered else names.MODE_PRIMARY), ordered


def judge_call(call: CallSummary, reference: Reference, failed_over: bool) -> CallVerdict:
    """The verdict of one provider call, judged against its own requested model and its scope's policy.

    ``failed_over``: it succeeded after a call on another model failed (the scope's failover memory).
    A failed call has no reason of its own; a call whose ``requested`` names a deployment is judged
    only by its failures, fallbacks and named degradations.
    """
    own: str | None = None
    if call.provider_fallback:
        own = names.REASON_PROVIDER_FALLBACK
    elif failed_over and not call.failed:
        own = names.REASON_FAILOVER
    elif not call.failed and call.served and call.compare_models:
        served = model_names.normalise(call.served)
        requested = _normalised(call.requested)
        judged = _judge(reference, served, False, requested)
        own = _own_reason(judged, served, reference.primary)
    return CallVerdict(*_verdict(own, call.named))


def judge_request(facts: RequestFacts, reference: Reference) -> RequestVerdict:
    """The verdict of one sampling request as it ends (the table in the module docstring)."""
    judged = _judge(reference, facts.served, facts.failed, _normalised(facts.requested))
    own: str | None
    if facts.canary:
        own = names.REASON_CANARY
    elif facts.failed_over:
        own = names.REASON_FAILOVER
    elif facts.provider_fallback and not facts.failed:
        own = names.REASON_PROVIDER_FALLBACK
    else:
        own = _own_reason(judged, facts.served, reference.primary) if not facts.failed else None
    mode, reasons = _verdict(own, facts.call_reasons, facts.named)
    return RequestVerdict(judged, mode, reasons)


def served_model(
    produced: bool, every_call_failed: bool, provider_model: str | None, reported: str | None
) -> str | None:
    """The normalised name of the model that served a result (``docs/telemetry.md`` "Which model the
    verdicts use"): the provider's, when a call inside the callback did not fail and named its model;
    None when every call failed; else the host's report when it says which model served (never a
    composite's list of candidates).

    Args:
        produced: a call inside the callback did not fail.
        every_call_failed: calls ran and all failed.
        provider_model: the response model of the last call that did not fail.
        reported: the host's ``CreateMessageResult.model``.
    """
    if every_call_failed:
        return None
    if produced and provider_model:
        return model_names.normalise(provider_model)
    return model_names.served_member(model_names.read_report(reported)) if reported else None


def named_union(*groups: Sequence[str]) -> tuple[str, ...]:
    """The distinct reasons of ``groups``, first seen first."""
    merged: dict[str, None] = {}
    for group in groups:
        merged.update(dict.fromkeys(group))
    return tuple(merged)
