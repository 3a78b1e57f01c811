"""Suppressed instrumentation: inside ``opentelemetry.instrumentation.utils.suppress_instrumentation()``
every wrapper of ours passes straight through.

Telemetry pipelines that call models themselves (an evaluator, a summariser of traces) enter
``suppress_instrumentation()`` around those calls so that they do not trace their own work
(``is_instrumentation_enabled()`` is false there, the contract every OpenTelemetry Python
instrumentation honours). Every call shape of the drivers (``tests/drivers.py``: MCP host and server on
both protocol paths; anthropic and openai, sync and async, plain, streamed, raw and helper shapes)
is run under suppression with all four instrumentors instrumented, between a recording wrapper
below ours and one above ours on every target: each call of the host gets the very object the
SDK's function returned or raised (no stream proxy either), and we emit no span and no metric
point (``otel_sampling.sampling.in_flight`` included). Outside suppression the same drivers give telemetry
as usual, so the empty results are not vacuous.

A call that started outside suppression keeps its telemetry: its stream or raw response read inside
suppression still ends its span (the call, not the reading, is what was or was not suppressed).
"""

from __future__ import annotations

import anthropic
import anyio
import mcp_types as types
import openai
import pytest
import wrapt
from opentelemetry.instrumentation.utils import suppress_instrumentation

from conftest import SPANS, TRACER_PROVIDER
from drivers import ANTHROPIC_KW, CHAT, DRIVERS, Sandwich, call, snapshot, tables
from otel_sampling import names

INSTRUMENTORS = list(tables())


@pytest.fixture
def sandwiched_all(telemetry):
    """All four instrumentors, between a recording wrapper below and one above ours on every target."""
    sandwich = Sandwich([target for table in tables().values() for target in table])
    instrumentors = [cls() for cls in INSTRUMENTORS]
    sandwich.install(above=False)
    try:
        for instrumentor in instrumentors:
            instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
        sandwich.install(above=True)
        yield sandwich
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
        sandwich.restore()


def _untouched(sandwich: Sandwich) -> None:
    """Every call the host made got exactly what the SDK's function gave: the same object, no proxy."""
    assert sandwich.above, "no wrapped function was called: the check is vacuous"
    for key, cid, (kind, obj) in sandwich.above:
        (below,) = sandwich.below[cid]
        assert below[0] == kind, f"{key}: the host got a {kind}, the function gave a {below[0]}"
        assert obj is below[1], f"{key}: the host got {type(obj).__name__}, not the object the function gave"
        assert not isinstance(obj, wrapt.ObjectProxy), f"{key}: a proxy of ours reached the host"


@pytest.mark.parametrize("driver_name", DRIVERS)
def test_every_call_shape_passes_straight_through_when_suppressed(
    driver_name, sandwiched_all, telemetry, fake_provider
):
    before = snapshot(telemetry)  # gauges of degradations other tests entered read the same before and after
    with suppress_instrumentation():
        DRIVERS[driver_name].run(fake_provider)  # the host-level answers are asserted inside
    _untouched(sandwiched_all)
    assert telemetry.spans() == []
    assert snapshot(telemetry) == before


@pytest.mark.parametrize("driver_name", DRIVERS)
def test_outside_suppression_the_same_call_shapes_give_telemetry(driver_name, sandwiched_all, telemetry, fake_provider):
    with suppress_instrumentation():
        pass  # entered and left: nothing stays suppressed
    DRIVERS[driver_name].run(fake_provider)
    assert telemetry.spans()
    assert snapshot(telemetry)


def test_an_openai_request_under_suppression_is_sent_as_without_instrumentation(openai_instrumented, fake_provider):
    """No trace context of ours goes out either: there is no span of ours to name."""
    client = openai.OpenAI(base_url=fake_provider.url + "/v1", api_key="sk-fake", max_retries=0)
    fake_provider.reset()
    with suppress_instrumentation():
        client.chat.completions.create(**CHAT)
    (sent,) = fake_provider.requests
    assert "traceparent" not in sent["headers"]


def test_a_provider_call_suppressed_inside_a_sampling_callback_is_not_a_provider_call_of_the_request(
    instrumented, fake_provider
):
    """A host whose sampling callback calls a model under suppression (its own pipeline's call):
    the request is recorded, the suppressed call is neither a span nor one of the request's calls."""

    async def callback(ctx, params):
        client = anthropic.AsyncAnthropic(
            base_url=fake_provider.url, api_key="sk-fake", max_retries=0, open_telemetry=False
        )
        with suppress_instrumentation():
            message = await client.messages.create(**ANTHROPIC_KW)
        await client.close()
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="ok"), model=message.model, stop_reason="endTurn"
        )

    assert anyio.run(call, "legacy", callback) == "claude-req|endTurn"
    # "claude-req" is not the hinted "claude-sonnet": a substitution without a policy, whose run's
    # silent incident is the one other span.
    (sampling,) = [s for s in instrumented.spans() if s.name != names.EVENT_SILENT_INCIDENT]
    assert sampling.name == names.SPAN_SAMPLING
    assert names.SAMPLING_PROVIDER_CALLS not in sampling.attributes
    assert instrumented.points(names.METRIC_GEN_AI_OPERATION_DURATION) == []
    assert instrumented.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_ENDING) == {("completed",): 1}


@pytest.mark.parametrize("shape", ["stream", "with_streaming_response"])
def test_a_call_started_outside_suppression_ends_its_span_when_read_inside(shape, openai_instrumented, fake_provider):
    client = openai.OpenAI(base_url=fake_provider.url + "/v1", api_key="sk-fake", max_retries=0)
    SPANS.clear()
    if shape == "stream":
        stream = client.chat.completions.create(**CHAT, stream=True)
        with suppress_instrumentation():
            assert [c.choices[0].finish_reason for c in stream if c.choices][-1] == "stop"
    else:
        with client.chat.completions.with_streaming_response.create(**CHAT) as raw:
            with suppress_instrumentation():
                assert raw.parse().choices[0].finish_reason == "stop"
    (span,) = openai_instrumented.spans()
    assert span.attributes[names.ENDING] == "completed"
    assert openai_instrumented.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.ENDING) == {("completed",): 1}


def test_the_per_request_suppression_check_is_opentelemetry_s():
    """``instrumentation_enabled`` (read by the wrappers on every provider call, tool call and
    sampling request) answers as ``is_instrumentation_enabled``: off inside
    ``suppress_instrumentation()``, and off when either key it sets is set alone (instrumentations
    of other vintages set one of them). The context it reads is ``get_current()``'s, also inside."""
    from opentelemetry import context
    from opentelemetry.instrumentation.utils import is_instrumentation_enabled, suppress_instrumentation

    from otel_sampling.instrumentation._provider import _current_context, instrumentation_enabled

    assert instrumentation_enabled() is is_instrumentation_enabled() is True
    assert _current_context() is context.get_current()
    with suppress_instrumentation():
        assert instrumentation_enabled() is is_instrumentation_enabled() is False
        assert _current_context() is context.get_current()
    for key in (context._SUPPRESS_INSTRUMENTATION_KEY, "suppress_instrumentation"):
        token = context.attach(context.set_value(key, True))
        try:
            assert instrumentation_enabled() is is_instrumentation_enabled() is False
        finally:
            context.detach(token)
    assert instrumentation_enabled() is True
