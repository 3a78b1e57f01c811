"""Trace context reaches the provider: a gateway or a provider-side trace can join ours.

anthropic's SDK sends the W3C ``traceparent`` of its own ``anthropic.messages.create`` span itself
(``anthropic._tracing.inject_trace_headers``, on each attempt, unless its ``propagation`` option is
off); that span is a child of our ``chat`` span, so its requests already join our trace and we add
nothing. openai's SDK sends none: its requests carry the global propagator's headers
(``opentelemetry.propagate.inject``) for our ``chat`` span, on every call shape, also when HTTP
client spans are suppressed (``suppress_http_instrumentation``: no HTTP span of an HTTP client
instrumentation then carries the context). ``OTEL_SAMPLING_OMIT_PROVIDER_TRACE_CONTEXT=true`` turns it
off. What the provider received is read from the fake provider's request log (``headers``).
"""

from __future__ import annotations

import copy
import logging

import anthropic
import pytest
from opentelemetry import trace
from opentelemetry.instrumentation.utils import suppress_http_instrumentation

from conftest import SPANS, _instrumented
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor
from otel_sampling.settings import Settings
from test_openai import ASYNC_SHAPES, CHAT, SYNC_SHAPES, client, run_async_shape

ANTHROPIC_KW = {"model": "claude-req", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}


def traceparent_of(span) -> str:
    """W3C Trace Context ``traceparent`` naming ``span``: version 00, trace id, span id, trace flags."""
    context = span.get_span_context()
    ids = f"{trace.format_trace_id(context.trace_id)}-{trace.format_span_id(context.span_id)}"
    return f"00-{ids}-{int(context.trace_flags):02x}"


def sent_headers(fake_provider) -> list[dict]:
    return [r["headers"] for r in fake_provider.requests]


@pytest.fixture
def openai_off(telemetry, monkeypatch):
    monkeypatch.setenv(names.ENV_OMIT_PROVIDER_TRACE_CONTEXT, "true")
    yield from _instrumented(telemetry, OpenAIInstrumentor)


@pytest.fixture
def anthropic_off(telemetry, monkeypatch):
    monkeypatch.setenv(names.ENV_OMIT_PROVIDER_TRACE_CONTEXT, "true")
    yield from _instrumented(telemetry, AnthropicInstrumentor)


# ---------------------------------------------------------------- openai
@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
@pytest.mark.parametrize("shape", list(SYNC_SHAPES))
def test_every_openai_call_shape_sends_our_chat_span(shape, sync, openai_instrumented, fake_provider):
    extra_headers = copy.deepcopy(CHAT["extra_headers"])
    fake_provider.reset()
    if sync:
        SYNC_SHAPES[shape](client(fake_provider))
    else:
        run_async_shape(fake_provider, ASYNC_SHAPES[shape])
    (span,) = openai_instrumented.spans()
    sent = [h.get("traceparent") for h in sent_headers(fake_provider)]
    assert sent == [traceparent_of(span)] * len(sent) and sent
    assert CHAT["extra_headers"] == extra_headers  # the caller's headers are not changed


def test_http_suppression_leaves_the_trace_context_on(openai_instrumented, fake_provider):
    fake_provider.reset()
    with suppress_http_instrumentation():
        client(fake_provider).chat.completions.create(**CHAT)
    (span,) = openai_instrumented.spans()
    (headers,) = sent_headers(fake_provider)
    assert headers["traceparent"] == traceparent_of(span)


def test_every_retry_carries_the_same_chat_span(openai_instrumented, fake_provider):
    fake_provider.reset()
    c = client(fake_provider, max_retries=2)
    c.chat.completions.create(**{**CHAT, "extra_headers": {"x-fake-scenario": "status=500,fail_first=1"}})
    (span,) = openai_instrumented.spans()
    assert [h["traceparent"] for h in sent_headers(fake_provider)] == [traceparent_of(span)] * 2


def test_the_caller_s_own_traceparent_is_kept(openai_instrumented, fake_provider):
    """A header the caller set on the call is the caller's choice: not replaced."""
    fake_provider.reset()
    own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    headers = {"traceparent": own}
    client(fake_provider).chat.completions.create(**{**CHAT, "extra_headers": headers})
    assert [h["traceparent"] for h in sent_headers(fake_provider)] == [own]
    assert headers == {"traceparent": own}


def test_a_failing_propagator_leaves_the_request_alone(openai_instrumented, fake_provider, monkeypatch, caplog):
    from opentelemetry import propagate

    def broken(*args, **kwargs):
        raise RuntimeError("broken propagator")

    monkeypatch.setattr(propagate, "inject", broken)
    caplog.set_level(logging.DEBUG)
    fake_provider.reset()
    assert client(fake_provider).chat.completions.create(**CHAT).choices[0].finish_reason == "stop"
    (headers,) = sent_headers(fake_provider)
    assert "traceparent" not in headers
    (span,) = openai_instrumented.spans()
    assert span.attributes[names.ENDING] == "completed"  # the call is still traced
    assert any("trace context" in r.getMessage() for r in caplog.records)


def test_the_setting_turns_it_off_for_openai(openai_off, fake_provider):
    fake_provider.reset()
    client(fake_provider).chat.completions.create(**CHAT)
    assert openai_off.spans()  # still traced, only not propagated
    (headers,) = sent_headers(fake_provider)
    assert "traceparent" not in headers


# ---------------------------------------------------------------- anthropic: the SDK's own, unchanged
def _anthropic_call(fake_provider) -> tuple[dict, object, object]:
    fake_provider.reset()
    anthropic.Anthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0).messages.create(**ANTHROPIC_KW)
    (headers,) = sent_headers(fake_provider)
    (sdk_span,) = [s for s in SPANS.get_finished_spans() if s.name == "anthropic.messages.create"]
    return headers, sdk_span, sdk_span.parent


@pytest.mark.parametrize("fixture", ["anthropic_instrumented", "anthropic_off"])
def test_anthropic_sends_its_own_span_a_child_of_ours(fixture, request, fake_provider):
    telemetry = request.getfixturevalue(fixture)
    headers, sdk_span, parent = _anthropic_call(fake_provider)
    (chat,) = telemetry.spans()
    assert headers["traceparent"] == traceparent_of(sdk_span)  # the SDK's own span, as without us
    assert parent.span_id == chat.context.span_id  # which is a child of our chat span: one trace


def test_anthropic_without_its_own_propagation_gets_none_from_us(anthropic_instrumented, fake_provider):
    fake_provider.reset()
    anthropic.Anthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0,
                        open_telemetry=False).messages.create(**ANTHROPIC_KW)
    (headers,) = sent_headers(fake_provider)
    assert "traceparent" not in headers  # the host turned the SDK's propagation off: we do not undo it


# ---------------------------------------------------------------- the setting
@pytest.mark.parametrize(("raw", "expected"), [
    (None, True), ("", True), ("false", True), ("true", False), ("TRUE", False), (" true ", False)])
def test_propagate_to_provider_setting(raw, expected):
    env = {} if raw is None else {names.ENV_OMIT_PROVIDER_TRACE_CONTEXT: raw}
    assert Settings.from_env(env).propagate_to_provider is expected


def test_a_value_that_is_not_a_boolean_is_reported_and_the_default_kept(caplog):
    caplog.set_level(logging.WARNING)
    assert Settings.from_env({names.ENV_OMIT_PROVIDER_TRACE_CONTEXT: "nope"}).propagate_to_provider is True
    assert any(names.ENV_OMIT_PROVIDER_TRACE_CONTEXT in r.getMessage() and "'nope'" in r.getMessage()
               for r in caplog.records)
