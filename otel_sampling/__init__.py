"""otel-sampling: OpenTelemetry instrumentation for MCP sampling and the provider SDKs that answer it.

"Sampling" here is MCP sampling (``sampling/createMessage``: an MCP server asking the host for a
model completion), not OpenTelemetry trace sampling.

Use it without code changes: ``opentelemetry-instrument python host.py`` loads the instrumentors
through the ``opentelemetry_instrumentor`` entry points ``otel_sampling_mcp`` (the host side),
``otel_sampling_mcp_server`` (the server side), ``otel_sampling_anthropic`` and
``otel_sampling_openai``. In code::

    from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
    from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
    MCPSamplingInstrumentor().instrument()
    AnthropicInstrumentor().instrument()

For what no wrapper can see, a small API (``docs/api.md``): runs and disclosure
(:mod:`otel_sampling.runs`), named degradations and canary traffic (:mod:`otel_sampling.degradation`),
drills that fail one model's calls on purpose (:mod:`otel_sampling.drills`),
evaluations, cache provenance, and inside a sampling callback :func:`grant_context` (the
``includeContext`` scope the host granted), :func:`sampling_error` (a well-formed denial
``ErrorData``) and :func:`record_grant` (USD added to a server's budget,
:mod:`otel_sampling.sampling_api`)::

    import otel_sampling as osm
    with osm.run("ticket-triage"):
        with osm.degraded("search", reason="sources unavailable", owner="oncall-search",
                          expires_at="2026-12-01T00:00:00Z"):
            ...
        osm.disclose("Running in reduced mode: sources unavailable", kind="inline")
    osm.record_evaluation("triage-suite", 0.82)
    meta = osm.provenance.stamp(); osm.provenance.lookup(hit=True, stamp=meta)

Names of everything emitted: :mod:`otel_sampling.names` and ``docs/telemetry.md``; how the
package is laid out: ``docs/architecture.md``.
"""

from otel_sampling import provenance
from otel_sampling.degradation import Degradation, canary, degraded
from otel_sampling.drills import Drill, drill
from otel_sampling.evaluation import record_evaluation
from otel_sampling.runs import Run, disclose, run
from otel_sampling.sampling_api import grant_context, record_grant, sampling_error
from otel_sampling.version import __version__

__all__ = [
    "__version__",
    "run",
    "degraded",
    "drill",
    "disclose",
    "canary",
    "record_evaluation",
    "provenance",
    "grant_context",
    "sampling_error",
    "record_grant",
    "Run",
    "Degradation",
    "Drill",
]
