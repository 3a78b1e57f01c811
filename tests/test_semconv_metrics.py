"""The GenAI inference metrics per ``OTEL_SEMCONV_STABILITY_OPT_IN`` (otel_sampling.records.provider_call),
with the real anthropic and openai SDKs against the fake provider.

Expected values come from the convention text (semantic-conventions-genai
``model/gen-ai/token-metrics.yaml`` at 066d4a7: input and output counters recorded for every
inference operation, failed ones included, ``0`` with ``gen_ai.token.modality="unknown"`` when
no usage came; cache and reasoning parts are subsets of input / output) and from the fake
provider's fixed bodies (25 input, 5 output tokens; ``cache``: 400 cache-read and 100
cache-creation tokens on top for anthropic, 400 cached for openai; ``reasoning=<n>``: n more
output tokens, reported as reasoning).
"""

from __future__ import annotations

import anthropic
import openai
import pytest

from conftest import _instrumented
from otel_sampling import names, semconv_mode
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor

MESSAGES = [{"role": "user", "content": "Summarise: printer on fire"}]
OLD_METRICS = (
    names.METRIC_GEN_AI_OPERATION_DURATION,
    names.METRIC_GEN_AI_TOKEN_USAGE,
    names.METRIC_GEN_AI_TIME_TO_FIRST_CHUNK,
    names.METRIC_GEN_AI_TIME_PER_OUTPUT_CHUNK,
)
NEW_METRICS = (
    names.METRIC_GEN_AI_INFERENCE_DURATION,
    names.METRIC_GEN_AI_INFERENCE_TIME_TO_FIRST_CHUNK,
    names.METRIC_GEN_AI_INFERENCE_TIME_PER_OUTPUT_CHUNK,
    names.METRIC_GEN_AI_USAGE_INPUT_TOKENS,
    names.METRIC_GEN_AI_USAGE_OUTPUT_TOKENS,
    names.METRIC_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
    names.METRIC_GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS,
    names.METRIC_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
    names.METRIC_GEN_AI_OPERATION_INPUT_TOKENS,
    names.METRIC_GEN_AI_OPERATION_OUTPUT_TOKENS,
)
# ours of the prompt-cache read share: emitted instead of the newest usage counters, never beside them
SHARE_METRICS = (names.METRIC_CLIENT_USAGE_INPUT_TOKENS, names.METRIC_CLIENT_USAGE_CACHE_READ_INPUT_TOKENS)


def scenario(value: str) -> dict:
    return {"extra_headers": {"x-fake-scenario": value}}


def claude(fp) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fp.url, api_key="sk-fake", max_retries=0)


def gpt(fp) -> openai.OpenAI:
    return openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0)


@pytest.fixture(params=["", "gen_ai_latest_experimental", "gen_ai/dup"])
def opt_in(request, telemetry, monkeypatch):
    """Instrumented with OTEL_SEMCONV_STABILITY_OPT_IN set to the parameter (``telemetry.opt_in``)."""
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", request.param)
    telemetry.opt_in = request.param
    yield from _instrumented(telemetry, AnthropicInstrumentor, OpenAIInstrumentor)


@pytest.fixture
def latest(telemetry, monkeypatch):
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    yield from _instrumented(telemetry, AnthropicInstrumentor, OpenAIInstrumentor)


@pytest.fixture
def default(telemetry, monkeypatch):
    monkeypatch.delenv("OTEL_SEMCONV_STABILITY_OPT_IN", raising=False)
    yield from _instrumented(telemetry, AnthropicInstrumentor, OpenAIInstrumentor)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", semconv_mode.OLD),
        ("http", semconv_mode.OLD),
        ("gen_ai_latest_experimental", semconv_mode.NEW),
        ("http/dup, gen_ai_latest_experimental", semconv_mode.NEW),
        ("gen_ai/dup", semconv_mode.DUP),
        ("gen_ai_latest_experimental,gen_ai/dup", semconv_mode.DUP),  # /dup wins, as http/dup over http
    ],
)
def test_the_opt_in_list_selects_the_names(value, expected):
    assert semconv_mode.emission({"OTEL_SEMCONV_STABILITY_OPT_IN": value}) == expected


