"""Content capture: off by default, opt-in through OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT.

Attribute and event names are the GenAI semantic conventions' (opentelemetry-semantic-conventions
``gen_ai_attributes``: ``gen_ai.input.messages``, ``gen_ai.output.messages``,
``gen_ai.system_instructions``; event ``gen_ai.client.inference.operation.details``); the message
shape is the conventions' JSON schema (role, parts of type text / tool_call).
"""

from __future__ import annotations

import json

import anthropic
import httpx2
import openai
import pytest
from opentelemetry._logs import SeverityNumber
from opentelemetry.sdk._logs import LoggerProvider, LogRecordProcessor

from cassette_replay import OPENAI_HTTP
from conftest import TRACER_PROVIDER
from drivers import ANTHROPIC_MESSAGE, recording_logger_provider
from otel_sampling import names
from otel_sampling.content import capture_mode
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor
from otel_sampling.testing.fake_provider import DEFAULT_TEXT

SENTINEL = "SENTINEL-7f3a"
KW = {
    "model": "claude-req",
    "max_tokens": 64,
    "system": f"You are {SENTINEL}-system",
    "messages": [{"role": "user", "content": f"Tell me about {SENTINEL}-user"}],
}


@pytest.fixture
def capture(telemetry, monkeypatch):
    """Instrument with a capture mode (and attribute limit) set in the environment first."""
    logger_provider, records = recording_logger_provider()
    instrumentors = []

    def instrument(mode: str | None, max_length: int | None = None, instrumentor_class=AnthropicInstrumentor):
        if mode is not None:
            monkeypatch.setenv(names.ENV_CAPTURE_MESSAGE_CONTENT, mode)
        if max_length is not None:
            monkeypatch.setenv(names.ENV_ATTRIBUTE_MAX_LENGTH, str(max_length))
        instrumentor = instrumentor_class()
        instrumentor.instrument(
            tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider, logger_provider=logger_provider
        )
        instrumentors.append(instrumentor)
        return telemetry, records

    yield instrument
    for instrumentor in instrumentors:
        instrumentor.uninstrument()


def client(fp) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fp.url, api_key="sk-fake", max_retries=0, open_telemetry=False)


CONTENT_KEYS = {names.GEN_AI_INPUT_MESSAGES, names.GEN_AI_OUTPUT_MESSAGES, names.GEN_AI_SYSTEM_INSTRUCTIONS}


def details_without_content(records, spans) -> None:
    """One gen_ai.client.inference.operation.details event per call (semconv #579: Recommended,
    #520: DEBUG), in its span's context, with the span's GenAI attributes and no content."""
    assert len(records) == len(spans)
    for record, span in zip(records, spans, strict=True):
        assert record.event_name == names.EVENT_INFERENCE_DETAILS
        assert (record.severity_number, record.severity_text) == (SeverityNumber.DEBUG, "DEBUG")
        assert record.span_id == span.context.span_id
        assert not CONTENT_KEYS & set(record.attributes)
        assert record.attributes[names.GEN_AI_REQUEST_MODEL] == span.attributes[names.GEN_AI_REQUEST_MODEL]
        assert names.ENDING not in record.attributes  # our own names stay on the span


def everything_exported(telemetry, records) -> str:
    spans = [(s.name, dict(s.attributes), [dict(e.attributes) for e in s.events]) for s in telemetry.spans()]
    points = [
        dict(p.attributes)
        for m in (names.METRIC_GEN_AI_OPERATION_DURATION, names.METRIC_GEN_AI_TOKEN_USAGE)
        for p in telemetry.points(m)
    ]
    return repr((spans, points, [(r.body, dict(r.attributes or {})) for r in records]))


class _DropsDebug(LogRecordProcessor):
    """A pipeline that keeps nothing below INFO, and says so (``enabled``)."""

    def __init__(self) -> None:
        self.emitted: list = []

    def enabled(self, *, context=None, instrumentation_scope=None, severity_number=None, event_name=None) -> bool:
        return severity_number is None or severity_number >= SeverityNumber.INFO

    def on_emit(self, log_record) -> None:
        self.emitted.append(log_record)

    def shutdown(self) -> None: ...

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def test_no_event_is_built_for_a_pipeline_that_drops_it(telemetry, fake_provider):
    """The details event is DEBUG: a logger whose pipeline says it drops DEBUG records
    (``Logger.enabled``) is not handed one; the call's span is exported as usual."""
    processor = _DropsDebug()
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(processor)
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(
        tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider, logger_provider=logger_provider
    )
    try:
        client(fake_provider).messages.create(**KW)
    finally:
        instrumentor.uninstrument()
    assert processor.emitted == []
    (span,) = telemetry.spans()
    assert span.attributes[names.GEN_AI_RESPONSE_MODEL]


