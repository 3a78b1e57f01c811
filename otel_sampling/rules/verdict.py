"""One verdict per logical unit: a provider call, a sampling request, a run. Pure functions over summaries.

Sections: substitution and model names; the verdict of a call and of a request; degraded mode of
runs (and the reasons of the state around a call); the outcome of a request's own run; what a
call cost (which price applies, and the arithmetic: the record looks the price up, this module
never does).

A provider call ends with one immutable :class:`CallSummary` (what it asked for, what it was
served, how it ended, its usage and cost). Its scope (the sampling request it serves, else the
run it is made in) judges it with :func:`judge_call` against the scope's :class:`Reference`, and a
sampling request is judged once as it ends with :func:`judge_request` from :class:`RequestFacts`,
built from the summaries of the calls inside it. Every signal of the unit (span attributes,
metric labels, its run, its incident, log fields) reads that one verdict.

Model names are read once, by :func:`normalise` (paths, gateway and provider prefixes, Bedrock
ids), and compared up to a snapshot suffix (:func:`same_family`), at both levels.

``degradation.reason`` (``docs/telemetry.md`` "Degraded mode"), one name per cause at every level,
first match wins for the unit's own reason:

=====================  ====================================================================
``canary``             (request) the traffic ran inside ``otel_sampling.canary()``
``failover``           a provider call failed, then a call on another model succeeded
``provider_fallback``  the provider reports it fell back server-side (anthropic's ``fallback``
                       content); the served model is what it fell back to
``substitution``       served another model than asked (:func:`judge_substitution` ``outside_policy``
                       or ``without_policy``): no policy permits it
``fallback``           served another model than asked, or than the policy's ``primary_model``,
                       one the policy permits (``within_policy``, or off the primary)
=====================  ====================================================================

A call that asked for less reasoning effort than its scope's ``primary_effort``
(:mod:`otel_sampling.rules.effort`) is also ``reduced_effort``, after its own reason: cutting the
thinking budget is a degradation as a model swap is.

A client library's router can say why it made a call on a fallback model
(``CallSummary.client_fallback``: a LiteLLM Router hop): ``failover`` after an outage, or
``context_window_fallback`` / ``content_policy_fallback`` when the request did not fit the first
model. That reason is the call's own, before the failover memory's; a request whose only switch of
model was such a fit fallback is not ``failover`` either (its calls' reason says what happened).

A request also carries every reason of the calls inside it, then every named degradation around
it (as it started or as it ends): a call inside a request is never degraded while the request is
primary. A unit with any reason is ``degraded``, else ``primary``.

Model names
-----------

Model names as hosts report them, read as provider model ids.

A host's ``CreateMessageResult.model`` is a claim, often not a provider's model id. Read in this
order (``docs/telemetry.md`` "Which model the verdicts use"):

1. A composite fallback name, pydantic-ai's ``FallbackModel.model_name``: ``fallback:`` then its
   members' names joined by ``,`` (``fallback:claude-sonnet-4-5,claude-haiku-4-5``). It names the
   candidates, not the one that served: its members are read one by one (rules 2 to 4), and the
   member that served is known only when every member names one model (:func:`served_member`).
2. A path: the last ``/``-separated segment (OpenRouter and LiteLLM ``anthropic/claude-sonnet-4.5``,
   Google's ``models/gemini-2.5-pro``, a Bedrock ARN's ``.../anthropic.claude-...``, pydantic-ai
   Gateway's ``gateway/openai:gpt-5``).
3. One provider prefix ending in ``:`` (pydantic-ai's ``provider:model`` ids, ``openai:gpt-4o``,
   ``google-gla:gemini-2.5-pro``): lower-case letters and ``-``, followed by a model id (a letter
   first, and a digit or ``-`` in it). An Ollama ``model:tag`` keeps its tag (``mistral:7b``,
   ``llama3:latest``, ``phi:chat``: the tag starts with a digit or holds neither).
4. Dotted provider prefixes (Bedrock model ids and cross-region inference profiles,
   ``anthropic.claude-sonnet-4-5-20250929-v1:0``, ``us.anthropic.claude-...``; other hosts'
   ``anthropic.claude-sonnet-4-5``, ``generic.gpt-4o``): at most two runs of lower-case letters
   each followed by ``.``, before a model id as in rule 3 (``gpt-4.1`` and ``claude-3.5-sonnet``
   keep their dots: a digit comes before them). After such a prefix, Bedrock's version suffix
   ``-v<n>`` or ``-v<n>:<m>`` after a date or a version number goes too: what Anthropic's API names
   ``claude-sonnet-4-5-20250929`` and ``claude-opus-4-6``, Bedrock names
   ``anthropic.claude-sonnet-4-5-20250929-v1:0`` and ``anthropic.claude-opus-4-6-v1`` (Anthropic's
   "Claude on Amazon Bedrock" model table); the legacy ``anthropic.claude-v2:1`` (Claude 2.1)
   keeps its version, which names the model there.

Anything else is the name as reported. Case is kept; comparisons (:func:`same_model_name`) ignore it.

Substitution
------------

Was the served model the one asked for?

Judgement (``names.SUBSTITUTIONS``), of the served model's normalised name
(:func:`normalise`: a composite or prefixed name never reaches a hint):

The reference is the model the host asked the provider for (the last provider call that served
the request), else the server's hints. "As asked" is that model up to a snapshot suffix, or,
without a provider call, a hint that matches the served model as a substring (MCP spec 2025-11-25,
client/sampling, Model Preferences: "hints are treated as substrings that can match model names
flexibly").

* ``none``: served as asked (and, with a policy, a model it permits or one the server hinted
  at: whether the policy permits a hinted model is a policy question, not a substitution), or
  nothing was asked for and the policy (if one covers the server) permits it.
* ``within_policy``: served another model than asked, one the policy's ``permitted_models`` admits.
* ``outside_policy``: the policy names permitted models for the server and this is not one (a
  server that sends no hint still gets only what the policy permits).
* ``without_policy``: served another model than asked, and no policy covers the server.
* ``unjudged``: no served model is known.

A permitted-model entry admits the same name or that name followed by a dated or ``latest``
suffix (``claude-haiku-4-5`` admits ``claude-haiku-4-5-20251001``, ``gpt-4`` admits
``gpt-4-0613``, ``gemini-2.0-flash`` admits ``gemini-2.0-flash-001``), which is how providers
name snapshots of one model; a ``-latest`` entry admits
the same snapshots (the alias resolves to one).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Final, NamedTuple

from otel_sampling import names
from otel_sampling.policy import Price
from otel_sampling.rules.effort import Effort, below_primary
from otel_sampling.rules.values import Ending, Usage, clean_usage

# ---------------------------------------------------------------------- substitution
# YYYYMMDD (anthropic), YYYY-MM-DD (openai), a bare 4-digit date (openai MMDD: gpt-4-0613;
# mistral YYMM: mistral-large-2407), Google's 3-digit stable version (gemini-2.0-flash-001, the
# ``modelVersion`` a ``gemini-2.0-flash`` request reports), or the moving alias.
_SNAPSHOT_SUFFIX = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2}|\d{4}|\d{3}|latest)\Z")


def same_model(entry: str, served: str) -> bool:
    """True when ``served`` is ``entry`` or ``entry`` plus a snapshot suffix; an entry that is a
    ``-latest`` alias stands for the model it names (``claude-x-latest`` admits ``claude-x-20261001``)."""
    if served == entry:
        return True
    base = entry.removesuffix("-latest")
    return served == base or (served.startswith(base) and _SNAPSHOT_SUFFIX.fullmatch(served, len(base)) is not None)


def matches_hint(hints: Sequence[str], served: str) -> bool:
    """True when a hint is a substring of the served model (case-insensitive)."""
    served_lower = served.lower()
    return any(hint and hint.lower() in served_lower for hint in hints)


def is_permitted(permitted: Iterable[str], served: str) -> bool:
    """True when an entry of ``permitted`` names the served model (see :func:`same_model`)."""
    return any(same_model(entry, served) for entry in permitted)


def judge_substitution(
    hints: Sequence[str],
    served: str | None,
    permitted: Sequence[str] | None,
    failed: bool = False,
    requested: str | None = None,
) -> str:
    """Judge one served model against the model asked for and the permitted models.

    The reference is ``requested`` (what the host asked the provider for) when known, else the
    hints; a served model is "as asked" when it is the requested model up to a snapshot suffix
    (:func:`same_family`, case ignored) or, without a requested model, when a hint matches it.

    Args:
        hints: ``modelPreferences.hints[].name`` in order (may be empty).
        served: the normalised name of the model that served the request, or None.
        permitted: the policy's permitted models for the server, or None when no policy covers it.
        failed: the request failed (an error frame, an exception, a cancellation): nothing was
            served, so nothing was substituted (``none``); a result without a model is ``unjudged``.
        requested: the normalised name of the model the host asked the provider for, or None.

    Returns:
        one of ``names.SUBSTITUTIONS``.
    """
    if not served:
        return names.SUBSTITUTION_NONE if failed else names.SUBSTITUTION_UNJUDGED
    asked: bool | None = None  # nothing asked for: no requested model and no hint
    if requested:
        asked = same_family(requested.casefold(), served.casefold())
    elif hints:
        asked = matches_hint(hints, served)
    if permitted is None:
        return names.SUBSTITUTION_WITHOUT_POLICY if asked is False else names.SUBSTITUTION_NONE
    if asked and not requested:  # the server hinted at it: whether the policy permits it is a policy question
        return names.SUBSTITUTION_NONE
    if is_permitted(permitted, served):
        return names.SUBSTITUTION_WITHIN_POLICY if asked is False else names.SUBSTITUTION_NONE
    return names.SUBSTITUTION_OUTSIDE_POLICY


def same_family(requested: str, served: str) -> bool:
    """True when ``served`` is ``requested`` up to a snapshot suffix on either side
    (``claude-3-5-sonnet-latest`` and ``claude-3-5-sonnet-20241022`` are one model)."""
    if served == requested:  # the common answer, without the regular expression
        return True
    if len(requested) <= _REMEMBERED_LENGTH and len(served) <= _REMEMBERED_LENGTH:
        return _same_family(requested, served)  # a pair seen before (a snapshot of it) is not matched again
    return _same_family.__wrapped__(requested, served)


# Pairs of model names remembered by same_family: a process sees few (a model and its snapshot),
# and the bound keeps a hostile stream of names from holding more than ~1 MB.
_REMEMBERED_PAIRS = 1024
_REMEMBERED_LENGTH = 256


@functools.lru_cache(maxsize=_REMEMBERED_PAIRS)
def _same_family(requested: str, served: str) -> bool:
    base = _SNAPSHOT_SUFFIX.sub("", requested)
    return same_model(base, served) or same_model(served, requested)


# ---------------------------------------------------------------------- model names
COMPOSITE_PREFIX = "fallback:"  # pydantic_ai.models.fallback.FallbackModel.model_name
_REPEATED_COMPOSITE_PREFIX = re.compile(f"(?:{re.escape(COMPOSITE_PREFIX)})*")
MAX_MEMBERS = 16  # members of a composite name read; a hostile name cannot make us split thousands

# A model id after a prefix: a letter first, and a digit or a dash somewhere in it.
_MODEL_ID = r"[A-Za-z](?=[^\s]*[0-9-])\S*"
_COLON_PREFIX = re.compile(rf"[a-z][a-z-]*:(?={_MODEL_ID}\Z)")
_DOTTED_PREFIX = re.compile(rf"(?:[a-z]+\.){{1,2}}(?={_MODEL_ID}\Z)")
_BEDROCK_VERSION = re.compile(r"(?<=\d)-v\d+(?::\d+)?\Z")


class ReportedModel(NamedTuple):
    """A host's report read as model ids: ``members`` (one for a plain name, each member of a
    composite in order, normalised), and whether it was a composite name."""

    members: tuple[str, ...]
    composite: bool


def normalise(name: str) -> str:
    """One model name with its path, provider prefix and Bedrock version taken off (rules 2 to 4);
    the name itself when nothing is left after them."""
    if "/" not in name and ":" not in name and "." not in name:  # no path nor prefix: the common case
        return name
    plain = name.rsplit("/", 1)[-1]
    colon = _COLON_PREFIX.match(plain)
    if colon:
        plain = plain[colon.end() :]
    dotted = _DOTTED_PREFIX.match(plain)
    if dotted:
        plain = _BEDROCK_VERSION.sub("", plain[dotted.end() :])
    return plain or name


def read_report(name: str) -> ReportedModel:
    """A reported model name as its members (rule 1); an empty member is left out."""
    if not name.startswith(COMPOSITE_PREFIX):
        return ReportedModel((normalise(name),), False)
    members = []
    for part in name[len(COMPOSITE_PREFIX) :].split(",", MAX_MEMBERS)[:MAX_MEMBERS]:
        # A FallbackModel among the members names its own: every repeat of the prefix is taken off,
        # in one pass (a hostile name repeating it cannot make us copy the rest once per repeat).
        part = part.strip()
        prefixes = _REPEATED_COMPOSITE_PREFIX.match(part)  # always matches, maybe ""
        part = part[prefixes.end() :] if prefixes else part
        if part:
            members.append(normalise(part))
    return ReportedModel(tuple(members), True)


def served_member(report: ReportedModel) -> str | None:
    """The model a report says served: its one member; a composite's first member when every member
    names that one model (:func:`same_model_name`); None when it does not say which member served."""
    if not report.members:
        return None
    first = report.members[0]
    return first if all(same_model_name(first, other) for other in report.members[1:]) else None


def same_model_name(a: str, b: str) -> bool:
    """True when two normalised names are one model: equal up to case and a snapshot suffix on either
    side (:func:`same_family`)."""
    return same_family(a.casefold(), b.casefold())


def reports_another_model(reported: str | None, served: str | None) -> bool:
    """True when a host reported a model and the provider served one no member of the report names
    (``reported_model_mismatch``): a composite report names its candidates, so a member that is the
    served model is no mismatch; without either name there is nothing to compare."""
    if not reported or not served:
        return False
    plain = normalise(served)
    return not any(same_model_name(member, plain) for member in read_report(reported).members)


# ---------------------------------------------------------------------- verdicts
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
        client_fallback: the reason a client library's router gives for making this call on a
            fallback model (a LiteLLM Router hop: ``failover``, ``context_window_fallback``,
            ``content_policy_fallback``), or None: the call is its first choice.
        effort: the reasoning effort it asked for (:mod:`otel_sampling.rules.effort`: a level, or
            a thinking budget in tokens), or None: it stated none.
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
    client_fallback: str | None = None
    effort: Effort | None = None

    @property
    def failed(self) -> bool:
        return self.ending.error_type is not None


class Reference(NamedTuple):
    """What a unit is judged against: the server's hints, and the policy scope covering it
    (``covered``; ``permitted`` None: it names no permitted models, every model is permitted);
    ``scope``: that scope's ``otel_sampling.policy.scope`` (:mod:`otel_sampling.rules.scopes`), None
    without one; ``primary_effort``: the scope's ``primary_effort``, None: effort is not judged."""

    hints: tuple[str, ...] = ()
    permitted: tuple[str, ...] | None = None
    primary: str | None = None
    covered: bool = False
    scope: str | None = None
    primary_effort: Effort | None = None


