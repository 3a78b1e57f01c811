"""The verdicts on a sampling request judge what the provider served and what happened, over real
mcp 2.x sessions and the real anthropic and openai SDKs against the fake provider: the served
model and the host's report beside it, a gateway's served-model header, endings from the provider
calls, and the policy for a request without hints (the rules: tests/rules/test_verdict.py,
test_endings.py).

Hosts here behave as the real ones the suite in tests/hosts/ drives: they report their configured
model name (pydantic-ai), a composite ``fallback:a,b`` (pydantic-ai ``FallbackModel``), a prefixed
name, turn a provider's exception into ``-32603`` with its text (fastmcp), or answer with text and
``endTurn`` when every call failed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp_types", reason="mcp 2.x sessions")

import anthropic
import anyio
import mcp_types as types
import openai
from mcp import Client

from conftest import Telemetry, _instrumented
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor
from sampling_server import build_server

POLICY = """
[servers."sampling-test-server"]
primary_model = "claude-sonnet-5-5"
permitted_models = ["claude-sonnet-5-5", "claude-haiku-5-5"]
"""
HINTED = {"hint": "claude-sonnet", "include_context": "none"}
UNHINTED = {"hint": "", "include_context": "none"}


@pytest.fixture
def hosted(telemetry: Telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Telemetry]:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY)
    monkeypatch.setenv(names.ENV_POLICY, str(path))
    yield from _instrumented(telemetry, MCPSamplingInstrumentor, AnthropicInstrumentor, OpenAIInstrumentor)


def result(model: str, stop_reason: str | None = "endTurn", text: str = "x") -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(text=text), model=model, stop_reason=stop_reason
    )


def anthropic_host(
    fake_provider, *steps: tuple[str, str], reports: str | None = None, on_failure: str = "frame", stream: bool = False
):
    """A host asking the fake provider (anthropic SDK) for each ``(model, scenario)`` in turn until one
    answers; it reports ``reports`` (default: the model the answer names). When every call failed:
    ``frame`` answers ``-32603`` with the exception's text (fastmcp), ``raise`` raises it, ``text``
    answers with the error as assistant text and ``endTurn``."""

    async def host(ctx, params):
        client = anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
        failure: Exception | None = None
        try:
            for model, scenario in steps:
                try:
                    kwargs = {
                        "model": model,
                        "max_tokens": 8,
                        "messages": [{"role": "user", "content": "hi"}],
                        "extra_headers": {"x-fake-scenario": scenario},
                    }
                    if stream:
                        async with client.messages.stream(**kwargs) as events:
                            message = await events.get_final_message()
                    else:
                        message = await client.messages.create(**kwargs)
                    return result(reports or message.model)
                except anthropic.APIError as exc:
                    failure = exc
        finally:
            await client.close()
        if on_failure == "raise":
            raise failure  # type: ignore[misc]
        if on_failure == "text":
            return result(reports or steps[-1][0], text=str(failure))
        return types.ErrorData(code=-32603, message=str(failure))

    return host


async def call(host, args: dict | None = None):
    async with Client(build_server(), mode="legacy", sampling_callback=host) as client:
        try:
            return await client.call_tool("sample", args or HINTED)
        except Exception as exc:  # noqa: BLE001 - what the host got is checked elsewhere
            return exc


def sampling(t: Telemetry):
    (span,) = t.spans(names.SPAN_SAMPLING)
    return span


def violations(span) -> list[str]:
    return sorted(
        e.attributes[names.SAMPLING_VIOLATION_KIND] for e in span.events if e.name == names.EVENT_SAMPLING_VIOLATION
    )


def requests(t: Telemetry):
    return t.counts(
        names.METRIC_SAMPLING_REQUESTS,
        names.SAMPLING_ENDING,
        names.SAMPLING_SUBSTITUTION,
        names.DEGRADATION_MODE,
        names.GEN_AI_RESPONSE_MODEL,
    )


class TestTheServedModel:
    """What the provider served, the host's report beside it."""

    def test_a_host_reporting_its_configured_model_is_judged_on_the_providers(self, hosted, fake_provider):
        """pydantic-ai reports the model it asked for; the provider served haiku."""
        host = anthropic_host(
            fake_provider, ("claude-sonnet-5-5", "served_model=claude-haiku-5-5"), reports="claude-sonnet-5-5"
        )
        anyio.run(call, host)
        span = sampling(hosted)
        a = span.attributes
        assert (a[names.GEN_AI_RESPONSE_MODEL], a[names.SAMPLING_REPORTED_MODEL]) == (
            "claude-haiku-5-5",
            "claude-sonnet-5-5",
        )
        assert (a[names.SAMPLING_SUBSTITUTION], a[names.DEGRADATION_MODE], a[names.DEGRADATION_REASON]) == (
            "within_policy",
            "degraded",
            ("fallback",),
        )
        assert violations(span) == ["reported_model_mismatch"]
        assert hosted.counts(names.METRIC_SAMPLING_VIOLATIONS, names.SAMPLING_VIOLATION_KIND) == {
            ("reported_model_mismatch",): 1
        }
        assert requests(hosted) == {("completed", "within_policy", "degraded", "claude-haiku-5-5"): 1}

    def test_a_composite_report_naming_the_served_member_is_no_mismatch(self, hosted, fake_provider):
        """pydantic-ai's FallbackModel: the primary served, the composite is kept beside it."""
        host = anthropic_host(
            fake_provider, ("claude-sonnet-5-5", ""), reports="fallback:claude-sonnet-5-5,claude-haiku-5-5"
        )
        anyio.run(call, host)
        span = sampling(hosted)
        a = span.attributes
        assert (a[names.GEN_AI_RESPONSE_MODEL], a[names.SAMPLING_REPORTED_MODEL]) == (
            "claude-sonnet-5-5",
            "fallback:claude-sonnet-5-5,claude-haiku-5-5",
        )
        assert (a[names.SAMPLING_SUBSTITUTION], a[names.DEGRADATION_MODE]) == ("none", "primary")
        assert violations(span) == []

    def test_a_composite_report_naming_none_of_the_served_model_is_a_mismatch(self, hosted, fake_provider):
        host = anthropic_host(
            fake_provider,
            ("claude-sonnet-5-5", "served_model=claude-opus-5-5"),
            reports="fallback:claude-sonnet-5-5,claude-haiku-5-5",
        )
        anyio.run(call, host)
        span = sampling(hosted)
        assert span.attributes[names.SAMPLING_SUBSTITUTION] == "outside_policy"
        assert violations(span) == ["model_outside_policy", "reported_model_mismatch"]

    def test_the_last_call_that_did_not_fail_served(self, hosted, fake_provider):
        """A later call that failed with a model in its answer (an openai Responses ``status: failed``)
        served nothing: the model of the call before it did."""

        async def host(ctx, params):
            claude = anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
            gpt = openai.AsyncOpenAI(base_url=fake_provider.url + "/v1", api_key="sk-fake", max_retries=0)
            try:
                message = await claude.messages.create(
                    model="claude-haiku-5-5", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
                )
                await gpt.responses.create(model="gpt-5", input="check", extra_headers={"x-fake-scenario": "failed"})
            finally:
                await claude.close()
                await gpt.close()
            return result(message.model)

        anyio.run(call, host)
        a = sampling(hosted).attributes
        assert (a[names.SAMPLING_PROVIDER_CALLS], a[names.GEN_AI_RESPONSE_MODEL], a[names.SAMPLING_PROVIDER_MODEL]) == (
            2,
            "claude-haiku-5-5",
            "claude-haiku-5-5",
        )
        assert a[names.SAMPLING_SUBSTITUTION] == "none"  # the model the host asked for served

    @pytest.mark.parametrize(
        ("reported", "served", "substitution"),
        [
            ("anthropic.claude-haiku-5-5", "claude-haiku-5-5", "within_policy"),  # a provider prefix
            ("us.anthropic.claude-sonnet-5-5-20261001-v1:0", "claude-sonnet-5-5-20261001", "none"),  # Bedrock
            ("anthropic/claude-opus-5-5", "claude-opus-5-5", "outside_policy"),  # a path
        ],
    )
    def test_without_provider_calls_the_report_is_read_as_a_model_id(self, hosted, reported, served, substitution):
        anyio.run(call, lambda ctx, params: _returning(result(reported)))
        a = sampling(hosted).attributes
        assert (a[names.GEN_AI_RESPONSE_MODEL], a[names.SAMPLING_REPORTED_MODEL], a[names.SAMPLING_SUBSTITUTION]) == (
            served,
            reported,
            substitution,
        )
        assert requests(hosted) == {
            ("completed", substitution, "primary" if substitution == "none" else "degraded", served): 1
        }

    def test_a_composite_report_without_provider_calls_is_unjudged_and_never_a_label(self, hosted):
        """The member that served is unknown: no served model, the label ``_unknown``; a hint's
        substring inside the composite (``claude-sonnet``) matches nothing."""
        reported = "fallback:gpt-4o,claude-sonnet-5-5"
        anyio.run(call, lambda ctx, params: _returning(result(reported)))
        a = sampling(hosted).attributes
        assert names.GEN_AI_RESPONSE_MODEL not in a
        assert (a[names.SAMPLING_REPORTED_MODEL], a[names.SAMPLING_SUBSTITUTION]) == (reported, "unjudged")
        assert requests(hosted) == {("completed", "unjudged", "primary", "_unknown"): 1}