@pytest.mark.parametrize("mode", [None, "NO_CONTENT", "bogus"])
def test_content_is_off_by_default(capture, fake_provider, mode):
    telemetry, records = capture(mode)
    client(fake_provider).messages.create(**KW, metadata={"user_id": SENTINEL})
    with pytest.raises(anthropic.RateLimitError):
        client(fake_provider).messages.create(**KW, extra_headers={"x-fake-scenario": "status=429"})
    assert len(telemetry.spans()) == 2
    assert SENTINEL not in everything_exported(telemetry, records)
    details_without_content(records, telemetry.spans())


def test_span_only(capture, fake_provider):
    telemetry, records = capture("span_only")  # case-insensitive
    client(fake_provider).messages.create(**KW)
    (span,) = telemetry.spans()
    a = span.attributes
    assert json.loads(a[names.GEN_AI_SYSTEM_INSTRUCTIONS]) == [
        {"type": "text", "content": f"You are {SENTINEL}-system"}
    ]
    assert json.loads(a[names.GEN_AI_INPUT_MESSAGES]) == [
        {"role": "user", "parts": [{"type": "text", "content": f"Tell me about {SENTINEL}-user"}]}
    ]
    assert json.loads(a[names.GEN_AI_OUTPUT_MESSAGES]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": DEFAULT_TEXT}], "finish_reason": "end_turn"}
    ]
    details_without_content(records, [span])  # SPAN_ONLY: the content is on the span, not the event


def test_event_only_with_a_stream_and_a_tool_call(capture, fake_provider):
    telemetry, records = capture("EVENT_ONLY")
    list(client(fake_provider).messages.create(**KW, stream=True, extra_headers={"x-fake-scenario": "tool"}))
    (span,) = telemetry.spans()
    assert names.GEN_AI_INPUT_MESSAGES not in span.attributes
    (record,) = records
    assert record.event_name == names.EVENT_INFERENCE_DETAILS
    assert record.trace_id == span.context.trace_id and record.span_id == span.context.span_id
    (output,) = json.loads(record.attributes[names.GEN_AI_OUTPUT_MESSAGES])
    text, tool = output["parts"]
    assert text == {"type": "text", "content": DEFAULT_TEXT}
    assert (tool["type"], tool["name"], json.loads(tool["arguments"])) == (
        "tool_call",
        "get_weather",
        {"city": "Paris"},
    )
    assert output["finish_reason"] == "tool_use"


def test_content_is_cut_at_the_attribute_limit(capture, fake_provider):
    telemetry, _ = capture("SPAN_AND_EVENT", max_length=40)
    client(fake_provider).messages.create(**KW)
    (span,) = telemetry.spans()
    assert len(span.attributes[names.GEN_AI_INPUT_MESSAGES]) == 40


def test_capture_mode_values():
    assert not capture_mode({}).enabled
    assert capture_mode({names.ENV_CAPTURE_MESSAGE_CONTENT: "SPAN_AND_EVENT"}) == (True, True)
    assert capture_mode({names.ENV_CAPTURE_MESSAGE_CONTENT: "event_only"}) == (False, True)
    assert not capture_mode({names.ENV_CAPTURE_MESSAGE_CONTENT: "true"}).enabled  # legacy value: not ours


def _manager(c):
    with c.messages.stream(**KW) as stream:
        stream.get_final_message()


def _raw(c):
    c.messages.with_raw_response.create(**KW)


def _streaming_response(c):
    with c.messages.with_streaming_response.create(**KW) as response:
        response.parse()


