"""What the MCP protocol says that the host side (mcp 2.x and 1.x) and the server side both read.

* :data:`MODERN_PROTOCOL_VERSIONS` and :func:`path_of`: which negotiated protocol versions take the
  2026-07-28 multi-round-trip path (``names.PATH_MRTR``) and which the JSON-RPC request path
  (``names.PATH_RPC``). mcp 1.x negotiates none of the modern versions, so on it every request is
  ``rpc``.
* :func:`parent_of`: the W3C trace context a peer sent in ``params._meta`` (the MCP semantic
  conventions carry ``traceparent`` / ``tracestate`` there), as a parent for our span.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.propagate import extract

from otel_sampling import names

logger = logging.getLogger(__name__)

# mcp_types.version.MODERN_PROTOCOL_VERSIONS (mcp 2.x); copied: mcp is an optional extra, and 1.x has none.
MODERN_PROTOCOL_VERSIONS = ("2026-07-28",)


def path_of(protocol_version: object) -> str:
    """``names.PATH_MRTR`` for a 2026-07-28 protocol version, else ``names.PATH_RPC`` (None included)."""
    return names.PATH_MRTR if protocol_version in MODERN_PROTOCOL_VERSIONS else names.PATH_RPC


def parent_of(meta: Any) -> otel_context.Context | None:
    """The context in ``params._meta``, or None (the ambient context) when there is no valid one.

    ``meta`` is a mapping (mcp 2.x hands ``_meta`` over as a dict) or a pydantic model keeping its
    extra keys (mcp 1.x's ``RequestParams.Meta``), or None. Never raises: a hostile peer can put
    anything there.
    """
    try:
        if hasattr(meta, "model_dump"):
            meta = meta.model_dump(by_alias=True, exclude_none=True)
        if not isinstance(meta, Mapping) or "traceparent" not in meta:
            return None
        parent = extract(meta)
    except Exception:
        logger.debug("otel-sampling: unreadable trace context in params._meta", exc_info=True)
        return None
    return parent if trace.get_current_span(parent).get_span_context().is_valid else None
