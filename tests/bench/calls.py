"""The call kinds the benchmark times, each against an in-process transport.

Provider calls use the real SDK clients on an ``httpx2.MockTransport`` that answers every request
with a recorded exchange from ``tests/data/cassettes`` (JSON or SSE exactly as recorded, body in one
piece: the SDK still parses every SSE event). MCP calls are one tool call whose tool samples once,
over the in-memory transport, on each protocol path (``tests/sampling_server.py``).

:func:`time_calls` runs warm-up calls, then times each call on its own (a stream is read to its last
event: instrumentations end their span there).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))  # cassette_replay, sampling_server

import httpx2  # noqa: E402

from cassette_replay import base_url, load  # noqa: E402

PROVIDER_KINDS = ("anthropic-create", "anthropic-stream", "openai-create", "openai-stream")
MCP_KINDS = ("mcp-legacy", "mcp-mrtr")
KINDS = PROVIDER_KINDS + MCP_KINDS

# Which recording answers each provider call kind.
CASSETTES = {
    "anthropic-create": "anthropic/messages_basic.json",
    "anthropic-stream": "anthropic/stream_basic.json",
    "openai-create": "openai/chat_basic.json",
    "openai-stream": "openai/chat_stream_include_usage.json",
}
# mcp.Client mode of each MCP kind: "legacy" = JSON-RPC over memory streams (2025-11-25),
# "auto" = 2026-07-28, where sampling rides InputRequiredResult (multi-round-trip requests).
MCP_MODES = {"mcp-legacy": "legacy", "mcp-mrtr": "auto"}

Timings = list[int]  # nanoseconds per call, in call order
Around = Callable[[], AbstractContextManager[Any]]
Clock = Callable[[], int]
# The clocks a run can time with: this process's CPU time (all its threads; what the call costs,
# without the time the OS gave to other processes: every call here runs in process, never waiting
# on I/O) or wall time.
CLOCKS: dict[str, Clock] = {"cpu": time.process_time_ns, "wall": time.perf_counter_ns}


def _transport(cassette: dict[str, Any]) -> httpx2.MockTransport:
    answer = cassette["response"]
    status, headers, body = answer["status"], answer.get("headers") or {}, answer["body"].encode("utf-8")

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(status, headers=headers, content=body)

    return httpx2.MockTransport(handler)


def _provider_call(kind: str) -> Callable[[], Any]:
    cassette = load(CASSETTES[kind])
    body = dict(cassette["request"]["body"])
    http = httpx2.Client(transport=_transport(cassette))
    if kind.startswith("anthropic"):
        import anthropic

        client: Any = anthropic.Anthropic(base_url=base_url(cassette), api_key="sk-bench", max_retries=0,
                                          http_client=http)
        create = client.messages.create
    else:
        import openai

        client = openai.OpenAI(base_url=base_url(cassette), api_key="sk-bench", max_retries=0, http_client=http)
        create = client.chat.completions.create

    if body.get("stream"):
        def call() -> Any:
            last = None
            for last in create(**body):  # noqa: B007 - read to the end: the span ends with the stream
                pass
            return last
        return call

    def call_once() -> Any:
        return create(**body)
    return call_once


def _time_provider(kind: str, warmup: int, iterations: int, timed: Around, clock: Clock) -> Timings:
    call = _provider_call(kind)
    for _ in range(warmup):
        call()
    timings = []
    with timed():
        for _ in range(iterations):
            start = clock()
            call()
            timings.append(clock() - start)
    return timings


async def _time_mcp(kind: str, warmup: int, iterations: int, timed: Around, clock: Clock) -> Timings:
    """One ``call_tool("sample")`` per call on a session opened once; the loop runs inside the event
    loop, so no thread hop is timed."""
    import mcp_types as types
    from mcp import Client

    from sampling_server import build_server

    answer = types.CreateMessageResult(role="assistant", content=types.TextContent(text="ok"),
                                       model="claude-sonnet-5-5-20261001", stop_reason="endTurn")

    async def sampling_callback(context: Any, params: Any) -> Any:
        return answer

    args = {"hint": "claude-sonnet", "include_context": "thisServer"}
    timings = []
    async with Client(build_server(), mode=MCP_MODES[kind], sampling_callback=sampling_callback) as client:
        out = None
        for _ in range(warmup):
            out = await client.call_tool("sample", args)
        with timed():
            for _ in range(iterations):
                start = clock()
                out = await client.call_tool("sample", args)
                timings.append(clock() - start)
    if out is not None and out.is_error:
        raise RuntimeError(f"the sampling tool failed: {out.content}")
    return timings


def time_calls(kind: str, warmup: int, iterations: int, timed: Around = contextlib.nullcontext,
               clock: Clock = time.process_time_ns) -> Timings:
    """Run ``warmup`` untimed calls of ``kind`` (one of :data:`KINDS`), then time ``iterations`` calls on
    the same client or session with ``clock`` (nanoseconds); ``timed()`` is entered around the timed
    calls only (a profiler, a count of live objects)."""
    if kind in PROVIDER_KINDS:
        return _time_provider(kind, warmup, iterations, timed, clock)
    if kind in MCP_KINDS:
        import anyio

        return anyio.run(_time_mcp, kind, warmup, iterations, timed, clock)
    raise ValueError(f"unknown call kind {kind!r}; known: {', '.join(KINDS)}")
