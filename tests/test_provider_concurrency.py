"""Many provider calls at once: anthropic and openai, from threads (sync clients)
and from one event loop (async clients), against the local fake provider, with a mix of endings
chosen by the test. Afterwards ``gen_ai.client.operation.duration`` counts exactly the calls driven,
per ending (``otel_sampling.ending``), every span that started has ended, and there is one span per call.

Endings from docs/telemetry.md "Provider call endings": a 529 or 429 is ``model.unavailable``, a 400
``error``, a stream the caller leaves early ``cancelled``, a dropped stream ``model.unavailable``
(connection error), a stream without its terminal event ``error``, a client timeout ``timeout``, a
cancelled task ``cancelled``.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import anthropic
import httpx2
import openai
import pytest

from drivers import tracked_provider
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor

CALLS = 200
MSG = [{"role": "user", "content": "hi"}]
# kind -> (provider, scenario, stream, how the caller ends it, expected ending)
KINDS = {
    "a_ok": ("anthropic", "", False, "read", names.ENDING_COMPLETED),
    "a_refusal": ("anthropic", "refusal", False, "read", names.ENDING_REFUSED),
    "a_overloaded": ("anthropic", "status=529,no_retry", False, "read", names.ENDING_MODEL_UNAVAILABLE),
    "a_bad": ("anthropic", "status=400", False, "read", names.ENDING_ERROR),
    "a_stream": ("anthropic", "", True, "read", names.ENDING_COMPLETED),
    "a_stream_left": ("anthropic", "", True, "leave", names.ENDING_CANCELLED),
    "a_stream_drop": ("anthropic", "drop", True, "read", names.ENDING_MODEL_UNAVAILABLE),
    "a_timeout": ("anthropic", "delay=5", False, "timeout", names.ENDING_TIMEOUT),
    "a_cancelled": ("anthropic", "delay=5", False, "cancel", names.ENDING_CANCELLED),
    "o_ok": ("openai", "", False, "read", names.ENDING_COMPLETED),
    "o_length": ("openai", "length", False, "read", names.ENDING_COMPLETED),
    "o_rate_limited": ("openai", "status=429,no_retry", False, "read", names.ENDING_MODEL_UNAVAILABLE),
    "o_stream": ("openai", "", True, "read", names.ENDING_COMPLETED),
    "o_stream_truncated": ("openai", "truncate", True, "read", names.ENDING_ERROR),
    "o_stream_left": ("openai", "", True, "leave", names.ENDING_CANCELLED),
}
# What the callers see: the SDKs' errors, and raw httpx2 errors for a dropped stream on releases
# that let them through (anthropic 1.14; 2.17 raises its APIConnectionError from them).
EXPECTED = (anthropic.APIError, openai.APIError, httpx2.TransportError)
TIMEOUT_S = 0.5  # the client's timeout on the "delay=5" calls: the answer never comes in time


def _kwargs(provider: str, scenario: str, stream: bool, marker: str) -> dict:
    headers = {"x-fake-scenario": scenario, "x-test-marker": marker}
    if provider == "anthropic":
        return {
            "model": "claude-sonnet-5-5",
            "max_tokens": 16,
            "messages": MSG,
            "stream": stream,
            "extra_headers": headers,
        }
    extra = {"stream_options": {"include_usage": True}} if stream else {}
    return {"model": "gpt-4o", "messages": MSG, "stream": stream, "extra_headers": headers, **extra}


def _create(clients: dict, provider: str, how: str):
    """The create method to call: with a short timeout for the calls meant to time out."""
    client = clients[provider]
    if how == "timeout":
        client = client.with_options(timeout=TIMEOUT_S)
    return client.messages.create if provider == "anthropic" else client.chat.completions.create


def sync_call(clients: dict, kind: str, marker: str) -> None:
    provider, scenario, stream, how, _ = KINDS[kind]
    try:
        result = _create(clients, provider, how)(**_kwargs(provider, scenario, stream, marker))
        if stream:
            with result:
                for _ in result:
                    if how == "leave":
                        break
    except EXPECTED:
        pass  # the failures are the point; the test reads the telemetry


async def async_call(clients: dict, kind: str, marker: str) -> None:
    provider, scenario, stream, how, _ = KINDS[kind]
    try:
        result = await _create(clients, provider, how)(**_kwargs(provider, scenario, stream, marker))
        if stream:
            async with result:
                async for _ in result:
                    if how == "leave":
                        break
    except EXPECTED:
        pass


def clients_for(fp, asynchronous: bool) -> dict:
    a_cls, o_cls = (
        (anthropic.AsyncAnthropic, openai.AsyncOpenAI) if asynchronous else (anthropic.Anthropic, openai.OpenAI)
    )
    return {
        "anthropic": a_cls(base_url=fp.url, api_key="sk-fake", max_retries=0),
        "openai": o_cls(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0),
    }


@pytest.fixture
def traced(telemetry):
    provider, exporter, tracker = tracked_provider()
    instrumentors = [AnthropicInstrumentor(), OpenAIInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=provider, meter_provider=telemetry.meter_provider)
    yield telemetry, exporter, tracker
    for instrumentor in instrumentors:
        instrumentor.uninstrument()


def check(traced, driven: list[str]) -> None:
    telemetry, exporter, tracker = traced
    expected = Counter((KINDS[kind][0], KINDS[kind][4]) for kind in driven)
    counts = telemetry.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.GEN_AI_PROVIDER_NAME, names.ENDING)
    assert counts == expected
    spans = exporter.get_finished_spans()
    assert len(spans) == len(driven)
    assert tracker.started == tracker.ended and len(tracker.started) == len(driven)
    assert Counter(s.attributes[names.ENDING] for s in spans) == Counter(KINDS[kind][4] for kind in driven)


def plan(count: int, asynchronous: bool) -> list[str]:
    kinds = [k for k in KINDS if asynchronous or KINDS[k][3] != "cancel"]  # a thread has no task to cancel
    return list(itertools.islice(itertools.cycle(kinds), count))


def test_concurrent_calls_from_threads(traced, fake_provider):
    driven = plan(CALLS, asynchronous=False)
    clients = clients_for(fake_provider, asynchronous=False)
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda pair: sync_call(clients, *pair), [(kind, f"t{i}") for i, kind in enumerate(driven)]))
    for client in clients.values():
        client.close()
    check(traced, driven)


def test_concurrent_calls_in_one_event_loop(traced, fake_provider):
    driven = plan(CALLS, asynchronous=True)

    async def main() -> None:
        clients = clients_for(fake_provider, asynchronous=True)
        tasks = {f"a{i}": asyncio.create_task(async_call(clients, kind, f"a{i}")) for i, kind in enumerate(driven)}
        # A slow call is cancelled once the fake provider has logged it: in flight, not merely scheduled.
        to_cancel = {f"a{i}" for i, kind in enumerate(driven) if KINDS[kind][3] == "cancel"}
        while True:  # (a call that ended on its own is not waited for: its ending shows the failure)
            logged = {r["headers"].get("x-test-marker") for r in fake_provider.requests}
            if all(marker in logged or tasks[marker].done() for marker in to_cancel):
                break
            await asyncio.sleep(0.01)
        for marker in to_cancel:
            tasks[marker].cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
        for client in clients.values():
            await client.close()

    asyncio.run(main())
    check(traced, driven)
