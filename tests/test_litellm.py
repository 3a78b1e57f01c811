"""LiteLLM instrumentation beyond the call shapes (tests/test_litellm_call_shapes.py) and the Router's
fallbacks (tests/test_litellm_router.py): what ``instrument()`` does and does not do, content
capture, drills, a Router inside a sampling callback, and the provider and fallback rules read from
LiteLLM's own values.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import subprocess
import sys
from importlib.metadata import version

import pytest
import wrapt

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch at import
litellm = pytest.importorskip("litellm")

import otel_sampling as osm  # noqa: E402
from conftest import TRACER_PROVIDER, _instrumented  # noqa: E402
from otel_sampling import names  # noqa: E402
from otel_sampling.instrumentation.litellm import LiteLLMInstrumentor, fallback_reason, provider_name  # noqa: E402
from otel_sampling.testing.fake_provider import DEFAULT_TEXT, SCENARIO_HEADER  # noqa: E402

SENTINEL = "SENTINEL-5e0b"
MESSAGES = [{"role": "system", "content": f"You are {SENTINEL}"}, {"role": "user", "content": f"ask {SENTINEL}"}]
PRIMARY, FALLBACK = "gpt-4.1", "gpt-4o-mini"


@pytest.fixture
def litellm_instrumented(telemetry):
    yield from _instrumented(telemetry, LiteLLMInstrumentor)


def chat_spans(t):
    return sorted((s for s in t.spans() if s.name.startswith("chat ")), key=lambda s: s.end_time)


def test_instrument_does_not_import_litellm_and_traces_it_once_the_host_does():
    """Importing LiteLLM takes seconds: a process that never imports it does not pay for it; one
    that imports it after ``instrument()`` gets one span per call, and none once uninstrumented."""
    code = """
import asyncio, sys
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_sampling.instrumentation.litellm import LiteLLMInstrumentor
from otel_sampling.testing.fake_provider import FakeProvider
spans = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(spans))
LiteLLMInstrumentor().instrument(tracer_provider=provider)
print("litellm" in sys.modules)
import litellm
with FakeProvider() as fp:
    kw = {"model": "openai/gpt-4o-mini", "api_base": fp.url + "/v1", "api_key": "k",
          "messages": [{"role": "user", "content": "hi"}]}
    litellm.completion(**kw)
    asyncio.run(litellm.acompletion(**kw))
    print(len(spans.get_finished_spans()))
    LiteLLMInstrumentor().uninstrument()
    litellm.completion(**kw)
