"""``mcp.sampling.in_flight`` counts a request while its callback runs, on both protocol paths,
also when several instrumentors share one meter provider (each builds its own instruments)."""

from __future__ import annotations

import anyio
import pytest

from conftest import _instrumented
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from sampling_server import SERVER_NAME
from test_mcp_sampling import PATHS, call, result


@pytest.fixture
def provider_first(telemetry):
    """The anthropic instrumentor's instruments exist on the meter before the MCP ones."""
    yield from _instrumented(telemetry, AnthropicInstrumentor, MCPSamplingInstrumentor)


@pytest.mark.parametrize("mode", PATHS)
def test_in_flight_is_one_inside_the_callback_and_zero_after(provider_first, mode):
    instrumented = provider_first
    seen = []

    async def callback(ctx, params):
        seen.append(instrumented.counts(names.METRIC_SAMPLING_IN_FLIGHT, names.MCP_SERVER_NAME))
        return result()

    assert anyio.run(call, mode, callback) == "claude-sonnet-5-5-20261001|endTurn"
    assert seen == [{(SERVER_NAME,): 1}]
    assert instrumented.counts(names.METRIC_SAMPLING_IN_FLIGHT, names.MCP_SERVER_NAME) == {(SERVER_NAME,): 0}
    (metric,) = [m for rm in instrumented.reader.get_metrics_data().resource_metrics for sm in rm.scope_metrics
                 for m in sm.metrics if m.name == names.METRIC_SAMPLING_IN_FLIGHT]
    assert (metric.unit, metric.data.is_monotonic) == (names.UNIT_REQUEST, False)  # an UpDownCounter's sum