NO_POLICY = Reference()


class CallVerdict(NamedTuple):
    """The verdict of one provider call: ``degradation.mode`` and its reasons (own reason first), its
    substitution judgement (``otel_sampling.substitution``: :func:`judge_substitution` of the served
    model against the model the call asked for and its scope's policy; ``none`` for a failed call,
    ``unjudged`` when no served model is known or the call names a deployment), and the scope it was
    judged against (``Reference.scope``)."""

    mode: str
    reasons: tuple[str, ...]
    substitution: str = names.SUBSTITUTION_UNJUDGED
    scope: str | None = None


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
    return normalise(name) if name else None


def _judge(reference: Reference, served: str | None, failed: bool, requested: str | None) -> str:
    judged = judge_substitution(reference.hints, served, reference.permitted, failed=failed, requested=requested)
    if judged == names.SUBSTITUTION_WITHOUT_POLICY and reference.covered:
        return names.SUBSTITUTION_WITHIN_POLICY  # a policy that names no permitted models permits them all
    return judged


def _own_reason(judged: str, served: str | None, primary: str | None) -> str | None:
    if judged in (names.SUBSTITUTION_OUTSIDE_POLICY, names.SUBSTITUTION_WITHOUT_POLICY):
        return names.REASON_SUBSTITUTION
    if served and primary and same_model_name(normalise(primary), served):
        return None  # the primary is never degraded, however the hints read
    if judged == names.SUBSTITUTION_WITHIN_POLICY or (served and primary):
        return names.REASON_FALLBACK
    return None