print(len(spans.get_finished_spans()))
"""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=1000, env=env
    )
    assert out.stdout.split() == ["False", "2", "2"]  # none after uninstrument()


def test_uninstrument_restores_the_functions(telemetry, fake_provider):
    originals = {name: vars(litellm)[name] for name in ("completion", "acompletion", "responses", "aresponses")}
    for _ in _instrumented(telemetry, LiteLLMInstrumentor):
        assert all(isinstance(vars(litellm)[name], wrapt.FunctionWrapper) for name in originals)
    assert {name: vars(litellm)[name] for name in originals} == originals
    litellm.completion(model="openai/gpt-4o-mini", api_base=fake_provider.url + "/v1", api_key="k", messages=MESSAGES)
    assert telemetry.spans() == []


def test_an_installed_version_outside_the_range_warns_once(caplog, telemetry):
    pinned = type("PinnedBelow", (LiteLLMInstrumentor,), {"dependencies": ("litellm < 1",), "_instance": None})
    caplog.set_level(logging.DEBUG)
    instrumentor = pinned()
    for _ in range(2):
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
        assert not isinstance(vars(litellm)["completion"], wrapt.FunctionWrapper)
        instrumentor.uninstrument()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("otel")]
    assert len(warnings) == 1 and f"litellm {version('litellm')}" in warnings[0], warnings


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_content_capture(telemetry, fake_provider, monkeypatch, stream):
    monkeypatch.setenv(names.ENV_CAPTURE_MESSAGE_CONTENT, "SPAN_ONLY")
    for _ in _instrumented(telemetry, LiteLLMInstrumentor):
        answer = litellm.completion(
            model="anthropic/claude-sonnet-4-5",
            api_base=fake_provider.url,
            api_key="k",
            max_tokens=16,
            messages=MESSAGES,
            stream=stream,
        )
        if stream:
            list(answer)
    (span,) = telemetry.spans()
    a = span.attributes
    # As for the openai SDK's Chat Completions: a system message is an input message (its role says so).
    assert json.loads(a[names.GEN_AI_INPUT_MESSAGES]) == [
        {"role": "system", "parts": [{"type": "text", "content": f"You are {SENTINEL}"}]},
        {"role": "user", "parts": [{"type": "text", "content": f"ask {SENTINEL}"}]},
    ]
    (output,) = json.loads(a[names.GEN_AI_OUTPUT_MESSAGES])
    assert output["role"] == "assistant" and output["finish_reason"] == "stop"
    assert "".join(p["content"] for p in output["parts"] if p["type"] == "text") == DEFAULT_TEXT


def test_content_is_off_by_default(litellm_instrumented, fake_provider):
    litellm.completion(model="openai/gpt-4o-mini", api_base=fake_provider.url + "/v1", api_key="k", messages=MESSAGES)
    (span,) = litellm_instrumented.spans()
    assert SENTINEL not in repr(dict(span.attributes))


def router(fp, scenario: str = "") -> litellm.Router:
    headers = {"extra_headers": {SCENARIO_HEADER: scenario}} if scenario else {}
    params = {"api_base": fp.url + "/v1", "api_key": "sk-fake", **headers}
    return litellm.Router(
        model_list=[
            {"model_name": "primary", "litellm_params": {"model": f"openai/{PRIMARY}", **params}},
            {"model_name": "backup", "litellm_params": {"model": f"openai/{FALLBACK}", **params}},
        ],
        fallbacks=[{"primary": ["backup"]}],
        num_retries=0,
    )


@pytest.mark.parametrize("failure", ["overloaded", "rate_limited", "timeout"])
def test_a_drill_on_the_primary_makes_the_router_fail_over(litellm_instrumented, fake_provider, failure):
    """A drill fails a LiteLLM-routed model with the exception LiteLLM raises for the real failure,
    nothing sent; the Router falls back from it as from a real outage."""
    fake_provider.reset()
    with osm.drill("outage", target_model=PRIMARY, duration=600, failure=failure):
        answer = router(fake_provider).completion(model="primary", messages=MESSAGES)
    assert answer.model == FALLBACK
    assert [r["model"] for r in fake_provider.requests] == [FALLBACK]  # the primary's call was never sent
    primary, fallback = chat_spans(litellm_instrumented)
    assert primary.attributes[names.ENDING] == (
        names.ENDING_TIMEOUT if failure == "timeout" else names.ENDING_MODEL_UNAVAILABLE
    )
    assert primary.attributes[names.DRILL_NAME] == ("outage",)
    assert fallback.attributes[names.DEGRADATION_REASON][0] == names.REASON_FAILOVER


def test_a_router_fallback_inside_a_sampling_request_degrades_the_request(telemetry, fake_provider):
    """The Router as the host's sampling callback's model client: the request it answers reads failover."""
    pytest.importorskip("mcp_types", reason="mcp 2.x sessions")
    import anyio
    import mcp_types as types

    from drivers import call
    from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor

    r = router(fake_provider, f"status=503,fail_model={PRIMARY},no_retry")

    async def callback(ctx, params):
        answer = await r.acompletion(model="primary", messages=[{"role": "user", "content": "hi"}])
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="ok"), model=answer.model, stop_reason="endTurn"
        )

    for _ in _instrumented(telemetry, MCPSamplingInstrumentor, LiteLLMInstrumentor):
        anyio.run(call, "legacy", callback)
    (sampling,) = telemetry.spans(names.SPAN_SAMPLING)
    assert sampling.attributes[names.DEGRADATION_MODE] == names.MODE_DEGRADED
    assert sampling.attributes[names.DEGRADATION_REASON][0] == names.REASON_FAILOVER
    assert [s.attributes[names.DEGRADATION_MODE] for s in chat_spans(telemetry)] == [
        names.MODE_PRIMARY,
        names.MODE_DEGRADED,
    ]
    assert telemetry.counts(names.METRIC_SAMPLING_REQUESTS, names.DEGRADATION_MODE) == {(names.MODE_DEGRADED,): 1}


@pytest.mark.parametrize(
    ("litellm_provider", "expected"),
    [
        ("openai", "openai"),
        ("anthropic", "anthropic"),
        ("azure", "azure.ai.openai"),
        ("bedrock", "aws.bedrock"),
        ("vertex_ai", "gcp.vertex_ai"),
        ("gemini", "gcp.gemini"),
        ("mistral", "mistral_ai"),
        ("xai", "x_ai"),
        ("ollama", "ollama"),  # no well-known value: LiteLLM's own id
        ("made-up-provider", "_OTHER"),  # not one of LiteLLM's: a bounded label
        (None, "_OTHER"),
    ],
)
def test_the_provider_name_is_the_semconv_value_of_the_provider_litellm_resolved(litellm_provider, expected):
    known = frozenset(p.value for p in litellm.types.utils.LlmProviders)
    assert provider_name(litellm_provider, known) == expected


def test_the_provider_is_the_one_litellm_resolves_for_the_call(litellm_instrumented, fake_provider):
    """``custom_llm_provider`` names it when the model has no prefix (an OpenAI-compatible server)."""
    litellm.completion(
        model="my-model",
        custom_llm_provider="openai",
        api_base=fake_provider.url + "/v1",
        api_key="k",
        messages=MESSAGES,
    )
    (span,) = litellm_instrumented.spans()
    assert span.attributes[names.GEN_AI_PROVIDER_NAME] == "openai"
    assert span.attributes[names.GEN_AI_REQUEST_MODEL] == "my-model"


def _stamped(hops, *failures):
    return {"metadata": {"attempted_fallbacks": hops, "previous_models": [{"exception_type": f} for f in failures]}}


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({}, None),  # not a Router call
        (_stamped(0, "RateLimitError"), None),  # a retry on the same group is no fallback
        (_stamped(1, "ServiceUnavailableError"), names.REASON_FAILOVER),
        (_stamped(1, "RateLimitError", "ContextWindowExceededError"), names.REASON_CONTEXT_WINDOW_FALLBACK),
        (_stamped(2, "ContentPolicyViolationError"), names.REASON_CONTENT_POLICY_FALLBACK),
        (_stamped(1), names.REASON_FAILOVER),  # a hop whose failure was not recorded
        ({"litellm_metadata": _stamped(1, "ContextWindowExceededError")["metadata"]}, "context_window_fallback"),
        ({"metadata": {"attempted_fallbacks": True}}, None),  # not a count
    ],
)
def test_a_fallback_hop_and_its_reason_are_read_from_the_routers_stamps(kwargs, reason):
    assert fallback_reason(kwargs) == reason


@pytest.mark.parametrize("mock", [{"mock_response": "canned"}, {"mock_timeout": True, "timeout": 0.01}])
def test_a_call_litellm_answers_itself_makes_no_span(litellm_instrumented, mock):
    """LiteLLM's test doubles answer without an upstream call: there is no provider call to trace."""
    with contextlib.suppress(litellm.Timeout):  # mock_timeout raises as a real timeout would
        litellm.completion(model="openai/gpt-4o-mini", api_key="k", messages=MESSAGES, **mock)
    assert litellm_instrumented.spans() == []


