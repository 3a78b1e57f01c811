"""Our own steps failing never change what the host or the server sees, and every request still
ends and is counted: the bookkeeping (identity store, stall watch, server-side records, the
deactivation and the peer's cancel reason before the ending) and the classification of answers,
error frames, exceptions and cancellations (each then ends with its documented fallback)."""

from __future__ import annotations

import contextlib
from collections import Counter

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError

from conftest import TRACER_PROVIDER
from otel_sampling import names
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor
from otel_sampling.instrumentation.mcp_v2 import _CancelReasons
from otel_sampling.records.ledger import IdentityStore, PendingWatch
from otel_sampling.records.sampling import SamplingRecord
from otel_sampling.records.server_sampling import ServerSamplingRecord
from otel_sampling.rules import endings
from sampling_server import SERVER_NAME, build_fault_server, build_server

ARGS = {"hint": "claude-sonnet", "include_context": "thisServer"}
RESULT = types.CreateMessageResult(
    role="assistant", content=types.TextContent(text="ok"), model="claude-sonnet-5-5", stop_reason="endTurn"
)


async def callback(ctx, params):
    return RESULT


async def call(mode):
    async with Client(build_server(), mode=mode, sampling_callback=callback) as client:
        return (await client.call_tool("sample", ARGS)).content[0].text


def broken(*args, **kwargs):
    raise RuntimeError("broken bookkeeping")


def test_broken_identity_store_and_stall_watch_lose_nothing(mcp_instrumented, monkeypatch):
    monkeypatch.setattr(IdentityStore, "put", broken)
    monkeypatch.setattr(PendingWatch, "add", broken)
    for mode in ("legacy", "auto"):
        assert anyio.run(call, mode) == "claude-sonnet-5-5|endTurn"
    assert mcp_instrumented.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_ENDING) == {("completed",): 2}
    assert mcp_instrumented.counts(names.METRIC_SAMPLING_IN_FLIGHT, names.MCP_SERVER_NAME) == {(SERVER_NAME,): 0}
    assert len(mcp_instrumented.spans(names.SPAN_SAMPLING)) == 2


def test_broken_server_side_records_do_not_reach_the_server(telemetry, monkeypatch):
    monkeypatch.setattr(ServerSamplingRecord, "__init__", broken)
    instrumentor = MCPServerSamplingInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        for mode in ("legacy", "auto"):
            assert anyio.run(call, mode) == "claude-sonnet-5-5|endTurn"
    finally:
        instrumentor.uninstrument()
    assert telemetry.points(names.METRIC_SAMPLING_SERVER_REQUESTS) == []


# ---------------------------------------------------------------- classification and bookkeeping failing
ANSWERS = [
    types.CreateMessageResult(
        role="assistant", content=types.TextContent(text="ok"), model="claude-x", stop_reason="endTurn"
    ),
    types.ErrorData(code=-32003, message="Denied", data={"reason": "policy.denied"}),
]