def _verdict(own: str | None, *more: Iterable[str]) -> tuple[str, tuple[str, ...]]:
    if not own and not any(more):  # no reason at all (each group an empty tuple or list): primary
        return names.MODE_PRIMARY, ()
    reasons = dict.fromkeys((own,) if own else ())
    for group in more:
        reasons.update(dict.fromkeys(group))
    ordered = tuple(reasons)
    return (names.MODE_DEGRADED if ordered else names.MODE_PRIMARY), ordered


def judge_call(call: CallSummary, reference: Reference, failed_over: bool) -> CallVerdict:
    """The verdict of one provider call, judged against its own requested model and its scope's policy.

    ``failed_over``: it succeeded after a call on another model failed (the scope's failover memory).
    A failed call has no reason of its own; a call whose ``requested`` names a deployment is judged
    only by its failures, fallbacks and named degradations. Its substitution is judged whatever its
    own reason (a failover onto a model the policy does not permit is ``failover`` and
    ``outside_policy``). A call that did not fail and asked for less effort than the scope's primary
    effort (:func:`~otel_sampling.rules.effort.below_primary`) is also ``reduced_effort``, after its
    own reason (a fallback that also thinks less is both).
    """
    failed = call.failed  # read once: a property
    # The fields read below, each once (a tuple's unpacking, cheaper than a read of each by name).
    _, _, _, requested, reported, _, _, _, provider_fallback, compare_models, named, client_fallback, effort = call
    _, permitted, primary, _, scope, primary_effort = reference
    judged = names.SUBSTITUTION_NONE if failed else names.SUBSTITUTION_UNJUDGED
    served_reason: str | None = None  # the served model's own reason (_own_reason's)
    if not failed and reported and compare_models:
        if requested == reported and permitted is None and primary is None:
            # Served as asked and no policy names models (the common direct call): nothing was
            # substituted and it has no reason of its own, as _judge and _own_reason would find.
            judged = names.SUBSTITUTION_NONE
        elif (
            reference is NO_POLICY
            and type(reported) is str
            and len(reported) <= _REMEMBERED_LENGTH
            and (requested is None or (type(requested) is str and len(requested) <= _REMEMBERED_LENGTH))
        ):  # no policy (the common direct call): the pair's judgement, remembered
            judged, served_reason = _judged_without_policy(reported, requested)
        else:
            served = normalise(reported)
            judged = _judge(reference, served, False, normalise(requested) if requested else None)
            served_reason = _own_reason(judged, served, primary)
    own: str | None
    if provider_fallback:
        own = names.REASON_PROVIDER_FALLBACK
    elif client_fallback is not None and not failed:  # the router says why: its reason wins
        own = client_fallback
    elif failed_over and not failed:
        own = names.REASON_FAILOVER
    else:
        own = served_reason
    if primary_effort is not None and not failed and below_primary(effort, primary_effort):
        return CallVerdict(*_verdict(own, _REDUCED_EFFORT, named), judged, scope)
    if own is None and not named:  # nothing degraded it: primary, without building the reasons
        if scope is None:  # the common direct call: one verdict per judgement, built once
            return _PRIMARY_UNSCOPED[judged]
        return CallVerdict(names.MODE_PRIMARY, (), judged, scope)
    return CallVerdict(*_verdict(own, named), judged, scope)


