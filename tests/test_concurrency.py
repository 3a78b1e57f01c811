"""Many sampling requests at once, over one session and over 20, on both protocol paths.

Each request's ending is chosen by the test (the request text names it) and produced the way a
real host or server produces it: a result (completed, maxTokens, refusal), an error frame
(user denial -1, policy -32003, the legacy refusal code, budget, model unavailable), a raising
callback, the server's read deadline (legacy) or a -32001 frame (2026-07-28), the server abandoning
its request, and the host cancelling its own tool call. Afterwards the exported metrics count exactly what was
driven, every span that started has ended, in-flight is back to zero, and the instrumentor's
bounded stores hold nothing for the requests that ended.

The default suite runs 200 requests per cell; ``make soak`` runs the 1,000 the issue asks for.
"""

import contextlib
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Annotated

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server.mcpserver import Context, MCPServer, Resolve, Sample
from mcp.shared.message import ServerMessageMetadata

from drivers import tracked_provider
from otel_sampling import names
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor

# kind -> (expected otel_sampling.sampling.ending, paths it can be driven on). Endings from the classify
# rules (docs/telemetry.md "Ending rules"): -1 is a user denial (MCP spec), -32003 (legacy) a policy
# denial refined by data.reason, -32001 (mcp REQUEST_TIMEOUT) and a peer cancel reason saying
# "timed out" are timeouts, any other cancellation is cancelled, maxTokens is a completion.
KINDS = {
    "completed": (names.ENDING_COMPLETED, ("legacy", "auto")),
    "max_tokens": (names.ENDING_COMPLETED, ("legacy", "auto")),
    "refused": (names.ENDING_REFUSED, ("legacy", "auto")),
    "user_denied": (names.ENDING_USER_DENIED, ("legacy", "auto")),
    "policy_denied": (names.ENDING_POLICY_DENIED, ("legacy", "auto")),
    "budget": (names.ENDING_BUDGET_EXHAUSTED, ("legacy", "auto")),
    "model_unavailable": (names.ENDING_MODEL_UNAVAILABLE, ("legacy", "auto")),
    "raised": (names.ENDING_ERROR, ("legacy", "auto")),
    "deadline": (names.ENDING_TIMEOUT, ("legacy",)),  # the server's read deadline expires
    "timeout_frame": (names.ENDING_TIMEOUT, ("auto",)),  # no server deadline on 2026-07-28
    "server_abandons": (names.ENDING_CANCELLED, ("legacy",)),  # needs the in-process server
    "host_cancels": (names.ENDING_CANCELLED, ("legacy", "auto")),
}
HANGING = {"deadline", "server_abandons", "host_cancels"}  # the callback waits until cancelled
DEADLINE_S = 3.0  # generous: the deadline must expire after the callback started, even under load
STARTED: dict[str, anyio.Event] = {}  # request text -> the host callback is running (in-process only)


def _request(text: str) -> dict:
    return {
        "messages": [types.SamplingMessage(role="user", content=types.TextContent(text=text))],
        "max_tokens": 64,
        "model_preferences": types.ModelPreferences(hints=[types.ModelHint(name="claude")]),
    }


def _ask(text: str) -> Sample:
    return Sample(**_request(text))


def build_server(name: str = "conc-server") -> MCPServer:
    # This module has no `from __future__ import annotations`: MCPServer evaluates the tool annotations.
    server = MCPServer(name, version="1.0.0")

    @server.tool()
    async def sample(text: str, answer: Annotated[types.CreateMessageResult, Resolve(_ask)]) -> str:
        return answer.model

    async def send(ctx: Context, text: str, deadline_s: float | None) -> types.CreateMessageResult:
        request = types.CreateMessageRequest(params=types.CreateMessageRequestParams(**_request(text)))
        return await ctx.session.send_request(
            request,
            types.CreateMessageResult,
            request_read_timeout_seconds=deadline_s,
            metadata=ServerMessageMetadata(related_request_id=ctx.request_context.request_id),
        )

    @server.tool()
    async def sample_with_deadline(text: str, deadline_s: float, ctx: Context) -> str:
        return (await send(ctx, text, deadline_s)).model

    @server.tool()
    async def sample_then_abandon(text: str, ctx: Context) -> str:
        async with anyio.create_task_group() as tg:
            tg.start_soon(send, ctx, text, None)
            await STARTED[text].wait()
            tg.cancel_scope.cancel()  # mcp sends notifications/cancelled "caller cancelled"
        return "abandoned"

    return server


