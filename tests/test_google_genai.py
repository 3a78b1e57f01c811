"""The google-genai instrumentor: what one call's span says, against the fake provider's Gemini answers.

Expected values come from Gemini's answer shapes (``otel_sampling.testing.fake_gemini``: 25 prompt
tokens, one candidate token per word, 400 cached and 7 thinking tokens on request) and the
ending rules of docs/telemetry.md; the call shapes themselves: test_google_genai_call_shapes.py.
"""

from __future__ import annotations

import importlib
import json
import logging
from importlib.metadata import version

import pytest
import wrapt
from opentelemetry.trace import StatusCode

genai = pytest.importorskip("google.genai")
from google.genai import _api_client, errors, types  # noqa: E402

import otel_sampling as osm  # noqa: E402
from conftest import TRACER_PROVIDER, _instrumented, traceparent_of  # noqa: E402
from otel_sampling import names  # noqa: E402
from otel_sampling.instrumentation import google_genai, streams  # noqa: E402
from otel_sampling.instrumentation.google_genai import (  # noqa: E402
    GoogleGenAIInstrumentor,
    endpoint_of,
    json_value,
    model_of_path,
)
from otel_sampling.instrumentation.streams import UnreadEvents  # noqa: E402
from otel_sampling.testing import fake_gemini  # noqa: E402

MODEL = "gemini-2.5-flash"
# The SDK's HTTP library: google-genai 2.x sends through httpx, 3.x through httpx2.
HTTP = importlib.import_module("httpx" if version("google-genai").startswith("2.") else "httpx2")
SENTINEL = "SENTINEL-9c1d"
PNG = bytes.fromhex("89504e470d0a1a0a")  # a PNG signature: what matters is that it is an inlineData part


@pytest.fixture
def genai_instrumented(telemetry):
    yield from _instrumented(telemetry, GoogleGenAIInstrumentor)


def client(fp, **http_options) -> genai.Client:
    return genai.Client(api_key="k-fake", http_options={"base_url": fp.url, **http_options})


def scenario(value: str, **config) -> dict:
    return {"http_options": {"headers": {"x-fake-scenario": value}}, **config}


def call(fp, value: str = "", stream: bool = False, **config):
    c = client(fp)
    if stream:
        return list(c.models.generate_content_stream(model=MODEL, contents="hi", config=scenario(value, **config)))
    return c.models.generate_content(model=MODEL, contents="hi", config=scenario(value, **config))


