"""Reading openai fields from SDK models and from JSON alike.

Responses are SDK models; request bodies (``options.json_data``, read for content capture) are
JSON, since the SDK dumps any model the caller passes into plain dicts: the extractors read both,
so every field access goes through :func:`field`.
"""

from __future__ import annotations

from typing import Any

from otel_sampling import names


def field(obj: Any, name: str) -> Any:
    """``obj.name`` for an SDK model, ``obj[name]`` for a JSON object; None when absent."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def error_envelope(body: Any) -> str | None:
    """``error.type`` of an error body (``{"error": {"code": ..., "type": ...}}``) the SDK parsed as
    a result because it came with HTTP 200: ``code``, then ``type`` (as for a raised ``APIError``),
    else ``error``; None when the body carries no error object."""
    error = field(body, "error")
    if error is None or isinstance(error, (str, int, float, bool, list)):
        return None
    return as_str(field(error, "code")) or as_str(field(error, "type")) or names.ERROR_TYPE_ERROR_EVENT