async def _ask_all(mode: str) -> list:
    seen = []
    for answer in ANSWERS:

        async def callback(ctx, params, answer=answer):
            return answer

        async with Client(build_fault_server(), mode=mode, sampling_callback=callback) as client:
            try:
                out = await client.call_tool("sample", {})
                seen.append(("result", out.is_error, out.content[0].text))
            except MCPError as exc:
                seen.append((type(exc), exc.error.code, exc.error.message, exc.error.data))
    return seen


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_broken_classifiers_never_change_what_the_mcp_host_sees(telemetry, monkeypatch, mode):
    """Host and server side: the answers are unchanged and every request still ends (its span ends,
    in-flight goes back down), as many as when classifying works."""
    bare = anyio.run(_ask_all, mode)
    instrumentors = [MCPSamplingInstrumentor(), MCPServerSamplingInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        assert anyio.run(_ask_all, mode) == bare
        working = Counter(s.kind.name for s in telemetry.spans(names.SPAN_SAMPLING))  # as many must end below
        for name in ("from_result", "from_error_frame", "from_exception", "from_cancellation"):
            monkeypatch.setattr(endings, name, broken)
        assert anyio.run(_ask_all, mode) == bare
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
    ended = Counter(s.kind.name for s in telemetry.spans(names.SPAN_SAMPLING))
    assert working["SERVER"] == 2 and ended["SERVER"] == 4  # the host's spans
    if mode == "legacy":  # the server's (CLIENT) spans; on 2026-07-28 a denied one ends later, unanswered
        assert working["CLIENT"] == 2 and ended["CLIENT"] == 4
    assert telemetry.counts(names.METRIC_SAMPLING_IN_FLIGHT) == {(): 0}
    assert bare[0] == ("result", False, "claude-x") and bare[1][1] == -32003
    # The fallback endings (docs/telemetry.md): a result is completed, an error frame error with its code.
    assert telemetry.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_ENDING) == {
        (names.ENDING_COMPLETED,): 2,
        (names.ENDING_POLICY_DENIED,): 1,
        (names.ENDING_ERROR,): 1,
    }
    (unclassified,) = [
        s
        for s in telemetry.spans(names.SPAN_SAMPLING)
        if s.kind.name == "SERVER" and s.attributes[names.SAMPLING_ENDING] == names.ENDING_ERROR
    ]
    assert unclassified.attributes[names.ERROR_TYPE] == "-32003"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_unclassifiable_exceptions_and_cancellations_end_with_the_documented_fallbacks(telemetry, monkeypatch, mode):
    """docs/telemetry.md: an exception ends as ``error`` with ``error.type`` ``_unknown``, a
    cancellation as ``cancelled``, when classifying them raises."""
    monkeypatch.setattr(endings, "from_exception", broken)
    monkeypatch.setattr(endings, "from_cancellation", broken)
    started = anyio.Event()

    async def raising(ctx, params):
        raise RuntimeError("provider 503")

    async def hanging(ctx, params):
        started.set()
        await anyio.sleep_forever()

    async def host() -> None:
        async with Client(build_fault_server(), mode=mode, sampling_callback=raising) as client:
            with contextlib.suppress(Exception):
                await client.call_tool("sample", {})
        async with Client(build_fault_server(), mode=mode, sampling_callback=hanging) as client:
            async with anyio.create_task_group() as tg:  # the host gives up once its callback runs
                tg.start_soon(client.call_tool, "sample", {})
                await started.wait()
                tg.cancel_scope.cancel()

    instrumentor = MCPSamplingInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        anyio.run(host)
    finally:
        instrumentor.uninstrument()
    assert telemetry.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_ENDING) == {
        (names.ENDING_ERROR,): 1,
        (names.ENDING_CANCELLED,): 1,
    }
    errors = {
        s.attributes[names.SAMPLING_ENDING]: s.attributes.get(names.ERROR_TYPE)
        for s in telemetry.spans(names.SPAN_SAMPLING)
    }
    assert errors == {names.ENDING_ERROR: names.UNKNOWN_LABEL, names.ENDING_CANCELLED: names.ERROR_TYPE_CANCELLED}
    assert telemetry.counts(names.METRIC_SAMPLING_IN_FLIGHT) == {(): 0}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("step", ["deactivate", "cancel_reasons"])
def test_broken_bookkeeping_before_the_ending_still_ends_every_request(telemetry, monkeypatch, mode, step):
    """The host's answers are unchanged, and each request still ends with the ending it had:
    its span ends and in-flight goes back down (a failed step before the ending is not a leak)."""
    bare = anyio.run(_ask_all, mode)
    instrumentor = MCPSamplingInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        if step == "deactivate":
            monkeypatch.setattr(SamplingRecord, "deactivate", broken)
        else:
            monkeypatch.setattr(_CancelReasons, "pop", broken)
        assert anyio.run(_ask_all, mode) == bare
    finally:
        instrumentor.uninstrument()
    path = {"legacy": names.PATH_RPC, "auto": names.PATH_MRTR}[mode]
    assert telemetry.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_PATH, names.SAMPLING_ENDING) == {
        (path, names.ENDING_COMPLETED): 1,
        (path, names.ENDING_POLICY_DENIED): 1,
    }
    assert len(telemetry.spans(names.SPAN_SAMPLING)) == 2
    assert telemetry.counts(names.METRIC_SAMPLING_IN_FLIGHT) == {(): 0}