def test_an_async_completion_answers_unchanged(litellm_instrumented, fake_provider):
    answer = asyncio.run(
        litellm.acompletion(
            model="openai/gpt-4o-mini", api_base=fake_provider.url + "/v1", api_key="k", messages=MESSAGES
        )
    )
    assert answer.choices[0].message.content == DEFAULT_TEXT


def test_a_suppressed_call_passes_straight_through(litellm_instrumented, fake_provider):
    """No span, no metric point, no header: OpenTelemetry's suppression switch is honoured."""
    from opentelemetry.instrumentation.utils import suppress_instrumentation

    fake_provider.reset()
    with suppress_instrumentation():
        litellm.completion(
            model="openai/gpt-4o-mini", api_base=fake_provider.url + "/v1", api_key="k", messages=MESSAGES
        )
    assert litellm_instrumented.spans() == []
    (request,) = fake_provider.requests
    assert "traceparent" not in request["headers"]


def test_instrument_twice_still_gives_one_span_per_call(telemetry, fake_provider):
    instrumentor = LiteLLMInstrumentor()
    for _ in range(2):
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        litellm.completion(
            model="openai/gpt-4o-mini", api_base=fake_provider.url + "/v1", api_key="k", messages=MESSAGES
        )
    finally:
        instrumentor.uninstrument()
    assert len(telemetry.spans()) == 1
    assert not isinstance(vars(litellm)["completion"], wrapt.FunctionWrapper)


