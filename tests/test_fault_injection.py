"""Fault injection: every internal step of every wrapper, forced to raise, never reaches the host.

Table-driven: a *driver* is a real host workload for one wrapper family (real mcp in-memory sessions
on both protocol paths, client and server side; the real anthropic and openai SDKs, sync and async,
plain, streamed, raw and helper shapes, against the fake provider), run on its success path and on
a host-exception path. A *step* is one internal step a wrapper calls, monkeypatched to raise:

* steps every wrapper reaches through the OTel SDK (tracer ``start_span``, span ``set_attributes``,
  span ``end``, a span processor's ``on_end``, a span exporter's ``export``, counter ``add``,
  (the in-flight store is ours: a host step), histogram ``record``);
* the steps of each family, found by reading each wrapper body in ``otel_sampling/instrumentation``
  and listing every call into our own code that is not the wrapped function (attribute
  extraction, classification, fingerprinting, substitution, the cancel-reason and connection
  maps, the pending-request table, response extraction, stream accumulators, failure
  classification, cost and failover bookkeeping).

Each (driver, step) pair is a test id, run with two faults: a ``RuntimeError`` and an exception
whose ``str()`` and ``repr()`` raise too (the debug log must survive formatting it). Every pair
proves: the step fired (the fault is not vacuous); the host got what the wrapped function
returned or raised, the same object (``is``; a stream is our transparent proxy around that very
object), checked by a recording wrapper installed *below* ours and one *above* ours on every
target; the host-level answer is unchanged; and the fault was logged (ours at DEBUG; the SDK logs
the exporter's). Completeness: every target of every target table is driven by some driver
(checked); every call the wrappers make into our code, read from their byte code, maps to a step
or to the reason it is not one (checked, so a call added later needs its step); every step names
an attribute that exists (``monkeypatch.setattr`` raises otherwise) and fires (checked per pair).
``uninstrument()`` runs inside each pair, under the fault: it is a host call too.

Instrument-time faults (a tracer or meter provider whose ``get_tracer`` / ``get_meter`` raises)
are checked for every instrumentor: ``instrument()`` returns quietly and the host is unaffected.
The added latency of a fault path is measured by the ``soak`` test at the end, not asserted here.
"""

from __future__ import annotations

import contextvars
import gc
import inspect
import logging
import statistics
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, NamedTuple

import anthropic
import anyio
import mcp_types as types
import openai
import pytest
import wrapt
from mcp import Client, MCPError
from opentelemetry import propagate, trace
from opentelemetry.sdk import metrics as sdk_metrics
from opentelemetry.sdk import trace as sdk_trace
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter

from conftest import SPANS, TRACER_PROVIDER
from otel_sampling import names
from otel_sampling.instrumentation import _mcp_host as mcp_host_module
from otel_sampling.instrumentation import anthropic as anthropic_module
from otel_sampling.instrumentation import mcp_server as mcp_server_module
from otel_sampling.instrumentation import mcp_v2 as mcp_v2_module
from otel_sampling.instrumentation import openai as openai_module
from otel_sampling.instrumentation import openai_responses
from otel_sampling.instrumentation._provider import ProviderState
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor
from otel_sampling.instrumentation.streams import AsyncStreamProxy, StreamProxy
from otel_sampling.metrics import InFlight
from otel_sampling.records import identity
from otel_sampling.records.failover import FailoverTracker
from otel_sampling.records.ledger import Ledger
from otel_sampling.records.provider_call import ProviderCall
from otel_sampling.records.sampling import SamplingRecord
from otel_sampling.records.server_sampling import ServerSamplingRecord
from otel_sampling.rules import cost, degraded_mode, endings, substitution
from sampling_server import build_server

SERVED = "claude-sonnet-5-5-20261001"


# ---------------------------------------------------------------- the faults
class WeirdFault(Exception):
    """Our bug at its worst: even formatting it fails."""

    def __str__(self) -> str:
        raise ValueError("str() of the fault failed")

    def __repr__(self) -> str:
        raise ValueError("repr() of the fault failed")


FAULTS = {"runtime": lambda: RuntimeError("injected fault"), "weird": WeirdFault}


class Injector:
    """Raises a new fault each time it is called and counts the calls."""

    def __init__(self, make: Callable[[], Exception]) -> None:
        self.make, self.fired, self.raised = make, 0, []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.fired += 1
        fault = self.make()
        self.raised.append(fault)
        raise fault


def _ours(scope: Any) -> bool:
    return getattr(scope, "name", None) == names.SCOPE_NAME


def _method_for_our_scope(cls: type, name: str, injector: Injector, scope_of: Callable[[Any], Any]):
    """``cls.name`` raising for our instrumentation scope only (the SDKs' own spans must work)."""
    original = getattr(cls, name)

    def patched(self, *args, **kwargs):
        if _ours(scope_of(self)):
            return injector(*args, **kwargs)
        return original(self, *args, **kwargs)
    return patched