def _result(stop_reason: str) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(text="ok"), model="claude-sonnet-5-5", stop_reason=stop_reason
    )


ANSWERS = {
    "completed": _result("endTurn"),
    "max_tokens": _result("maxTokens"),
    "refused": _result("refusal"),
    "user_denied": types.ErrorData(code=-1, message="User rejected sampling request"),
    "policy_denied": types.ErrorData(code=-32003, message="Denied by policy"),
    "budget": types.ErrorData(code=-32003, message="Budget exhausted", data={"reason": "policy.budget_exhausted"}),
    "model_unavailable": types.ErrorData(code=-32603, message="No model", data={"reason": "model.unavailable"}),
    "timeout_frame": types.ErrorData(code=-32001, message="Request timed out"),
}


async def host_callback(ctx, params: types.CreateMessageRequestParams):
    text = params.messages[0].content.text
    kind = text.split(":", 1)[0]
    if kind in HANGING:
        if text in STARTED:
            STARTED[text].set()
        await anyio.sleep_forever()
    if kind == "raised":
        raise RuntimeError("provider 503")
    return ANSWERS[kind]


def plan(mode: str, count: int, in_process: bool = True) -> list[tuple[str, str]]:
    """``count`` (kind, request text) pairs: the kinds of ``mode`` in turn, so each gets its share."""
    kinds = [k for k, (_, paths) in KINDS.items() if mode in paths and (in_process or k != "server_abandons")]
    return [(kinds[i % len(kinds)], f"{kinds[i % len(kinds)]}:{i}") for i in range(count)]


async def drive(client: Client, kind: str, text: str) -> None:
    """One request, ended the way ``kind`` says; whatever the host sees is fine here."""
    if kind == "deadline":
        call = client.call_tool("sample_with_deadline", {"text": text, "deadline_s": DEADLINE_S})
    elif kind == "server_abandons":
        call = client.call_tool("sample_then_abandon", {"text": text})
    else:
        call = client.call_tool("sample", {"text": text})
    if kind != "host_cancels":
        with contextlib.suppress(Exception):  # the denials reach the host as errors, by design
            await call
        return

    async def run() -> None:
        await call

    async with anyio.create_task_group() as tg:  # the host gives up once its callback is running
        tg.start_soon(run)
        await STARTED[text].wait()
        tg.cancel_scope.cancel()


@pytest.fixture
def traced(telemetry):
    """The mcp instrumentor on its own tracer provider, with the open-span tracker."""
    provider, exporter, tracker = tracked_provider()
    instrumentor = MCPSamplingInstrumentor()
    instrumentor.instrument(tracer_provider=provider, meter_provider=telemetry.meter_provider)
    yield telemetry, exporter, tracker, instrumentor._state
    instrumentor.uninstrument()