def only(telemetry):
    (span,) = telemetry.spans()
    return span, span.attributes


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_usage_counts_cached_tokens_in_input_and_thinking_tokens_in_output(genai_instrumented, fake_provider, stream):
    call(fake_provider, "cache,thinking", stream)
    _, a = only(genai_instrumented)
    # promptTokenCount already holds the cached tokens (25 + 400); thoughts are output (5 + 7).
    assert a[names.GEN_AI_USAGE_INPUT_TOKENS] == 425
    assert a[names.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 400
    assert a[names.GEN_AI_USAGE_OUTPUT_TOKENS] == 12


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_thinking_tokens_are_the_reasoning_output_tokens(genai_instrumented, fake_provider, stream):
    call(fake_provider, "thinking", stream)
    _, a = only(genai_instrumented)
    # usageMetadata.thoughtsTokenCount (7), still counted inside the output tokens (5 words + 7).
    assert a[names.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] == fake_gemini.THOUGHTS_TOKENS == 7
    assert a[names.GEN_AI_USAGE_OUTPUT_TOKENS] == 12


def test_reasoning_output_tokens_are_left_off_when_gemini_reports_no_thoughts(genai_instrumented, fake_provider):
    call(fake_provider)
    _, a = only(genai_instrumented)
    assert names.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS not in a


def test_thousands_of_candidates_report_a_bounded_list_of_finish_reasons(genai_instrumented, fake_provider):
    answer = call(fake_provider, "candidates=5000")
    assert len(answer.candidates) == 5000  # the host gets every candidate
    _, a = only(genai_instrumented)
    assert a[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("STOP",) * 16


def test_the_token_limit_is_recorded(genai_instrumented, fake_provider):
    call(fake_provider, max_output_tokens=64)
    _, a = only(genai_instrumented)
    assert a[names.GEN_AI_REQUEST_MAX_TOKENS] == 64


@pytest.mark.parametrize("value", ["", "cache,thinking"])
def test_the_cost_is_genai_prices_google_price(genai_instrumented, fake_provider, value):
    genai_prices = pytest.importorskip("genai_prices")  # the prices extra
    call(fake_provider, value)
    _, a = only(genai_instrumented)
    # The fake's fixed answer (fake_gemini): 25 prompt tokens (plus 400 cached ones, which
    # promptTokenCount includes), one candidate token per word of its 5-word text, plus 7 thoughts.
    cached = 400 if "cache" in value else 0
    thoughts = 7 if "thinking" in value else 0
    usage = genai_prices.Usage(input_tokens=25 + cached, output_tokens=5 + thoughts, cache_read_tokens=cached)
    expected = float(genai_prices.calc_price(usage, MODEL, provider_id="google").total_price)
    assert a["gen_ai.usage.cost.currency"] == "USD"
    assert pytest.approx(expected) == a["gen_ai.usage.cost.amount"]
    assert a["otel_sampling.cost.price_source"].startswith("genai-prices@")


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize(
    ("value", "reasons", "ending"),
    [
        ("refusal", ("SAFETY",), names.ENDING_REFUSED),  # the candidate was blocked
        ("prompt_blocked", (), names.ENDING_REFUSED),  # promptFeedback.blockReason, no candidates
        ("length", ("MAX_TOKENS",), names.ENDING_COMPLETED),  # cut at the limit: an answer still
    ],
)
def test_finish_reasons_and_blocks(genai_instrumented, fake_provider, stream, value, reasons, ending):
    call(fake_provider, value, stream)
    span, a = only(genai_instrumented)
    assert a.get(names.GEN_AI_RESPONSE_FINISH_REASONS, ()) == reasons
    assert a[names.ENDING] == ending
    assert names.ERROR_TYPE not in a and span.status.status_code is StatusCode.UNSET


@pytest.mark.parametrize(
    ("status", "error_type", "ending"),
    [
        (429, "RESOURCE_EXHAUSTED", names.ENDING_MODEL_UNAVAILABLE),
        (503, "UNAVAILABLE", names.ENDING_MODEL_UNAVAILABLE),
        (500, "INTERNAL", names.ENDING_MODEL_UNAVAILABLE),
        (504, "DEADLINE_EXCEEDED", names.ENDING_TIMEOUT),
        (400, "INVALID_ARGUMENT", names.ENDING_ERROR),
        (404, "NOT_FOUND", names.ENDING_ERROR),
    ],
)
def test_errors_by_status(genai_instrumented, fake_provider, status, error_type, ending):
    with pytest.raises(errors.APIError) as raised:
        call(fake_provider, f"status={status}")
    assert raised.value.code == status
    span, a = only(genai_instrumented)
    assert (a[names.ERROR_TYPE], a[names.ENDING]) == (error_type, ending)
    assert span.status.status_code is StatusCode.ERROR


def test_a_client_timeout_ends_timeout(genai_instrumented, fake_provider):
    with pytest.raises(HTTP.TimeoutException):
        c = client(fake_provider)
        options = types.HttpOptions(timeout=200, headers={"x-fake-scenario": "delay=2"})  # milliseconds
        c.models.generate_content(model=MODEL, contents="hi", config={"http_options": options})
    _, a = only(genai_instrumented)
    assert (a[names.ERROR_TYPE], a[names.ENDING]) == ("timeout", names.ENDING_TIMEOUT)


def test_an_error_sent_with_http_200_ends_the_call_as_that_error(genai_instrumented, fake_provider):
    call(fake_provider, "error_200")
    _, a = only(genai_instrumented)
    assert (a[names.ERROR_TYPE], a[names.ENDING]) == ("INTERNAL", names.ENDING_MODEL_UNAVAILABLE)


def test_an_error_inside_a_stream_ends_it_with_that_error(genai_instrumented, fake_provider):
    with pytest.raises(errors.ServerError):
        call(fake_provider, "midstream_error", stream=True)
    _, a = only(genai_instrumented)
    assert (a[names.ERROR_TYPE], a[names.ENDING]) == ("UNAVAILABLE", names.ENDING_MODEL_UNAVAILABLE)
    assert a[names.GEN_AI_RESPONSE_MODEL] == MODEL  # seen in the chunks before the error


def test_a_stream_cut_before_its_finish_reason_is_incomplete(genai_instrumented, fake_provider):
    chunks = call(fake_provider, "truncate", stream=True)
    assert chunks  # the SDK ends such a stream silently
    _, a = only(genai_instrumented)
    assert (a[names.ERROR_TYPE], a[names.ENDING]) == ("incomplete_stream", names.ENDING_ERROR)


def test_a_dropped_stream_is_a_connection_failure(genai_instrumented, fake_provider):
    with pytest.raises(HTTP.TransportError):
        call(fake_provider, "drop", stream=True)
    _, a = only(genai_instrumented)
    assert a[names.ENDING] == names.ENDING_MODEL_UNAVAILABLE


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_the_served_model_is_the_answers_model_version(genai_instrumented, fake_provider, stream):
    call(fake_provider, "served_model=gemini-2.0-flash-lite", stream)
    _, a = only(genai_instrumented)
    assert (a[names.GEN_AI_REQUEST_MODEL], a[names.GEN_AI_RESPONSE_MODEL]) == (MODEL, "gemini-2.0-flash-lite")
    assert a[names.DEGRADATION_MODE] == names.MODE_DEGRADED


def test_a_stable_version_of_the_requested_model_is_the_same_model(genai_instrumented, fake_provider):
    """A ``gemini-2.0-flash`` request is answered with ``modelVersion`` ``gemini-2.0-flash-001``."""
    c = client(fake_provider)
    c.models.generate_content(
        model="gemini-2.0-flash", contents="hi", config=scenario("served_model=gemini-2.0-flash-001")
    )
    _, a = only(genai_instrumented)
    assert a[names.GEN_AI_RESPONSE_MODEL] == "gemini-2.0-flash-001"
    assert a[names.DEGRADATION_MODE] == names.MODE_PRIMARY


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_a_trace_context_set_by_the_caller_is_kept(genai_instrumented, fake_provider, stream):
    fake_provider.reset()
    mine = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

    def send(c, **config):
        if stream:
            list(c.models.generate_content_stream(model=MODEL, contents="hi", config=config))
        else:
            c.models.generate_content(model=MODEL, contents="hi", config=config)

    send(client(fake_provider, headers={"traceparent": mine}))
    send(client(fake_provider, headers={"TraceParent": mine}))
    send(client(fake_provider), http_options={"headers": {"Traceparent": mine}})
    assert [r["headers"]["traceparent"] for r in fake_provider.requests] == [mine, mine, mine]


def test_the_callers_http_options_are_not_changed(genai_instrumented, fake_provider):
    options = types.HttpOptions(headers={"x-fake-scenario": "length"})
    config = types.GenerateContentConfig(http_options=options)
    fake_provider.reset()
    c = client(fake_provider)
    c.models.generate_content(model=MODEL, contents="hi", config=config)
    span, _ = only(genai_instrumented)
    assert options.headers == {"x-fake-scenario": "length"}
    assert fake_provider.requests[0]["headers"]["traceparent"] == traceparent_of(span)


def test_the_trace_context_stays_off_the_clients_headers(genai_instrumented, fake_provider):
    """A call's traceparent goes on its own request only: the client's next request, made where our
    instrumentation is suppressed, carries none (google-genai 2.x builds a request on the client's
    own header dict when the call sets no options)."""
    from opentelemetry.instrumentation.utils import suppress_instrumentation

    fake_provider.reset()
    c = client(fake_provider)
    c.models.generate_content(model=MODEL, contents="hi")
    with suppress_instrumentation():
        c.models.generate_content(model=MODEL, contents="hi")
    span, _ = only(genai_instrumented)
    assert [r["headers"].get("traceparent") for r in fake_provider.requests] == [traceparent_of(span), None]


@pytest.mark.parametrize("options", [None, {"headers": {"x-caller": "1"}}], ids=["none", "headers"])
def test_a_request_given_its_options_by_keyword_is_sent_as_asked(genai_instrumented, fake_provider, options):
    """``BaseApiClient.request(method, path, body, http_options=...)``, the method's own signature
    with the options by keyword, is sent as without us, with the trace context."""
    fake_provider.reset()
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    c = client(fake_provider)  # held: a collected client closes its HTTP client
    c._api_client.request("post", f"models/{MODEL}:generateContent", body, http_options=options)
    span, attributes = only(genai_instrumented)
    assert attributes[names.ENDING] == names.ENDING_COMPLETED
    assert fake_provider.requests[0]["headers"]["traceparent"] == traceparent_of(span)


def test_no_trace_context_when_turned_off(telemetry, fake_provider, monkeypatch):
    monkeypatch.setenv(names.ENV_OMIT_PROVIDER_TRACE_CONTEXT, "true")
    for _ in _instrumented(telemetry, GoogleGenAIInstrumentor):
        fake_provider.reset()
        c = client(fake_provider)
        c.models.generate_content(model=MODEL, contents="hi")
        assert "traceparent" not in fake_provider.requests[0]["headers"]


def test_automatic_function_calling_gives_one_span_per_request(genai_instrumented, fake_provider):
    """The SDK calls the tool and sends the next turn itself: two requests, two spans."""

    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    turns = iter(["tool", ""])
    original = _api_client.BaseApiClient.request

    def next_turn(self, method, path, request_dict, http_options=None):
        headers = {"x-fake-scenario": next(turns)}
        return original(self, method, path, request_dict, {"headers": headers})

    with pytest.MonkeyPatch.context() as patch:  # over our wrapper: each turn gets its own scenario
        patch.setattr(_api_client.BaseApiClient, "request", next_turn)
        c = client(fake_provider)
        c.models.generate_content(
            model=MODEL, contents="weather in Paris?", config=types.GenerateContentConfig(tools=[get_weather])
        )
    spans = genai_instrumented.spans()
    assert [s.attributes[names.ENDING] for s in spans] == [names.ENDING_COMPLETED] * 2


def test_content_capture(telemetry, fake_provider, monkeypatch):
    monkeypatch.setenv(names.ENV_CAPTURE_MESSAGE_CONTENT, "SPAN_ONLY")
    for _ in _instrumented(telemetry, GoogleGenAIInstrumentor):
        for stream in (False, True):
            c = client(fake_provider)
            config = types.GenerateContentConfig(
                system_instruction=f"You are {SENTINEL}",
                http_options=types.HttpOptions(headers={"x-fake-scenario": "tool"}),
            )
            contents = [f"ask {SENTINEL}", types.Part.from_bytes(data=PNG, mime_type="image/png")]
            if stream:
                list(c.models.generate_content_stream(model=MODEL, contents=contents, config=config))
            else:
                c.models.generate_content(model=MODEL, contents=contents, config=config)
    for span in telemetry.spans():
        a = span.attributes
        assert json.loads(a[names.GEN_AI_SYSTEM_INSTRUCTIONS]) == [{"type": "text", "content": f"You are {SENTINEL}"}]
        # An image is a GenericPart with its kind only (semantic-conventions-genai #584), its bytes left out.
        assert json.loads(a[names.GEN_AI_INPUT_MESSAGES]) == [
            {
                "role": "user",
                "parts": [
                    {"type": "text", "content": f"ask {SENTINEL}"},
                    {"type": "generic", "generic_type": "inlineData"},
                ],
            }
        ]
        (output,) = json.loads(a[names.GEN_AI_OUTPUT_MESSAGES])
        assert output["role"] == "assistant" and output["finish_reason"] == "STOP"
        text = "".join(p["content"] for p in output["parts"] if p["type"] == "text")
        assert text == "Hello from the fake provider"
        assert [p["name"] for p in output["parts"] if p["type"] == "tool_call"] == ["get_weather"]


def test_content_is_off_by_default(genai_instrumented, fake_provider):
    c = client(fake_provider)
    c.models.generate_content(model=MODEL, contents=f"ask {SENTINEL}")
    _, a = only(genai_instrumented)
    assert SENTINEL not in repr(dict(a))


def test_other_requests_make_no_span(genai_instrumented, fake_provider):
    c = client(fake_provider)
    with pytest.raises(errors.APIError):  # the fake provider has no countTokens route: 404
        c.models.count_tokens(model=MODEL, contents="hi")
    assert genai_instrumented.spans() == []


def test_uninstrument_restores_the_client(telemetry, fake_provider):
    originals = {name: vars(_api_client.BaseApiClient)[name] for name in ("request", "request_streamed")}
    for _ in _instrumented(telemetry, GoogleGenAIInstrumentor):
        assert isinstance(vars(_api_client.BaseApiClient)["request"], wrapt.FunctionWrapper)
    assert {name: vars(_api_client.BaseApiClient)[name] for name in originals} == originals
    c = client(fake_provider)
    c.models.generate_content(model=MODEL, contents="hi")
    assert telemetry.spans() == []


def test_an_installed_version_outside_the_range_warns_once(caplog, telemetry):
    pinned = type("PinnedBelow", (GoogleGenAIInstrumentor,), {"dependencies": ("google-genai < 1",), "_instance": None})
    caplog.set_level(logging.DEBUG)
    instrumentor = pinned()
    for _ in range(2):
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
        assert not isinstance(vars(_api_client.BaseApiClient)["request"], wrapt.FunctionWrapper)
        instrumentor.uninstrument()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("otel")]
    assert len(warnings) == 1 and f"google-genai {version('google-genai')}" in warnings[0], warnings


@pytest.mark.parametrize(
    ("path", "model", "deployment"),
    [
        ("models/gemini-2.5-flash:generateContent", "gemini-2.5-flash", False),
        ("models/gemini-2.5-flash:streamGenerateContent?alt=sse", "gemini-2.5-flash", False),
        ("publishers/google/models/gemini-2.0-flash:generateContent", "gemini-2.0-flash", False),
        ("tunedModels/my-tuned-1:generateContent", "my-tuned-1", True),
        ("projects/p/locations/l/endpoints/123:generateContent", "123", True),
    ],
)
def test_the_request_model_is_read_from_the_path(path, model, deployment):
    assert model_of_path(path) == (model, deployment)
    assert endpoint_of(path) == (model, deployment, ":streamGenerateContent" in path)


@pytest.mark.parametrize("path", ["models/gemini-2.5-flash:countTokens", "models/gemini-2.5-flash", "files"])
def test_other_paths_are_no_generate_endpoint(path):
    assert endpoint_of(path) is google_genai._NOT_GENERATE


@pytest.mark.parametrize("text", ['{"a": [1, 2]}', ' \n{"a": 1}\r\n\t ', "[]", "null", '"x"'])
def test_json_value_reads_what_json_loads_reads(text):
    assert json_value(text) == json.loads(text)


@pytest.mark.parametrize("text", ['{"a": 1} x', '{"a": 1}{"b": 2}', "{", " ", '{"a": 1}\x0b'])
def test_json_value_refuses_what_json_loads_refuses(text):
    with pytest.raises(json.JSONDecodeError) as refused:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as ours:
        json_value(text)
    assert str(ours.value) == str(refused.value)


def test_a_failed_call_then_a_call_on_another_model_is_a_failover(genai_instrumented, fake_provider):
    """The host's own fallback, as a host writes it: the primary is down (503), the fallback serves."""
    c = client(fake_provider)
    with TRACER_PROVIDER.get_tracer("host").start_as_current_span("answer"):
        with pytest.raises(errors.ServerError):
            c.models.generate_content(model=MODEL, contents="hi", config=scenario("status=503"))
        c.models.generate_content(model="gemini-2.0-flash", contents="hi")
    failed, served = genai_instrumented.spans()
    assert failed.attributes[names.ENDING] == names.ENDING_MODEL_UNAVAILABLE
    assert served.attributes[names.DEGRADATION_MODE] == names.MODE_DEGRADED
    assert served.attributes[names.DEGRADATION_REASON] == (names.REASON_FAILOVER,)


@pytest.mark.parametrize(
    ("failure", "status", "error_type"),
    [("overloaded", 503, "UNAVAILABLE"), ("rate_limited", 429, "RESOURCE_EXHAUSTED")],
)
def test_a_drill_fails_the_target_with_the_error_a_real_answer_gives(
    genai_instrumented, fake_provider, failure, status, error_type
):
    c = client(fake_provider)
    with pytest.raises(errors.APIError) as real:
        c.models.generate_content(model=MODEL, contents="hi", config=scenario(f"status={status}"))
    fake_provider.reset()
    with osm.drill("outage", target_model=MODEL, duration=600, failure=failure):
        with pytest.raises(errors.APIError) as drilled:
            c.models.generate_content(model=MODEL, contents="hi")
        assert c.models.generate_content(model="gemini-2.0-flash", contents="hi").text  # other models serve
    assert type(drilled.value) is type(real.value)
    assert (drilled.value.code, drilled.value.status) == (status, error_type)
    assert "outage" in str(drilled.value)
    assert [r["model"] for r in fake_provider.requests] == ["gemini-2.0-flash"]  # the target was never sent
    ended = [s.attributes[names.ENDING] for s in genai_instrumented.spans()]
    assert ended == [names.ENDING_MODEL_UNAVAILABLE, names.ENDING_MODEL_UNAVAILABLE, names.ENDING_COMPLETED]


def test_a_timeout_drill_raises_the_client_timeout(genai_instrumented, fake_provider):
    c = client(fake_provider)
    fake_provider.reset()
    with osm.drill("slow", target_model=MODEL, duration=600, failure="timeout"):
        with pytest.raises(HTTP.TimeoutException):
            c.models.generate_content(model=MODEL, contents="hi")
    assert fake_provider.requests == []
    _, a = only(genai_instrumented)
    assert a[names.ENDING] == names.ENDING_TIMEOUT


def test_a_call_inside_suppressed_instrumentation_passes_straight_through(genai_instrumented, fake_provider):
    from opentelemetry.instrumentation.utils import suppress_instrumentation

    c = client(fake_provider)
    fake_provider.reset()
    with suppress_instrumentation():
        assert c.models.generate_content(model=MODEL, contents="hi").text
        assert list(c.models.generate_content_stream(model=MODEL, contents="hi"))
    assert genai_instrumented.spans() == []
    assert [r["headers"].get("traceparent") for r in fake_provider.requests] == [None, None]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_an_answer_without_model_version_or_usage_keeps_the_rest(genai_instrumented, fake_provider, stream):
    call(fake_provider, "null_model,no_usage", stream)
    _, a = only(genai_instrumented)
    assert names.GEN_AI_RESPONSE_MODEL not in a  # not None, not the request model
    assert names.GEN_AI_USAGE_INPUT_TOKENS not in a and names.GEN_AI_USAGE_OUTPUT_TOKENS not in a
    assert a[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("STOP",)
    assert a[names.ENDING] == names.ENDING_COMPLETED


def gemini_host_callback(fake_provider, primary_scenario: str, fallback: str):
    """A host sampling callback (mcp 2.x) answering with Gemini: the primary, and on a 503 the fallback."""
    import mcp_types

    async def callback(ctx, params):
        c = client(fake_provider)
        try:
            answer = await c.aio.models.generate_content(model=MODEL, contents="hi", config=scenario(primary_scenario))
        except errors.ServerError:
            answer = await c.aio.models.generate_content(model=fallback, contents="hi")
        return mcp_types.CreateMessageResult(
            role="assistant",
            content=mcp_types.TextContent(text=answer.text),
            model=answer.model_version,
            stop_reason="endTurn",
        )

    return callback


def test_a_sampling_callback_failing_over_between_gemini_models_is_one_degraded_request(telemetry, fake_provider):
    """The same one-verdict treatment as anthropic and openai calls (test_sampling_with_provider.py).
    (mcp 2.x: on mcp 1.x, conftest leaves this module out, as every module naming ``mcp_types``.)"""
    import anyio

    from conftest import call_sample_tool
    from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor

    for _ in _instrumented(telemetry, MCPSamplingInstrumentor, GoogleGenAIInstrumentor):
        callback = gemini_host_callback(fake_provider, "status=503", fallback="gemini-2.0-flash")
        anyio.run(call_sample_tool, "legacy", callback)
        (sampling,) = telemetry.spans(names.SPAN_SAMPLING)
        failed, served = telemetry.spans(f"chat {MODEL}") + telemetry.spans("chat gemini-2.0-flash")
    assert {failed.parent.span_id, served.parent.span_id} == {sampling.context.span_id}
    a = sampling.attributes
    assert a[names.SAMPLING_ENDING] == "completed"
    assert a[names.SAMPLING_PROVIDER_CALLS] == 2
    assert a[names.GEN_AI_RESPONSE_MODEL] == "gemini-2.0-flash"
    assert a[names.DEGRADATION_MODE] == names.MODE_DEGRADED  # no policy: the failover itself says so
    assert served.attributes[names.DEGRADATION_REASON] == (names.REASON_FAILOVER,)


# ---------------------------------------------------------------------- a stream's chunks, read
def _chunk(**fields):
    """A streamed chunk as request_streamed yields it: the SDK's json.dumps of the chunk's JSON."""
    return types.HttpResponse(body=json.dumps(fields))


def _text(word, index=0):
    return {"content": {"role": "model", "parts": [{"text": word}]}, "index": index}


def test_a_streams_model_id_and_usage_are_the_latest_chunk_that_has_them():
    read = google_genai.StreamAccumulator()
    read.observe(
        _chunk(
            candidates=[_text("a")],
            usageMetadata={"promptTokenCount": 3, "candidatesTokenCount": 1},
            modelVersion="m-1",
            responseId="r-1",
        )
    )
    read.observe(_chunk(candidates=[_text("b")], modelVersion="m-2"))
    read.observe(_chunk(candidates=[{"finishReason": "MAX_TOKENS", "index": 0}]))
    response = read.response()
    assert (response.model, response.response_id, response.finish_reasons) == ("m-2", "r-1", ("MAX_TOKENS",))
    assert (response.usage.input_tokens, response.usage.output_tokens) == (3, 1)
    assert read.complete and response.answered and not response.refusal


def test_a_long_stream_reports_its_last_chunks_model():
    read = google_genai.StreamAccumulator()
    for i in range(3 * google_genai.MAX_PENDING_CHUNKS + 1):
        read.observe(_chunk(candidates=[_text("w")], modelVersion=f"m-{i}"))
    read.observe(_chunk(candidates=[{"finishReason": "STOP", "index": 0}]))
    assert read.response().model == f"m-{3 * google_genai.MAX_PENDING_CHUNKS}"


def test_a_stream_cut_before_its_finish_reason_reports_what_came():
    read = google_genai.StreamAccumulator()
    first = _chunk(candidates=[_text("a")], usageMetadata={"promptTokenCount": 3}, modelVersion="m", responseId="r")
    read.observe(first)
    response = read.response()
    assert (response.model, response.response_id, response.usage.input_tokens) == ("m", "r", 3)
    assert response.answered and not read.complete


def test_a_finish_reason_written_with_escapes_is_read():
    read = google_genai.StreamAccumulator()
    read.observe(types.HttpResponse(body='{"candidates": [{"finish\\u0052eason": "SAFETY", "index": 0}]}'))
    assert read.complete and read.response().refusal


def test_an_unreadable_chunk_fails_the_reading_that_meets_it_and_no_other():
    read = google_genai.StreamAccumulator()
    read.observe(types.HttpResponse(body="{not json"))
    with pytest.raises(json.JSONDecodeError):  # the chunk that follows is read first
        read.observe(_chunk(candidates=[{"finishReason": "STOP", "index": 0}], modelVersion="m"))
    assert read.complete and read.response().model == "m"
    cut = google_genai.StreamAccumulator()
    cut.observe(types.HttpResponse(body="{not json"))
    with pytest.raises(UnreadEvents) as unread:
        cut.response()
    assert not unread.value.response.answered


class _EndedCall:
    """What a stream's reading hands the call it ends (the span and metrics are ProviderCall's)."""

    def __init__(self):
        self.chunk_times = []
        self.ended = None

    def end(self, response, error_type, ending):
        self.ended = (response, error_type, ending)


def test_a_stream_read_to_its_end_with_an_unreadable_kept_chunk_ends_as_read_blind():
    read = google_genai.StreamAccumulator()
    read.observe(_chunk(candidates=[_text("a")], modelVersion="m", responseId="r"))
    read.observe(types.HttpResponse(body="{not json"))
    call = _EndedCall()
    reading = streams._Reading(call, read, lambda exc: None, None)
    reading.end(None, exhausted=True)
    response, error_type, ending = call.ended
    assert reading.blind and (response.model, response.response_id) == ("m", "r")
    # No finish reason came, but an unread chunk may have carried it: not an incomplete stream.
    assert (error_type, ending) == (None, names.ENDING_COMPLETED)


def test_a_stream_of_huge_plain_chunks_keeps_no_more_than_a_bounded_text_unread():
    """Hostile input cannot blow up memory: plain chunks kept unread are bounded in size, not only
    in number (32 chunks of 4 MB each would otherwise be held until the stream's end)."""
    import tracemalloc

    read = google_genai.StreamAccumulator()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(google_genai.MAX_PENDING_CHUNKS):
            read.observe(_chunk(candidates=[_text(str(i) * (4 << 20))], modelVersion="m", responseId="r"))
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 16 << 20
    assert read.response().model == "m"
