"""The call kinds the benchmark measures, each against an in-process transport.

Provider calls use the real SDK clients on an ``httpx2.MockTransport`` that answers every request
with a recorded exchange from ``tests/data/cassettes`` (JSON or SSE exactly as recorded, body in one
piece: the SDK still parses every SSE event); google-genai's with the fake provider's Gemini answer
(``otel_sampling.testing.fake_gemini``: one chunk a word, the last with the finish reason and
usage); LiteLLM's ``litellm.completion`` on its openai route, handed an openai SDK client on the
openai kinds' recorded exchanges (LiteLLM reads the answer into its own ``ModelResponse``, and a
stream's chunks into its own). A provider's kinds are ``<prefix>-create`` and ``<prefix>-stream``; its client comes from
its entry in :data:`CLIENTS` (a new SDK: its kinds, a builder there, its floor in ``floor.py``). MCP
calls are one tool call whose tool samples once, over the in-memory transport, on each protocol path
(``tests/sampling_server.py``).

:func:`time_calls` runs warm-up calls, then times each call on its own (a stream is read to its
last event: instrumentations end their span there). :func:`count_calls` runs warm-up calls, then
the measured windows of calls back to back, calling ``mark`` between them (instruction counting).
A :class:`Scenario` varies the standard call for the scaling measurements: label cardinality,
requests held in flight, stream length.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, NamedTuple

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))  # cassette_replay, sampling_server

import httpx2  # noqa: E402

from cassette_replay import base_url, load  # noqa: E402

PROVIDERS = ("anthropic", "openai", "gemini", "litellm")  # each measured as <provider>-create and <provider>-stream
# A call that offers tools and asks for a schema (the checks of otel_sampling.rules.call_checks read
# its request and answer): anthropic's forced tool, openai's tools and json_schema response format.
TOOL_KINDS = ("anthropic-tools", "openai-tools")
PROVIDER_KINDS = tuple(f"{provider}-{shape}" for provider in PROVIDERS for shape in ("create", "stream")) + TOOL_KINDS
MCP_KINDS = ("mcp-legacy", "mcp-mrtr")
KINDS = PROVIDER_KINDS + MCP_KINDS

# Which recording answers each provider call kind.
CASSETTES = {
    "anthropic-create": "anthropic/messages_basic.json",
    "anthropic-stream": "anthropic/stream_basic.json",
    "openai-create": "openai/chat_basic.json",
    "openai-stream": "openai/chat_stream_include_usage.json",
    "litellm-create": "openai/chat_basic.json",
    "litellm-stream": "openai/chat_stream_include_usage.json",
    "anthropic-tools": "anthropic/messages_tool_use.json",  # tools, a forced tool (its input schema), a tool_use
    "openai-tools": "openai/chat_tool_calls.json",  # tools, two tool_calls (and a schema, REQUEST_EXTRAS)
}
# What a kind's call adds to its recorded request (the answer is recorded without it).
REQUEST_EXTRAS: dict[str, dict[str, Any]] = {
    "openai-tools": {
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "weather",
                "schema": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
            },
        }
    },
}
# mcp.Client mode of each MCP kind: "legacy" = JSON-RPC over memory streams (2025-11-25),
# "auto" = 2026-07-28, where sampling rides InputRequiredResult (multi-round-trip requests).
MCP_MODES = {"mcp-legacy": "legacy", "mcp-mrtr": "auto"}
MCP_MODEL = "claude-sonnet-5-5-20261001"  # what the host's sampling callback answers
GEMINI_MODEL = "gemini-2.5-flash"  # requested and served (modelVersion) on the gemini kinds
GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/"
GEMINI_RESPONSE_ID = "bench-gemini-answer"
HOLD_HINT = "bench-hold"  # a held request's model hint: its callback waits until released

Timings = list[int]  # nanoseconds per call, in call order
Around = Callable[[], AbstractContextManager[Any]]
Clock = Callable[[], int]
Mark = Callable[[str], None]
# The clocks a run can time with: this process's CPU time (all its threads; what the call costs,
# without the time the OS gave to other processes: every call here runs in process, never waiting
# on I/O) or wall time.
CLOCKS: dict[str, Clock] = {"cpu": time.process_time_ns, "wall": time.perf_counter_ns}


class Scenario(NamedTuple):
    """How the scaling measurements vary the standard call (the defaults are the standard call).

    ``labels``: distinct model names the calls cycle through (the request and served model of a
    provider call, the model a host answers a sampling request with), so that many label values
    (metric series) exist; ``held``: requests opened before the measured calls and held in flight
    until they are done (MCP: sampling requests whose callback waits; provider: streams read to
    their first event); ``events``: events per provider stream (0: as recorded; more: the text
    delta repeated).
    """

    labels: int = 1
    held: int = 0
    events: int = 0


STANDARD = Scenario()


def _sse_blocks(body: str) -> list[str]:
    return [block for block in body.split("\n\n") if block.strip()]


def _yielded(block: str) -> bool:
    """Whether the SDK's stream yields this SSE block (anthropic skips pings, openai ends at [DONE])."""
    return "event: ping" not in block and "data: [DONE]" not in block


