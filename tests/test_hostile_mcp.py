"""A hostile MCP server (issue 7, item 3), on real mcp sessions: in-memory and stdio, the legacy
path and the 2026-07-28 path. Its name is 1 MB with control characters and a lone surrogate; each
request carries model hints never seen before (10 000 distinct ones in the default run), control
characters and lone surrogates in hints, system prompt and stop sequences, metadata nested as deep
as mcp sends it, image and audio content. The host behind it is naive: it serves whatever model
was hinted first, and now and then calls the provider with that hint as the model.

Contained means: the host gets its answers unchanged; every metric label stays within
``OTEL_SAMPLING_LABEL_VALUE_LIMIT`` distinct values plus ``_other`` / ``_unknown``; every exported
string (span names, attributes, event attributes) is at most ``OTEL_SAMPLING_ATTRIBUTE_MAX_LENGTH``
characters (run with the default and with a small custom cap) and printable (no controls, no lone
surrogates); memory stops growing once the bounded stores are full (tracemalloc; the 100 000
request version is marked ``soak``). The numbers are printed for docs/security.md (``pytest -s``).
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
from pathlib import Path

import pytest

pytest.importorskip("mcp_types", reason="mcp 2.x sessions")

import anthropic
import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider

from conftest import SPANS, TRACER_PROVIDER
from hostile_server import HOSTILE_SUFFIX, build_hostile_server, hostile_messages, hostile_params, nested
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.labels import LABEL_MAX_LENGTH
from otel_sampling.settings import DEFAULT_ATTRIBUTE_MAX_LENGTH

LIMIT = 50  # OTEL_SAMPLING_LABEL_VALUE_LIMIT for these tests
SMALL_CAP = 24  # a custom OTEL_SAMPLING_ATTRIBUTE_MAX_LENGTH far below every hostile string
FLOOD = 2_500  # legacy requests in the default run: 4 distinct hints each, 10 000 hints
MRTR_CALLS = 25  # 2026-07-28 tool calls in the default run (each one request, ~50 ms)
PROVIDER_EVERY = 50  # the naive host calls the provider for one request in this many
OTHER_SERVERS = LIMIT + 10  # sessions with distinct hostile names, past the server label limit
# Labels whose values come from outside (server, model names, error types); ours are closed sets.
EXTERNAL_LABELS = (names.MCP_SERVER_NAME, names.GEN_AI_RESPONSE_MODEL, names.GEN_AI_REQUEST_MODEL,
                   names.SERVER_ADDRESS, names.ERROR_TYPE)
HOSTILE_STOP_REASON = "endTurn\x00\ud800"
WIRE_STOP_REASON = "endTurn\x00\u202e"  # mcp cannot put a lone surrogate on the wire (hostile_server.py)


def sendable(text: str) -> str:
    """``text`` with its lone surrogates replaced: the provider SDKs cannot encode them (the
    anthropic SDK raises ``UnicodeEncodeError`` building the request), so any host must do this."""
    return text.encode("utf-8", "replace").decode("utf-8")


def naive_host(provider_url: str | None, stop_reason: str = HOSTILE_STOP_REASON):
    """A sampling callback that serves the first hinted model, calling the provider with it now and then."""
    calls = [0]

    async def callback(ctx, params):
        calls[0] += 1
        model = sendable(params.model_preferences.hints[0].name)
        if provider_url and calls[0] % PROVIDER_EVERY == 1:  # the first request, then one in PROVIDER_EVERY
            async with anthropic.AsyncAnthropic(base_url=provider_url, api_key="sk-fake", max_retries=0) as client:
                message = await client.messages.create(model=model, max_tokens=8, system=sendable(params.system_prompt),
                                                       messages=[{"role": "user", "content": "hi"}])
            model = message.model
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text="ok\x00"), model=model,
                                         stop_reason=stop_reason)
    return callback


def instrument(telemetry, monkeypatch, cap: int | None, tracer_provider=TRACER_PROVIDER, meter_provider=None):
    monkeypatch.setenv(names.ENV_LABEL_VALUE_LIMIT, str(LIMIT))
    if cap is not None:
        monkeypatch.setenv(names.ENV_ATTRIBUTE_MAX_LENGTH, str(cap))
    instrumentors = [MCPSamplingInstrumentor(), AnthropicInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=tracer_provider,
                                meter_provider=meter_provider or telemetry.meter_provider)
    return instrumentors


def series(telemetry) -> dict[str, list[dict]]:
    """Every exported metric point's attributes, by metric name (one entry per series)."""
    data = telemetry.reader.get_metrics_data()
    out: dict[str, list[dict]] = {}
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                out.setdefault(metric.name, []).extend(dict(p.attributes) for p in metric.data.data_points)
    return out