async def _returning(value):
    return value


class TestAGatewaysServedModelHeader:
    """A gateway whose body echoes the requested model names the served one in a response header."""

    @pytest.mark.parametrize("stream", [False, True])
    def test_anthropic(self, hosted, fake_provider, stream):
        host = anthropic_host(fake_provider, ("claude-sonnet-5-5", "gateway_model=claude-opus-5-5"), stream=stream)
        out = anyio.run(call, host)
        assert out.content[0].text == "claude-sonnet-5-5|endTurn"  # the host saw the body's echo
        (chat,) = hosted.spans("chat claude-sonnet-5-5")
        assert chat.attributes[names.GEN_AI_RESPONSE_MODEL] == "claude-opus-5-5"
        span = sampling(hosted)
        a = span.attributes
        assert (a[names.GEN_AI_RESPONSE_MODEL], a[names.SAMPLING_SUBSTITUTION]) == ("claude-opus-5-5", "outside_policy")
        assert violations(span) == ["model_outside_policy", "reported_model_mismatch"]

    @pytest.mark.parametrize("raw", [False, True])
    def test_openai(self, hosted, fake_provider, raw):
        async def host(ctx, params):
            client = openai.AsyncOpenAI(base_url=fake_provider.url + "/v1", api_key="sk-fake", max_retries=0)
            kwargs = {
                "model": "claude-sonnet-5-5",
                "messages": [{"role": "user", "content": "hi"}],
                "extra_headers": {"x-fake-scenario": "gateway_model=claude-haiku-5-5"},
            }
            try:
                if raw:
                    completion = (await client.chat.completions.with_raw_response.create(**kwargs)).parse()
                else:
                    completion = await client.chat.completions.create(**kwargs)
            finally:
                await client.close()
            return result(completion.model)

        anyio.run(call, host)
        (chat,) = hosted.spans("chat claude-sonnet-5-5")
        assert chat.attributes[names.GEN_AI_RESPONSE_MODEL] == "claude-haiku-5-5"
        assert sampling(hosted).attributes[names.GEN_AI_RESPONSE_MODEL] == "claude-haiku-5-5"

    def test_the_headers_read_are_a_setting(self, telemetry, tmp_path, monkeypatch, fake_provider):
        """``OTEL_SAMPLING_SERVED_MODEL_HEADERS`` names the gateway's header; the default ones are then not read."""
        monkeypatch.setenv(names.ENV_SERVED_MODEL_HEADERS, "X-Served-Model")
        fixture = _instrumented(telemetry, MCPSamplingInstrumentor, AnthropicInstrumentor)
        next(fixture)
        try:
            anyio.run(
                call,
                anthropic_host(
                    fake_provider, ("claude-sonnet-5-5", "gateway_model=claude-haiku-5-5,gateway_header=x-served-model")
                ),
            )
            anyio.run(call, anthropic_host(fake_provider, ("claude-sonnet-5-5", "gateway_model=claude-opus-5-5")))
        finally:
            next(fixture, None)
        models = [s.attributes[names.GEN_AI_RESPONSE_MODEL] for s in telemetry.spans("chat claude-sonnet-5-5")]
        assert models == ["claude-haiku-5-5", "claude-sonnet-5-5"]