def stream_body(body: str, events: int) -> str:
    """The recorded SSE ``body`` with its first text delta repeated so that the SDK yields ``events``
    events (0 or fewer than recorded: as recorded)."""
    blocks = _sse_blocks(body)
    recorded = sum(map(_yielded, blocks))
    if events <= recorded:
        return body
    delta = next(i for i, block in enumerate(blocks) if '"text_delta"' in block or '"delta":{"content"' in block)
    blocks[delta + 1 : delta + 1] = [blocks[delta]] * (events - recorded)
    return "\n\n".join(blocks) + "\n\n"


# The last request a provider call kind sent (``--telemetry`` compares the trace context on it).
SENT: dict[str, httpx2.Request] = {}


class _Answers:
    """The response bodies of one provider call kind, one per model name the calls cycle through;
    ``turn`` picks the next one (the transport answers with the body of the current turn)."""

    def __init__(self, cassette: dict[str, Any], labels: int, events: int) -> None:
        recorded = cassette["response"]["body"]
        if events:
            recorded = stream_body(recorded, events)
        requested = cassette["request"]["body"]["model"]
        self.models = [requested] + [f"{requested}-b{i}" for i in range(1, labels)]
        served = _served_model(recorded)
        # Variant i is requested and served under the same name: no substitution, whatever the label.
        self.bodies = [recorded.encode("utf-8")] + [
            recorded.replace(f'"{served}"', f'"{model}"').encode("utf-8") for model in self.models[1:]
        ]
        self.current = 0

    def turn(self, i: int) -> str:
        self.current = i % len(self.models)
        return self.models[self.current]


def _served_model(body: str) -> str:
    marker = '"model":'
    start = body.index(marker) + len(marker)
    return body[start:].lstrip().split('"', 2)[1]


def _transport(cassette: dict[str, Any], answers: _Answers) -> httpx2.MockTransport:
    answer = cassette["response"]
    status, headers = answer["status"], answer.get("headers") or {}

    def handler(request: httpx2.Request) -> httpx2.Response:
        SENT["request"] = request
        return httpx2.Response(status, headers=headers, content=answers.bodies[answers.current])

    return httpx2.MockTransport(handler)


class ProviderCalls(NamedTuple):
    """``call(i)``: the i-th measured call, to its end; ``hold(n)``: open ``n`` streams (each read to
    its first event) and return what finishes them."""

    call: Callable[[int], Any]
    hold: Callable[[int], Callable[[], None]]


Create = Callable[..., Any]  # one call of the SDK: its keyword arguments -> its answer (or stream)


def _recorded_calls(kind: str, scenario: Scenario) -> tuple[Create, dict[str, Any], _Answers]:
    """anthropic and openai: the recorded exchange answers, the recorded request asks."""
    cassette = load(CASSETTES[kind])
    body = {**cassette["request"]["body"], **REQUEST_EXTRAS.get(kind, {})}
    answers = _Answers(cassette, scenario.labels, scenario.events if body.get("stream") else 0)
    http = httpx2.Client(transport=_transport(cassette, answers))
    if kind.startswith("anthropic"):
        import anthropic

        client: Any = anthropic.Anthropic(
            base_url=base_url(cassette), api_key="sk-bench", max_retries=0, http_client=http
        )
        return client.messages.create, body, answers
    import openai

    client = openai.OpenAI(base_url=base_url(cassette), api_key="sk-bench", max_retries=0, http_client=http)
    return client.chat.completions.create, body, answers


class _GeminiAnswers(_Answers):
    """The fake provider's Gemini answer (or its SSE chunks) for each model name the calls cycle
    through, picked by the model the request's path names."""

    def __init__(self, stream: bool, labels: int, events: int) -> None:
        import json

        from otel_sampling.testing import fake_gemini

        words = ["Hello", " from", " the", " fake", " provider"]
        if stream and events > len(words) + 1:  # chunks: one a word, then the finish reason and usage
            words = words[:1] + [" again"] * (events - 2)
        self.models = [GEMINI_MODEL] + [f"{GEMINI_MODEL}-b{i}" for i in range(1, labels)]
        # One response id in every process (the fake draws one per answer): the floors' test compares them.
        if stream:
            self.bodies = [
                "".join(
                    f"data: {json.dumps({**c, 'responseId': GEMINI_RESPONSE_ID})}\r\n\r\n"
                    for c in fake_gemini.chunks({}, m, words)
                ).encode()
                for m in self.models
            ]
        else:
            self.bodies = [
                json.dumps(fake_gemini.answer({}, m, words, response_id=GEMINI_RESPONSE_ID)).encode()
                for m in self.models
            ]
        self.current = 0
        self.model_of = fake_gemini.model_of
        self.content_type = "text/event-stream" if stream else "application/json"

    def respond(self, request: httpx2.Request) -> httpx2.Response:
        SENT["request"] = request
        body = self.bodies[self.models.index(self.model_of(request.url.path))]
        return httpx2.Response(200, headers={"content-type": self.content_type}, content=body)