def test_a_context_window_fallback_inside_a_sampling_request_reads_its_reason_everywhere(telemetry, fake_provider):
    """The request does not fit the primary: the Router's context-window fallback serves it. The
    call, the sampling request and the run all read ``context_window_fallback``, not ``failover``."""
    pytest.importorskip("mcp_types", reason="mcp 2.x sessions")
    import anyio
    import mcp_types as types

    from drivers import call
    from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor

    too_long = "status=400,no_retry,error_message=This model's maximum context length is 8192 tokens"
    params = {"api_base": fake_provider.url + "/v1", "api_key": "sk-fake"}
    r = litellm.Router(
        model_list=[
            {
                "model_name": "primary",
                "litellm_params": {
                    "model": f"openai/{PRIMARY}",
                    "extra_headers": {SCENARIO_HEADER: f"{too_long},fail_model={PRIMARY}"},
                    **params,
                },
            },
            {"model_name": "long", "litellm_params": {"model": f"openai/{FALLBACK}", **params}},
        ],
        context_window_fallbacks=[{"primary": ["long"]}],
        num_retries=0,
    )

    async def callback(ctx, params):
        answer = await r.acompletion(model="primary", messages=[{"role": "user", "content": "hi"}])
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="ok"), model=answer.model, stop_reason="endTurn"
        )

    for _ in _instrumented(telemetry, MCPSamplingInstrumentor, LiteLLMInstrumentor):
        with osm.run("triage"):
            anyio.run(call, "legacy", callback)
    reason = (names.REASON_CONTEXT_WINDOW_FALLBACK,)
    (sampling,) = telemetry.spans(names.SPAN_SAMPLING)
    (run_span,) = telemetry.spans("invoke_agent triage")
    for span in (chat_spans(telemetry)[-1], sampling, run_span):
        assert span.attributes[names.DEGRADATION_MODE] == names.MODE_DEGRADED, span.name
        assert tuple(span.attributes[names.DEGRADATION_REASON]) == reason, span.name
    assert telemetry.counts(names.METRIC_SAMPLING_REQUESTS, names.DEGRADATION_MODE, names.DEGRADATION_REASON) == {
        (names.MODE_DEGRADED, names.REASON_CONTEXT_WINDOW_FALLBACK): 1
    }


@pytest.mark.parametrize(
    ("model", "api_base", "provider_id"),
    [("openai/gpt-4o-mini", "/v1", "openai"), ("anthropic/claude-sonnet-4-5", "", "anthropic")],
)
def test_the_cost_is_genai_prices_price_of_the_served_model(
    litellm_instrumented, fake_provider, model, api_base, provider_id
):
    genai_prices = pytest.importorskip("genai_prices")  # the prices extra
    litellm.completion(
        model=model, api_base=fake_provider.url + api_base, api_key="k", max_tokens=16, messages=MESSAGES
    )
    (span,) = litellm_instrumented.spans()
    a = span.attributes
    # The fake's fixed answer: 25 input tokens, 5 output tokens (one per word of its text).
    usage = genai_prices.Usage(input_tokens=25, output_tokens=5)
    expected = float(genai_prices.calc_price(usage, model.split("/")[1], provider_id=provider_id).total_price)
    assert a["gen_ai.usage.cost.currency"] == "USD"
    assert pytest.approx(expected) == a["gen_ai.usage.cost.amount"]
    assert a["otel_sampling.cost.price_source"].startswith("genai-prices@")


