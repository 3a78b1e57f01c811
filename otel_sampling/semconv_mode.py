"""Which GenAI inference metric names to emit, from ``OTEL_SEMCONV_STABILITY_OPT_IN``
(:func:`otel_sampling.records.provider_call.record_inference` records them; ``docs/telemetry.md``,
"Semantic-conventions version")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, NamedTuple

from otel_sampling import names


class Emission(NamedTuple):
    """The inference metric names to emit: ``old`` (v1.41's), ``new`` (#521 / #374), or both."""

    old: bool
    new: bool


OLD: Final = Emission(old=True, new=False)
NEW: Final = Emission(old=False, new=True)
DUP: Final = Emission(old=True, new=True)
#: Without an opt-in: v1.41's names, as opentelemetry-instrumentation's default GenAI mode. The
#: stored text of semantic-conventions-genai carries the newest names, but whether they are on its
#: main could not be confirmed from its own text, and it has published no release (``docs/telemetry.md``).
DEFAULT: Final = OLD


def emission(environ: Mapping[str, str]) -> Emission:
    """The emission ``OTEL_SEMCONV_STABILITY_OPT_IN`` in ``environ`` selects (see the module)."""
    values = {value.strip() for value in environ.get(names.ENV_SEMCONV_STABILITY_OPT_IN, "").split(",")}
    if names.SEMCONV_GEN_AI_DUP in values:
        return DUP
    if names.SEMCONV_GEN_AI_LATEST in values:
        return NEW
    return DEFAULT