def test_each_mode_exports_its_names_and_no_other(opt_in, fake_provider):
    with claude(fake_provider).messages.stream(
        model="claude-req", max_tokens=64, messages=MESSAGES, **scenario("reasoning=3")
    ) as stream:
        stream.until_done()
    mode = {"": semconv_mode.OLD, "gen_ai_latest_experimental": semconv_mode.NEW, "gen_ai/dup": semconv_mode.DUP}[
        opt_in.opt_in
    ]
    exported = {metric for metric in (*OLD_METRICS, *NEW_METRICS, *SHARE_METRICS) if opt_in.points(metric)}
    expected = (set(OLD_METRICS) if mode.old else set()) | set(NEW_METRICS if mode.new else SHARE_METRICS)
    assert exported == expected


def test_the_token_type_is_input_or_output_only(opt_in, fake_provider):
    claude(fake_provider).messages.create(model="claude-req", max_tokens=64, messages=MESSAGES, **scenario("cache"))
    types = {p.attributes[names.GEN_AI_TOKEN_TYPE] for p in opt_in.points(names.METRIC_GEN_AI_TOKEN_USAGE)}
    assert types <= {names.TOKEN_TYPE_INPUT, names.TOKEN_TYPE_OUTPUT}


def test_usage_counters_by_kind_with_modality(latest, fake_provider):
    claude(fake_provider).messages.create(model="claude-req", max_tokens=64, messages=MESSAGES, **scenario("cache"))
    by = (names.GEN_AI_TOKEN_MODALITY, names.GEN_AI_RESPONSE_MODEL)
    assert latest.counts(names.METRIC_GEN_AI_USAGE_INPUT_TOKENS, *by) == {("unknown", "claude-req"): 525}
    assert latest.counts(names.METRIC_GEN_AI_USAGE_OUTPUT_TOKENS, *by) == {("unknown", "claude-req"): 5}
    assert latest.counts(names.METRIC_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, *by) == {("unknown", "claude-req"): 400}
    assert latest.counts(names.METRIC_GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS, *by) == {("unknown", "claude-req"): 100}
    (point,) = latest.points(names.METRIC_GEN_AI_OPERATION_INPUT_TOKENS)
    assert (point.count, point.sum) == (1, 525)
    assert names.GEN_AI_TOKEN_MODALITY not in point.attributes  # the histograms carry no modality
    (duration,) = latest.points(names.METRIC_GEN_AI_INFERENCE_DURATION)
    assert duration.attributes[names.ENDING] == "completed"


def test_a_cache_part_reported_as_0_is_recorded_as_0(latest, fake_provider):
    """anthropic always reports cache_read_input_tokens (0 without a cache hit): a 0 % share,
    told apart from a provider that reports no cache part (no series)."""
    claude(fake_provider).messages.create(model="claude-req", max_tokens=64, messages=MESSAGES)
    assert latest.counts(names.METRIC_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS) == {(): 0}
    # no reasoning part in the answer: nothing recorded, not a 0 the provider never sent
    assert latest.points(names.METRIC_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS) == []


def test_a_call_without_usage_records_0_with_modality_unknown(latest, fake_provider):
    claude(fake_provider).messages.create(model="claude-req", max_tokens=64, messages=MESSAGES, **scenario("no_usage"))
    for metric in (
        names.METRIC_GEN_AI_USAGE_INPUT_TOKENS,
        names.METRIC_GEN_AI_USAGE_OUTPUT_TOKENS,
        names.METRIC_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
        names.METRIC_GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS,
        names.METRIC_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
    ):
        assert latest.counts(metric, names.GEN_AI_TOKEN_MODALITY) == {("unknown",): 0}, metric


def test_a_failed_call_records_usage_0_with_its_error(latest, fake_provider):
    with pytest.raises(anthropic.APIStatusError):
        claude(fake_provider).messages.create(
            model="claude-req", max_tokens=64, messages=MESSAGES, **scenario("status=529")
        )
    counts = latest.counts(names.METRIC_GEN_AI_USAGE_INPUT_TOKENS, names.GEN_AI_TOKEN_MODALITY, names.ERROR_TYPE)
    assert counts == {("unknown", "overloaded_error"): 0}
    (point,) = latest.points(names.METRIC_GEN_AI_OPERATION_OUTPUT_TOKENS)
    assert (point.count, point.sum, point.attributes[names.ERROR_TYPE]) == (1, 0, "overloaded_error")