@pytest.mark.parametrize("shape", [_manager, _raw, _streaming_response], ids=lambda f: f.__name__.strip("_"))
def test_output_is_captured_on_every_call_shape(capture, fake_provider, shape):
    telemetry, _ = capture("SPAN_ONLY")
    shape(client(fake_provider))
    (span,) = telemetry.spans()
    (output,) = json.loads(span.attributes[names.GEN_AI_OUTPUT_MESSAGES])
    assert output["parts"] == [{"type": "text", "content": DEFAULT_TEXT}]


# ---------------------------------------------------------------- openai: Chat Completions and Responses
# Request shapes: openai's API reference (chat ``messages`` with ``tool_calls`` / ``tool`` messages;
# Responses ``instructions`` and ``input`` items ``function_call`` / ``function_call_output``).

CHAT_KW = {
    "model": "gpt-req",
    "messages": [
        {"role": "system", "content": f"You are {SENTINEL}-system"},
        {"role": "user", "content": [{"type": "text", "text": f"Weather in {SENTINEL}-city?"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "rainy"},
    ],
}
CHAT_INPUT = [
    {"role": "system", "parts": [{"type": "text", "content": f"You are {SENTINEL}-system"}]},
    {"role": "user", "parts": [{"type": "text", "content": f"Weather in {SENTINEL}-city?"}]},
    {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}],
    },
    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": "rainy"}]},
]
RESP_KW = {
    "model": "gpt-req",
    "instructions": f"You are {SENTINEL}-system",
    "input": [
        {"role": "user", "content": f"Weather in {SENTINEL}-city?"},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "rainy"},
    ],
}
RESP_INPUT = [
    {"role": "user", "parts": [{"type": "text", "content": f"Weather in {SENTINEL}-city?"}]},
    {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}],
    },
    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": "rainy"}]},
]
TOOL_CALL = ("tool_call", "get_weather", {"city": "Paris"})  # the fake provider's openai tool call


def openai_client(fp) -> openai.OpenAI:
    return openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0)


def _openai_call(c, api, stream=False, shape="create", scenario=""):
    resource = c.chat.completions if api == "chat" else c.responses
    kw = {**(CHAT_KW if api == "chat" else RESP_KW), "extra_headers": {"x-fake-scenario": scenario}}
    if shape == "raw":
        return resource.with_raw_response.create(**kw).parse()
    if shape == "streaming_response":
        with resource.with_streaming_response.create(**kw, stream=stream) as response:
            result = response.parse()
            return list(result) if stream else result
    result = resource.create(**kw, stream=stream)
    return list(result) if stream else result


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_openai_content_is_off_by_default(capture, fake_provider, api):
    telemetry, records = capture(None, instrumentor_class=OpenAIInstrumentor)
    _openai_call(openai_client(fake_provider), api)
    assert len(telemetry.spans()) == 1
    assert SENTINEL not in everything_exported(telemetry, records)
    details_without_content(records, telemetry.spans())


@pytest.mark.parametrize("stream", [False, True])
def test_openai_chat_span_only(capture, fake_provider, stream):
    telemetry, records = capture("SPAN_ONLY", max_length=4096, instrumentor_class=OpenAIInstrumentor)
    _openai_call(openai_client(fake_provider), "chat", stream, scenario="tool")
    (span,) = telemetry.spans()
    a = span.attributes
    assert names.GEN_AI_SYSTEM_INSTRUCTIONS not in a  # a system message is part of the chat history
    assert json.loads(a[names.GEN_AI_INPUT_MESSAGES]) == CHAT_INPUT
    (output,) = json.loads(a[names.GEN_AI_OUTPUT_MESSAGES])
    text, tool = output["parts"]
    assert (output["role"], output["finish_reason"], text) == (
        "assistant",
        "tool_calls",
        {"type": "text", "content": DEFAULT_TEXT},
    )
    assert (tool["type"], tool["name"], json.loads(tool["arguments"])) == TOOL_CALL
    details_without_content(records, [span])  # SPAN_ONLY: the content is on the span, not the event