# judge_call's verdicts of a primary call judged without a policy scope, one per judgement.
_PRIMARY_UNSCOPED: Final = {judged: CallVerdict(names.MODE_PRIMARY, (), judged) for judged in names.SUBSTITUTIONS}


_REDUCED_EFFORT = (names.REASON_REDUCED_EFFORT,)


@functools.lru_cache(maxsize=_REMEMBERED_PAIRS)
def _judged_without_policy(served: str, requested: str | None) -> tuple[str, str | None]:
    """The substitution judgement and the served model's own reason (:func:`_own_reason`) of a call
    that did not fail, judged against :data:`NO_POLICY` (``judge_call``'s: pure, so a process's few
    pairs are judged once)."""
    normalised = normalise(served)
    judged = _judge(NO_POLICY, normalised, False, normalise(requested) if requested else None)
    return judged, _own_reason(judged, normalised, NO_POLICY.primary)


# A client router's fallbacks for the request's fit, not for an outage (LiteLLM Router
# ``context_window_fallbacks`` / ``content_policy_fallbacks``).
_FIT_FALLBACKS = frozenset({names.REASON_CONTEXT_WINDOW_FALLBACK, names.REASON_CONTENT_POLICY_FALLBACK})


def _fit_fallback_only(call_reasons: tuple[str, ...]) -> bool:
    """The request's switch of model was a router's fallback for the request's fit: a call says so,
    and none says it failed over. Its failover memory saw a failed call, then a success on another
    model; the call's reason says why, and is the request's."""
    return not _FIT_FALLBACKS.isdisjoint(call_reasons) and names.REASON_FAILOVER not in call_reasons


