"""Was the served model the one asked for? Pure judgement functions.

Judgement (``names.SUBSTITUTIONS``), of the served model's normalised name
(:mod:`~otel_sampling.rules.model_names`: a composite or prefixed name never reaches a hint):

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

from otel_sampling import names

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


def judge(
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
