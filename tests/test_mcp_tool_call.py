"""On the 2026-07-28 path the sampling span belongs to the tool call that asked: a child of the
round whose result carried the request, one trace per tool call, and the tool named, whichever
client drives the input-required loop (mcp's ``Client.call_tool``, fastmcp's ``Client.call_tool_mcp``).

Real mcp 2.x sessions: stdio subprocesses of ``sampling_server.py`` (the SDK's JSON-RPC dispatcher
makes an ``MCP send tools/call`` span per round) and in-process servers (no such span). The
expected trace shapes are the MCP semantic conventions' (the sampling span under the tool call it
serves) and what the SDK emits without us (a root span per round when the host has none).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from opentelemetry import trace

from conftest import TRACER_PROVIDER
from drivers import ARGS, SERVED, call, callback_returning, only_sampling_span, result
from harness.limits import HANG_S
from otel_sampling import names
from sampling_server import build_server

SCRIPT = str(Path(__file__).with_name("sampling_server.py"))
STDIO = StdioServerParameters(command=sys.executable, args=[SCRIPT])
TOOLS_CALL = "MCP send tools/call sample"  # the mcp SDK's CLIENT span of one tools/call round


async def call_stdio(mode: str) -> str:
    async with Client(STDIO, mode=mode, sampling_callback=callback_returning(result())) as client:
        return (await client.call_tool("sample", ARGS)).content[0].text


@pytest.mark.subprocess
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_one_trace_per_tool_call_over_stdio(mcp_instrumented, mode):
    """No span of the host's current: the sampling span is under the round that asked, and every
    round of the call is in that round's trace (on ``auto`` the SDK would start one per round)."""
    assert anyio.run(call_stdio, mode) == f"{SERVED}|endTurn"
    ours = only_sampling_span(mcp_instrumented)
    rounds = [s for s in mcp_instrumented.spans(scope=None) if s.name == TOOLS_CALL]
    assert len(rounds) == (2 if mode == "auto" else 1)  # auto: the call, then its retry with the answer
    first, *retries = sorted(rounds, key=lambda s: s.start_time)
    assert first.parent is None  # the host had no span: the call's first round roots its trace
    assert {s.context.trace_id for s in (*rounds, ours)} == {first.context.trace_id}
    assert all(r.parent.span_id == first.context.span_id for r in retries)
    if mode == "auto":  # the request came back in the first round's result
        assert ours.parent.span_id == first.context.span_id
        assert ours.attributes[names.SAMPLING_PATH] == names.PATH_MRTR
    assert ours.attributes[names.SAMPLING_TOOL_NAME] == "sample"


def test_the_hosts_own_span_around_the_call_parents_it_in_process(mcp_instrumented):
    """In-process there is no round span: the span the host has around ``call_tool`` is the parent."""
    tracer = TRACER_PROVIDER.get_tracer("host")

    async def main():
        with tracer.start_as_current_span("agent step") as step:
            await call("auto", callback_returning(result()))
        return step

    step = anyio.run(main)
    ours = only_sampling_span(mcp_instrumented)
    assert ours.parent.span_id == step.get_span_context().span_id
    assert ours.context.trace_id == step.get_span_context().trace_id
    assert ours.attributes[names.SAMPLING_TOOL_NAME] == "sample"


def test_with_the_hosts_span_the_rounds_keep_their_own_parent(telemetry):
    """Rounds are only re-parented when nothing of the host's is current: under a host span they are
    its children, as the SDK makes them."""
    from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor

    instrumentor = MCPSamplingInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    tracer = TRACER_PROVIDER.get_tracer("host")

    async def main():
        with tracer.start_as_current_span("agent step") as step:
            await call_stdio("auto")
        return step

    try:
        step = anyio.run(main)
    finally:
        instrumentor.uninstrument()
    rounds = [s for s in telemetry.spans(scope=None) if s.name == TOOLS_CALL]
    assert len(rounds) == 2
    assert {r.parent.span_id for r in rounds} == {step.get_span_context().span_id}


# ---------------------------------------------------------------- fastmcp's client
def test_fastmcp_names_the_tool_and_parents_the_request_under_its_call(mcp_instrumented):
    """fastmcp runs the loop itself in ``call_tool_mcp``, under its own ``tools/call`` span."""
    fastmcp = pytest.importorskip("fastmcp")

    async def handler(messages, params, context):
        return result()

    async def main():
        async with fastmcp.Client(build_server(), sampling_handler=handler) as client:
            return (await client.call_tool("sample", ARGS, raise_on_error=False)).content[0].text

    assert anyio.run(main) == f"{SERVED}|endTurn"
    ours = only_sampling_span(mcp_instrumented)
    assert ours.attributes[names.SAMPLING_TOOL_NAME] == "sample"
    assert ours.attributes[names.SAMPLING_PATH] == names.PATH_MRTR
    (call_span,) = [s for s in mcp_instrumented.spans(scope="fastmcp") if s.name == "tools/call sample"]
    rounds = sorted((s for s in mcp_instrumented.spans(scope=None) if s.name == TOOLS_CALL), key=lambda s: s.start_time)
    assert ours.parent.span_id == rounds[0].context.span_id  # the round that asked
    assert rounds[0].parent.span_id == call_span.context.span_id
    assert ours.context.trace_id == call_span.context.trace_id


FRESH_HOST = """
import sys
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
instrumentor = MCPSamplingInstrumentor()
instrumentor.instrument()
assert "fastmcp" not in sys.modules, "instrument() imported fastmcp"
import wrapt
from fastmcp.client.mixins.tools import ClientToolsMixin
assert isinstance(vars(ClientToolsMixin)["call_tool_mcp"], wrapt.FunctionWrapper), "not wrapped on import"
instrumentor.uninstrument()
assert not isinstance(vars(ClientToolsMixin)["call_tool_mcp"], wrapt.FunctionWrapper), "not unwrapped"
instrumentor.instrument()
assert isinstance(vars(ClientToolsMixin)["call_tool_mcp"], wrapt.FunctionWrapper), "not wrapped again"
print("ok")
"""


@pytest.mark.subprocess
def test_fastmcp_is_wrapped_once_the_host_imports_it_and_never_imported_for_it():
    pytest.importorskip("fastmcp")
    proc = subprocess.run(
        [sys.executable, "-c", FRESH_HOST],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        cwd=Path(__file__).parents[1],
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    assert "otel-sampling" not in proc.stderr  # no warning: the installed fastmcp is in range


def test_without_a_span_anywhere_nothing_is_reparented(mcp_instrumented):
    """In-process and no host span: the SDK makes no round span, so the request starts a trace."""
    anyio.run(call, "auto", callback_returning(result()))
    ours = only_sampling_span(mcp_instrumented)
    assert ours.parent is None
    assert trace.get_current_span() is trace.INVALID_SPAN  # nothing of the call is left current
