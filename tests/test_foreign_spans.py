"""The opt-in guard on other libraries' spans (``OTEL_SAMPLING_GUARD_FOREIGN_SPANS=true``,
:mod:`otel_sampling.foreign_spans`), with real mcp sessions and the real anthropic SDK's native
tracing against the fake provider.

By default those libraries' spans carry what they were given: mcp's copy a host's error text and
an ``ErrorData`` message into the status description, anthropic's native spans a served model name
of any length and token counts as answered. With the guard, a content sentinel placed there reaches
none of their spans, strings are cut at ``OTEL_SAMPLING_ATTRIBUTE_MAX_LENGTH`` and
integers beyond int64 are dropped; status codes stay. Our own spans are the same either way.
"""

from __future__ import annotations

import anthropic
import anyio
import mcp_types as types
import pytest
from opentelemetry.trace import StatusCode

from conftest import TRACER_PROVIDER
from drivers import call
from otel_sampling import names
from otel_sampling.foreign_spans import FOREIGN_SCOPES
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.settings import DEFAULT_ATTRIBUTE_MAX_LENGTH

SENTINEL = "SNTL-4b7e19d2c0"
LONG_MODEL = 5000  # characters of the served model name the fake provider reports


@pytest.fixture(params=[False, True], ids=["default", "guarded"])
def guarded(request, telemetry, monkeypatch):
    """Both instrumentors, the guard on or off; yields whether it is on."""
    if request.param:
        monkeypatch.setenv(names.ENV_GUARD_FOREIGN_SPANS, "true")
    instrumentors = [MCPSamplingInstrumentor(), AnthropicInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    yield request.param
    for instrumentor in instrumentors:
        instrumentor.uninstrument()


def texts(span) -> list[str]:
    """Every string a span exports: status description, attribute and event attribute values."""
    values = [span.status.description or "", *span.attributes.values()]
    values += [v for event in span.events for v in (event.attributes or {}).values()]
    flat = [x for v in values for x in (v if isinstance(v, (list, tuple)) else [v])]
    return [x for x in flat if isinstance(x, str)]


def foreign(telemetry) -> list:
    return [s for s in telemetry.spans(scope=None) if s.instrumentation_scope.name.startswith(FOREIGN_SCOPES)]


def test_mcp_spans_lose_the_hosts_error_text(guarded, telemetry):
    async def raising(ctx, params):
        raise RuntimeError(f"host failure {SENTINEL}")

    async def declining(ctx, params):
        return types.ErrorData(code=-1, message=f"declined {SENTINEL}")

    for callback in (raising, declining):
        for mode in ("legacy", "auto"):
            anyio.run(call, mode, callback)
    spans = foreign(telemetry)
    assert {s.instrumentation_scope.name for s in spans} == {"mcp-python-sdk"}
    leaked = [s.name for s in spans if any(SENTINEL in t for t in texts(s))]
    assert bool(leaked) is not guarded  # by default mcp copies the text; guarded, no span has it
    errors = [s for s in spans if s.status.status_code is StatusCode.ERROR]
    assert errors and all((s.status.description is None) is guarded for s in errors)
    ours = telemetry.spans(names.SPAN_SAMPLING)
    assert len(ours) == 4 and not any(SENTINEL in t for s in ours for t in texts(s))


def test_anthropic_native_spans_are_capped(guarded, telemetry, fake_provider):
    client = anthropic.Anthropic(base_url=fake_provider.url, api_key="k", max_retries=0, open_telemetry=None)
    kwargs = {"model": "claude-haiku-5-5", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    client.messages.create(**kwargs, extra_headers={"x-fake-scenario": f"long_model={LONG_MODEL}"})
    with pytest.raises(anthropic.InternalServerError):
        client.messages.create(**kwargs, extra_headers={"x-fake-scenario": f"status=500,error_message={SENTINEL}"})
    spans = foreign(telemetry)
    assert spans and {s.instrumentation_scope.name for s in spans} == {"com.anthropic.sdk.python"}
    longest = max(len(t) for s in spans for t in texts(s))
    assert (longest <= DEFAULT_ATTRIBUTE_MAX_LENGTH) is guarded
    assert any(s.status.status_code is StatusCode.ERROR for s in spans)
    if guarded:
        assert all(s.status.description is None for s in spans)


def test_integers_beyond_int64_are_dropped_and_others_kept(guarded, telemetry):
    """A foreign library's span (its tracer scope), with a token count OTLP cannot carry."""
    tracer = TRACER_PROVIDER.get_tracer("com.anthropic.sdk.python")
    with tracer.start_as_current_span("chat", attributes={"gen_ai.usage.input_tokens": 2**64}) as span:
        span.set_attribute("gen_ai.usage.output_tokens", 2**70)
        span.set_attributes({"ok": 7, "flag": True, "many": [1, 2**65, 3]})
    (done,) = foreign(telemetry)
    got = {k: tuple(v) if isinstance(v, tuple) else v for k, v in done.attributes.items()}
    if guarded:
        assert got == {"ok": 7, "flag": True, "many": (1, 3)}
    else:
        assert got == {
            "gen_ai.usage.input_tokens": 2**64,
            "gen_ai.usage.output_tokens": 2**70,
            "ok": 7,
            "flag": True,
            "many": (1, 2**65, 3),
        }