def assert_labels_bounded(telemetry) -> int:
    """Each external label within LIMIT values (+ _other, _unknown); every value printable and short.
    Returns the number of series exported by our scopes."""
    by_metric = series(telemetry)
    assert by_metric
    for metric, points in by_metric.items():
        for point in points:
            for key, value in point.items():
                if isinstance(value, str):
                    assert value and len(value) <= LABEL_MAX_LENGTH and value.isprintable(), (metric, key, value[:60])
        for key in EXTERNAL_LABELS:
            values = {p[key] for p in points if key in p}
            assert len(values - {names.OVERFLOW_LABEL, names.UNKNOWN_LABEL}) <= LIMIT, (metric, key, len(values))
    return sum(len(points) for points in by_metric.values())


def exported_strings(span):
    yield "span name", span.name
    for where, attributes in [("attribute", span.attributes), *(("event", e.attributes) for e in span.events),
                              *(("link", link.attributes) for link in span.links)]:
        for key, value in (attributes or {}).items():
            for item in value if isinstance(value, tuple) else (value,):
                if isinstance(item, str):
                    yield f"{where} {key}", item


def assert_strings_capped(spans, cap: int) -> int:
    """Every exported string at most ``cap`` characters (a span name: its operation, a space, a
    capped model name) and printable; the spans encode for OTLP. Returns the longest attribute."""
    longest = 0
    for span in spans:
        for where, text in exported_strings(span):
            limit = len(names.OPERATION_CHAT) + 1 + cap if where == "span name" else cap
            assert len(text) <= limit and text.isprintable(), (where, len(text), text[:60])
            if where != "span name":
                longest = max(longest, len(text))
    encode_spans(spans).SerializeToString()  # OTLP protobuf: raises on a string that is not UTF-8
    return longest


@pytest.fixture
def hostile(telemetry, monkeypatch, request):
    cap = request.param
    instrumentors = instrument(telemetry, monkeypatch, cap)
    yield telemetry, cap or DEFAULT_ATTRIBUTE_MAX_LENGTH
    for instrumentor in instrumentors:
        instrumentor.uninstrument()


async def _legacy_flood(fake_url: str) -> list:
    async with Client(build_hostile_server(), mode="legacy", sampling_callback=naive_host(fake_url)) as client:
        got = [(await client.call_tool("flood", {"seed": 0, "count": FLOOD})).content[0].text]
    for i in range(OTHER_SERVERS):  # distinct hostile server names, past the label limit
        name = f"evil-{i}{HOSTILE_SUFFIX}" + "n" * 300
        async with Client(build_hostile_server(name), mode="legacy", sampling_callback=naive_host(None)) as client:
            got.append((await client.call_tool("ask", {"seed": FLOOD + i})).content[0].text)
    return got


async def _mrtr_asks(fake_url: str) -> list:
    async with Client(build_hostile_server(), mode="auto", sampling_callback=naive_host(fake_url)) as client:
        return [(await client.call_tool("ask", {"seed": i})).content[0].text for i in range(MRTR_CALLS)]