@pytest.mark.parametrize(
    "step",
    ["_State.request_of", "_State.response_of", "_State.with_trace_context", "ChatStreamAccumulator.observe"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_failure_of_ours_never_reaches_the_host(litellm_instrumented, fake_provider, monkeypatch, step, stream):
    """Our code raising at any step: the host's call answers as without us (the failure is logged)."""
    from otel_sampling.instrumentation import litellm as litellm_module

    owner, name = step.split(".")

    def broken(*args, **kwargs):
        raise RuntimeError("otel-sampling bug")

    monkeypatch.setattr(getattr(litellm_module, owner), name, broken)
    answer = litellm.completion(
        model="openai/gpt-4o-mini",
        api_base=fake_provider.url + "/v1",
        api_key="k",
        messages=MESSAGES,
        stream=stream,
    )
    text = "".join(c.choices[0].delta.content or "" for c in answer) if stream else answer.choices[0].message.content
    assert text == DEFAULT_TEXT
    assert len(litellm_instrumented.spans()) <= 1  # none when the call could not be started


def _litellm_usages():
    from litellm.types.utils import CompletionTokensDetailsWrapper, PromptTokensDetailsWrapper, Usage

    usual = Usage(
        prompt_tokens=12,
        completion_tokens=5,
        total_tokens=17,
        prompt_tokens_details=PromptTokensDetailsWrapper(cached_tokens=4),
        completion_tokens_details=CompletionTokensDetailsWrapper(reasoning_tokens=2),
    )
    no_details = Usage(prompt_tokens=12, completion_tokens=5, total_tokens=17)
    no_details.prompt_tokens_details = no_details.completion_tokens_details = None
    written = Usage(prompt_tokens=12, completion_tokens=5, total_tokens=17)
    written.prompt_tokens_details = PromptTokensDetailsWrapper(cached_tokens=1, cache_write_tokens=3)
    odd = Usage(prompt_tokens=12, completion_tokens=5, total_tokens=17)
    odd.prompt_tokens_details = PromptTokensDetailsWrapper.model_construct(cached_tokens=-1)
    odd.completion_tokens_details = CompletionTokensDetailsWrapper.model_construct(reasoning_tokens=True)
    odd.__dict__["prompt_tokens"] = 2**70
    dropped = Usage(prompt_tokens=12, completion_tokens=5, total_tokens=17)
    del dropped.prompt_tokens_details
    other_detail = Usage(prompt_tokens=12, completion_tokens=5, total_tokens=17)
    other_detail.__dict__["completion_tokens_details"] = {"reasoning_tokens": 7}
    return [usual, no_details, written, odd, dropped, other_detail, None, {"prompt_tokens": 3}]


@pytest.mark.parametrize("index", range(8))
def test_a_litellm_usage_read_from_its_fields_is_what_the_openai_reading_reads(index):
    """LiteLLM's own ``Usage`` is read from its fields (no lookup of the absent ``cache_write_tokens``
    through pydantic): the same usage as the openai instrumentor's reading of any usage object,
    whatever its details hold or lack."""
    from litellm.types.utils import CompletionTokensDetailsWrapper, PromptTokensDetailsWrapper, Usage

    from otel_sampling.instrumentation import litellm as litellm_module
    from otel_sampling.instrumentation.openai import to_usage

    plain = litellm_module._plain_usage_classes(Usage, PromptTokensDetailsWrapper, CompletionTokensDetailsWrapper)
    assert plain  # LiteLLM's classes have no class attribute of a name the reading reads
    usage = _litellm_usages()[index]
    assert litellm_module._usage_of(usage, plain) == to_usage(usage)
