"""``otel_sampling.sampling.in_flight`` counts a request while its callback runs, on both protocol paths,
also when several instrumentors share one meter provider (each builds its own instruments)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from conftest import _instrumented
from drivers import PATHS, call, result
from harness.limits import HANG_S
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from sampling_server import SERVER_NAME


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
    (metric,) = [
        m
        for rm in instrumented.reader.get_metrics_data().resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == names.METRIC_SAMPLING_IN_FLIGHT
    ]
    assert (metric.unit, metric.data.is_monotonic) == (names.UNIT_REQUEST, False)  # an UpDownCounter's sum


# Instrumented before the host sets its meter provider: each instrumentor's meter is then a proxy
# of its own, and the SDK keeps the first in-flight callback it is given once the provider is set.
# The anthropic instrumentor comes first, so the MCP instrumentor's counts must still be the ones read.
BEFORE_THE_PROVIDER = """
import sys
import anyio
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from drivers import call, result

AnthropicInstrumentor().instrument()
MCPSamplingInstrumentor().instrument()
reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))

def in_flight():
    data = reader.get_metrics_data()  # None when nothing was recorded
    return sorted((dict(p.attributes).get("mcp.server.name"), p.value)
                  for rm in (data.resource_metrics if data else ()) for sm in rm.scope_metrics
                  for m in sm.metrics if m.name == "otel_sampling.sampling.in_flight" for p in m.data.data_points)

seen = []
async def callback(ctx, params):
    seen.append(in_flight())
    return result()

print(anyio.run(call, sys.argv[1], callback))
print(seen, in_flight())
"""


@pytest.mark.subprocess
@pytest.mark.parametrize("mode", PATHS)
def test_in_flight_counts_when_instrumented_before_the_meter_provider_is_set(mode):
    tests = Path(__file__).parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", BEFORE_THE_PROVIDER, mode], capture_output=True, text=True, timeout=HANG_S, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "claude-sonnet-5-5-20261001|endTurn",
        f"[[('{SERVER_NAME}', 1)]] [('{SERVER_NAME}', 0)]",
    ]