def judge_request(facts: RequestFacts, reference: Reference) -> RequestVerdict:
    """The verdict of one sampling request as it ends (the table in the module docstring)."""
    judged = _judge(reference, facts.served, facts.failed, _normalised(facts.requested))
    own: str | None
    if facts.canary:
        own = names.REASON_CANARY
    elif facts.failed_over and not _fit_fallback_only(facts.call_reasons):
        own = names.REASON_FAILOVER
    elif facts.failed_over and not facts.failed:
        own = None  # a router's fit fallback: its call's reason says why (judge_call's order), no second name
    elif facts.provider_fallback and not facts.failed:
        own = names.REASON_PROVIDER_FALLBACK
    else:
        own = _own_reason(judged, facts.served, reference.primary) if not facts.failed else None
    mode, reasons = _verdict(own, facts.call_reasons, facts.named)
    return RequestVerdict(judged, mode, reasons)


def served_by(
    produced: bool, every_call_failed: bool, provider_model: str | None, reported: str | None
) -> tuple[str | None, bool]:
    """What a request's ending says of its model, in one call: the served model (:func:`served_model`)
    and whether the host's report names another than a provider call served
    (:func:`reports_another_model`, only when a call produced the answer)."""
    return (
        served_model(produced, every_call_failed, provider_model, reported),
        produced and reports_another_model(reported, provider_model),
    )


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
        return normalise(provider_model)
    if not reported:
        return None
    if type(reported) is str and len(reported) <= _REMEMBERED_LENGTH:
        return _served_by_report(reported)  # a host reports the same few names: each read once
    return served_member(read_report(reported))