class _RaisingProcessor(SpanProcessor):
    def __init__(self, injector: Injector) -> None:
        self.injector = injector

    def on_end(self, span) -> None:
        if _ours(span.instrumentation_scope):
            self.injector()


class _RaisingExporter(SpanExporter):
    def __init__(self, injector: Injector) -> None:
        self.injector = injector

    def export(self, spans):
        if any(_ours(s.instrumentation_scope) for s in spans):
            self.injector()


def _add_processor(processor: SpanProcessor, monkeypatch: pytest.MonkeyPatch) -> None:
    multi = TRACER_PROVIDER._active_span_processor
    monkeypatch.setattr(multi, "_span_processors", (*multi._span_processors, processor))


class Step(NamedTuple):
    """One internal step: ``patch(monkeypatch, injector)`` makes it raise."""

    name: str
    patch: Callable[[pytest.MonkeyPatch, Injector], None]


def _attr(owner: Any, name: str, wrap: Callable[[Injector], Any] = lambda i: i) -> Step:
    label = f"{owner.__name__.rpartition('.')[2]}.{name}"
    return Step(label, lambda mp, inj: mp.setattr(owner, name, wrap(inj)))


def _sdk_scoped(cls: type, name: str, scope_of: Callable[[Any], Any]) -> Step:
    return Step(f"sdk.{cls.__name__}.{name}",
                lambda mp, inj: mp.setattr(cls, name, _method_for_our_scope(cls, name, inj, scope_of)))


SDK_STEPS = [
    _sdk_scoped(sdk_trace.Tracer, "start_span", lambda tracer: tracer._instrumentation_scope),
    _sdk_scoped(sdk_trace.Span, "set_attributes", lambda span: span.instrumentation_scope),
    _sdk_scoped(sdk_trace.Span, "end", lambda span: span.instrumentation_scope),
    Step("span_processor.on_end", lambda mp, inj: _add_processor(_RaisingProcessor(inj), mp)),
    Step("span_exporter.export", lambda mp, inj: _add_processor(SimpleSpanProcessor(_RaisingExporter(inj)), mp)),
    # Only our instrumentors record on the test's meter provider: no scope filter needed.
    _attr(sdk_metrics.Counter, "add"),
    _attr(sdk_metrics.Histogram, "record"),
]
_static = staticmethod

MCP_HOST_STEPS = [
    _attr(SamplingRecord, "__init__"),
    _attr(SamplingRecord, "_describe"),  # attribute extraction
    _attr(SamplingRecord, "activate"),
    _attr(SamplingRecord, "deactivate"),
    _attr(SamplingRecord, "end_with_result"),
    _attr(SamplingRecord, "end_with_error_frame"),
    _attr(SamplingRecord, "end_with_exception"),
    _attr(identity, "fingerprint"),
    _attr(endings, "from_result"),
    _attr(endings, "from_error_frame"),
    _attr(endings, "from_exception"),
    _attr(substitution, "judge"),
    _attr(degraded_mode, "request_mode"),
    _attr(mcp_v2_module._CancelReasons, "pop"),
    _attr(mcp_v2_module.State, "server_facts"),
    _attr(mcp_host_module.Connections, "describe"),
    _attr(mcp_host_module.Connections, "tool_for"),
    _attr(Ledger, "note_ending"),
    _attr(mcp_host_module, "parent_of"),
    _attr(InFlight, "add"),  # in-flight counts (an asynchronous UpDownCounter: no SDK call per request)
]
MCP_SERVER_STEPS = [
    _attr(ServerSamplingRecord, "__init__"),
    _attr(ServerSamplingRecord, "end_with_result"),
    _attr(ServerSamplingRecord, "end_with_exception"),
    _attr(ServerSamplingRecord, "end_unanswered"),
    _attr(ServerSamplingRecord, "span", property),
    _attr(mcp_server_module._Pending, "add"),
    _attr(mcp_server_module._Pending, "take"),
    _attr(mcp_server_module, "_names_of"),
    _attr(mcp_server_module, "parent_of"),
    _attr(endings, "from_result"),
    _attr(endings, "from_error_frame"),
]
PROVIDER_STEPS = [
    _attr(ProviderCall, "__init__"),
    _attr(ProviderCall, "activate"),
    _attr(ProviderCall, "deactivate"),
    _attr(ProviderCall, "end"),
    _attr(ProviderState, "parsed"),
    _attr(ProviderState, "server_of"),
    _attr(ProviderState, "new_accumulator"),
    _attr(ProviderState, "decode_raw"),
    _attr(FailoverTracker, "observe"),
    _attr(degraded_mode, "stamped_reasons"),
    _attr(cost, "price_for"),
]
SYNC_PROVIDER_STEPS = [_attr(StreamProxy, "__init__")]
ASYNC_PROVIDER_STEPS = [_attr(AsyncStreamProxy, "__init__")]
ANTHROPIC_STEPS = [
    _attr(anthropic_module._State, "request_of"),
    _attr(anthropic_module._State, "response_of", _static),
    _attr(anthropic_module._State, "failure"),
    _attr(anthropic_module.StreamAccumulator, "observe"),
    _attr(anthropic_module.StreamAccumulator, "response"),
]
OPENAI_STEPS = [
    _attr(openai_module._State, "request_of"),
    _attr(openai_module._State, "response_of"),
    _attr(openai_module._State, "failure"),
    _attr(openai_module._State, "new_accumulator"),
    _attr(openai_module.StreamAccumulator, "observe"),
    _attr(openai_module.StreamAccumulator, "response"),
    _attr(openai_responses.ResponsesStreamAccumulator, "observe"),
    _attr(openai_responses.ResponsesStreamAccumulator, "response"),
    _attr(propagate, "inject"),  # the trace context openai's requests carry (its SDK sends none)
]


