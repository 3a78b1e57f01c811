"""One verdict per logical unit: a provider call, a sampling request. Pure functions over summaries.

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

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from otel_sampling import names
from otel_sampling.rules.values import Ending, Usage

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
    elif call.client_fallback is not None and not call.failed:  # the router says why: its reason wins
        own = call.client_fallback
    elif failed_over and not call.failed:
        own = names.REASON_FAILOVER
    elif not call.failed and call.served and call.compare_models:
        served = normalise(call.served)
        requested = _normalised(call.requested)
        judged = _judge(reference, served, False, requested)
        own = _own_reason(judged, served, reference.primary)
    return CallVerdict(*_verdict(own, call.named))


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
        return normalise(provider_model)
    return served_member(read_report(reported)) if reported else None


def named_union(*groups: Sequence[str]) -> tuple[str, ...]:
    """The distinct reasons of ``groups``, first seen first."""
    merged: dict[str, None] = {}
    for group in groups:
        merged.update(dict.fromkeys(group))
    return tuple(merged)
