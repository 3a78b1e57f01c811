"""Was the served model the one asked for? Pure judgement functions.

Judgement (``names.SUBSTITUTIONS``), of the served model's normalised name
(:mod:`~otel_sampling.rules.model_names`: a composite or prefixed name never reaches a hint):

* ``none``: the served model matches a model hint as a substring (MCP spec 2025-11-25,
  client/sampling, Model Preferences: "hints are treated as substrings that can match model
  names flexibly"), or no hint was given and the policy (if one covers the server) permits it:
  nothing else was asked for. (Whether the policy permits a model the server hinted at is a
  policy question, not a substitution.)
* ``within_policy``: it matches no hint, but the policy's ``permitted_models`` for the server
  admits it.
* ``outside_policy``: the policy names permitted models for the server and this is not one, and
  no hint asked for it: a hint that matches nothing, or no hint at all (a server that sends none
  still gets only what the policy permits).
* ``unjudged``: no hint matched and no policy covers the server, or no served model is known.

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


def judge(hints: Sequence[str], served: str | None, permitted: Sequence[str] | None, failed: bool = False) -> str:
    """Judge one served model against the hints and the permitted models.

    Args:
        hints: ``modelPreferences.hints[].name`` in order (may be empty).
        served: the normalised name of the model that served the request, or None.
        permitted: the policy's permitted models for the server, or None when no policy covers it.
        failed: the request failed (an error frame, an exception, a cancellation): nothing was
            served, so nothing was substituted (``none``); a result without a model is ``unjudged``.

    Returns:
        one of ``names.SUBSTITUTIONS``.
    """
    if not served:
        return names.SUBSTITUTION_NONE if failed else names.SUBSTITUTION_UNJUDGED
    if hints and matches_hint(hints, served):
        return names.SUBSTITUTION_NONE
    if permitted is None:
        return names.SUBSTITUTION_NONE if not hints else names.SUBSTITUTION_UNJUDGED
    if is_permitted(permitted, served):
        return names.SUBSTITUTION_WITHIN_POLICY if hints else names.SUBSTITUTION_NONE
    return names.SUBSTITUTION_OUTSIDE_POLICY


def same_family(requested: str, served: str) -> bool:
    """True when ``served`` is ``requested`` up to a snapshot suffix on either side
    (``claude-3-5-sonnet-latest`` and ``claude-3-5-sonnet-20241022`` are one model)."""
    if served == requested:  # the common answer, without the regular expression
        return True
    base = _SNAPSHOT_SUFFIX.sub("", requested)
    return same_model(base, served) or same_model(served, requested)
