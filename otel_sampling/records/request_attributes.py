"""The span attributes and the operation duration of one ``sampling/createMessage``, on either side.

What the request asked (:func:`start_attributes`) and what its ending said
(:func:`add_result_attributes`) are the same on both sides; each side adds the facts only it
knows (the host: JSON-RPC id, server version, transport, fingerprint).

The operation duration (:func:`operation_attributes`, :func:`record_operation_duration`):
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

from collections.abc import Iterable, Sequence
from typing import Any

from opentelemetry.context import Context

from otel_sampling import names
from otel_sampling.labels import BoundedLabel, bound, clean, clean_texts, otlp_int
from otel_sampling.rules import endings
from otel_sampling.rules.values import Ending

MAX_HINTS = 16  # model hints kept on the span (all are used to judge substitution)


def hint_names(params: Any) -> tuple[str, ...]:
    """``modelPreferences.hints[].name`` in order, the non-empty strings only."""
    preferences = getattr(params, "model_preferences", None)
    hints: Sequence[Any] = getattr(preferences, "hints", None) or ()
    found: list[str] = []
    for hint in hints:
        name = getattr(hint, "name", None)
        if isinstance(name, str) and name:
            found.append(name)
    return tuple(found)


def include_context(params: Any) -> str:
    """The ``includeContext`` the request asked for (``none`` when absent)."""
    return getattr(params, "include_context", None) or "none"


def start_attributes(
    params: Any, path: str, hints: Sequence[str], max_length: int, facts: Iterable[tuple[str, object]] = ()
) -> dict[str, Any]:
    """``mcp.method.name``, ``otel_sampling.sampling.path``, the requested ``includeContext``, the first
    ``MAX_HINTS`` hints, ``gen_ai.request.max_tokens`` (when an OTLP exporter can carry it), and each
    ``(key, value)`` of ``facts`` whose value is a non-empty string; every string cut to ``max_length``."""
    attributes: dict[str, Any] = {names.MCP_METHOD_NAME: names.METHOD_SAMPLING, names.SAMPLING_PATH: path}
    max_tokens = otlp_int(getattr(params, "max_tokens", None))  # mcp accepts any int
    if max_tokens is not None:
        attributes[names.GEN_AI_REQUEST_MAX_TOKENS] = max_tokens
    outside: dict[str, object] = {
        names.SAMPLING_INCLUDE_CONTEXT_REQUESTED: include_context(params),
        names.SAMPLING_MODEL_HINTS: hints[:MAX_HINTS],
    }
    outside.update((key, value) for key, value in facts if isinstance(value, str))
    attributes.update(clean_texts(outside, max_length))
    return attributes


def add_result_attributes(
    attributes: dict[str, Any],
    ending: Ending,
    served: str | None,
    stop_reason: object,
    max_length: int,
    facts: Iterable[tuple[str, object]] = (),
) -> None:
    """What a sampling request's ending says, on either side's span: ``gen_ai.response.model``,
    ``gen_ai.response.finish_reasons`` (from ``stopReason``), ``otel_sampling.sampling.budget.resets_at`` and
    ``error.type``, and each ``(key, value)`` of ``facts`` that is not None or empty (a string or a
    sequence of strings); every string cut to ``max_length``."""
    attributes.update(
        clean_texts(
            {
                names.GEN_AI_RESPONSE_MODEL: served,
                names.GEN_AI_RESPONSE_FINISH_REASONS: endings.finish_reasons(stop_reason),
                names.SAMPLING_BUDGET_RESETS_AT: ending.resets_at,
                names.ERROR_TYPE: ending.error_type,
                **dict(facts),
            },
            max_length,
        )
    )


# ---------------------------------------------------------------------- operation duration
_VERSION_MAX_LENGTH = 64  # a protocol version is a date ("2026-07-28")


def operation_attributes(protocol_version: str | None, transport: str | None = None) -> dict[str, str]:
    """The operation duration's attributes known when the request starts."""
    attributes = {names.MCP_METHOD_NAME: names.METHOD_SAMPLING}
    if isinstance(protocol_version, str) and protocol_version:
        attributes[names.MCP_PROTOCOL_VERSION] = clean(protocol_version, _VERSION_MAX_LENGTH)
    if transport:
        attributes[names.NETWORK_TRANSPORT] = transport
    return attributes


def record_operation_duration(
    histogram: Any,
    duration_s: float,
    started: dict[str, str],
    ending: Ending,
    status_code: str | None,
    error_label: BoundedLabel,
    context: Context,
) -> None:
    """One point of ``histogram`` (seconds) for a request that started with ``started`` and ended so."""
    labelled = ((names.ERROR_TYPE, ending.error_type), (names.RPC_RESPONSE_STATUS_CODE, status_code))
    attributes = {**started, **bound([(key, error_label, raw) for key, raw in labelled if raw is not None])}
    histogram.record(duration_s, attributes, context=context)
