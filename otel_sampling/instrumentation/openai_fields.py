"""Reading openai fields from SDK models and from JSON alike.

Responses are SDK models; request bodies (``options.json_data``, read for content capture) are
JSON, since the SDK dumps any model the caller passes into plain dicts: the extractors read both,
so every field access goes through :func:`field`. The SDK builds answers without validating them,
so any field may hold any JSON value.
"""

from __future__ import annotations

from typing import Any

from otel_sampling import names
from otel_sampling.instrumentation._provider import member
from otel_sampling.rules.endings import reported_error_type
from otel_sampling.rules.values import Usage, clean_usage


def field(obj: Any, name: str) -> Any:
    """``obj.name`` for an SDK model, ``obj[name]`` for a JSON object; None when absent. (A dict
    by its type: see :func:`~otel_sampling.instrumentation._provider.is_object`.)"""
    return obj.get(name) if issubclass(type(obj), dict) else getattr(obj, name, None)


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def as_sent(value: Any) -> Any:
    """``value`` as the provider sent it, for a truthiness test: an SDK model built from ``{}`` is ``{}``."""
    fields_set = getattr(value, "model_fields_set", None)
    if isinstance(fields_set, set) and not fields_set and not getattr(value, "__pydantic_extra__", None):
        return {}
    return value


def usage_of(usage: Any, input_key: str, output_key: str, details_key: str, output_details_key: str) -> Usage:
    """Semantic-convention usage from an openai usage object (or its JSON): input, output, the input
    details' ``cached_tokens`` / ``cache_write_tokens`` and the output details' ``reasoning_tokens``
    (part of the output); each a token count or None."""
    if usage is None:
        return Usage()
    details = field(usage, details_key)
    # Each a token count or None (clean_usage: token_count of each, checked at once)
    return clean_usage(
        Usage(
            field(usage, input_key),
            field(usage, output_key),
            field(details, "cached_tokens"),
            field(details, "cache_write_tokens"),
            field(field(usage, output_details_key), "reasoning_tokens"),
        )
    )


def error_envelope(
    body: Any,
    *,
    marked: bool = False,
    named_by: tuple[str, ...] = ("code", "type"),
    fallback: str = names.ERROR_TYPE_ERROR_EVENT,
) -> str | None:
    """``error.type`` of the error a body reports in its ``error`` member (an error body the SDK
    parsed as a result because it came with HTTP 200; ``marked``: the body says it failed), named
    by the error's ``named_by`` fields (:func:`~otel_sampling.rules.endings.reported_error_type`);
    None when it reports none."""
    error = as_sent(member(body, "error"))
    return reported_error_type(error, tuple(field(error, name) for name in named_by), marked=marked, fallback=fallback)
