"""The opt-in guard on the spans other libraries of the set-up record: the mcp SDK's, fastmcp's and
the anthropic SDK's own (native) spans.

Those libraries record what they are given: mcp copies error messages (a provider's error body, an
``ErrorData`` message, a host exception's text) into the span status description; anthropic's
native spans record the model name as sent, whatever its length, and token counts as answered,
beyond what OTLP can carry. With ``OTEL_SAMPLING_GUARD_FOREIGN_SPANS=true`` our span processor
makes each such span keep to the caps ours keep to (:mod:`otel_sampling.metrics`):

* the status keeps its code and loses its description;
* a string attribute (of the span or of an event, ``exception.message`` and
  ``exception.stacktrace`` included), or each string of a sequence, is cut to
  ``OTEL_SAMPLING_ATTRIBUTE_MAX_LENGTH`` characters, non-printable characters dropped
  (:func:`~otel_sampling.metrics.clean`);
* an integer attribute outside int64 (which fails the OTLP export of the whole span) is dropped.

Spans are known by their instrumentation scope (``FOREIGN_SCOPES``, a platform suffix such as
``com.anthropic.sdk.python.bedrock`` included). The span's own methods are replaced on that one
span object at its start, so whatever the library sets later passes through the guard; what it
set at the start is rewritten then.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.trace import Status, StatusCode

from otel_sampling.metrics import clean, otlp_int

# The tracer names of the libraries whose own spans the guard covers: mcp 2.x (mcp.shared._otel),
# fastmcp (fastmcp.telemetry.INSTRUMENTATION_NAME), anthropic (anthropic._tracing.INSTRUMENTATION_SCOPE).
FOREIGN_SCOPES = ("mcp-python-sdk", "fastmcp", "com.anthropic.sdk.python")


def is_foreign(span: Any) -> bool:
    """True for a span whose instrumentation scope is one of ``FOREIGN_SCOPES`` (or a sub-scope)."""
    scope = getattr(getattr(span, "instrumentation_scope", None), "name", None)
    return isinstance(scope, str) and any(scope == s or scope.startswith(s + ".") for s in FOREIGN_SCOPES)


def _fits(value: object) -> bool:
    """False for an integer OTLP cannot carry (beyond int64)."""
    return not isinstance(value, int) or isinstance(value, bool) or otlp_int(value) is not None


def capped(attributes: Mapping[str, Any] | None, max_length: int) -> dict[str, Any]:
    """``attributes`` with every string cut to ``max_length`` characters and every integer outside
    int64 left out (booleans and floats pass)."""
    out: dict[str, Any] = {}
    for key, value in (attributes or {}).items():
        if isinstance(value, str):
            out[key] = clean(value, max_length)
        elif not _fits(value):
            continue
        elif isinstance(value, (list, tuple)):
            out[key] = [clean(v, max_length) if isinstance(v, str) else v for v in value if _fits(v)]
        else:
            out[key] = value
    return out


def guard(span: Any, max_length: int) -> None:
    """Rewrite the attributes ``span`` started with and replace its setters on this one object."""
    attributes = getattr(span, "_attributes", None)  # the SDK span's own store: the started attributes
    if attributes is not None:
        kept = capped(attributes, max_length)
        for key in [k for k in attributes if k not in kept]:
            del attributes[key]
        span.set_attributes(kept)
    set_attributes, add_event, set_status = span.set_attributes, span.add_event, span.set_status

    def guarded_set_attributes(attributes: Mapping[str, Any]) -> None:
        set_attributes(capped(attributes, max_length))

    def guarded_set_attribute(key: str, value: Any) -> None:
        set_attributes(capped({key: value}, max_length))

    def guarded_add_event(name: str, attributes: Mapping[str, Any] | None = None, timestamp: int | None = None) -> None:
        add_event(clean(name, max_length), capped(attributes, max_length), timestamp)

    def guarded_set_status(status: Status | StatusCode, description: str | None = None) -> None:
        set_status(status.status_code if isinstance(status, Status) else status)

    span.set_attributes = guarded_set_attributes
    span.set_attribute = guarded_set_attribute
    span.add_event = guarded_add_event
    span.set_status = guarded_set_status
