"""Model names as hosts report them, read as provider model ids. Pure functions.

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
"""

from __future__ import annotations

import re
from typing import NamedTuple

from otel_sampling.rules.substitution import same_family

COMPOSITE_PREFIX = "fallback:"  # pydantic_ai.models.fallback.FallbackModel.model_name
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
        part = part.strip()
        while part.startswith(COMPOSITE_PREFIX):  # a FallbackModel among the members names its own
            part = part[len(COMPOSITE_PREFIX) :]
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
    side (:func:`~otel_sampling.rules.substitution.same_family`)."""
    return same_family(a.casefold(), b.casefold())


def reports_another_model(reported: str | None, served: str | None) -> bool:
    """True when a host reported a model and the provider served one no member of the report names
    (``reported_model_mismatch``): a composite report names its candidates, so a member that is the
    served model is no mismatch; without either name there is nothing to compare."""
    if not reported or not served:
        return False
    plain = normalise(served)
    return not any(same_model_name(member, plain) for member in read_report(reported).members)