_REMEMBERED_REPORTS = 64  # a host reports one model or a few: a flood of names churns 64 short strings


@functools.lru_cache(maxsize=_REMEMBERED_REPORTS)
def _served_by_report(reported: str) -> str | None:
    return served_member(read_report(reported))


# --------------------------------------------------------------------------- degraded mode of runs
# Degraded mode of runs, and the reasons of the state around a call. Pure functions.
#
# The reasons are ``names.DEGRADATION_REASONS`` (``docs/telemetry.md`` "Degraded mode"). A named
# degradation (``otel_sampling.degraded(...)``) adds its own host-chosen reason. The mode and reasons
# of a provider call and of a sampling request are their verdicts (:mod:`.verdict`).
#
# A run (:func:`run_mode`, :func:`silent_incident_causes`) is degraded when anything inside it was.
# A run that ended degraded, or with a substitution outside policy, and told nobody
# (``otel_sampling.disclose``) is a silent-degradation incident; a run nested in an open run leaves
# the one incident to the outermost.
#
# The state around a call (:func:`named_reasons`, given the reasons of the degradations active and
# whether a canary block is open, which :mod:`otel_sampling.state` holds): every active named
# degradation's reason, then ``canary`` inside a canary block.


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


class RunVerdict(NamedTuple):
    """The one verdict of a run that ended: its ``degradation.mode`` and why it is a silent incident
    (``()``: it is not one)."""

    mode: str
    silent_incident_causes: tuple[str, ...]


def judge_run(*, degraded: bool, outside_policy: bool, disclosed: bool, inside_open_run: bool) -> RunVerdict:
    """A run's verdict as it ends: :func:`run_mode` and :func:`silent_incident_causes`."""
    if not degraded and not outside_policy:  # the common run: primary, and no incident
        return _PRIMARY_RUN
    return RunVerdict(
        run_mode(degraded),
        silent_incident_causes(
            degraded=degraded, outside_policy=outside_policy, disclosed=disclosed, inside_open_run=inside_open_run
        ),
    )


_PRIMARY_RUN = RunVerdict(names.MODE_PRIMARY, ())


# ---------------------------------------------------- a server that answered from its own model
# A server-side ``tools/call`` run (``docs/telemetry.md`` "Server tool runs") in which the server
# asked the client to sample, the request did not complete, and a provider call of the server's own
# then served: the user's model was replaced by the server's. Every ending but ``completed`` counts
# (refused or denied by the client, a client with no sampling (``host.unsupported``), no
# back-channel on a 2026-07-28 connection, a timeout or an error): whatever the cause, the answer
# came from a model the user did not choose. A call that failed answered nothing.


def sampling_gave_no_answer(ending: str) -> bool:
    """Whether a server-side sampling request that ended with ``ending`` left the server without
    the client's answer (every ending but ``completed``)."""
    return ending != names.ENDING_COMPLETED


def server_model_reason(unanswered_sampling: bool, call_served: bool) -> str | None:
    """``server_model`` (``names.REASON_SERVER_MODEL``) for a provider call that served inside a
    server tool run holding a sampling request that gave no answer (:func:`sampling_gave_no_answer`),
    else None."""
    return names.REASON_SERVER_MODEL if unanswered_sampling and call_served else None