# ---------------------------------------------------------------- recording wrappers below and above ours
_call_id: ContextVar[object | None] = ContextVar("fault_injection_call", default=None)


class Sandwich:
    """A recording wrapper below ours (what the SDK's function returned or raised) and one above
    ours (what the host received), on every target of the given tables."""

    def __init__(self, targets) -> None:
        self.slots = []
        for target in targets:
            self.slots.append((f"{target.module}.{target.attribute}", *_resolve(target)))
        self.below: dict[object, list] = {}
        self.above: list = []

    def _recorder(self, key: str, is_async: bool, above: bool):
        def record(outcome):
            if above:
                self.above.append((key, _call_id.get(), outcome))
            else:
                self.below.setdefault(_call_id.get(), []).append(outcome)

        if is_async:
            async def wrapper(wrapped, instance, args, kwargs):
                token = _call_id.set(object()) if above else None
                try:
                    try:
                        out = await wrapped(*args, **kwargs)
                    except BaseException as exc:
                        record(("raise", exc))
                        raise
                    record(("return", out))
                    return out
                finally:
                    if token is not None:
                        _call_id.reset(token)
        else:
            def wrapper(wrapped, instance, args, kwargs):
                token = _call_id.set(object()) if above else None
                try:
                    try:
                        out = wrapped(*args, **kwargs)
                    except BaseException as exc:
                        record(("raise", exc))
                        raise
                    record(("return", out))
                    return out
                finally:
                    if token is not None:
                        _call_id.reset(token)
        return wrapper

    def install(self, above: bool) -> None:
        for key, owner, name, original in self.slots:
            wrapt.wrap_function_wrapper(owner, name, self._recorder(key, inspect.iscoroutinefunction(original), above))

    def restore(self) -> None:
        for _key, owner, name, original in self.slots:
            setattr(owner, name, original)

    def called(self) -> set[str]:
        return {key for key, _cid, _outcome in self.above}

    def check(self) -> None:
        """Every call the host made got exactly what the wrapped function gave, the same object."""
        for key, cid, (kind, obj) in self.above:
            below = self.below.get(cid, [])
            assert len(below) == 1, f"{key}: the wrapped function ran {len(below)} times for one call"
            below_kind, below_obj = below[0]
            assert kind == below_kind, f"{key}: the host got a {kind}, the function gave a {below_kind}"
            if obj is below_obj:
                continue
            # A stream reaches the host as our transparent proxy around the very same object.
            assert isinstance(obj, wrapt.ObjectProxy) and obj.__wrapped__ is below_obj, (
                f"{key}: the host got {type(obj).__name__}, not the object the function gave")


def _resolve(target):
    import importlib

    module = importlib.import_module(target.module)
    *path, name = target.attribute.split(".")
    owner = module
    for part in path:
        owner = getattr(owner, part)
    return owner, name, vars(owner)[name]


# ---------------------------------------------------------------- drivers: real host workloads
def _answer() -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(text="ok"), model=SERVED,
                                     stop_reason="endTurn")


def _sampling_request() -> types.CreateMessageRequest:
    return types.CreateMessageRequest(params=types.CreateMessageRequestParams(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(text="x"))], max_tokens=5,
        model_preferences=types.ModelPreferences(hints=[types.ModelHint(name="claude-sonnet")])))