class TestEndingsFromWhatHappened:
    """The provider calls decide when the host's answer hides what they did."""

    def test_a_generic_frame_after_an_overload_is_model_unavailable(self, hosted, fake_provider):
        """fastmcp: a handler's exception becomes -32603 with its text."""
        anyio.run(
            call, anthropic_host(fake_provider, ("claude-sonnet-5-5", "status=529"), ("claude-haiku-5-5", "status=529"))
        )
        span = sampling(hosted)
        assert (span.attributes[names.SAMPLING_ENDING], span.attributes[names.ERROR_TYPE]) == (
            "model.unavailable",
            "-32603",
        )
        assert span.attributes[names.SAMPLING_PROVIDER_CALLS] == 2

    def test_a_raised_provider_error_after_an_overload_is_model_unavailable(self, hosted, fake_provider):
        anyio.run(call, anthropic_host(fake_provider, ("claude-sonnet-5-5", "status=529"), on_failure="raise"))
        a = sampling(hosted).attributes
        assert (a[names.SAMPLING_ENDING], a[names.ERROR_TYPE]) == ("model.unavailable", "anthropic.OverloadedError")

    def test_a_result_while_every_call_failed_is_the_failure(self, hosted, fake_provider):
        """A host that answers with the error as text and endTurn: nothing was served."""
        anyio.run(call, anthropic_host(fake_provider, ("claude-sonnet-5-5", "status=529"), on_failure="text"))
        a = sampling(hosted).attributes
        assert (a[names.SAMPLING_ENDING], a[names.ERROR_TYPE]) == ("model.unavailable", "overloaded_error")
        assert names.GEN_AI_RESPONSE_MODEL not in a
        assert a[names.SAMPLING_SUBSTITUTION] == "none"
        assert requests(hosted) == {("model.unavailable", "none", "primary", "_unknown"): 1}

    @pytest.mark.parametrize("stop_reason", ["endTurn", None])
    def test_a_result_produced_by_a_refusal_is_refused(self, hosted, fake_provider, stop_reason):
        """fastmcp maps content_filter to endTurn, pydantic-ai reports no stopReason."""

        async def host(ctx, params):
            client = anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
            try:
                message = await client.messages.create(
                    model="claude-sonnet-5-5",
                    max_tokens=8,
                    messages=[{"role": "user", "content": "hi"}],
                    extra_headers={"x-fake-scenario": "refusal"},
                )
            finally:
                await client.close()
            return result(message.model, stop_reason)

        anyio.run(call, host)
        a = sampling(hosted).attributes
        assert (a[names.SAMPLING_ENDING], a[names.GEN_AI_RESPONSE_MODEL], a[names.DEGRADATION_MODE]) == (
            "refused",
            "claude-sonnet-5-5",
            "primary",
        )
        assert names.ERROR_TYPE not in a

    def test_a_host_declining_by_raising_the_spec_text_is_a_user_denial(self, hosted):
        async def decline(ctx, params):
            raise RuntimeError("User rejected sampling request")

        anyio.run(call, decline)
        a = sampling(hosted).attributes
        assert (a[names.SAMPLING_ENDING], a[names.ERROR_TYPE]) == ("user.denied", "RuntimeError")

    def test_the_sdks_default_answer_is_host_unsupported(self, hosted):
        """mcp's own callback when the host sets none: ``-32600 "Sampling not supported"`` (what an mcp
        1.x host answers, whose server asks whatever the client declared; an mcp 2.x client that
        sets none declares no sampling, so here the host declares it and answers as the SDK does)."""
        from mcp.client.session import _default_sampling_callback

        async def no_sampling(ctx, params):
            return await _default_sampling_callback(ctx, params)

        out = anyio.run(call, no_sampling)
        assert (out.code, out.message) == (-32600, "Sampling not supported")  # the host's answer, unchanged
        a = sampling(hosted).attributes
        assert (a[names.SAMPLING_ENDING], a[names.ERROR_TYPE]) == ("host.unsupported", "-32600")