async def run_sessions(mode: str, sessions: int, per_session: int, server) -> tuple[list, float, list]:
    """``sessions`` clients, each with ``per_session`` concurrent requests; all sessions at once.
    Returns the (kind, text) pairs driven, the seconds taken and the client sessions' dispatchers."""
    plans = [plan(mode, per_session, in_process=not isinstance(server, StdioServerParameters)) for _ in range(sessions)]
    plans = [[(kind, f"{text}:s{s}") for kind, text in p] for s, p in enumerate(plans)]
    for kind, text in (pair for p in plans for pair in p):
        if kind in HANGING:
            STARTED[text] = anyio.Event()

    async def session(s: int) -> None:
        target = server(f"conc-server-{s:02d}") if callable(server) else server
        async with Client(target, mode=mode, sampling_callback=host_callback) as client:
            dispatchers.append(client.session._dispatcher)
            async with anyio.create_task_group() as tg:
                for kind, text in plans[s]:
                    tg.start_soon(drive, client, kind, text)

    dispatchers: list = []
    began = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for s in range(sessions):
            tg.start_soon(session, s)
    return [pair for p in plans for pair in p], time.perf_counter() - began, dispatchers


def check(traced, mode: str, driven: list, sessions: int, dispatchers: list) -> None:
    telemetry, exporter, tracker, state = traced
    path = {"legacy": names.PATH_RPC, "auto": names.PATH_MRTR}[mode]
    expected = Counter((path, KINDS[kind][0]) for kind, _ in driven)
    assert telemetry.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_PATH, names.SAMPLING_ENDING) == expected
    assert telemetry.counts(names.METRIC_SAMPLING_DURATION, names.SAMPLING_ENDING) == Counter(
        {(ending,): n for (_, ending), n in expected.items()}
    )
    in_flight = telemetry.counts(names.METRIC_SAMPLING_IN_FLIGHT, names.MCP_SERVER_NAME)
    assert len(in_flight) == sessions and set(in_flight.values()) == {0}, in_flight
    # One span per request, every one ended, each with the ending its request was driven to.
    spans = [s for s in exporter.get_finished_spans() if s.name == names.SPAN_SAMPLING]
    assert len(spans) == len(driven)
    assert tracker.started == tracker.ended and len(tracker.started) >= len(driven)
    by_text = {text: kind for kind, text in driven}
    finish = Counter(s.attributes.get(names.GEN_AI_RESPONSE_FINISH_REASONS, ("",))[0] for s in spans)
    assert finish["maxTokens"] == sum(1 for kind, _ in driven if kind == "max_tokens")
    assert len(by_text) == len(driven)
    # The bounded stores: nothing pending, no cancel reason left unread, no tool call left in flight,
    # one identity entry per distinct request (all distinct here, under the default bound).
    assert len(state.ledger.pending) == 0
    client_side = [state.cancel_reasons._by_dispatcher.get(d) for d in dispatchers]
    assert not any(client_side), client_side
    assert all(not calls for calls in state.connections.tool_calls.values())
    assert len(state.ledger.identity) == len(driven)


CELLS = [("legacy", 1), ("legacy", 20), ("auto", 1), ("auto", 20)]


@pytest.mark.parametrize(("mode", "sessions"), CELLS)
def test_concurrent_requests_are_counted_exactly(traced, mode, sessions):
    driven, _seconds, dispatchers = anyio.run(run_sessions, mode, sessions, 200 // sessions, build_server)
    check(traced, mode, driven, sessions, dispatchers)


@pytest.mark.soak
@pytest.mark.parametrize(("mode", "sessions"), CELLS)
def test_a_thousand_concurrent_requests_are_counted_exactly(traced, mode, sessions):
    driven, seconds, dispatchers = anyio.run(run_sessions, mode, sessions, 1000 // sessions, build_server)
    print(f"{mode} x{sessions} sessions: {len(driven)} requests in {seconds:.2f}s")
    check(traced, mode, driven, sessions, dispatchers)


@pytest.mark.subprocess
def test_concurrent_requests_over_stdio(traced):
    server = StdioServerParameters(command=sys.executable, args=[str(Path(__file__))])
    driven, _seconds, dispatchers = anyio.run(run_sessions, "legacy", 1, 200, server)
    check(traced, "legacy", driven, 1, dispatchers)


if __name__ == "__main__":  # the stdio server of test_concurrent_requests_over_stdio
    build_server().run()