def drive_mcp_host(mode: str) -> None:
    """A tool call that samples (end to end), then the sampling dispatch called directly with a
    callback that returns a result, returns an error frame, and raises."""
    behaviour: dict[str, Any] = {}

    async def callback(ctx, params):
        if "raise" in behaviour:
            raise behaviour["raise"]
        return behaviour.get("return", _answer())

    async def main():
        async with Client(build_server(), mode=mode, sampling_callback=callback) as client:
            out = await client.call_tool("sample", {"hint": "claude-sonnet", "include_context": "thisServer"})
            assert out.content[0].text == f"{SERVED}|endTurn"
            ctx = type("Ctx", (), {"request_id": 7, "meta": {
                "traceparent": "00-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-bbbbbbbbbbbbbbbb-01"}})()
            for answer in (_answer(), types.ErrorData(code=-1, message="User rejected sampling request")):
                behaviour["return"] = answer
                assert await client.session.dispatch_input_request(ctx, _sampling_request()) is answer
            behaviour["raise"] = error = LookupError("the host's own failure")
            with pytest.raises(LookupError) as info:
                await client.session.dispatch_input_request(ctx, _sampling_request())
            assert info.value is error

    anyio.run(main)


def drive_mcp_server(mode: str) -> None:
    """The server's sampling tool, answered, then denied (legacy: the server gets an MCPError)."""
    answers: list[Any] = [_answer(), types.ErrorData(code=-1, message="User rejected sampling request")]

    async def callback(ctx, params):
        return answers.pop(0)

    async def main():
        async with Client(build_server(), mode=mode, sampling_callback=callback) as client:
            out = await client.call_tool("sample", {"hint": "claude-sonnet", "include_context": "thisServer"})
            assert out.content[0].text == f"{SERVED}|endTurn"
            with pytest.raises(MCPError, match="User rejected sampling request"):  # as without instrumentation
                await client.call_tool("sample", {"hint": "claude-sonnet", "include_context": "thisServer"})

    anyio.run(main)


ANTHROPIC_KW = {"model": "claude-req", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}


def _scenario(value: str) -> dict:
    return {"extra_headers": {"x-fake-scenario": value}}


def drive_anthropic_sync(fp) -> None:
    c = anthropic.Anthropic(base_url=fp.url, api_key="sk-fake", max_retries=0)
    assert c.messages.create(**ANTHROPIC_KW).stop_reason == "end_turn"
    assert [e.type for e in c.messages.create(**ANTHROPIC_KW, stream=True)][-1] == "message_stop"
    with c.messages.stream(**ANTHROPIC_KW) as stream:
        assert stream.get_final_message().stop_reason == "end_turn"
    with c.messages.with_streaming_response.create(**ANTHROPIC_KW) as raw:
        assert raw.parse().stop_reason == "end_turn"
    assert c.messages.with_raw_response.create(**ANTHROPIC_KW).parse().stop_reason == "end_turn"
    with pytest.raises(anthropic.OverloadedError) as info:
        c.messages.create(**ANTHROPIC_KW, **_scenario("status=529"))
    assert info.value.status_code == 529
    with pytest.raises(anthropic.APIStatusError) as info:
        list(c.messages.create(**ANTHROPIC_KW, stream=True, **_scenario("midstream_error")))
    assert info.value.type == "overloaded_error"


def drive_anthropic_async(fp) -> None:
    async def main():
        c = anthropic.AsyncAnthropic(base_url=fp.url, api_key="sk-fake", max_retries=0)
        assert (await c.messages.create(**ANTHROPIC_KW)).stop_reason == "end_turn"
        assert [e.type async for e in await c.messages.create(**ANTHROPIC_KW, stream=True)][-1] == "message_stop"
        async with c.messages.with_streaming_response.create(**ANTHROPIC_KW) as raw:
            assert (await raw.parse()).stop_reason == "end_turn"
        assert (await (await c.messages.with_raw_response.create(**ANTHROPIC_KW)).parse()).stop_reason == "end_turn"
        with pytest.raises(anthropic.OverloadedError):
            await c.messages.create(**ANTHROPIC_KW, **_scenario("status=529"))
        await c.close()

    anyio.run(main)


CHAT = {"model": "gpt-req", "messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 64}
RESP = {"model": "gpt-req", "input": "hi", "max_output_tokens": 64}
USAGE = {"stream_options": {"include_usage": True}}


def drive_openai_sync(fp) -> None:
    c = openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0)
    assert c.chat.completions.create(**CHAT).choices[0].finish_reason == "stop"
    chunks = list(c.chat.completions.create(**CHAT, stream=True))
    assert [k.choices[0].finish_reason for k in chunks if k.choices][-1] == "stop"
    with c.chat.completions.stream(**CHAT, **USAGE) as stream:
        assert stream.get_final_completion().choices[0].finish_reason == "stop"
    assert c.responses.create(**RESP).status == "completed"
    with c.responses.stream(**RESP) as stream:
        assert stream.get_final_response().status == "completed"
    assert c.chat.completions.with_raw_response.create(**CHAT).parse().choices[0].finish_reason == "stop"
    with c.chat.completions.with_streaming_response.create(**CHAT) as raw:
        assert raw.parse().choices[0].finish_reason == "stop"
    with pytest.raises(openai.RateLimitError) as info:
        c.chat.completions.create(**CHAT, **_scenario("status=429"))
    assert info.value.status_code == 429