@pytest.mark.parametrize("stream", [False, True])
def test_openai_responses_event_only(capture, fake_provider, stream):
    telemetry, records = capture("EVENT_ONLY", max_length=4096, instrumentor_class=OpenAIInstrumentor)
    _openai_call(openai_client(fake_provider), "responses", stream, scenario="tool")
    (span,) = telemetry.spans()
    assert names.GEN_AI_INPUT_MESSAGES not in span.attributes
    (record,) = records
    assert record.event_name == names.EVENT_INFERENCE_DETAILS
    assert record.span_id == span.context.span_id
    a = record.attributes
    assert json.loads(a[names.GEN_AI_SYSTEM_INSTRUCTIONS]) == [
        {"type": "text", "content": f"You are {SENTINEL}-system"}
    ]
    assert json.loads(a[names.GEN_AI_INPUT_MESSAGES]) == RESP_INPUT
    (output,) = json.loads(a[names.GEN_AI_OUTPUT_MESSAGES])
    text, tool = output["parts"]
    assert (output["role"], output["finish_reason"], text) == (
        "assistant",
        "tool_calls",
        {"type": "text", "content": DEFAULT_TEXT},
    )
    assert (tool["type"], tool["name"], json.loads(tool["arguments"])) == TOOL_CALL


def test_openai_string_input_is_one_user_message(capture, fake_provider):
    telemetry, _ = capture("SPAN_ONLY", instrumentor_class=OpenAIInstrumentor)
    openai_client(fake_provider).responses.create(model="gpt-req", input=f"Tell me about {SENTINEL}")
    (span,) = telemetry.spans()
    assert json.loads(span.attributes[names.GEN_AI_INPUT_MESSAGES]) == [
        {"role": "user", "parts": [{"type": "text", "content": f"Tell me about {SENTINEL}"}]}
    ]
    assert names.GEN_AI_SYSTEM_INSTRUCTIONS not in span.attributes


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize(
    ("shape", "stream"), [("raw", False), ("streaming_response", False), ("streaming_response", True)]
)
def test_openai_output_is_captured_on_raw_responses(capture, fake_provider, api, shape, stream):
    telemetry, _ = capture("SPAN_ONLY", instrumentor_class=OpenAIInstrumentor)
    _openai_call(openai_client(fake_provider), api, stream, shape)
    (span,) = telemetry.spans()
    (output,) = json.loads(span.attributes[names.GEN_AI_OUTPUT_MESSAGES])
    assert output["parts"] == [{"type": "text", "content": DEFAULT_TEXT}]
    assert output["finish_reason"] == "stop"


# ---------------------------------------------------------------- what capture reads, and what it never exports
@pytest.fixture
def capturing(telemetry, monkeypatch):
    """The anthropic instrumentor with content capture on (span attributes)."""
    monkeypatch.setenv(names.ENV_CAPTURE_MESSAGE_CONTENT, "SPAN_ONLY")
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    yield telemetry
    instrumentor.uninstrument()


def recording_client() -> tuple[anthropic.Anthropic, list[dict]]:
    """A real anthropic client on an in-process transport that keeps every request body it is sent."""
    bodies: list[dict] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        return httpx2.Response(200, json=ANTHROPIC_MESSAGE)

    c = anthropic.Anthropic(
        api_key="k",
        base_url="http://provider.test",
        max_retries=0,
        open_telemetry=False,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    return c, bodies


@pytest.mark.parametrize(
    ("kwargs", "sent"),
    [
        (
            {"messages": (m for m in [{"role": "user", "content": "hi"}])},
            {"messages": [{"role": "user", "content": "hi"}]},
        ),
        (
            {"messages": [{"role": "user", "content": (b for b in [{"type": "text", "text": "hi"}])}]},
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]},
        ),
        (
            {
                "system": (b for b in [{"type": "text", "text": "be brief"}]),
                "messages": [{"role": "user", "content": "hi"}],
            },
            {"system": [{"type": "text", "text": "be brief"}], "messages": [{"role": "user", "content": "hi"}]},
        ),
    ],
)
def test_capture_leaves_one_shot_iterables_in_the_request_to_the_sdk(capturing, kwargs, sent):
    # anthropic's create() takes any Iterable and prepares it inside request(), after our wrapper ran:
    # reading a generator there would send an empty list to the provider.
    c, bodies = recording_client()
    c.messages.create(model="claude-req", max_tokens=8, **kwargs)
    (body,) = bodies
    assert {k: body[k] for k in sent} == sent
    (span,) = capturing.spans()
    assert span.attributes[names.GEN_AI_RESPONSE_MODEL] == "claude-req"


