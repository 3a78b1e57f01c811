"""A hostile MCP server, on real mcp sessions: in-memory and stdio, the legacy path and the
2026-07-28 path. Its name is 1 MB with control characters and a lone surrogate; each request
carries model hints never seen before, control characters and lone surrogates in hints, system
prompt and stop sequences, metadata nested as deep as mcp sends it, image and audio content. The
host behind it is naive: it serves whatever model was hinted first, and now and then calls the
provider with that hint as the model.

Contained means: the host gets its answers unchanged; every metric label stays within
``OTEL_SAMPLING_LABEL_VALUE_LIMIT`` distinct values plus ``_OTHER`` / ``_unknown``; every exported
string (span names, attributes, event attributes) is at most ``OTEL_SAMPLING_ATTRIBUTE_MAX_LENGTH``
characters (run with the default and with a small custom cap) and printable (no controls, no lone
surrogates); memory stops growing once the bounded stores are full (tracemalloc).

A bound is proven by going past it: the default run sets a small label limit and sends just more
servers, served models and provider models than it admits; the ``soak`` versions send thousands of
requests against the limit of 50 and the 100 000-request memory run. Their numbers are printed for
docs/security.md (``pytest -s -m soak``).
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
from pathlib import Path
from typing import NamedTuple

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
from otel_sampling.metrics import LABEL_MAX_LENGTH
from otel_sampling.settings import DEFAULT_ATTRIBUTE_MAX_LENGTH


class Scale(NamedTuple):
    """The label limit a hostile run sets, and how far past it the server goes."""

    limit: int  # OTEL_SAMPLING_LABEL_VALUE_LIMIT
    flood: int  # legacy requests from the 1 MB-named server (4 distinct hints each; the first is served)
    other_servers: int  # further sessions, each a server with a distinct hostile name
    mrtr_calls: int  # 2026-07-28 tool calls (one request each)
    provider_every: int  # the naive host calls the provider for one request in this many


# Past every external label's limit of 8: 13 servers, 52 served models, 10 provider calls on the
# legacy path, 12 served models on the 2026-07-28 path (a label that turns the first value past its
# limit into _OTHER turns them all; the soak run shows it for thousands).
DEFAULT = Scale(limit=8, flood=40, other_servers=12, mrtr_calls=12, provider_every=4)
# The run docs/security.md quotes: 10 240 distinct hints and 61 servers against a limit of 50.
SOAK = Scale(limit=50, flood=2_500, other_servers=60, mrtr_calls=25, provider_every=50)
LIMIT = DEFAULT.limit  # the label limit of the tests below that do not go past it
MEMORY_LIMIT = SOAK.limit  # the memory runs: label stores of 50, as docs/security.md measured
SMALL_CAP = 24  # a custom OTEL_SAMPLING_ATTRIBUTE_MAX_LENGTH far below every hostile string
# Labels whose values come from outside (server, model names, error types); ours are closed sets.
EXTERNAL_LABELS = (
    names.MCP_SERVER_NAME,
    names.GEN_AI_RESPONSE_MODEL,
    names.GEN_AI_REQUEST_MODEL,
    names.SERVER_ADDRESS,
    names.ERROR_TYPE,
)
HOSTILE_STOP_REASON = "endTurn\x00\ud800"
WIRE_STOP_REASON = "endTurn\x00\u202e"  # mcp cannot put a lone surrogate on the wire (hostile_server.py)


def sendable(text: str) -> str:
    """``text`` with its lone surrogates replaced: the provider SDKs cannot encode them (the
    anthropic SDK raises ``UnicodeEncodeError`` building the request), so any host must do this."""
    return text.encode("utf-8", "replace").decode("utf-8")


def naive_host(provider_url: str | None, stop_reason: str = HOSTILE_STOP_REASON, provider_every: int = 1):
    """A sampling callback that serves the first hinted model, calling the provider with it for the
    first request and then one in ``provider_every``."""
    calls = [0]

    async def callback(ctx, params):
        calls[0] += 1
        model = sendable(params.model_preferences.hints[0].name)
        if provider_url and (calls[0] - 1) % provider_every == 0:  # calls 1, 1 + every, ...
            async with anthropic.AsyncAnthropic(base_url=provider_url, api_key="sk-fake", max_retries=0) as client:
                message = await client.messages.create(
                    model=model,
                    max_tokens=8,
                    system=sendable(params.system_prompt),
                    messages=[{"role": "user", "content": "hi"}],
                )
            model = message.model
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="ok\x00"), model=model, stop_reason=stop_reason
        )

    return callback


def instrument(
    telemetry, monkeypatch, cap: int | None, tracer_provider=TRACER_PROVIDER, meter_provider=None, limit: int = LIMIT
):
    monkeypatch.setenv(names.ENV_LABEL_VALUE_LIMIT, str(limit))
    if cap is not None:
        monkeypatch.setenv(names.ENV_ATTRIBUTE_MAX_LENGTH, str(cap))
    instrumentors = [MCPSamplingInstrumentor(), AnthropicInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument(
            tracer_provider=tracer_provider, meter_provider=meter_provider or telemetry.meter_provider
        )
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


def assert_labels_bounded(telemetry, limit: int = LIMIT) -> int:
    """Each external label within ``limit`` values (+ _other, _unknown); every value printable and
    short. Returns the number of series exported by our scopes."""
    by_metric = series(telemetry)
    assert by_metric
    for metric, points in by_metric.items():
        for point in points:
            for key, value in point.items():
                if isinstance(value, str):
                    assert value and len(value) <= LABEL_MAX_LENGTH and value.isprintable(), (metric, key, value[:60])
        for key in EXTERNAL_LABELS:
            values = {p[key] for p in points if key in p}
            assert len(values - {names.OVERFLOW_LABEL, names.UNKNOWN_LABEL}) <= limit, (metric, key, len(values))
    return sum(len(points) for points in by_metric.values())


def exported_strings(span):
    yield "span name", span.name
    for where, attributes in [
        ("attribute", span.attributes),
        *(("event", e.attributes) for e in span.events),
        *(("link", link.attributes) for link in span.links),
    ]:
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


async def _legacy_flood(fake_url: str, scale: Scale) -> list:
    host = naive_host(fake_url, provider_every=scale.provider_every)
    async with Client(build_hostile_server(), mode="legacy", sampling_callback=host) as client:
        got = [(await client.call_tool("flood", {"seed": 0, "count": scale.flood})).content[0].text]
    for i in range(scale.other_servers):  # distinct hostile server names, past the server label limit
        name = f"evil-{i}{HOSTILE_SUFFIX}" + "n" * 300
        async with Client(build_hostile_server(name), mode="legacy", sampling_callback=naive_host(None)) as client:
            got.append((await client.call_tool("ask", {"seed": scale.flood + i})).content[0].text)
    return got


async def _mrtr_asks(fake_url: str, scale: Scale) -> list:
    host = naive_host(fake_url, provider_every=scale.provider_every)
    async with Client(build_hostile_server(), mode="auto", sampling_callback=host) as client:
        return [(await client.call_tool("ask", {"seed": i})).content[0].text for i in range(scale.mrtr_calls)]


def _served(seed: int, wire: bool = False) -> str:
    """What the host served for request ``seed``: its first hint (the fake provider echoes it);
    ``wire``: as the stdio server sends it, without the lone surrogate."""
    hint = hostile_params(seed)["model_preferences"].hints[0].name
    return hint.replace("\ud800", "") if wire else sendable(hint)


def overflowed(telemetry) -> set[str]:
    """The external labels that reached ``_OTHER`` in some exported series."""
    return {
        key
        for points in series(telemetry).values()
        for point in points
        for key in EXTERNAL_LABELS
        if point.get(key) == names.OVERFLOW_LABEL
    }


def assert_contained(
    telemetry, monkeypatch, fake_provider, capsys, cap: int | None, path: str, scale: Scale
) -> set[str]:
    """The run of ``path`` at ``scale`` is contained; returns the external labels it drove to ``_OTHER``."""
    instrumentors = instrument(telemetry, monkeypatch, cap, limit=scale.limit)
    cap = cap or DEFAULT_ATTRIBUTE_MAX_LENGTH
    try:
        if path == "legacy":
            got = anyio.run(_legacy_flood, fake_provider.url, scale)
            # The host's answers reach the server unchanged (control characters, surrogates and all).
            assert got[0] == str(scale.flood)
            assert got[1:] == [f"{_served(scale.flood + i)}|{HOSTILE_STOP_REASON}" for i in range(scale.other_servers)]
            requests, hinted_host_requests = scale.flood + scale.other_servers, scale.flood
        else:
            got = anyio.run(_mrtr_asks, fake_provider.url, scale)
            assert got == [f"{_served(i)}|{HOSTILE_STOP_REASON}" for i in range(scale.mrtr_calls)]
            requests = hinted_host_requests = scale.mrtr_calls

        sampling = telemetry.spans(names.SPAN_SAMPLING)
        assert len(sampling) == requests
        assert {s.attributes[names.SAMPLING_PATH] for s in sampling} == {
            names.PATH_RPC if path == "legacy" else names.PATH_MRTR
        }
        assert {s.attributes[names.SAMPLING_ENDING] for s in sampling} == {names.ENDING_COMPLETED}
        provider_calls = -(-hinted_host_requests // scale.provider_every)  # calls 1, 1 + every, ...
        # One span per provider call; a request served another model than its first hint (a hint the
        # normalisation reads differently) adds at most one silent-incident span, from its own run.
        own = [s for s in telemetry.spans() if s.name != names.EVENT_SILENT_INCIDENT]
        assert len(own) - requests == provider_calls
        assert len(telemetry.spans()) - len(own) <= requests
        longest = assert_strings_capped(telemetry.spans(), cap)
        count = assert_labels_bounded(telemetry, scale.limit)
        requests_by_server = telemetry.counts(names.METRIC_SAMPLING_REQUESTS, names.MCP_SERVER_NAME)
        if path == "legacy":
            assert requests_by_server[(names.OVERFLOW_LABEL,)] >= scale.other_servers + 1 - scale.limit
        over = overflowed(telemetry)
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
    with capsys.disabled():
        print(
            f"\nhostile server, {path}, cap {cap}, label limit {scale.limit}: {requests} requests, "
            f"{4 * requests} distinct hints, {count} metric series, longest exported string {longest} characters"
        )
    return over


CAPS = pytest.mark.parametrize("cap", [None, SMALL_CAP], ids=["default cap", "small cap"])
PATHS = pytest.mark.parametrize("path", ["legacy", "2026-07-28"])


# The labels the default run drives past its limit, so that their bound is proven, not vacuous: on
# the legacy path the sampling metrics' server and served model, and the provider metrics' models
# (10 provider calls, past the provider instrumentor's own limit); on the 2026-07-28 path the served
# model (12 requests, one server, 3 provider calls).
DRIVEN_PAST = {
    "legacy": {names.MCP_SERVER_NAME, names.GEN_AI_RESPONSE_MODEL, names.GEN_AI_REQUEST_MODEL},
    "2026-07-28": {names.GEN_AI_RESPONSE_MODEL},
}


@CAPS
@PATHS
def test_a_hostile_server_is_contained(telemetry, monkeypatch, fake_provider, capsys, path, cap):
    assert assert_contained(telemetry, monkeypatch, fake_provider, capsys, cap, path, DEFAULT) == DRIVEN_PAST[path]


@pytest.mark.soak
@CAPS
@PATHS
def test_a_hostile_flood_of_thousands_is_contained(telemetry, monkeypatch, fake_provider, capsys, path, cap):
    assert_contained(telemetry, monkeypatch, fake_provider, capsys, cap, path, SOAK)


@pytest.mark.subprocess
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_hostile_server_over_stdio_is_contained(telemetry, monkeypatch, mode):
    instrumentors = instrument(telemetry, monkeypatch, SMALL_CAP)
    params = StdioServerParameters(
        command=sys.executable, args=[str(Path(__file__).parent / "hostile_server.py"), "1000000"]
    )

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
    request = types.CreateMessageRequest(
        params=types.CreateMessageRequestParams(
            messages=hostile_messages(1), **{**hostile_params(1), "metadata": nested(10_000)}
        )
    )
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


def _memory_run(
    telemetry,
    monkeypatch,
    warm_up: int,
    total: int,
    batch: int,
    identity_entries: int | None,
    limit: int = MEMORY_LIMIT,
    light: bool = False,
) -> None:
    if identity_entries is not None:
        monkeypatch.setenv(names.ENV_IDENTITY_MAX_ENTRIES, str(identity_entries))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    instrumentors = instrument(
        telemetry, monkeypatch, None, tracer_provider=TracerProvider(), meter_provider=meter_provider, limit=limit
    )
    try:
        after_warm_up, after_total, peak = _flood_memory(warm_up, total, batch, light)
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
    telemetry.reader = reader
    count = assert_labels_bounded(telemetry, limit)
    meter_provider.shutdown()
    growth = after_total - after_warm_up
    print(
        f"\nmemory: {after_warm_up / 1e6:.2f} MB after {warm_up} hostile requests, {after_total / 1e6:.2f} MB "
        f"after {total} (growth {growth / 1e6:+.2f} MB, peak {peak / 1e6:.2f} MB), {count} metric series"
    )
    # Flat: the requests after the warm-up left less than 10 bytes each behind (one request's
    # hostile strings alone are over 20 kB: nothing per request is kept).
    assert growth < 10 * (total - warm_up), growth


def test_memory_stays_flat_under_a_hostile_flood(telemetry, monkeypatch):
    # A small identity store fills during the warm-up; the rest must leave nothing behind.
    _memory_run(telemetry, monkeypatch, warm_up=400, total=1_400, batch=200, identity_entries=100)


@pytest.mark.soak
def test_memory_stays_flat_over_100k_hostile_requests(telemetry, monkeypatch):
    # Default bounds (10 000 fingerprints): the warm-up fills the identity store. Light requests
    # (the hostile name, hints and strings; no image, audio or deep metadata, which the default
    # run covers and which nothing keeps), or 100 000 traced requests take over an hour.
    _memory_run(telemetry, monkeypatch, warm_up=20_000, total=100_000, batch=1_000, identity_entries=None, light=True)