def drive_openai_async(fp) -> None:
    async def main():
        c = openai.AsyncOpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0)
        assert (await c.chat.completions.create(**CHAT)).choices[0].finish_reason == "stop"
        chunks = [k async for k in await c.chat.completions.create(**CHAT, stream=True)]
        assert [k.choices[0].finish_reason for k in chunks if k.choices][-1] == "stop"
        async with c.chat.completions.stream(**CHAT, **USAGE) as stream:
            assert (await stream.get_final_completion()).choices[0].finish_reason == "stop"
        async with c.responses.stream(**RESP) as stream:
            assert (await stream.get_final_response()).status == "completed"
        async with c.chat.completions.with_streaming_response.create(**CHAT) as raw:
            assert (await raw.parse()).choices[0].finish_reason == "stop"
        raw = await c.chat.completions.with_raw_response.create(**CHAT)
        assert raw.parse().choices[0].finish_reason == "stop"
        with pytest.raises(openai.RateLimitError):
            await c.chat.completions.create(**CHAT, **_scenario("status=429"))
        await c.close()

    anyio.run(main)


class Driver(NamedTuple):
    instrumentor: type
    run: Callable[[Any], None]  # called with the fake provider
    steps: list[Step]


DRIVERS = {
    "mcp_host_legacy": Driver(MCPSamplingInstrumentor, lambda fp: drive_mcp_host("legacy"), MCP_HOST_STEPS),
    "mcp_host_2026": Driver(MCPSamplingInstrumentor, lambda fp: drive_mcp_host("auto"), MCP_HOST_STEPS),
    "mcp_server_legacy": Driver(MCPServerSamplingInstrumentor, lambda fp: drive_mcp_server("legacy"), MCP_SERVER_STEPS),
    "mcp_server_2026": Driver(MCPServerSamplingInstrumentor, lambda fp: drive_mcp_server("auto"), MCP_SERVER_STEPS),
    "anthropic_sync": Driver(AnthropicInstrumentor, drive_anthropic_sync,
                             PROVIDER_STEPS + SYNC_PROVIDER_STEPS + ANTHROPIC_STEPS),
    "anthropic_async": Driver(AnthropicInstrumentor, drive_anthropic_async,
                              PROVIDER_STEPS + ASYNC_PROVIDER_STEPS + ANTHROPIC_STEPS),
    "openai_sync": Driver(OpenAIInstrumentor, drive_openai_sync, PROVIDER_STEPS + SYNC_PROVIDER_STEPS + OPENAI_STEPS),
    "openai_async": Driver(OpenAIInstrumentor, drive_openai_async,
                           PROVIDER_STEPS + ASYNC_PROVIDER_STEPS + OPENAI_STEPS),
}
# Targets no driver here reaches, and why: their wrappers call nothing of ours but a ContextVar
# set (the transport marks); test_mcp_sampling.py (stdio) and test_mcp_server_side.py (streamable
# HTTP) drive them for real.
UNDRIVEN = {"mcp.client.stdio._create_platform_compatible_process",
            "mcp.client.streamable_http.StreamableHTTPTransport.__init__"}
# Steps a driver cannot reach, by (driver, step): each excluded pair says why.
UNREACHABLE = {
    # The 2026-07-28 path has no error frame the server can see: a denial ends "unanswered".
    ("mcp_server_2026", "endings.from_error_frame"): "no error frame reaches the server on this path",
    ("mcp_server_2026", "ServerSamplingRecord.end_with_exception"): "the server's send is not used on this path",
    ("mcp_server_2026", "ServerSamplingRecord.end_with_result"): "ends through the pending table, not the send",
    ("mcp_server_legacy", "_Pending.add"): "legacy requests are never pending",
    ("mcp_server_legacy", "ServerSamplingRecord.end_unanswered"): "a legacy request always gets its answer or error",
    ("mcp_server_2026", "ServerSamplingRecord.span"): "read by the legacy send only",
    ("mcp_server_legacy", "_Pending.take"): "only a 2026-07-28 retry takes a pending request",
    ("mcp_server_legacy", "mcp_server.parent_of"): "the legacy send has the ambient parent",
    ("mcp_server_legacy", "endings.from_result"): "ServerSamplingRecord classifies a result itself",
    ("mcp_server_2026", "endings.from_result"): "ServerSamplingRecord classifies a result itself",
    **{(d, "Counter.add"): "the cost counter needs a policy price table; provider calls record histograms"
       for d in DRIVERS if d.startswith(("anthropic", "openai"))},
    **{(d, "cost.price_for"): "the price lookup runs only with a policy price table (none here)"
       for d in DRIVERS if d.startswith(("anthropic", "openai"))},
    **{(d, "ProviderState.new_accumulator"): "openai's state picks its accumulator itself (its own step)"
       for d in DRIVERS if d.startswith("openai")},
}