def test_without_the_newest_names_the_share_counters_count_input_and_cache_reads(default, fake_provider):
    """The default emits v1.41's names, which carry no cache parts: the share's pair counts what the
    newest input and cache-read counters would (cache reads are part of input), without modality."""
    claude(fake_provider).messages.create(model="claude-req", max_tokens=64, messages=MESSAGES, **scenario("cache"))
    claude(fake_provider).messages.create(model="claude-req", max_tokens=64, messages=MESSAGES)
    by = (names.GEN_AI_RESPONSE_MODEL, names.DEGRADATION_MODE)
    assert default.counts(names.METRIC_CLIENT_USAGE_INPUT_TOKENS, *by) == {("claude-req", "primary"): 525 + 25}
    # the second answer reported cache_read_input_tokens 0: a 0 added, not a part left out
    assert default.counts(names.METRIC_CLIENT_USAGE_CACHE_READ_INPUT_TOKENS, *by) == {("claude-req", "primary"): 400}
    for point in (*default.points(SHARE_METRICS[0]), *default.points(SHARE_METRICS[1])):
        assert names.GEN_AI_TOKEN_MODALITY not in point.attributes


def test_without_the_newest_names_a_call_without_usage_or_failed_adds_0(default, fake_provider):
    """As the newest counters: input on every call, failed ones included, 0 when no usage came; the
    cache-read part 0 when the call brought no usage at all."""
    claude(fake_provider).messages.create(model="claude-req", max_tokens=64, messages=MESSAGES, **scenario("no_usage"))
    with pytest.raises(anthropic.APIStatusError):
        claude(fake_provider).messages.create(
            model="claude-req", max_tokens=64, messages=MESSAGES, **scenario("status=529")
        )
    for metric in SHARE_METRICS:
        assert default.counts(metric, names.ERROR_TYPE) == {(None,): 0, ("overloaded_error",): 0}, metric


def test_a_stream_records_a_gap_per_chunk_after_the_first(latest, fake_provider):
    stream = claude(fake_provider).messages.create(model="claude-req", max_tokens=64, messages=MESSAGES, stream=True)
    events = sum(1 for _ in stream)  # the server-sent events, as the SDK parses them
    (first,) = latest.points(names.METRIC_GEN_AI_INFERENCE_TIME_TO_FIRST_CHUNK)
    assert first.count == 1
    (gaps,) = latest.points(names.METRIC_GEN_AI_INFERENCE_TIME_PER_OUTPUT_CHUNK)
    assert gaps.count == events - 1  # every event the SDK read from the stream after the first


def test_reasoning_tokens_from_anthropic(latest, fake_provider):
    c = claude(fake_provider)
    c.messages.create(model="claude-req", max_tokens=64, messages=MESSAGES, **scenario("reasoning=7"))
    with c.messages.stream(model="claude-req", max_tokens=64, messages=MESSAGES, **scenario("reasoning=7")) as s:
        s.until_done()
    for span in latest.spans("chat claude-req"):
        assert span.attributes[names.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] == 7
        assert span.attributes[names.GEN_AI_USAGE_OUTPUT_TOKENS] == 5 + 7  # reasoning is part of output
    assert latest.counts(names.METRIC_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS) == {(): 14}


@pytest.mark.parametrize("stream", [False, True])
def test_reasoning_tokens_from_openai_chat_and_responses(latest, fake_provider, stream):
    c = gpt(fake_provider)
    kw = scenario("reasoning=9")
    if stream:
        for _ in c.chat.completions.create(
            model="o3", messages=MESSAGES, stream=True, stream_options={"include_usage": True}, **kw
        ):
            pass
        for _ in c.responses.create(model="o3", input="hi", stream=True, **kw):
            pass
    else:
        c.chat.completions.create(model="o3", messages=MESSAGES, **kw)
        c.responses.create(model="o3", input="hi", **kw)
    spans = latest.spans("chat o3")
    assert len(spans) == 2
    for span in spans:
        assert span.attributes[names.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] == 9
    assert latest.counts(names.METRIC_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS) == {(): 18}


def test_the_reasoning_level_is_the_request_s(latest, fake_provider):
    claude(fake_provider).messages.create(
        model="claude-req", max_tokens=64, messages=MESSAGES, extra_body={"output_config": {"effort": "high"}}
    )
    c = gpt(fake_provider)
    c.chat.completions.create(model="o3", messages=MESSAGES, reasoning_effort="low")
    c.responses.create(model="o3", input="hi", reasoning={"effort": "medium"})
    c.responses.create(model="o3", input="hi")
    (claude_span,) = latest.spans("chat claude-req")
    assert claude_span.attributes[names.GEN_AI_REQUEST_REASONING_LEVEL] == "high"
    levels = [s.attributes.get(names.GEN_AI_REQUEST_REASONING_LEVEL) for s in latest.spans("chat o3")]
    assert levels == ["low", "medium", None]
