"""The MCP conventions' operation duration of one ``sampling/createMessage``, on either side.

``mcp.server.operation.duration`` on the host (the receiver of the request) and
``mcp.client.operation.duration`` in the MCP server's process (its sender), as
semantic-conventions-genai ``model/mcp/metrics.yaml`` defines them: ``mcp.method.name``;
``mcp.protocol.version`` and ``network.transport`` when known; ``error.type`` when the request
failed and ``rpc.response.status_code`` when its answer carried an error code (both bounded like
every label that comes from outside); the MCP semconv buckets (``names.MCP_DURATION_BUCKETS``).
Not ``gen_ai.tool.name``: a sampling request is not an operation on a tool, and the conventions
ask for it only then.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.context import Context

from otel_sampling import names
from otel_sampling.labels import BoundedLabel, clean
from otel_sampling.rules.values import Ending

_VERSION_MAX_LENGTH = 64  # a protocol version is a date ("2026-07-28")


def start_attributes(protocol_version: str | None, transport: str | None = None) -> dict[str, str]:
    """The attributes known when the request starts."""
    attributes = {names.MCP_METHOD_NAME: names.METHOD_SAMPLING}
    if isinstance(protocol_version, str) and protocol_version:
        attributes[names.MCP_PROTOCOL_VERSION] = clean(protocol_version, _VERSION_MAX_LENGTH)
    if transport:
        attributes[names.NETWORK_TRANSPORT] = transport
    return attributes


def record(
    histogram: Any,
    duration_s: float,
    started: dict[str, str],
    ending: Ending,
    status_code: str | None,
    error_label: BoundedLabel,
    context: Context,
) -> None:
    """One point of ``histogram`` (seconds) for a request that started with ``started`` and ended so."""
    attributes = dict(started)
    if ending.error_type is not None:
        attributes[names.ERROR_TYPE] = error_label.value(ending.error_type)
    if status_code is not None:
        attributes[names.RPC_RESPONSE_STATUS_CODE] = error_label.value(status_code)
    histogram.record(duration_s, attributes, context=context)