# -------------------------------------------------------------- the outcome of a request's own run
# The outcome of a sampling request's own run, from how the request ended.
#
# A host-side sampling request that no run owns is a run of its own (``docs/telemetry.md`` "Runs");
# its ``agent.run.outcome`` is its ending's group (``names.OUTCOMES``):
#
# ==============================================  ==========  =====================================
# ending (``names.ENDINGS``)                      outcome     why
# ==============================================  ==========  =====================================
# ``completed``                                   completed   the task was done
# ``names.DECISION_ENDINGS`` (``policy.denied``,  denied      a decision not to sample: the task
# ``user.denied``, ``policy.budget_exhausted``,               was declined before any model was
# and every decline ending in that group)                     asked, so it was not attempted
# ``host.unsupported``                            denied      the host answers no sampling at all
#                                                             (the SDK's default answer): nothing
#                                                             was attempted
# ``refused``                                     failed      a model was asked and declined: the
#                                                             task was attempted and not done
# ``cancelled``                                   failed      the request was withdrawn while it
#                                                             was being answered: attempted, not
#                                                             done (a user who gives up on a slow
#                                                             fallback is a failure of that mode)
# anything else (``model.unavailable``,           failed      attempted and not done
# ``timeout``, ``error``, an unknown ending)
# ==============================================  ==========  =====================================
#
# ``denied`` runs leave the completion rate (the five numbers); every other outcome is in it.

# host.unsupported is no decision about one request (violations.DENIALS leaves it out), but its
# run attempted nothing either.
_DECISIONS = frozenset((*names.DECISION_ENDINGS, names.ENDING_HOST_UNSUPPORTED))


def request_run_outcome(ending: str) -> str:
    """``agent.run.outcome`` of the run a sampling request that ended with ``ending`` is on its own:
    ``completed``, ``denied`` or ``failed`` (the table above)."""
    if ending == names.ENDING_COMPLETED:
        return names.OUTCOME_COMPLETED
    if ending in _DECISIONS:
        return names.OUTCOME_DENIED
    return names.OUTCOME_FAILED


# A framework's agent span that no run owns (``invoke_agent``, ``invoke_workflow``) is a run of its
# own too, and the requests inside it end before it does. Its framework does not know how they
# ended: a tool whose sampling request failed comes back as a tool error that the agent's model
# reads as data, and a refusal the host answered as a result looks like any answer, so the span
# closes OK on a task that was not done (google-adk 2.13: ``McpTool`` marks only its
# ``execute_tool`` span for an ``isError`` result, and turns an MCP error into ``{"error": ...}``
# for the model; ``invoke_workflow`` ends with its status unset).
# When the host set no outcome itself, that run reads (agent_run_outcome):
#
#   what happened inside                        outcome     why
#   the span's status is ERROR                  failed      the framework says the task failed
#   a request inside was ``failed`` (above)     failed      a model was asked and did not deliver:
#                                                           like a degradation, one such request
#                                                           marks the whole run
#   else a request inside was ``completed``     completed   what was asked for was delivered (a
#                                                           denied request beside it was a decision
#                                                           that worked)
#   else every request inside was ``denied``    denied      nothing was attempted
#   no request ended inside                     completed   nothing says otherwise
#
# An explicit run (``otel_sampling.run``) is the host's own account of its task: it ends
# ``completed`` unless an exception leaves it or the host calls ``set_outcome`` (records/run.py).


def agent_run_outcome(failed: bool, requests: Collection[str]) -> str:
    """``agent.run.outcome`` of an agent span's run the host set no outcome for (the table above):
    ``failed`` when the span's status is ERROR (``failed``) or a request inside failed, else
    ``completed`` when one completed or none ended inside, else ``denied``.

    ``requests`` holds the :func:`request_run_outcome` of every sampling request that ended inside
    the run (a set is enough: order and count do not matter)."""
    if failed or names.OUTCOME_FAILED in requests:
        return names.OUTCOME_FAILED
    if names.OUTCOME_COMPLETED in requests or not requests:
        return names.OUTCOME_COMPLETED
    return names.OUTCOME_DENIED


# -------------------------------------------------------------------------------- what a call cost
# What a provider call cost: which price applies, and the arithmetic. Pure functions.
#
# Prices are USD per million tokens (:class:`otel_sampling.policy.Price`). A call is priced at the
# model that served it (``gen_ai.response.model``), else at the requested model when the request
# names a model (not a deployment: Azure OpenAI's request ``model``): :func:`priced_model`.
#
# Which price (:func:`policy_quote`, else :func:`source_quote`): the policy's
# ``[prices."<model>"]`` entry wins, the entry of the same name, else an entry the model is a
# snapshot of (``claude-haiku-5-5`` or
# ``claude-haiku-5-5-latest`` prices ``claude-haiku-5-5-20261001``,
# :func:`otel_sampling.rules.verdict.same_model`); else the price source's price for the
# provider and model (:mod:`otel_sampling.price_source`, genai-prices by default, looked up by the
# caller and passed in: :func:`policy_quote` first, then :func:`source_quote`); else none: the call
# has no cost at all (not a cost of 0). The cost names where its price came from: ``policy``
# or the source's name (``genai-prices@0.2.3``).
#
# Cost = uncached input x input price + cache reads x cache-read price + cache writes x cache-write
# price + output x output price. Usage is in semantic-convention terms (``input_tokens`` includes
# cache reads and writes), so uncached input = input - cache reads - cache writes (never below 0). A
# cache price left out (of the table entry or the source's price) is charged at the input price
# (read as "no discount", as genai-prices computes it).
#
# A cost is never negative nor non-finite: a token count that is none (negative, beyond int64, not
# an int: :func:`otel_sampling.rules.values.clean_usage`) is left off, as if not reported, and a
# total past float range (a price near the float maximum) is no cost (None), so no span, metric,
# request or run ever carries one.

