"""otel-sampling: OpenTelemetry instrumentation for MCP sampling and the provider SDKs that answer it.

"Sampling" here is MCP sampling (``sampling/createMessage``: an MCP server asking the host for a
model completion), not OpenTelemetry trace sampling.

Use it without code changes: ``opentelemetry-instrument python host.py`` loads the instrumentors
through the ``opentelemetry_instrumentor`` entry points ``otel_sampling_mcp``,
``otel_sampling_anthropic`` and ``otel_sampling_openai``. In code::

    from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
    from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
    MCPSamplingInstrumentor().instrument()
    AnthropicInstrumentor().instrument()

Names of everything emitted: :mod:`otel_sampling.names` and ``docs/telemetry.md``.

For what no wrapper can see (:mod:`otel_sampling.sampling_api`): :func:`grant_context` (the
``includeContext`` scope the host granted), :func:`sampling_error` (a well-formed denial
``ErrorData``) and :func:`record_grant` (USD added to a server's sampling budget).
"""

from typing import Any

from otel_sampling.version import __version__

__all__ = ["__version__", "grant_context", "record_grant", "sampling_error"]
_API = frozenset({"grant_context", "record_grant", "sampling_error"})


def __getattr__(name: str) -> Any:
    # Imported on first use: ``import otel_sampling`` stays light, and ``python -m
    # otel_sampling.policy`` does not find its own module already imported by the package.
    if name in _API:
        from otel_sampling import sampling_api

        return getattr(sampling_api, name)
    raise AttributeError(f"module 'otel_sampling' has no attribute {name!r}")
