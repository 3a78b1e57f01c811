"""Effort as a degradation, end to end: a sampling request's provider call that asks for less
reasoning effort than the requesting server's ``primary_effort`` is degraded with reason
``reduced_effort``, and so is the request (the one verdict, ``rules/verdict.py``).

Real mcp 2.x sessions with the test server; the host's callback calls the real anthropic and openai
SDKs against the fake provider with the effort fields their APIs define (anthropic
``thinking.budget_tokens``, openai ``reasoning_effort``).
"""

from __future__ import annotations

from pathlib import Path

import anthropic
import anyio
import mcp_types as types
import openai
import pytest

from conftest import call_sample_tool, with_policy
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor
from sampling_server import SERVER_NAME


def _policy(effort: str) -> str:
    return f'[servers."{SERVER_NAME}"]\nprimary_effort = {effort}\n'


@pytest.fixture
def budget_policy(telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    yield from with_policy(
        telemetry, tmp_path, monkeypatch, _policy("8192"), MCPSamplingInstrumentor, AnthropicInstrumentor
    )


@pytest.fixture
def level_policy(telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    yield from with_policy(
        telemetry, tmp_path, monkeypatch, _policy('"high"'), MCPSamplingInstrumentor, OpenAIInstrumentor
    )


def _anthropic_callback(fp, **effort):
    async def callback(ctx, params):
        async with anthropic.AsyncAnthropic(base_url=fp.url, api_key="sk-fake", max_retries=0) as client:
            message = await client.messages.create(
                model="claude-sonnet-5-5", max_tokens=16000, messages=[{"role": "user", "content": "hi"}], **effort
            )
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="ok"), model=message.model, stop_reason="endTurn"
        )

    return callback


def _openai_callback(fp, level: str, api: str = "chat", stream: bool = False):
    async def callback(ctx, params):
        async with openai.AsyncOpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0) as client:
            if api == "responses":
                answer = await client.responses.create(model="gpt-5", input="hi", reasoning={"effort": level})
                model = answer.model
            elif stream:
                chunks = await client.chat.completions.create(
                    model="gpt-5", messages=[{"role": "user", "content": "hi"}], reasoning_effort=level, stream=True
                )
                model = [chunk.model async for chunk in chunks][-1]
            else:
                completion = await client.chat.completions.create(
                    model="gpt-5", messages=[{"role": "user", "content": "hi"}], reasoning_effort=level
                )
                model = completion.model
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="ok"), model=model, stop_reason="endTurn"
        )

    return callback


def _verdicts(telemetry, chat_name: str) -> tuple[tuple, tuple]:
    (chat,) = telemetry.spans(chat_name)
    (sampling,) = telemetry.spans(names.SPAN_SAMPLING)
    return (
        (chat.attributes[names.DEGRADATION_MODE], tuple(chat.attributes.get(names.DEGRADATION_REASON, ()))),
        (sampling.attributes[names.DEGRADATION_MODE], tuple(sampling.attributes.get(names.DEGRADATION_REASON, ()))),
    )


REDUCED = ("degraded", (names.REASON_REDUCED_EFFORT,))


def test_a_smaller_thinking_budget_degrades_the_call_and_its_request(budget_policy, fake_provider):
    thinking = {"type": "enabled", "budget_tokens": 1024}
    anyio.run(call_sample_tool, "legacy", _anthropic_callback(fake_provider, thinking=thinking))
    assert _verdicts(budget_policy, "chat claude-sonnet-5-5") == (REDUCED, REDUCED)
    (chat,) = budget_policy.spans("chat claude-sonnet-5-5")
    assert chat.attributes[names.REQUEST_THINKING_BUDGET] == 1024
    runs = budget_policy.counts(names.METRIC_AGENT_RUNS, names.DEGRADATION_MODE)
    assert runs == {("degraded",): 1}  # the request's own run


def test_thinking_turned_off_is_below_any_budget(budget_policy, fake_provider):
    anyio.run(call_sample_tool, "legacy", _anthropic_callback(fake_provider))
    assert _verdicts(budget_policy, "chat claude-sonnet-5-5") == (REDUCED, REDUCED)
    (chat,) = budget_policy.spans("chat claude-sonnet-5-5")
    assert names.REQUEST_THINKING_BUDGET not in chat.attributes  # nothing was asked for


def test_the_primary_budget_is_primary(budget_policy, fake_provider):
    thinking = {"type": "enabled", "budget_tokens": 8192}
    anyio.run(call_sample_tool, "legacy", _anthropic_callback(fake_provider, thinking=thinking))
    assert _verdicts(budget_policy, "chat claude-sonnet-5-5") == (("primary", ()), ("primary", ()))


@pytest.mark.parametrize(
    ("level", "expected"), [("low", REDUCED), ("high", ("primary", ())), ("xhigh", ("primary", ()))]
)
def test_a_lower_reasoning_effort_level_degrades(level_policy, fake_provider, level, expected):
    anyio.run(call_sample_tool, "legacy", _openai_callback(fake_provider, level))
    assert _verdicts(level_policy, "chat gpt-5") == (expected, expected)
    (chat,) = level_policy.spans("chat gpt-5")
    assert chat.attributes[names.GEN_AI_REQUEST_REASONING_LEVEL] == level


@pytest.mark.parametrize(("api", "stream"), [("chat", True), ("responses", False)])
def test_the_responses_api_and_streams_carry_the_effort_too(level_policy, fake_provider, api, stream):
    anyio.run(call_sample_tool, "legacy", _openai_callback(fake_provider, "minimal", api, stream))
    assert _verdicts(level_policy, "chat gpt-5") == (REDUCED, REDUCED)


def test_a_streamed_messages_call_with_a_smaller_budget_is_degraded(budget_policy, fake_provider):
    async def callback(ctx, params):
        async with anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0) as client:
            async with client.messages.stream(
                model="claude-sonnet-5-5",
                max_tokens=16000,
                messages=[{"role": "user", "content": "hi"}],
                thinking={"type": "enabled", "budget_tokens": 2048},
            ) as stream:
                message = await stream.get_final_message()
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="ok"), model=message.model, stop_reason="endTurn"
        )

    anyio.run(call_sample_tool, "legacy", callback)
    assert _verdicts(budget_policy, "chat claude-sonnet-5-5") == (REDUCED, REDUCED)
