"""Tool calls, structured output and truncation read from real SDK answers (anthropic Messages, openai
Chat Completions and Responses, plain and streamed) against the fake provider.

The fake provider's answers (``otel_sampling.testing.fake_provider``, scenarios ``tool``,
``tool_name``, ``tool_args``, ``json``, ``length``, ``context_length``) are shaped as each API
documents them; what each scenario should count follows from the offered tool's schema below
(``city`` required, a string) and from rules/call_checks' spec.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from conftest import Telemetry, instrumenting
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
MESSAGES = [{"role": "user", "content": "Weather in Paris?"}]
APIS = ("anthropic", "chat", "responses")


@pytest.fixture
def both(telemetry: Telemetry) -> Iterator[Telemetry]:
    with instrumenting(telemetry, AnthropicInstrumentor, OpenAIInstrumentor):
        yield telemetry


def _tools(api: str) -> list[dict[str, Any]]:
    if api == "anthropic":
        return [{"name": "get_weather", "description": "Weather of a city", "input_schema": WEATHER}]
    if api == "chat":
        return [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
    return [{"type": "function", "name": "get_weather", "parameters": WEATHER, "strict": False}]


def _schema(api: str) -> dict[str, Any]:
    if api == "anthropic":
        return {"output_config": {"format": {"type": "json_schema", "schema": WEATHER}}}
    if api == "chat":
        return {"response_format": {"type": "json_schema", "json_schema": {"name": "weather", "schema": WEATHER}}}
    return {"text": {"format": {"type": "json_schema", "name": "weather", "schema": WEATHER}}}


def call(api: str, fp: Any, scenario: str, stream: bool = False, model: str | None = None, **request: Any) -> None:
    """One call of ``api`` answered by ``scenario``; a stream is read to its end; an error is swallowed."""
    headers = {"x-fake-scenario": scenario}
    try:
        if api == "anthropic":
            client = anthropic.Anthropic(base_url=fp.url, api_key="sk-fake", max_retries=0)
            result: Any = client.messages.create(
                model=model or "claude-req",
                max_tokens=64,
                messages=MESSAGES,
                stream=stream,
                extra_headers=headers,
                **request,
            )
        else:
            oai = openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0)
            if api == "chat":
                result = oai.chat.completions.create(
                    model=model or "gpt-req", messages=MESSAGES, stream=stream, extra_headers=headers, **request
                )
            else:
                result = oai.responses.create(
                    model=model or "gpt-req", input="Weather in Paris?", stream=stream, extra_headers=headers, **request
                )
        if stream:
            for _ in result:
                pass
    except (anthropic.APIError, openai.APIError):
        pass


def span_of(telemetry: Telemetry) -> Any:
    (span,) = [s for s in telemetry.spans() if s.name.startswith("chat")]
    return span


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("scenario", "not_offered", "invalid"),
    [
        ("tool", 0, 0),
        ("tool,tool_name=delete_everything", 1, 0),
        ("tool,tool_args=missing", 0, 1),
        ("tool,tool_args=wrong_type", 0, 1),
        ("tool,tool_args=bad_json", 0, 1),
    ],
)
def test_tool_calls_the_model_got_wrong(
    both: Telemetry, fake_provider: Any, api: str, stream: bool, scenario: str, not_offered: int, invalid: int
) -> None:
    call(api, fake_provider, scenario, stream, tools=_tools(api))
    span = span_of(both)
    assert span.attributes[names.TOOL_CALL_COUNT] == 1
    assert span.attributes[names.TOOL_CALL_NOT_OFFERED_COUNT] == not_offered
    assert span.attributes[names.TOOL_CALL_INVALID_ARGUMENTS_COUNT] == invalid
    assert both.counts(names.METRIC_CLIENT_TOOL_CALLS, names.DEGRADATION_MODE) == {(names.MODE_PRIMARY,): 1}
    errors = both.counts(names.METRIC_CLIENT_TOOL_CALL_ERRORS, names.TOOL_CALL_ERROR)
    expected = {}
    if not_offered:
        expected[(names.TOOL_CALL_ERROR_NOT_OFFERED,)] = not_offered
    if invalid:
        expected[(names.TOOL_CALL_ERROR_INVALID_ARGUMENTS,)] = invalid
    assert errors == expected


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("scenario", "failure"),
    [
        ("json=valid", None),
        ("json=bad_json", names.STRUCTURED_OUTPUT_INVALID_JSON),
        ("json=mismatch", names.STRUCTURED_OUTPUT_SCHEMA_MISMATCH),
    ],
)
def test_structured_output_that_failed(
    both: Telemetry, fake_provider: Any, api: str, stream: bool, scenario: str, failure: str | None
) -> None:
    call(api, fake_provider, scenario, stream, **_schema(api))
    span = span_of(both)
    assert span.attributes[names.STRUCTURED_OUTPUT_REQUESTED] is True
    assert span.attributes.get(names.STRUCTURED_OUTPUT_FAILURE) == failure
    assert both.counts(names.METRIC_CLIENT_STRUCTURED_OUTPUT_REQUESTS, names.GEN_AI_RESPONSE_MODEL) in (
        {("claude-req",): 1},
        {("gpt-req",): 1},
    )
    failures = both.counts(names.METRIC_CLIENT_STRUCTURED_OUTPUT_FAILURES, names.STRUCTURED_OUTPUT_FAILURE)
    assert failures == ({(failure,): 1} if failure else {})


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize(
    ("api", "choice"),
    [
        ("anthropic", {"type": "tool", "name": "get_weather"}),
        ("chat", {"type": "function", "function": {"name": "get_weather"}}),
        ("responses", {"type": "function", "name": "get_weather"}),
    ],
)
def test_a_forced_tool_is_structured_output_its_arguments_must_satisfy(
    both: Telemetry, fake_provider: Any, api: str, choice: dict[str, Any], stream: bool
) -> None:
    call(api, fake_provider, "tool,tool_args=missing", stream, tools=_tools(api), tool_choice=choice)
    span = span_of(both)
    assert span.attributes[names.STRUCTURED_OUTPUT_FAILURE] == names.STRUCTURED_OUTPUT_SCHEMA_MISMATCH
    assert span.attributes[names.TOOL_CALL_INVALID_ARGUMENTS_COUNT] == 1


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_an_answer_cut_by_the_output_limit_is_a_max_tokens_truncation(
    both: Telemetry, fake_provider: Any, api: str, stream: bool
) -> None:
    call(api, fake_provider, "length", stream)
    assert span_of(both).attributes[names.TRUNCATION_KIND] == names.TRUNCATION_MAX_TOKENS
    truncations = both.counts(names.METRIC_CLIENT_TRUNCATIONS, names.TRUNCATION_KIND, names.DEGRADATION_MODE)
    assert truncations == {(names.TRUNCATION_MAX_TOKENS, names.MODE_PRIMARY): 1}


@pytest.mark.parametrize("api", APIS)
def test_a_context_length_error_is_a_context_length_truncation(both: Telemetry, fake_provider: Any, api: str) -> None:
    call(api, fake_provider, "context_length")
    span = span_of(both)
    assert span.attributes[names.TRUNCATION_KIND] == names.TRUNCATION_CONTEXT_LENGTH
    assert both.counts(names.METRIC_CLIENT_TRUNCATIONS, names.TRUNCATION_KIND) == {
        (names.TRUNCATION_CONTEXT_LENGTH,): 1
    }


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_a_call_with_no_tools_and_no_schema_records_none_of_it(
    both: Telemetry, fake_provider: Any, api: str, stream: bool
) -> None:
    call(api, fake_provider, "tool", stream)  # the model calls a tool it was not offered: not checked
    attributes = span_of(both).attributes
    for name in (
        names.TOOL_CALL_COUNT,
        names.STRUCTURED_OUTPUT_REQUESTED,
        names.TRUNCATION_KIND,
        names.CONTEXT_UTILIZATION,
    ):
        assert name not in attributes
    for metric in (
        names.METRIC_CLIENT_TOOL_CALLS,
        names.METRIC_CLIENT_STRUCTURED_OUTPUT_REQUESTS,
        names.METRIC_CLIENT_TRUNCATIONS,
        names.METRIC_CLIENT_CONTEXT_UTILIZATION,
    ):
        assert both.points(metric) == []


@pytest.mark.parametrize(
    ("api", "provider", "model", "input_tokens"),
    [("anthropic", "anthropic", "claude-sonnet-4-5", 25), ("chat", "openai", "gpt-4o", 25)],
)
def test_context_utilization_is_input_tokens_over_the_served_models_window(
    both: Telemetry, fake_provider: Any, api: str, provider: str, model: str, input_tokens: int
) -> None:
    from genai_prices.data import providers
    from genai_prices.data_snapshot import find_provider_by_id

    found = find_provider_by_id(providers, provider)
    assert found is not None
    info = found.find_model(model, all_providers=providers)
    assert info is not None and info.context_window
    call(api, fake_provider, "", model=model)
    assert span_of(both).attributes[names.CONTEXT_UTILIZATION] == pytest.approx(input_tokens / info.context_window)
    (point,) = both.points(names.METRIC_CLIENT_CONTEXT_UTILIZATION)
    assert point.count == 1 and point.attributes[names.GEN_AI_RESPONSE_MODEL] == model


def test_the_anthropic_stream_helper_and_an_async_stream_are_read_too(both: Telemetry, fake_provider: Any) -> None:
    import asyncio

    headers = {"x-fake-scenario": "tool,tool_args=missing"}
    request: dict[str, Any] = {
        "model": "claude-req",
        "max_tokens": 64,
        "messages": MESSAGES,
        "tools": _tools("anthropic"),
    }
    client = anthropic.Anthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
    with client.messages.stream(**request, extra_headers=headers) as stream:
        stream.get_final_message()

    async def read_async() -> None:
        aclient = anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
        async for _ in await aclient.messages.create(**request, stream=True, extra_headers=headers):
            pass

    asyncio.run(read_async())
    spans = [s for s in both.spans() if s.name.startswith("chat")]
    assert [s.attributes[names.TOOL_CALL_INVALID_ARGUMENTS_COUNT] for s in spans] == [1, 1]
    assert both.counts(names.METRIC_CLIENT_TOOL_CALL_ERRORS, names.TOOL_CALL_ERROR) == {
        (names.TOOL_CALL_ERROR_INVALID_ARGUMENTS,): 2
    }


def test_an_effort_alone_asks_for_no_check(both: Telemetry, fake_provider: Any) -> None:
    """anthropic's ``output_config`` carries the effort too: without a format it asks for nothing."""
    call("anthropic", fake_provider, "json=bad_json", output_config={"effort": "low"})
    assert names.STRUCTURED_OUTPUT_REQUESTED not in span_of(both).attributes
    assert both.points(names.METRIC_CLIENT_STRUCTURED_OUTPUT_REQUESTS) == []


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("hostile", ["odd_types", "null_choices", "no_usage", "truncate", "midstream_error"])
def test_hostile_answers_to_a_call_with_tools_and_a_schema_still_end_the_call(
    both: Telemetry, fake_provider: Any, api: str, stream: bool, hostile: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Wrong JSON types, null output lists, cut streams: the call ends once, with what could be read,
    and reading them never fails (no step of ours logged a failure)."""
    caplog.set_level(logging.DEBUG, logger="otel_sampling")
    extra = _schema(api)
    call(api, fake_provider, f"tool,json=mismatch,{hostile}", stream, tools=_tools(api), **extra)
    span = span_of(both)
    assert span.attributes.get(names.TOOL_CALL_COUNT) in (None, 0, 1)  # None: an error event, no answer read
    ours = ("tool calls", "asked for", "context-length", "answer shows")
    assert not [r.getMessage() for r in caplog.records if any(words in r.getMessage() for words in ours)]


# ---------------------------------------------------------------------- google-genai (Gemini)
def _gemini(fp: Any, scenario: str, stream: bool, **config: Any) -> None:
    from google import genai

    from otel_sampling.instrumentation.google_genai import GoogleGenAIInstrumentor  # noqa: F401 - installed below

    client = genai.Client(api_key="k-fake", http_options={"base_url": fp.url})
    options = {"http_options": {"headers": {"x-fake-scenario": scenario}}, **config}
    if stream:
        list(client.models.generate_content_stream(model="gemini-2.5-flash", contents="hi", config=options))
    else:
        client.models.generate_content(model="gemini-2.5-flash", contents="hi", config=options)


@pytest.fixture
def gemini(telemetry: Telemetry) -> Iterator[Telemetry]:
    pytest.importorskip("google.genai")
    from otel_sampling.instrumentation.google_genai import GoogleGenAIInstrumentor

    with instrumenting(telemetry, GoogleGenAIInstrumentor):
        yield telemetry


GEMINI_TOOLS = [{"function_declarations": [{"name": "get_weather", "parameters_json_schema": WEATHER}]}]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize(
    ("scenario", "not_offered", "invalid"),
    [
        ("tool", 0, 0),
        ("tool,tool_name=rm", 1, 0),
        ("tool,tool_args=missing", 0, 1),
        ("tool,tool_args=wrong_type", 0, 1),
    ],
)
def test_gemini_function_calls_the_model_got_wrong(
    gemini: Telemetry, fake_provider: Any, stream: bool, scenario: str, not_offered: int, invalid: int
) -> None:
    _gemini(fake_provider, scenario, stream, tools=GEMINI_TOOLS)
    attributes = span_of(gemini).attributes
    assert (
        attributes[names.TOOL_CALL_COUNT],
        attributes[names.TOOL_CALL_NOT_OFFERED_COUNT],
        attributes[names.TOOL_CALL_INVALID_ARGUMENTS_COUNT],
    ) == (1, not_offered, invalid)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize(
    ("scenario", "failure"),
    [
        ("json=valid", None),
        ("json=bad_json", names.STRUCTURED_OUTPUT_INVALID_JSON),
        ("json=mismatch", names.STRUCTURED_OUTPUT_SCHEMA_MISMATCH),
    ],
)
@pytest.mark.parametrize(
    "schema",
    [
        {"response_json_schema": WEATHER},
        # Gemini's own Schema, as the SDK sends it: OpenAPI's upper-case type names
        {"response_schema": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}, "required": ["city"]}},
    ],
    ids=["json_schema", "schema"],
)
def test_gemini_structured_output_that_failed(
    gemini: Telemetry, fake_provider: Any, stream: bool, scenario: str, failure: str | None, schema: dict[str, Any]
) -> None:
    _gemini(fake_provider, scenario, stream, response_mime_type="application/json", **schema)
    attributes = span_of(gemini).attributes
    assert attributes[names.STRUCTURED_OUTPUT_REQUESTED] is True
    assert attributes.get(names.STRUCTURED_OUTPUT_FAILURE) == failure


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_gemini_max_tokens_is_a_truncation(gemini: Telemetry, fake_provider: Any, stream: bool) -> None:
    _gemini(fake_provider, "length", stream)
    assert span_of(gemini).attributes[names.TRUNCATION_KIND] == names.TRUNCATION_MAX_TOKENS


@pytest.mark.parametrize("api", ["anthropic", "chat", "responses"])
def test_a_raw_response_is_checked_too(both: Telemetry, fake_provider: Any, api: str) -> None:
    """``with_raw_response`` (what LangChain calls): the SDK read the body; the checks read its JSON."""
    headers = {"x-fake-scenario": "tool,tool_args=wrong_type"}
    if api == "anthropic":
        client = anthropic.Anthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
        client.messages.with_raw_response.create(
            model="claude-req", max_tokens=64, messages=MESSAGES, tools=_tools(api), extra_headers=headers
        )
    else:
        oai = openai.OpenAI(base_url=fake_provider.url + "/v1", api_key="sk-fake", max_retries=0)
        if api == "chat":
            oai.chat.completions.with_raw_response.create(
                model="gpt-req", messages=MESSAGES, tools=_tools(api), extra_headers=headers
            )
        else:
            oai.responses.with_raw_response.create(
                model="gpt-req", input="hi", tools=_tools(api), extra_headers=headers
            )
    assert span_of(both).attributes[names.TOOL_CALL_INVALID_ARGUMENTS_COUNT] == 1
