"""Suppressed instrumentation on mcp 1.x: the host table's wrappers pass straight through.

The mcp 1.x table of the host instrumentor (``ClientSession.initialize``, ``_received_request``
and the connection targets) under ``suppress_instrumentation()``: the host gets the same answers,
the responder is never shadowed, and nothing is recorded; outside it, as usual. mcp 2.x:
``tests/test_suppression.py``. Skipped when mcp 2.x is installed (``make test-matrix`` runs it).
"""

from __future__ import annotations

from importlib.metadata import version

import pytest

if int(version("mcp").split(".")[0]) != 1:
    pytest.skip("mcp 1.x only (mcp 2.x is covered by test_suppression.py)", allow_module_level=True)

import anyio
from mcp import types
from mcp.shared.session import RequestResponder
from opentelemetry.instrumentation.utils import suppress_instrumentation

from otel_sampling import names
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from test_mcp_v1 import SERVED, STDIO, answering, call_server, result

ERROR_FRAME = types.ErrorData(code=-1, message="User rejected sampling request")


@pytest.fixture
def v1_instrumented(telemetry):
    instrumentor = MCPSamplingInstrumentor()  # picks the mcp 1.x table
    instrumentor.instrument(meter_provider=telemetry.meter_provider)  # the global (test) tracer provider
    yield telemetry
    instrumentor.uninstrument()


def _points(telemetry) -> list:
    """Every metric point we recorded (``test_lifecycle_tables._snapshot`` imports mcp 2.x)."""
    data = telemetry.reader.get_metrics_data()
    return [p for rm in (data.resource_metrics if data else ()) for sm in rm.scope_metrics for m in sm.metrics
            for p in m.data.data_points]


def _shadowed_responders(monkeypatch) -> list:
    """Every responder whose ``respond`` was shadowed on the instance while a request was handled."""
    shadowed: list = []
    original = RequestResponder.__exit__

    def watching_exit(self, *exc_info):
        if "respond" in vars(self):
            shadowed.append(self)
        return original(self, *exc_info)

    monkeypatch.setattr(RequestResponder, "__exit__", watching_exit)
    return shadowed


async def _answers() -> list:
    """One request answered, one refused with an error frame, one over stdio."""
    return [await call_server(answering(result())), await call_server(answering(ERROR_FRAME)),
            await call_server(answering(result()), server=STDIO)]


def test_suppressed_requests_are_answered_as_without_instrumentation(v1_instrumented, monkeypatch):
    shadowed = _shadowed_responders(monkeypatch)
    with suppress_instrumentation():
        answers = anyio.run(_answers)
    assert answers[0] == answers[2] == f"{SERVED}|endTurn"
    assert answers[1] == ("tool_error", "Error executing tool sample: User rejected sampling request")
    assert shadowed == []
    assert v1_instrumented.spans() == []
    assert _points(v1_instrumented) == []


def test_outside_suppression_they_are_recorded(v1_instrumented):
    anyio.run(_answers)
    assert len(v1_instrumented.spans(names.SPAN_SAMPLING)) == 3
    assert v1_instrumented.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_ENDING) == {
        ("completed",): 2, ("user.denied",): 1}
