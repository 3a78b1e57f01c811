"""Reading openai response fields from SDK models and from raw JSON bodies alike.

A ``with_raw_response`` call returns the HTTP response, not a model; its already-read JSON body is
read with the same extractors, so every field access goes through :func:`field`.
"""

from __future__ import annotations

from typing import Any


def field(obj: Any, name: str) -> Any:
    """``obj.name`` for an SDK model, ``obj[name]`` for a JSON object; None when absent."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
