"""Many provider calls inside one sampling request, from threads and tasks at once: the request counts
every one of them, and sums their tokens and cost exactly, on every repetition.

The host callback makes ``CALLS`` anthropic calls against the fake provider: half from threads
(``asyncio.to_thread`` with the sync client), half as tasks on the event loop (the async client),
all at once. The expected counts and tokens are what the provider answered (the SDK's ``usage``),
the expected cost those tokens at the policy's price (docs/configuration.md "prices").
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anthropic
import anyio
import mcp_types as types
import pytest

from conftest import Telemetry, call_sample_tool, with_policy
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor

CALLS = 120
REPEATS = 15
MODEL = "claude-sonnet-4-5"
INPUT_USD_PER_MTOK = 3.0
OUTPUT_USD_PER_MTOK = 15.0
POLICY = f"""
[prices."{MODEL}"]
input_usd_per_mtok = {INPUT_USD_PER_MTOK}
output_usd_per_mtok = {OUTPUT_USD_PER_MTOK}
"""
MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture
def switching_often() -> Iterator[None]:
    """Threads switch every microsecond (default 5 ms): a read-modify-write that is not under a lock
    loses an update within a few repetitions instead of once in a while."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


@pytest.fixture
def hosted(telemetry: Telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Telemetry]:
    yield from with_policy(telemetry, tmp_path, monkeypatch, POLICY, MCPSamplingInstrumentor, AnthropicInstrumentor)


def many_calls_callback(fake_provider, answers: list):
    sync_client = anthropic.Anthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)

    async def callback(ctx, params):
        async with anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0) as client:

            def in_a_thread():
                return sync_client.messages.create(model=MODEL, max_tokens=8, messages=MESSAGES)

            async def in_a_task():
                return await client.messages.create(model=MODEL, max_tokens=8, messages=MESSAGES)

            # As many threads as calls made from threads (asyncio.to_thread's default pool has at most 32).
            asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(CALLS // 2))
            calls = [asyncio.to_thread(in_a_thread) if i % 2 else in_a_task() for i in range(CALLS)]
            messages = await asyncio.gather(*calls)
        answers.extend(messages)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="done"), model=MODEL, stop_reason="endTurn"
        )

    return callback, sync_client


def test_every_call_is_counted_and_summed_exactly_every_time(switching_often, hosted, fake_provider):
    for repeat in range(REPEATS):
        answers: list = []
        callback, sync_client = many_calls_callback(fake_provider, answers)
        try:
            anyio.run(call_sample_tool, "legacy", callback)
        finally:
            sync_client.close()
        spans = hosted.spans(names.SPAN_SAMPLING)
        a = spans[-1].attributes
        input_tokens = sum(m.usage.input_tokens for m in answers)
        output_tokens = sum(m.usage.output_tokens for m in answers)
        usd = (input_tokens * INPUT_USD_PER_MTOK + output_tokens * OUTPUT_USD_PER_MTOK) / 1_000_000
        assert (len(spans), len(answers)) == (repeat + 1, CALLS)
        assert (
            a[names.SAMPLING_PROVIDER_CALLS],
            a[names.GEN_AI_USAGE_INPUT_TOKENS],
            a[names.GEN_AI_USAGE_OUTPUT_TOKENS],
        ) == (CALLS, input_tokens, output_tokens), f"repetition {repeat}"
        assert a[names.COST_USD] == pytest.approx(usd, rel=1e-12), f"repetition {repeat}"
    chat_spans = [s for s in hosted.spans() if s.name.startswith(names.OPERATION_CHAT)]
    assert len(chat_spans) == CALLS * REPEATS