def _gemini_calls(kind: str, scenario: Scenario) -> tuple[Create, dict[str, Any], _Answers]:
    """google-genai: ``models.generate_content`` / ``generate_content_stream`` (its own retries off)."""
    from google import genai

    stream = kind.endswith("-stream")
    answers = _GeminiAnswers(stream, scenario.labels, scenario.events)
    http = httpx2.Client(transport=httpx2.MockTransport(answers.respond))
    client = genai.Client(api_key="k-bench", http_options={"base_url": GEMINI_BASE_URL, "httpx_client": http})
    create = client.models.generate_content_stream if stream else client.models.generate_content
    return create, {"model": GEMINI_MODEL, "contents": "Summarise: printer on fire", "stream": stream}, answers


def _litellm_calls(kind: str, scenario: Scenario) -> tuple[Create, dict[str, Any], _Answers]:
    """LiteLLM: ``litellm.completion`` routed to openai (``custom_llm_provider``), sending through the
    openai SDK client it is handed (``client``: LiteLLM's own retries off, as the SDK's)."""
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # its model table from the package, not fetched
    import litellm
    import openai

    cassette = load(CASSETTES[kind])
    body = dict(cassette["request"]["body"])
    answers = _Answers(cassette, scenario.labels, scenario.events if body.get("stream") else 0)
    http = httpx2.Client(transport=_transport(cassette, answers))
    client = openai.OpenAI(base_url=base_url(cassette), api_key="sk-bench", max_retries=0, http_client=http)
    body.update(custom_llm_provider="openai", client=client, num_retries=0)
    return litellm.completion, body, answers


# Per provider (the kind's prefix): its SDK call, the request's keyword arguments (``stream``: the
# call streams; left out of the call for an SDK with a streaming method of its own) and its answers.
CLIENTS: dict[str, Callable[[str, Scenario], tuple[Create, dict[str, Any], _Answers]]] = {
    "anthropic": _recorded_calls,
    "openai": _recorded_calls,
    "gemini": _gemini_calls,
    "litellm": _litellm_calls,
}
_STREAM_METHOD = ("gemini",)  # SDKs whose streaming call is a method of its own, not a stream=True argument


def provider_calls(kind: str, scenario: Scenario = STANDARD) -> ProviderCalls:
    provider = kind.split("-", 1)[0]
    create, body, answers = CLIENTS[provider](kind, scenario)
    streams = bool(body.get("stream"))
    if provider in _STREAM_METHOD:
        body = {k: v for k, v in body.items() if k != "stream"}

    def request(i: int) -> Any:
        return create(**(body if scenario.labels == 1 else {**body, "model": answers.turn(i)}))

    def hold(n: int) -> Callable[[], None]:
        held = {**body} if provider in _STREAM_METHOD else {**body, "stream": True}
        streams_held = [iter(create(**held)) for _ in range(n)]
        for stream in streams_held:
            next(stream)

        def finish() -> None:
            for stream in streams_held:
                for _ in stream:
                    pass

        return finish

    if streams:

        def call(i: int) -> Any:
            last = None
            for last in request(i):  # noqa: B007 - read to the end: the span ends with the stream
                pass
            return last

        return ProviderCalls(call, hold)
    return ProviderCalls(request, hold)


def preload(kinds: Sequence[str]) -> None:
    """Import what the call kinds use (a process that forks a child per kind imports it once)."""
    if any(k.startswith("anthropic") for k in kinds):
        import anthropic  # noqa: F401
    if any(k.startswith("openai") for k in kinds):
        import openai  # noqa: F401
    if any(k.startswith("gemini") for k in kinds):
        from google import genai  # noqa: F401
    if any(k.startswith("litellm") for k in kinds):
        import os

        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm  # noqa: F401
    if any(k in MCP_KINDS for k in kinds):
        import anyio  # noqa: F401
        import mcp  # noqa: F401

        import sampling_server  # noqa: F401


def _loop(call: Callable[[int], Any], calls: int, offset: int = 0) -> None:
    for i in range(offset, offset + calls):
        call(i)


def _time_provider(kind: str, warmup: int, iterations: int, timed: Around, clock: Clock) -> Timings:
    call = provider_calls(kind).call
    _loop(call, warmup)
    timings = []
    with timed():
        for i in range(iterations):
            start = clock()
            call(i)
            timings.append(clock() - start)
    return timings