# A call's context is detached by its own deactivate(): if that raised, our span would stay current
# in the calling context (the host's next spans its children). OpenTelemetry's detach never raises
# (it logs), so only forcing the step reaches this; a synchronous host call shows it.
LEAVES_SPAN_CURRENT = {"ProviderCall.deactivate"}


def _pairs():
    for driver_name, driver in DRIVERS.items():
        for step in SDK_STEPS + driver.steps:
            if (driver_name, step.name) not in UNREACHABLE:
                yield pytest.param(driver_name, step, id=f"{driver_name}-{step.name}")


def _tables() -> dict[type, tuple]:
    return {cls: cls()._table()[0] for cls in
            (MCPSamplingInstrumentor, MCPServerSamplingInstrumentor, AnthropicInstrumentor, OpenAIInstrumentor)}


@pytest.fixture
def sandwiched(telemetry, caplog):
    """A runner: instrument one driver's instrumentor between two recording wrappers, run the
    driver, then uninstrument and restore every target; returns the recordings."""
    caplog.set_level(logging.DEBUG)

    def run(driver: Driver, fp) -> Sandwich:
        sandwich = Sandwich(_tables()[driver.instrumentor])
        instrumentor = driver.instrumentor()
        sandwich.install(above=False)
        context = contextvars.copy_context()  # the host's context: what we leave current in it is checked
        try:
            instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
            sandwich.install(above=True)
            context.run(driver.run, fp)
        finally:
            instrumentor.uninstrument()
            sandwich.restore()
        sandwich.left_current = context.run(trace.get_current_span)
        return sandwich

    return run


def _logged(caplog, injector: Injector) -> bool:
    return any(r.exc_info and r.exc_info[1] in injector.raised for r in caplog.records)


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")  # a __del__ that raised
@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize(("driver_name", "step"), list(_pairs()))
def test_an_internal_step_that_raises_never_reaches_the_host(driver_name, step, fault, sandwiched, fake_provider,
                                                             monkeypatch, caplog):
    injector = Injector(FAULTS[fault])
    step.patch(monkeypatch, injector)
    sandwich = sandwiched(DRIVERS[driver_name], fake_provider)  # the host-level answers are asserted inside
    assert injector.fired, f"{step.name} never ran under {driver_name}: the pair is vacuous"
    sandwich.check()
    assert _logged(caplog, injector), f"the {step.name} failure was not logged"
    if step.name not in LEAVES_SPAN_CURRENT:  # no span of ours stays current in the host's context
        assert sandwich.left_current is trace.INVALID_SPAN, sandwich.left_current


def test_every_target_of_every_table_is_driven(sandwiched, fake_provider):
    driven: set[str] = set()
    for driver in DRIVERS.values():
        driven |= sandwiched(driver, fake_provider).called()
    every = {f"{t.module}.{t.attribute}" for table in _tables().values() for t in table}
    assert every - driven == UNDRIVEN


def test_every_unreachable_pair_names_a_real_driver_and_step():
    steps = {s.name for d in DRIVERS.values() for s in SDK_STEPS + d.steps}
    assert {d for d, _ in UNREACHABLE} <= set(DRIVERS)
    assert {s for _, s in UNREACHABLE} <= steps


