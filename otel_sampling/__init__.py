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

For what no wrapper can see, a small API (``docs/telemetry.md``, "Degraded mode, runs and the
five numbers")::

    import otel_sampling as osm
    with osm.run("ticket-triage"):
        with osm.degraded("search", reason="sources unavailable", owner="oncall-search",
                          expires_at="2026-12-01T00:00:00Z"):
            ...
        osm.disclose("Running in reduced mode: sources unavailable", kind="inline")
    osm.record_evaluation("triage-suite", 0.82)
    meta = osm.provenance.stamp(); osm.provenance.lookup(hit=True, stamp=meta)

Names of everything emitted: :mod:`otel_sampling.names` and ``docs/telemetry.md``.

For what no wrapper can see (:mod:`otel_sampling.sampling_api`): :func:`grant_context` (the
``includeContext`` scope the host granted), :func:`sampling_error` (a well-formed denial
``ErrorData``) and :func:`record_grant` (USD added to a server's sampling budget).
"""

import importlib
from typing import Any

from otel_sampling.version import __version__

# The API is imported on first use (PEP 562): ``import otel_sampling`` stays light, and
# ``python -m otel_sampling.policy`` does not find its module already imported by the package.
_API = {
    "canary": ("otel_sampling.degradation", "canary"),
    "grant_context": ("otel_sampling.sampling_api", "grant_context"),
    "record_grant": ("otel_sampling.sampling_api", "record_grant"),
    "sampling_error": ("otel_sampling.sampling_api", "sampling_error"),
    "degraded": ("otel_sampling.degradation", "degraded"),
    "disclose": ("otel_sampling.runs", "disclose"),
    "provenance": ("otel_sampling.provenance", None),
    "record_evaluation": ("otel_sampling.evaluation", "record_evaluation"),
    "run": ("otel_sampling.runs", "run"),
}

__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module 'otel_sampling' has no attribute {name!r}")
    module_name, attribute = _API[name]
    module = importlib.import_module(module_name)
    return module if attribute is None else getattr(module, attribute)