class McpCalls(NamedTuple):
    """``call(i)``: one ``call_tool("sample")`` whose tool samples once; ``hold(n)``: start ``n``
    more whose sampling callbacks wait, held in flight until the session closes (returns once all
    ``n`` callbacks wait)."""

    call: Callable[[int], Awaitable[Any]]
    hold: Callable[[int], Awaitable[None]]


@contextlib.asynccontextmanager
async def mcp_calls(kind: str, scenario: Scenario = STANDARD) -> AsyncIterator[McpCalls]:
    """A session opened once, its calls and a way to hold requests in flight."""
    import anyio
    import mcp_types as types
    from mcp import Client

    from sampling_server import build_server

    models = [MCP_MODEL] + [f"{MCP_MODEL}-b{i}" for i in range(1, scenario.labels)]
    answers = [
        types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="ok"), model=model, stop_reason="endTurn"
        )
        for model in models
    ]
    turn = [0]
    release, waiting = anyio.Event(), [0]

    async def sampling_callback(context: Any, params: Any) -> Any:
        hints = params.model_preferences.hints if params.model_preferences else None
        if hints and hints[0].name == HOLD_HINT:
            waiting[0] += 1
            await release.wait()
            return answers[0]
        return answers[turn[0] % len(answers)]

    args = {"hint": "claude-sonnet", "include_context": "thisServer"}
    hold_args = {**args, "hint": HOLD_HINT}
    async with Client(build_server(), mode=MCP_MODES[kind], sampling_callback=sampling_callback) as client:

        async def call(i: int) -> Any:
            turn[0] = i
            out = await client.call_tool("sample", args)
            if out.is_error:
                raise RuntimeError(f"the sampling tool failed: {out.content}")
            return out

        async with anyio.create_task_group() as group:

            async def hold(n: int) -> None:
                target = waiting[0] + n
                for _ in range(n):
                    group.start_soon(client.call_tool, "sample", hold_args)
                while waiting[0] < target:
                    await anyio.sleep(0)

            try:
                yield McpCalls(call, hold)
            finally:
                release.set()


async def _time_mcp(kind: str, warmup: int, iterations: int, timed: Around, clock: Clock) -> Timings:
    """One ``call_tool("sample")`` per call on a session opened once; the loop runs inside the event
    loop, so no thread hop is timed."""
    timings = []
    async with mcp_calls(kind) as session:
        call = session.call
        for i in range(warmup):
            await call(i)
        with timed():
            for i in range(iterations):
                start = clock()
                await call(i)
                timings.append(clock() - start)
    return timings


def time_calls(
    kind: str, warmup: int, iterations: int, timed: Around = contextlib.nullcontext, clock: Clock = time.process_time_ns
) -> Timings:
    """Run ``warmup`` untimed calls of ``kind`` (one of :data:`KINDS`), then time ``iterations`` calls on
    the same client or session with ``clock`` (nanoseconds); ``timed()`` is entered around the timed
    calls only (a profiler, a count of live objects)."""
    if kind in PROVIDER_KINDS:
        return _time_provider(kind, warmup, iterations, timed, clock)
    if kind in MCP_KINDS:
        import anyio

        return anyio.run(_time_mcp, kind, warmup, iterations, timed, clock)
    raise ValueError(f"unknown call kind {kind!r}; known: {', '.join(KINDS)}")


def count_calls(kind: str, warmup: int, windows: Sequence[int], mark: Mark, scenario: Scenario = STANDARD) -> None:
    """Run ``warmup`` calls of ``kind``, then ``mark("start")``, then for each window its number of
    calls followed by ``mark(str(index))``: the windows run back to back on the same client or
    session (with ``scenario.held`` requests held in flight from before the warm-up to after the
    last window)."""
    if kind in PROVIDER_KINDS:
        calls = provider_calls(kind, scenario)
        finish = calls.hold(scenario.held)
        _windows(calls.call, warmup, windows, mark)
        finish()
    elif kind in MCP_KINDS:
        import anyio

        async def run() -> None:
            async with mcp_calls(kind, scenario) as session:
                await session.hold(scenario.held)
                call, done = session.call, 0
                for i in range(warmup):
                    await call(i)
                mark("start")
                for index, size in enumerate(windows):
                    for i in range(done, done + size):
                        await call(i)
                    done += size
                    mark(str(index))

        anyio.run(run)
    else:
        raise ValueError(f"unknown call kind {kind!r}; known: {', '.join(KINDS)}")


def _windows(call: Callable[[int], Any], warmup: int, windows: Sequence[int], mark: Mark) -> None:
    _loop(call, warmup)
    mark("start")
    done = 0
    for index, size in enumerate(windows):
        _loop(call, size, done)
        done += size
        mark(str(index))