# ---------------------------------------------------------------- completeness of the step table
# Every call a wrapper makes into our code, read from the wrappers' byte code (the factories in the
# target tables, their nested wrapper functions, and our module-level helpers they call, recursively):
# module functions, our classes (constructors) and the methods of the instrumentors' state and of
# the classes those create. Each maps to the step that makes it raise, or says why it is not one.
# A call added to a wrapper later fails test_every_call_a_wrapper_makes_into_our_code_is_a_step.
COVERED = {
    "SamplingRecord()": "SamplingRecord.__init__",
    "ServerSamplingRecord()": "ServerSamplingRecord.__init__",
    "ProviderCall()": "ProviderCall.__init__",
    "StreamProxy()": "StreamProxy.__init__",
    "AsyncStreamProxy()": "AsyncStreamProxy.__init__",
    ".activate": "SamplingRecord.activate",
    ".deactivate": "SamplingRecord.deactivate",
    ".end": "ProviderCall.end",
    ".end_with_result": "SamplingRecord.end_with_result",
    ".end_with_error_frame": "SamplingRecord.end_with_error_frame",
    ".end_with_exception": "SamplingRecord.end_with_exception",
    ".end_unanswered": "ServerSamplingRecord.end_unanswered",
    ".end_with_cancellation": "not a step here: reached by a peer's cancel; it ends through classify "
                              "and the same span and metric steps (test_mcp_sampling.py drives cancels)",
    ".span": "ServerSamplingRecord.span",
    ".request_of": "_State.request_of",
    ".failure": "_State.failure",
    ".error_type": "not a step: the ending's field, read, not called",
    ".parsed": "ProviderState.parsed",
    ".decode_raw": "ProviderState.decode_raw",
    ".new_accumulator": "ProviderState.new_accumulator",
    ".input_content": "not a step here: only with content capture on; _provider._input_content guards it "
                      "(test_provider_content.py breaks it)",
    ".close": "not a step: the SDK's own close (the stream helpers' raw stream), wrapped by the host's call",
    ".note": "not a step here: reached by a peer's notifications/cancelled; its wrapper guards it",
    ".pop": "_CancelReasons.pop",
    ".describe": "Connections.describe",
    ".tool_for": "Connections.tool_for",
    ".server_facts": "State.server_facts",
    ".take": "_Pending.take",
    ".add": "_Pending.add",
    "_mcp_host.start_record": "SamplingRecord.__init__",  # guards: their failures are their steps'
    "mcp_v2._finish": "SamplingRecord.end_with_result",
    "mcp_v2._end_with_return": "endings.from_result",
    "_mcp_protocol.parent_of": "_mcp_host.parent_of",  # and mcp_server.parent_of, where the server calls it
    "_mcp_protocol.path_of": "not a step: a tuple lookup",
    "mcp_server._start_rpc": "ServerSamplingRecord.__init__",
    "mcp_server._make_current": "ServerSamplingRecord.span",
    "mcp_server._answer": "_Pending.take",
    "mcp_server._ask": "_Pending.add",
    "mcp_server._guarded": "ServerSamplingRecord.end_with_result",
    "mcp_server._names_of": "mcp_server._names_of",
    "mcp_server._state_key": "not a step: an isinstance check",
    "_provider._start": "ProviderCall.__init__",
    "_provider._input_content": "not a step here: only with content capture on (see .input_content)",
    "_provider._fail": "_State.failure",
    "_provider._succeed": "ProviderCall.end",
    "_provider._proxy_or_end": "StreamProxy.__init__",
    "_provider.is_object": "not a step: an isinstance check",
    "_provider._raw": "ProviderState.decode_raw",
    "_provider._end_unseen": "ProviderCall.end",
    "_provider._end_unparsed": "ProviderCall.end",
    "_provider._server": "ProviderState.server_of",  # its guard
    "_provider._with_trace_context": "propagate.inject",
    ".server_of": "ProviderState.server_of",
}


def _code_objects(code):
    yield code
    for const in code.co_consts:
        if inspect.iscode(const):
            yield from _code_objects(const)


def _calls_into_our_code() -> set[str]:
    """Names of our functions, classes and methods the wrappers of every target table reach."""
    reached: set[str] = set()
    classes: set[type] = set()
    seen: set = set()

    def walk(function, into: set[str]) -> None:
        if function in seen:
            return
        seen.add(function)
        for code in _code_objects(function.__code__):
            for name in code.co_names:
                value = function.__globals__.get(name)
                module = getattr(value, "__module__", None) or ""
                if inspect.isfunction(value) and module.startswith("otel_sampling.instrumentation"):
                    into.add(f"{module.rpartition('.')[2]}.{name}")
                    walk(value, into)
                elif inspect.isclass(value) and module.startswith("otel_sampling"):
                    into.add(f"{name}()")
                    classes.add(value)
                elif name not in function.__globals__:
                    into.add(f".{name}")  # an attribute: kept below when it names one of our methods

    for cls in _tables():
        table, state_class = cls()._table()
        classes.add(state_class)
        for klass in state_class.__mro__:  # instrument() time: only the classes it creates count (their methods)
            if klass.__module__.startswith("otel_sampling") and "__init__" in vars(klass):
                walk(vars(klass)["__init__"], set())
        for target in table:
            walk(target.factory, reached)
    methods = {name for cls in classes for klass in cls.__mro__ if klass.__module__.startswith("otel_sampling")
               for name, value in vars(klass).items() if callable(value) or isinstance(value, property)}
    ours = {name for name in reached if not name.startswith(".") or name[1:] in methods}
    return {name for name in ours if not name.startswith(".__")}


def test_every_call_a_wrapper_makes_into_our_code_is_a_step():
    assert _calls_into_our_code() == set(COVERED)
    steps = {s.name for d in DRIVERS.values() for s in d.steps}
    assert {v for v in COVERED.values() if not v.startswith("not a step")} <= steps