def _served(seed: int, wire: bool = False) -> str:
    """What the host served for request ``seed``: its first hint (the fake provider echoes it);
    ``wire``: as the stdio server sends it, without the lone surrogate."""
    hint = hostile_params(seed)["model_preferences"].hints[0].name
    return hint.replace("\ud800", "") if wire else sendable(hint)


@pytest.mark.parametrize("hostile", [None, SMALL_CAP], indirect=True, ids=["default cap", "small cap"])
@pytest.mark.parametrize("path", ["legacy", "2026-07-28"])
def test_a_hostile_server_is_contained(hostile, fake_provider, path, capsys):
    telemetry, cap = hostile
    if path == "legacy":
        got = anyio.run(_legacy_flood, fake_provider.url)
        # The host's answers reach the server unchanged (control characters, surrogates and all).
        assert got[0] == str(FLOOD)
        assert got[1:] == [f"{_served(FLOOD + i)}|{HOSTILE_STOP_REASON}" for i in range(OTHER_SERVERS)]
        requests = FLOOD + OTHER_SERVERS
    else:
        got = anyio.run(_mrtr_asks, fake_provider.url)
        assert got == [f"{_served(i)}|{HOSTILE_STOP_REASON}" for i in range(MRTR_CALLS)]
        requests = MRTR_CALLS

    sampling = telemetry.spans(names.SPAN_SAMPLING)
    assert len(sampling) == requests
    assert {s.attributes[names.SAMPLING_PATH] for s in sampling} == {
        names.PATH_RPC if path == "legacy" else names.PATH_MRTR}
    assert {s.attributes[names.SAMPLING_ENDING] for s in sampling} == {names.ENDING_COMPLETED}
    provider_calls = -(-(FLOOD if path == "legacy" else MRTR_CALLS) // PROVIDER_EVERY)  # calls 1, 51, 101...
    assert len(telemetry.spans()) - requests == provider_calls  # one span per provider call
    longest = assert_strings_capped(telemetry.spans(), cap)
    count = assert_labels_bounded(telemetry)
    requests_by_server = telemetry.counts(names.METRIC_SAMPLING_REQUESTS, names.MCP_SERVER_NAME)
    if path == "legacy":
        assert requests_by_server[(names.OVERFLOW_LABEL,)] >= OTHER_SERVERS + 1 - LIMIT
    with capsys.disabled():
        print(f"\nhostile server, {path}, cap {cap}: {requests} requests, {4 * requests} distinct hints, "
              f"{count} metric series, longest exported string {longest} characters")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_hostile_server_over_stdio_is_contained(telemetry, monkeypatch, mode):
    instrumentors = instrument(telemetry, monkeypatch, SMALL_CAP)
    params = StdioServerParameters(command=sys.executable,
                                   args=[str(Path(__file__).parent / "hostile_server.py"), "1000000"])

    async def main():
        async with Client(params, mode=mode, sampling_callback=naive_host(None, WIRE_STOP_REASON)) as client:
            return [(await client.call_tool("ask", {"seed": i})).content[0].text for i in range(3)]

    try:
        got = anyio.run(main)
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
    assert got == [f"{_served(i, wire=True)}|{WIRE_STOP_REASON}" for i in range(3)]  # controls and all, as sent
    spans = telemetry.spans(names.SPAN_SAMPLING)
    assert len(spans) == 3
    assert spans[0].attributes[names.MCP_SERVER_NAME] == "n" * SMALL_CAP
    assert_strings_capped(spans, SMALL_CAP)
    assert_labels_bounded(telemetry)


def test_metadata_nested_ten_thousand_deep_in_process_still_gets_its_span(telemetry, monkeypatch):
    """A host can dispatch a request built in-process, with metadata deeper than JSON or pydantic
    serialise (mcp's ``dict[str, Any]`` takes it): no fingerprint, everything else recorded."""
    instrumentors = instrument(telemetry, monkeypatch, None)
    request = types.CreateMessageRequest(params=types.CreateMessageRequestParams(
        messages=hostile_messages(1), **{**hostile_params(1), "metadata": nested(10_000)}))
    answer = types.CreateMessageResult(role="assistant", content=types.TextContent(text="ok"), model="m")

    async def callback(ctx, params):
        return answer

    async def main():
        async with Client(build_hostile_server(), mode="legacy", sampling_callback=callback) as client:
            ctx = type("Ctx", (), {"request_id": 1, "meta": None})()
            return await client.session.dispatch_input_request(ctx, request)

    try:
        assert anyio.run(main) is answer
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
    (span,) = telemetry.spans(names.SPAN_SAMPLING)
    assert span.attributes[names.SAMPLING_ENDING] == names.ENDING_COMPLETED
    assert names.SAMPLING_FINGERPRINT not in span.attributes
    assert_strings_capped([span], DEFAULT_ATTRIBUTE_MAX_LENGTH)


# ---------------------------------------------------------------- memory
def _flood_memory(warm_up: int, total: int, batch: int, light: bool) -> tuple[int, int, int]:
    """Legacy requests from the hostile server in batches; tracemalloc's current size after
    ``warm_up`` requests and after ``total``. Our spans are created, filled and ended but exported
    nowhere (a tracer provider without processors), so only what we and mcp keep is measured."""
    checkpoints: dict[int, int] = {}

    async def main():
        async with Client(build_hostile_server(), mode="legacy", sampling_callback=naive_host(None)) as client:
            for start in range(0, total, batch):
                await client.call_tool("flood", {"seed": start, "count": batch, "light": light})
                done = start + batch
                SPANS.clear()  # the mcp SDK's own spans, kept by the test session's in-memory exporter
                if done in (warm_up, total):
                    gc.collect()
                    checkpoints[done] = tracemalloc.get_traced_memory()[0]

    tracemalloc.start()
    try:
        anyio.run(main)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return checkpoints[warm_up], checkpoints[total], peak


def _memory_run(telemetry, monkeypatch, warm_up: int, total: int, batch: int, identity_entries: int | None,
                light: bool = False) -> None:
    if identity_entries is not None:
        monkeypatch.setenv(names.ENV_IDENTITY_MAX_ENTRIES, str(identity_entries))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    instrumentors = instrument(telemetry, monkeypatch, None, tracer_provider=TracerProvider(),
                               meter_provider=meter_provider)
    try:
        after_warm_up, after_total, peak = _flood_memory(warm_up, total, batch, light)
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
    telemetry.reader = reader
    count = assert_labels_bounded(telemetry)
    meter_provider.shutdown()
    growth = after_total - after_warm_up
    print(f"\nmemory: {after_warm_up / 1e6:.2f} MB after {warm_up} hostile requests, {after_total / 1e6:.2f} MB "
          f"after {total} (growth {growth / 1e6:+.2f} MB, peak {peak / 1e6:.2f} MB), {count} metric series")
    # Flat: the requests after the warm-up left less than 10 bytes each behind (one request's
    # hostile strings alone are over 20 kB: nothing per request is kept).
    assert growth < 10 * (total - warm_up), growth


@pytest.mark.timeout(600)  # tracemalloc slows every allocation; the machine may be shared
def test_memory_stays_flat_under_a_hostile_flood(telemetry, monkeypatch):
    # A small identity store fills during the warm-up; the rest must leave nothing behind.
    _memory_run(telemetry, monkeypatch, warm_up=400, total=1_400, batch=200, identity_entries=100)


@pytest.mark.soak
def test_memory_stays_flat_over_100k_hostile_requests(telemetry, monkeypatch):
    # Default bounds (10 000 fingerprints): the warm-up fills the identity store. Light requests
    # (the hostile name, hints and strings; no image, audio or deep metadata, which the default
    # run covers and which nothing keeps), or 100 000 traced requests take over an hour.
    _memory_run(telemetry, monkeypatch, warm_up=20_000, total=100_000, batch=1_000, identity_entries=None,
                light=True)