_MTOK = 1_000_000


class Quote(NamedTuple):
    """A price and its source: ``policy`` or the price source's name."""

    price: Price
    source: str


class Cost(NamedTuple):
    """What a call cost: ``usd`` (finite, >= 0) at a price from ``source`` (as in :class:`Quote`)."""

    usd: float
    source: str


def priced_model(response_model: str | None, request_model: str | None) -> str | None:
    """The model a call is priced at: the served model, else ``request_model`` (pass None when the
    request names a deployment, not a model); None when neither is known."""
    return response_model or request_model or None


def policy_quote(prices: Mapping[str, Price], model: str | None) -> Quote | None:
    """The policy table's price of ``model`` (:func:`price_for`), source ``policy``; None when the
    table has none (then the caller asks its price source: :func:`source_quote`)."""
    price = price_for(prices, model)
    return Quote(price, names.PRICE_SOURCE_POLICY) if price is not None else None


def source_quote(source_name: str | None, price: Price | None) -> Quote | None:
    """The price source's price (looked up by the caller for the provider, the model and the call's
    input tokens), named as ``source_name``; None without a source or a price."""
    return Quote(price, source_name) if price is not None and source_name else None


def policy_price(
    prices: Mapping[str, Price], response_model: str | None, request_model: str | None
) -> tuple[str | None, Quote | None]:
    """The model a call is priced at (:func:`priced_model`) and the policy table's price of it
    (:func:`policy_quote`), in one call."""
    model = priced_model(response_model, request_model)
    if not prices or not model:  # an empty table prices nothing (policy_quote)
        return model, None
    return model, policy_quote(prices, model)


def source_cost(source_name: str | None, price: Price | None, usage: Usage) -> Cost | None:
    """The :class:`Cost` of ``usage`` at the price source's ``price`` (:func:`source_quote`,
    :func:`cost_of`); None without a source, a price or token counts."""
    quoted = source_quote(source_name, price)
    return cost_of(quoted, usage) if quoted is not None else None


def cost_of(quoted: Quote, usage: Usage) -> Cost | None:
    """The :class:`Cost` of ``usage`` at ``quoted`` (:func:`cost_usd`); None when it has none."""
    usd = cost_usd(quoted.price, usage)
    return Cost(usd, quoted.source) if usd is not None else None


def price_for(prices: Mapping[str, Price], model: str | None) -> Price | None:
    """The table's price of ``model``: an exact entry, else the entry it is a dated snapshot of;
    None if unknown."""
    if not model:
        return None
    price = prices.get(model)
    if price is not None:
        return price
    for entry, candidate in prices.items():
        if same_model(entry, model):
            return candidate
    return None


def cost_usd(price: Price, usage: Usage) -> float | None:
    """USD cost of ``usage`` at ``price``: finite and >= 0; None when the usage has no input or
    output count at all, or the total is past float range."""
    usage = clean_usage(usage)
    if usage.input_tokens is None and usage.output_tokens is None:
        return None
    cache_read = usage.cache_read_input_tokens or 0
    cache_creation = usage.cache_creation_input_tokens or 0
    uncached = max((usage.input_tokens or 0) - cache_read - cache_creation, 0)
    read_price = price.cache_read_usd_per_mtok
    write_price = price.cache_write_usd_per_mtok
    total = (
        uncached * price.input_usd_per_mtok
        + cache_read * (price.input_usd_per_mtok if read_price is None else read_price)
        + cache_creation * (price.input_usd_per_mtok if write_price is None else write_price)
        + (usage.output_tokens or 0) * price.output_usd_per_mtok
    )
    usd = total / _MTOK
    return usd if math.isfinite(usd) and usd >= 0 else None
