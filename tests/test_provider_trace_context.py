"""Trace context reaches the provider: a gateway or a provider-side trace can join ours.

anthropic's SDK sends the W3C ``traceparent`` of its own ``anthropic.messages.create`` span itself
(``anthropic._tracing.inject_trace_headers``, on each attempt, unless its ``propagation`` option is
off); that span is a child of our ``chat`` span, so its requests already join our trace and we add
nothing. openai's SDK sends none: its requests carry the global propagator's headers
(``opentelemetry.propagate.inject``) for our ``chat`` span, on every call shape (run by
``tests/test_openai.py``), also when HTTP
client spans are suppressed (``suppress_http_instrumentation``: no HTTP span of an HTTP client
instrumentation then carries the context). ``OTEL_SAMPLING_OMIT_PROVIDER_TRACE_CONTEXT=true`` turns it
off. What the provider received is read from the fake provider's request log (``headers``).
"""

from __future__ import annotations

import logging

import anthropic
import openai
import pytest
import wrapt
from opentelemetry.instrumentation.utils import suppress_http_instrumentation

from conftest import SPANS, TRACER_PROVIDER, _instrumented, traceparent_of
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor
from otel_sampling.settings import Settings

ANTHROPIC_KW = {"model": "claude-req", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
CHAT = {
    "model": "gpt-req",
    "messages": [{"role": "user", "content": "Summarise: printer on fire"}],
    "max_completion_tokens": 64,
    "extra_headers": {"x-fake-scenario": 'served_model=gpt-served,cache,text={"answer":"hi"}'},
}


def client(fp, **kw) -> openai.OpenAI:
    return openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-fake", **{"max_retries": 0, **kw})


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


# ---------------------------------------------------------------- openai (every call shape: test_openai.py)
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


def test_each_attempt_carries_the_span_current_when_it_is_built(openai_instrumented, fake_provider):
    """The context goes on each attempt's headers as the SDK builds them: a span another
    instrumentation makes current around each attempt (here around the SDK's ``_build_request``)
    is the one that attempt's ``traceparent`` names, each attempt its own, all in our call's trace."""
    tracer = TRACER_PROVIDER.get_tracer("attempts")

    def attempt(wrapped, instance, args, kwargs):
        with tracer.start_as_current_span("attempt"):
            return wrapped(*args, **kwargs)

    fake_provider.reset()
    wrapt.wrap_function_wrapper("openai._base_client", "BaseClient._build_request", attempt)
    try:
        client(fake_provider, max_retries=2).chat.completions.create(
            **{**CHAT, "extra_headers": {"x-fake-scenario": "status=500,fail_first=1"}}
        )
    finally:
        openai._base_client.BaseClient._build_request = openai._base_client.BaseClient._build_request.__wrapped__
    attempts = [s for s in SPANS.get_finished_spans() if s.name == "attempt"]
    (chat,) = openai_instrumented.spans()
    assert len(attempts) == 2 and all(a.parent.span_id == chat.context.span_id for a in attempts)
    assert [h["traceparent"] for h in sent_headers(fake_provider)] == [traceparent_of(a) for a in attempts]


def test_nothing_reaches_the_caller_s_headers_or_a_later_call(openai_instrumented, fake_provider):
    """Two calls with one header dict, the first retried: the dict is as the caller made it after
    each, and each call's attempts carry that call's span (none of the first call's)."""
    fake_provider.reset()
    headers = {"x-fake-scenario": "status=500,fail_first=1"}
    c = client(fake_provider, max_retries=2)
    c.chat.completions.create(**{**CHAT, "extra_headers": headers})
    assert headers == {"x-fake-scenario": "status=500,fail_first=1"}
    c.chat.completions.create(**{**CHAT, "extra_headers": headers})
    assert headers == {"x-fake-scenario": "status=500,fail_first=1"}
    first, second = openai_instrumented.spans()
    sent = [h["traceparent"] for h in sent_headers(fake_provider)]
    assert sent == [traceparent_of(first)] * 2 + [traceparent_of(second)] * 2


def test_a_traceparent_the_caller_omitted_stays_out(openai_instrumented, fake_provider):
    """``Omit()`` on the call removes a header on purpose: none is added for it."""
    fake_provider.reset()
    client(fake_provider).chat.completions.create(**{**CHAT, "extra_headers": {"traceparent": openai.Omit()}})
    (headers,) = sent_headers(fake_provider)
    assert "traceparent" not in headers
    assert openai_instrumented.spans()  # still traced


def test_a_traceparent_among_the_client_s_default_headers_is_kept(openai_instrumented, fake_provider):
    fake_provider.reset()
    own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    client(fake_provider, default_headers={"traceparent": own}).chat.completions.create(**CHAT)
    assert [h["traceparent"] for h in sent_headers(fake_provider)] == [own]


def test_clients_called_in_turn_each_keep_their_own_default_headers(openai_instrumented, fake_provider):
    """What a client sends on every request is the client's own: calls through two clients in turn,
    one naming a ``traceparent`` among its default headers, send that one through it and ours
    through the other."""
    fake_provider.reset()
    own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    naming, plain = client(fake_provider, default_headers={"TraceParent": own}), client(fake_provider)
    for each in (naming, plain, naming, plain):
        each.chat.completions.create(**CHAT)
    chats = [s for s in openai_instrumented.spans() if s.name.startswith("chat ")]
    sent = [h["traceparent"] for h in sent_headers(fake_provider)]
    assert sent[0::2] == [own, own]
    assert sent[1::2] == [traceparent_of(chats[1]), traceparent_of(chats[3])]


def test_the_caller_s_own_traceparent_is_kept(openai_instrumented, fake_provider):
    """A header the caller set on the call is the caller's choice: not replaced."""
    fake_provider.reset()
    own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    headers = {"traceparent": own}
    client(fake_provider).chat.completions.create(**{**CHAT, "extra_headers": headers})
    assert [h["traceparent"] for h in sent_headers(fake_provider)] == [own]
    assert headers == {"traceparent": own}


@pytest.mark.parametrize("name", ["TraceParent", "TRACEPARENT"])
def test_a_traceparent_the_caller_named_in_another_case_is_the_only_one_sent(openai_instrumented, fake_provider, name):
    """Header names are case-insensitive: the caller's ``TraceParent`` (or its ``Omit()``) is the
    caller's choice as ``traceparent`` is, on every openai major (2.x merges the call's headers over
    the client's case-sensitively). Read on the wire, where two header lines would both go out."""
    own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    sent: list[list[str]] = []
    http = openai.DefaultHttpxClient(
        event_hooks={"request": [lambda r: sent.append(r.headers.get_list("traceparent"))]}
    )
    c = client(fake_provider, http_client=http)
    c.chat.completions.create(**{**CHAT, "extra_headers": {name: own}})
    c.chat.completions.create(**{**CHAT, "extra_headers": {name: openai.Omit()}})
    assert sent == [[own], []]
    assert len(openai_instrumented.spans()) == 2  # still traced


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
    anthropic.Anthropic(
        base_url=fake_provider.url, api_key="sk-fake", max_retries=0, open_telemetry=False
    ).messages.create(**ANTHROPIC_KW)
    (headers,) = sent_headers(fake_provider)
    assert "traceparent" not in headers  # the host turned the SDK's propagation off: we do not undo it


# ---------------------------------------------------------------- the setting
@pytest.mark.parametrize(
    ("raw", "expected"),
    [(None, True), ("", True), ("false", True), ("true", False), ("TRUE", False), (" true ", False)],
)
def test_propagate_to_provider_setting(raw, expected):
    env = {} if raw is None else {names.ENV_OMIT_PROVIDER_TRACE_CONTEXT: raw}
    assert Settings.from_env(env).propagate_to_provider is expected


def test_a_value_that_is_not_a_boolean_is_reported_and_the_default_kept(caplog):
    caplog.set_level(logging.WARNING)
    assert Settings.from_env({names.ENV_OMIT_PROVIDER_TRACE_CONTEXT: "nope"}).propagate_to_provider is True
    assert any(
        names.ENV_OMIT_PROVIDER_TRACE_CONTEXT in r.getMessage() and "'nope'" in r.getMessage() for r in caplog.records
    )


def test_a_propagator_header_named_in_bytes_goes_out(openai_instrumented, fake_provider, monkeypatch):
    """The API types carrier keys as strings, yet httpx sends a bytes name as it is: a propagator that
    writes one still has its header sent (matched against the caller's names by its own lower())."""
    from opentelemetry import propagate

    def inject(carrier, context=None, setter=None):
        carrier[b"x-b3"] = "v"

    monkeypatch.setattr(propagate, "inject", inject)
    fake_provider.reset()
    client(fake_provider).chat.completions.create(**CHAT)
    (headers,) = sent_headers(fake_provider)
    assert headers.get("x-b3") == "v"
    assert len(openai_instrumented.spans()) == 1