class TestPolicyWithoutHints:
    """A server that sends no model hints (most public servers) is still held to the policy."""

    def test_an_unhinted_request_served_outside_the_permitted_list_is_outside_policy(self, hosted, fake_provider):
        anyio.run(call, anthropic_host(fake_provider, ("claude-sonnet-5-5", "served_model=claude-opus-5-5")), UNHINTED)
        span = sampling(hosted)
        a = span.attributes
        assert names.SAMPLING_MODEL_HINTS not in a
        assert (a[names.SAMPLING_SUBSTITUTION], a[names.DEGRADATION_MODE], a[names.DEGRADATION_REASON]) == (
            "outside_policy",
            "degraded",
            ("substitution",),
        )
        assert violations(span) == ["model_outside_policy"]

    def test_an_unhinted_request_served_by_a_permitted_fallback_is_a_fallback(self, hosted, fake_provider):
        """``fallback`` keeps its meaning: served by a permitted model that is not the primary."""
        anyio.run(call, anthropic_host(fake_provider, ("claude-haiku-5-5", "")), UNHINTED)
        span = sampling(hosted)
        a = span.attributes
        assert (a[names.SAMPLING_SUBSTITUTION], a[names.DEGRADATION_MODE], a[names.DEGRADATION_REASON]) == (
            "none",
            "degraded",
            ("fallback",),
        )
        assert violations(span) == []