@pytest.mark.parametrize("broken", ["input_content", "output_of"])
def test_a_content_capture_failure_keeps_the_span_and_what_the_response_said(capturing, monkeypatch, broken):
    from otel_sampling.instrumentation import anthropic as ours

    def boom(*args, **kwargs):
        raise RuntimeError("content extractor bug")

    monkeypatch.setattr(ours._State, broken, boom if broken == "input_content" else staticmethod(boom))
    c, _ = recording_client()
    message = c.messages.create(model="claude-req", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    assert message.id == "msg_1"
    (span,) = capturing.spans()
    a = span.attributes
    assert (a[names.GEN_AI_RESPONSE_MODEL], a[names.GEN_AI_USAGE_INPUT_TOKENS], a[names.ENDING]) == (
        "claude-req",
        3,
        "completed",
    )


def test_anthropic_sentinels_and_sdk_objects_never_reach_attributes(capturing):
    # Omit / NOT_GIVEN and the SDK's own pydantic blocks (a previous answer's content sent back)
    # in a request; content capture on, so every part is read.
    c, bodies = recording_client()
    previous = c.messages.create(model="claude-req", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    c.messages.create(
        model="claude-req",
        max_tokens=8,
        system=anthropic.omit,
        stop_sequences=anthropic.NOT_GIVEN,
        stream=anthropic.omit,
        messages=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": previous.content}],
    )
    assert "system" not in bodies[-1] and "stream" not in bodies[-1]
    span = capturing.spans()[-1]
    a = span.attributes
    assert names.GEN_AI_SYSTEM_INSTRUCTIONS not in a and names.GEN_AI_REQUEST_STREAM not in a
    assert all(isinstance(v, (str, int, float, bool, tuple)) for v in a.values())
    assert "Omit" not in repr(dict(a)) and "NotGiven" not in repr(dict(a))
    assert json.loads(a[names.GEN_AI_INPUT_MESSAGES])[1] == {
        "role": "assistant",
        "parts": [{"type": "text", "content": "x"}],
    }


ECHOED = "SENTINEL-9c41"


def _echoing(sdk: str):
    """A provider that puts the prompt back into its error message (as validation errors do)."""

    http = httpx2 if sdk == "anthropic" else OPENAI_HTTP  # openai 2.x runs on httpx

    def handler(request: httpx2.Request) -> httpx2.Response:
        message = f"bad request: {request.content.decode()}"
        error = (
            {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
            if sdk == "anthropic"
            else {"error": {"message": message, "type": "invalid_request_error", "code": None, "param": None}}
        )
        response: httpx2.Response = http.Response(400, json=error)
        return response

    client: httpx2.Client = http.Client(transport=http.MockTransport(handler))
    return client


def test_content_off_keeps_sentinels_in_tools_and_error_messages_out(anthropic_instrumented):
    # Content off: the sentinel in tools, metadata and the provider's error message reaches nothing.
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=anthropic_instrumented.meter_provider)
    try:
        a = anthropic.Anthropic(
            api_key="k",
            base_url="http://provider.test",
            max_retries=0,
            open_telemetry=False,
            http_client=_echoing("anthropic"),
        )
        with pytest.raises(anthropic.BadRequestError) as info:
            a.messages.create(
                model="claude-req",
                max_tokens=8,
                system=ECHOED,
                metadata={"user_id": ECHOED},
                messages=[{"role": "user", "content": ECHOED}],
                tools=[{"name": "t", "description": ECHOED, "input_schema": {"type": "object"}}],
            )
        assert ECHOED in str(info.value)  # the provider did echo it
        o = openai.OpenAI(
            api_key="k", base_url="http://provider.test/v1", max_retries=0, http_client=_echoing("openai")
        )
        with pytest.raises(openai.BadRequestError) as info:
            o.chat.completions.create(
                model="gpt-4o",
                messages=[{"role": "user", "content": ECHOED}],
                tools=[{"type": "function", "function": {"name": "t", "description": ECHOED}}],
            )
        assert ECHOED in str(info.value)
    finally:
        instrumentor.uninstrument()
    spans = anthropic_instrumented.spans()
    assert len(spans) == 2 and all(s.attributes[names.ERROR_TYPE] == "invalid_request_error" for s in spans)
    exported = repr([(s.name, dict(s.attributes), [dict(e.attributes) for e in s.events]) for s in spans])
    points = anthropic_instrumented.points(names.METRIC_GEN_AI_OPERATION_DURATION)
    exported += repr([dict(p.attributes) for p in points])
    assert ECHOED not in exported


IMAGE_B64 = "iVBORw0KGgo" + SENTINEL  # the data itself never reaches the telemetry


def test_a_block_no_part_type_fits_is_a_generic_part(capture, fake_provider):
    """semantic-conventions-genai #584 (``input-messages-generic-part.yaml``): a provider block no part
    type fits is ``{"type": "generic", "generic_type": <the provider's type>}``; its data is left out."""
    telemetry, _ = capture("SPAN_ONLY", max_length=4096)
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": IMAGE_B64}}
    client(fake_provider).messages.create(
        model="claude-req",
        max_tokens=64,
        messages=[{"role": "user", "content": [image, {"type": "text", "text": "?"}]}],
    )
    capture("SPAN_ONLY", max_length=4096, instrumentor_class=OpenAIInstrumentor)  # the same telemetry
    openai_client(fake_provider).chat.completions.create(
        model="gpt-4o",
        messages=[
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + IMAGE_B64}}],
            }
        ],
    )
    claude_span, gpt_span = telemetry.spans()
    (message,) = json.loads(claude_span.attributes[names.GEN_AI_INPUT_MESSAGES])
    assert message["parts"] == [{"type": "generic", "generic_type": "image"}, {"type": "text", "content": "?"}]
    (message,) = json.loads(gpt_span.attributes[names.GEN_AI_INPUT_MESSAGES])
    assert message["parts"] == [{"type": "generic", "generic_type": "image_url"}]
    assert SENTINEL not in everything_exported(telemetry, [])


WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
ARGUMENT_TEXTS = ("Paris", "city", "town", "Par")  # in the fake provider's tool arguments and JSON answers


def every_point(telemetry) -> list[dict]:
    data = telemetry.reader.get_metrics_data()
    return [
        dict(p.attributes)
        for rm in (data.resource_metrics if data else ())
        for sm in rm.scope_metrics
        for m in sm.metrics
        for p in m.data.data_points
    ]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("scenario", ["tool,tool_args=wrong_type", "tool,tool_name=rm", "json=mismatch", "json=valid"])
def test_tool_call_and_structured_output_checks_carry_no_arguments_nor_text(capture, fake_provider, scenario, stream):
    """The call checks (tool calls, structured output, truncation) count; neither the arguments nor
    the answer's text reach a span, an event or a metric label by default (the offered tools'
    schemas neither)."""
    telemetry, records = capture(None)
    capture(None, instrumentor_class=OpenAIInstrumentor)
    headers = {"x-fake-scenario": scenario}
    result = client(fake_provider).messages.create(
        **KW,
        tools=[{"name": "get_weather", "input_schema": WEATHER_SCHEMA}],
        output_config={"format": {"type": "json_schema", "schema": WEATHER_SCHEMA}},
        extra_headers=headers,
        stream=stream,
    )
    list(result) if stream else None
    oai = openai_client(fake_provider)
    result = oai.chat.completions.create(
        **CHAT_KW,
        tools=[{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER_SCHEMA}}],
        response_format={"type": "json_schema", "json_schema": {"name": "w", "schema": WEATHER_SCHEMA}},
        extra_headers=headers,
        stream=stream,
    )
    list(result) if stream else None
    result = oai.responses.create(
        **RESP_KW,
        tools=[{"type": "function", "name": "get_weather", "parameters": WEATHER_SCHEMA, "strict": False}],
        text={"format": {"type": "json_schema", "name": "w", "schema": WEATHER_SCHEMA}},
        extra_headers=headers,
        stream=stream,
    )
    list(result) if stream else None
    spans = telemetry.spans()
    assert len(spans) == 3
    assert all(
        names.TOOL_CALL_COUNT in s.attributes or names.STRUCTURED_OUTPUT_REQUESTED in s.attributes for s in spans
    )
    exported = repr((everything_exported(telemetry, records), every_point(telemetry)))
    for text in ARGUMENT_TEXTS:
        assert text not in exported