# ---------------------------------------------------------------- faults at instrument() time
class RaisingTracerProvider(sdk_trace.TracerProvider):
    def get_tracer(self, *args, **kwargs):
        raise RuntimeError("broken tracer provider")


class RaisingMeterProvider(sdk_metrics.MeterProvider):
    def get_meter(self, *args, **kwargs):
        raise RuntimeError("broken meter provider")


@pytest.mark.parametrize("provider", ["tracer_provider", "meter_provider"])
@pytest.mark.parametrize("driver_name", ["mcp_host_legacy", "mcp_server_2026", "anthropic_sync", "openai_async"])
def test_a_provider_that_raises_at_instrument_leaves_the_host_alone(driver_name, provider, telemetry, fake_provider,
                                                                     caplog):
    driver = DRIVERS[driver_name]
    providers = {"tracer_provider": TRACER_PROVIDER, "meter_provider": telemetry.meter_provider}
    providers[provider] = RaisingTracerProvider() if provider == "tracer_provider" else RaisingMeterProvider()
    sandwich = Sandwich(_tables()[driver.instrumentor])
    instrumentor = driver.instrumentor()
    caplog.set_level(logging.DEBUG)
    # A stream an earlier test dropped ends its span when collected: let that happen before, not during.
    gc.collect()
    SPANS.clear()
    try:
        instrumentor.instrument(**providers)  # must not raise
        sandwich.install(above=True)
        driver.run(fake_provider)
    finally:
        instrumentor.uninstrument()
        sandwich.restore()
    assert [s.name for s in telemetry.spans()] == [] and telemetry.points(names.METRIC_SAMPLING_REQUESTS) == []
    assert any("could not set up its telemetry" in r.getMessage() for r in caplog.records)


# ---------------------------------------------------------------- measured, not asserted: make soak
def _anthropic_calls(fp, calls: int) -> list[float]:
    c = anthropic.Anthropic(base_url=fp.url, api_key="sk-fake", max_retries=0, open_telemetry=False)
    durations = []
    for _ in range(calls):
        start = time.perf_counter()
        assert c.messages.create(**ANTHROPIC_KW).stop_reason == "end_turn"
        durations.append(time.perf_counter() - start)
    c.close()
    return durations


def _dispatch_calls(fp, calls: int) -> list[float]:
    """``calls`` sampling dispatches in one live legacy session (no network: our share shows)."""
    answer = _answer()

    async def callback(ctx, params):
        return answer

    async def main():
        durations = []
        async with Client(build_server(), mode="legacy", sampling_callback=callback) as client:
            ctx, request = type("Ctx", (), {"request_id": 7, "meta": None})(), _sampling_request()
            for _ in range(calls):
                start = time.perf_counter()
                assert await client.session.dispatch_input_request(ctx, request) is answer
                durations.append(time.perf_counter() - start)
        return durations

    return anyio.run(main)


@pytest.mark.soak
@pytest.mark.parametrize(("driver_name", "calls", "rounds", "measure"), [
    ("anthropic_sync", 40, 15, _anthropic_calls), ("mcp_host_legacy", 1000, 3, _dispatch_calls)])
def test_measure_the_added_latency_of_fault_paths(driver_name, calls, rounds, measure, telemetry, fake_provider,
                                                  monkeypatch, capsys):
    """Median time of one call, uninstrumented, instrumented and healthy, and with each step
    raising (short rounds interleaved, one process: the machine's load drifts); printed, never
    asserted (the machine is shared). A step the call never reaches is reported as such: its row
    shows the noise."""
    driver = DRIVERS[driver_name]
    rows: list[str | Step | None] = ["uninstrumented", None, *SDK_STEPS, *driver.steps]
    times: dict[str, list[float]] = {}
    fired: dict[str, int] = {}
    for _ in range(rounds):
        for row in rows:
            name = row if isinstance(row, str) else row.name if row else "healthy"
            with monkeypatch.context() as mp:
                injector = Injector(FAULTS["runtime"])
                if isinstance(row, Step):
                    row.patch(mp, injector)
                instrumentor = driver.instrumentor()
                if row != "uninstrumented":
                    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
                try:
                    times.setdefault(name, []).extend(measure(fake_provider, calls))
                finally:
                    instrumentor.uninstrument()
                fired[name] = fired.get(name, 0) + injector.fired
    healthy = statistics.median(times["healthy"]) * 1e6
    with capsys.disabled():
        print(f"\n{driver_name}: median µs per call, N={calls * rounds} calls per row; added = row - healthy")
        for name, samples in times.items():
            median = statistics.median(samples) * 1e6
            note = "" if name in ("uninstrumented", "healthy") or fired[name] else "  (step not on this call's path)"
            print(f"  {name:40s} {median:9.1f}  added {median - healthy:+8.1f}{note}")
