"""Fault injection: every internal step of every wrapper, forced to raise, never reaches the host.

Table-driven. A *driver* (``tests/drivers.py``) is a real host workload for one wrapper family
(real mcp in-memory sessions on both protocol paths, client and server side; the real anthropic and
openai SDKs, sync and async, plain, streamed, raw and helper shapes; google-genai's models, streams
and chats and LiteLLM's completion, Responses and Router calls where installed; all against the fake
provider), run
on its success path and on a host-exception path. A *step* is one internal step a wrapper reaches,
monkeypatched to raise a ``RuntimeError``:

* steps every wrapper reaches through the OTel SDK (tracer ``start_span``, span ``set_attributes``,
  span ``end``, a span processor's ``on_end``, a span exporter's ``export``, counter ``add``,
  histogram ``record``);
* the steps of each family, read from the wrapper bodies in ``otel_sampling/instrumentation``
  (attribute extraction, classification, fingerprinting, substitution, the cancel-reason and
  connection maps, the pending-request table, response extraction, stream accumulators, failure
  classification, cost and failover bookkeeping; the in-flight store is ours: a host step).

Each (driver, step) pair is a test id. Every pair proves: the step fired (the fault is not
vacuous); the host got what the wrapped function returned or raised, the same object (``is``; a
stream is our transparent proxy around that very object), checked by a recording wrapper installed
*below* ours and one *above* ours on every target; the host-level answer is unchanged; and the
fault was logged (ours at DEBUG; the SDK logs the exporter's). ``uninstrument()`` runs inside each
pair, under the fault: it is a host call too. An exception whose ``str()`` and ``repr()`` raise
(the debug log must survive formatting it) is forced on a few representative steps.

The boundary: every wrapper calls into our code through one guard
(``otel_sampling.instrumentation._provider.guarded``), checked directly: run through every driver, the
guard sees a step under every driven target but the few that call nothing of ours (each says why),
and each step it sees, forced to raise there, leaves the host's answers and objects unchanged and is
logged with its name. So a call a wrapper adds later is contained whether or not the step table
names it. Every target of every target table is driven by some driver (checked); every step names
an attribute that exists (``monkeypatch.setattr`` raises otherwise) and fires (checked per pair).

Instrument-time faults (a tracer or meter provider whose ``get_tracer`` / ``get_meter`` raises)
are checked for every instrumentor: ``instrument()`` returns quietly and the host is unaffected.
The added latency of a fault path is measured by the ``soak`` test at the end, not asserted here.
"""

from __future__ import annotations

import contextvars
import gc
import logging
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest

pytest.importorskip("mcp_types", reason="mcp 2.x sessions")

import anthropic
import anyio
from mcp import Client
from opentelemetry import propagate, trace
from opentelemetry.sdk import metrics as sdk_metrics
from opentelemetry.sdk import trace as sdk_trace
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter

from conftest import SPANS, TRACER_PROVIDER
from drivers import (
    ANTHROPIC_KW,
    DRIVERS,
    HAS_GEMINI,
    HAS_LITELLM,
    UNDRIVEN,
    Driver,
    Sandwich,
    answer,
    current_target,
    sampling_request,
    tables,
)
from otel_sampling import names, price_source
from otel_sampling.instrumentation import _mcp_connections as mcp_connections_module
from otel_sampling.instrumentation import _mcp_host as mcp_host_module
from otel_sampling.instrumentation import _mcp_tool_outcomes as mcp_tool_outcomes_module
from otel_sampling.instrumentation import _provider, openai_responses
from otel_sampling.instrumentation import anthropic as anthropic_module
from otel_sampling.instrumentation import mcp_server as mcp_server_module
from otel_sampling.instrumentation import mcp_v2 as mcp_v2_module
from otel_sampling.instrumentation import openai as openai_module
from otel_sampling.instrumentation._provider import ProviderState
from otel_sampling.instrumentation.streams import AsyncStreamProxy, StreamProxy
from otel_sampling.metrics import InFlight
from otel_sampling.records import ledger as ledger_module
from otel_sampling.records import run as run_records
from otel_sampling.records.failover import FailoverTracker
from otel_sampling.records.ledger import Ledger
from otel_sampling.records.provider_call import ProviderCall
from otel_sampling.records.sampling import SamplingRecord
from otel_sampling.records.server_sampling import ServerSamplingRecord
from otel_sampling.rules import call_checks as call_checks_module
from otel_sampling.rules import endings, verdict
from sampling_server import build_server


# ---------------------------------------------------------------- the faults
class WeirdFault(Exception):
    """Our bug at its worst: even formatting it fails."""

    def __str__(self) -> str:
        raise ValueError("str() of the fault failed")

    def __repr__(self) -> str:
        raise ValueError("repr() of the fault failed")


def runtime_fault() -> Exception:
    return RuntimeError("injected fault")


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
    return Step(
        f"sdk.{cls.__name__}.{name}",
        lambda mp, inj: mp.setattr(cls, name, _method_for_our_scope(cls, name, inj, scope_of)),
    )


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
    _attr(ledger_module, "fingerprint"),
    _attr(endings, "from_result"),
    _attr(endings, "from_error_frame"),
    _attr(endings, "from_exception"),
    _attr(verdict, "judge_substitution"),
    _attr(verdict, "judge_request"),
    _attr(mcp_v2_module._CancelReasons, "pop"),
    _attr(mcp_v2_module.State, "server_facts"),
    _attr(mcp_connections_module.Connections, "describe"),
    _attr(mcp_connections_module.Connections, "tool_for"),
    _attr(Ledger, "note_ending"),
    _attr(mcp_host_module, "parent_of"),
    _attr(InFlight, "add"),  # in-flight counts (an asynchronous UpDownCounter: no SDK call per request)
    _attr(run_records, "open_request_run"),  # a request no run owns is its own run
    _attr(run_records, "end_request_run"),
    _attr(mcp_tool_outcomes_module, "outcome_of_result"),  # the outcome of the host's tools/call
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
    _attr(verdict, "judge_call"),
    _attr(verdict, "policy_price"),
    _attr(call_checks_module, "judge"),  # what the fallback breaks: truncation, utilization, checks
    # The price source's look-up, price and window (genai-prices, when the prices extra is installed).
    *([_attr(price_source.GenaiPrices, "look_up")] if price_source.installed() is not None else []),
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
GENAI_STEPS: list[Step] = []
if HAS_GEMINI:
    from otel_sampling.instrumentation import google_genai as google_genai_module

    GENAI_STEPS = [
        _attr(google_genai_module._State, "request_of"),
        _attr(google_genai_module._State, "parsed"),
        _attr(google_genai_module._State, "failure"),
        _attr(google_genai_module._State, "server_of"),
        _attr(google_genai_module.StreamAccumulator, "observe"),
        _attr(google_genai_module.StreamAccumulator, "response"),
        _attr(propagate, "inject"),  # the trace context its requests carry (the SDK sends none)
    ]
LITELLM_STEPS: list[Step] = []
if HAS_LITELLM:
    from otel_sampling.instrumentation import litellm as litellm_module

    LITELLM_STEPS = [
        _attr(litellm_module._State, "request_of"),
        _attr(litellm_module._State, "response_of"),
        _attr(litellm_module._State, "failure"),
        _attr(litellm_module._State, "new_accumulator"),
        _attr(litellm_module._State, "server_of"),
        _attr(litellm_module, "fallback_reason"),  # the Router's fallback hop, read from its metadata
        _attr(litellm_module.ChatStreamAccumulator, "observe"),
        _attr(litellm_module.ChatStreamAccumulator, "response"),
        _attr(openai_responses.ResponsesStreamAccumulator, "observe"),
        _attr(openai_responses.ResponsesStreamAccumulator, "response"),
        _attr(propagate, "inject"),  # the trace context its requests carry (extra_headers)
    ]


# The steps each driver reaches.
STEPS = {
    "mcp_host_legacy": MCP_HOST_STEPS,
    "mcp_host_2026": MCP_HOST_STEPS,
    "mcp_server_legacy": MCP_SERVER_STEPS,
    "mcp_server_2026": MCP_SERVER_STEPS,
    "anthropic_sync": PROVIDER_STEPS + SYNC_PROVIDER_STEPS + ANTHROPIC_STEPS,
    "anthropic_async": PROVIDER_STEPS + ASYNC_PROVIDER_STEPS + ANTHROPIC_STEPS,
    "openai_sync": PROVIDER_STEPS + SYNC_PROVIDER_STEPS + OPENAI_STEPS,
    "openai_async": PROVIDER_STEPS + ASYNC_PROVIDER_STEPS + OPENAI_STEPS,
    **(
        {
            "google_genai_sync": PROVIDER_STEPS + SYNC_PROVIDER_STEPS + GENAI_STEPS,
            "google_genai_async": PROVIDER_STEPS + ASYNC_PROVIDER_STEPS + GENAI_STEPS,
        }
        if HAS_GEMINI
        else {}
    ),
    **(
        {
            "litellm_sync": PROVIDER_STEPS + SYNC_PROVIDER_STEPS + LITELLM_STEPS,
            "litellm_async": PROVIDER_STEPS + ASYNC_PROVIDER_STEPS + LITELLM_STEPS,
        }
        if HAS_LITELLM
        else {}
    ),
}
assert set(STEPS) == set(DRIVERS)


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
    **{
        (d, "Histogram.record"): "the server side records one counter; its tools/call span is no run"
        for d in ("mcp_server_legacy", "mcp_server_2026")
    },
    **{  # a call with no parent span has no failover memory to ask (ProviderCall._publish)
        (d, "FailoverTracker.observe"): "the driver's calls have no parent span"
        for d in DRIVERS
        if d.startswith(("anthropic", "openai", "google_genai", "litellm"))
    },
    **{  # a step the driver's state overrides, or no raw response
        (d, step): reason
        for families, step, reason in (
            (("openai", "litellm"), "ProviderState.new_accumulator", "picks its accumulator itself (its own step)"),
            (("google_genai", "litellm"), "ProviderState.server_of", "reads the server itself (its own step)"),
            (("google_genai",), "ProviderState.parsed", "reads its answers itself (its own step)"),
            (
                ("google_genai", "litellm"),
                "ProviderState.decode_raw",
                "no raw response reaches the caller (google-genai's request returns its own HttpResponse, "
                "LiteLLM its own answers)",
            ),
        )
        for d in DRIVERS
        if d.startswith(families)
    },
}


# A call's context is detached by its own deactivate(): if that raised, our span would stay current
# in the calling context (the host's next spans its children). OpenTelemetry's detach never raises
# (it logs), so only forcing the step reaches this; a synchronous host call shows it.
LEAVES_SPAN_CURRENT = {"ProviderCall.deactivate"}


def _steps(driver_name: str) -> dict[str, Step]:
    return {step.name: step for step in SDK_STEPS + STEPS[driver_name]}


def _pairs():
    for driver_name in DRIVERS:
        for step in _steps(driver_name).values():
            if (driver_name, step.name) not in UNREACHABLE:
                yield pytest.param(driver_name, step, id=f"{driver_name}-{step.name}")


@pytest.fixture
def sandwiched(telemetry, caplog):
    """A runner: instrument one driver's instrumentor between two recording wrappers, run the
    driver, then uninstrument and restore every target; returns the recordings."""
    caplog.set_level(logging.DEBUG)

    def run(driver: Driver, fp) -> Sandwich:
        sandwich = Sandwich(tables()[driver.instrumentor])
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


def _check(sandwich: Sandwich, caplog, injector: Injector, step: str) -> None:
    sandwich.check()
    assert _logged(caplog, injector), f"the {step} failure was not logged"
    if step not in LEAVES_SPAN_CURRENT:  # no span of ours stays current in the host's context
        assert sandwich.left_current is trace.INVALID_SPAN, sandwich.left_current


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")  # a __del__ that raised
@pytest.mark.parametrize(("driver_name", "step"), list(_pairs()))
def test_an_internal_step_that_raises_never_reaches_the_host(
    driver_name, step, sandwiched, fake_provider, monkeypatch, caplog
):
    injector = Injector(runtime_fault)
    step.patch(monkeypatch, injector)
    sandwich = sandwiched(DRIVERS[driver_name], fake_provider)  # the host-level answers are asserted inside
    assert injector.fired, f"{step.name} never ran under {driver_name}: the pair is vacuous"
    _check(sandwich, caplog, injector, step.name)


# One step of each kind: an SDK step under our span's end, a classification behind the guard, the
# server's pending table, and the per-event path of a stream proxy (its own handler, not the guard).
WEIRD_PAIRS = [
    ("openai_async", "sdk.Span.end"),
    ("mcp_host_legacy", "endings.from_result"),
    ("mcp_server_2026", "_Pending.add"),
    ("anthropic_sync", "StreamAccumulator.observe"),
]


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize(("driver_name", "step_name"), WEIRD_PAIRS)
def test_a_fault_whose_str_and_repr_raise_never_reaches_the_host(
    driver_name, step_name, sandwiched, fake_provider, monkeypatch, caplog
):
    """The debug log formats the fault (its message, its traceback): formatting failing must stay ours too."""
    injector = Injector(WeirdFault)
    _steps(driver_name)[step_name].patch(monkeypatch, injector)
    sandwich = sandwiched(DRIVERS[driver_name], fake_provider)
    assert injector.fired, f"{step_name} never ran under {driver_name}"
    _check(sandwich, caplog, injector, step_name)


def test_every_unreachable_pair_names_a_real_driver_and_step():
    steps = {name for driver_name in DRIVERS for name in _steps(driver_name)}
    assert {d for d, _ in UNREACHABLE} <= set(DRIVERS)
    assert {s for _, s in UNREACHABLE} <= steps


# ---------------------------------------------------------------- the guarded boundary
GUARDED = _provider.guarded


def _patch_guard(monkeypatch: pytest.MonkeyPatch, guard: Callable[..., Any]) -> set[str]:
    """``guard`` in place of the guard in every module that calls it; their names."""
    patched = set()
    for name, module in list(sys.modules.items()):
        if name.startswith("otel_sampling.instrumentation.") and getattr(module, "guarded", None) is GUARDED:
            monkeypatch.setattr(module, "guarded", guard)
            patched.add(name.rpartition(".")[2])
    return patched


def _recording_guard(seen: set[tuple[str | None, str]]) -> Callable[..., Any]:
    """The real guard, noting (the target the host is calling, the step) of every call."""

    def guard(step, function, /, *args, fallback=None, **kwargs):
        seen.add((current_target(), step))
        return GUARDED(step, function, *args, fallback=fallback, **kwargs)

    return guard


# Wrappers that call nothing of ours, and why (each wrapper of the tables but these reaches the
# guard when a driver calls its target).
CALLS_NOTHING_OF_OURS = {
    "mcp.client.client.Client.call_tool": "sets the tool name of its task (a context variable), nothing else",
    # No driver sends a malformed request: tests/test_mcp_rejected.py drives that step.
    "mcp.client.session.ClientSession._on_request": "calls ours only when mcp rejects a sampling request",
}


def test_every_target_is_driven_and_every_wrapper_calls_our_code_through_the_guard(
    sandwiched, fake_provider, monkeypatch
):
    seen: set[tuple[str | None, str]] = set()
    patched = _patch_guard(monkeypatch, _recording_guard(seen))
    assert {"_mcp_connections", "mcp_server", "_provider"} <= patched
    driven: set[str] = set()
    gc.collect()  # what an earlier test dropped ends when collected: not inside a target here
    for driver in DRIVERS.values():
        driven |= sandwiched(driver, fake_provider).called()
    every = {f"{t.module}.{t.attribute}" for table in tables().values() for t in table}
    assert every - driven == UNDRIVEN
    guarded_targets = {target for target, _step in seen}
    assert driven - guarded_targets == set(CALLS_NOTHING_OF_OURS)


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("driver_name", DRIVERS)
def test_every_guarded_step_that_raises_never_reaches_the_host(
    driver_name, sandwiched, fake_provider, monkeypatch, caplog
):
    """Each step the guard runs under this driver, raising (before it did anything): the host's
    answers (asserted inside the driver) and objects are unchanged, and the guard logged it by name."""
    seen: set[tuple[str | None, str]] = set()
    gc.collect()  # a response an earlier test dropped ends its call when collected: before, not during
    with monkeypatch.context() as mp:
        _patch_guard(mp, _recording_guard(seen))
        sandwiched(DRIVERS[driver_name], fake_provider)
    steps = sorted({step for _target, step in seen})
    assert steps
    for raising in steps:
        injector = Injector(runtime_fault)

        def guard(step, function, /, *args, fallback=None, _raising=raising, _injector=injector, **kwargs):
            return GUARDED(step, _injector if step == _raising else function, *args, fallback=fallback, **kwargs)

        caplog.clear()
        gc.collect()
        with monkeypatch.context() as mp:
            _patch_guard(mp, guard)
            sandwich = sandwiched(DRIVERS[driver_name], fake_provider)
        assert injector.fired, f"{raising!r} did not run again under {driver_name}"
        sandwich.check()
        assert any(
            r.getMessage() == f"otel-sampling: could not {raising}" and r.exc_info[1] in injector.raised
            for r in caplog.records
            if r.exc_info
        ), f"the {raising!r} failure was not logged by name"


# ---------------------------------------------------------------- faults at instrument() time
class RaisingTracerProvider(sdk_trace.TracerProvider):
    def get_tracer(self, *args, **kwargs):
        raise RuntimeError("broken tracer provider")


class RaisingMeterProvider(sdk_metrics.MeterProvider):
    def get_meter(self, *args, **kwargs):
        raise RuntimeError("broken meter provider")


@pytest.mark.parametrize("provider", ["tracer_provider", "meter_provider"])
@pytest.mark.parametrize("driver_name", ["mcp_host_legacy", "mcp_server_2026", "anthropic_sync", "openai_async"])
def test_a_provider_that_raises_at_instrument_leaves_the_host_alone(
    driver_name, provider, telemetry, fake_provider, caplog
):
    driver = DRIVERS[driver_name]
    providers = {"tracer_provider": TRACER_PROVIDER, "meter_provider": telemetry.meter_provider}
    providers[provider] = RaisingTracerProvider() if provider == "tracer_provider" else RaisingMeterProvider()
    sandwich = Sandwich(tables()[driver.instrumentor])
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
    answered = answer()

    async def callback(ctx, params):
        return answered

    async def main():
        durations = []
        async with Client(build_server(), mode="legacy", sampling_callback=callback) as client:
            ctx, request = type("Ctx", (), {"request_id": 7, "meta": None})(), sampling_request()
            for _ in range(calls):
                start = time.perf_counter()
                assert await client.session.dispatch_input_request(ctx, request) is answered
                durations.append(time.perf_counter() - start)
        return durations

    return anyio.run(main)


@pytest.mark.soak
@pytest.mark.parametrize(
    ("driver_name", "calls", "rounds", "measure"),
    [("anthropic_sync", 40, 15, _anthropic_calls), ("mcp_host_legacy", 1000, 3, _dispatch_calls)],
)
def test_measure_the_added_latency_of_fault_paths(
    driver_name, calls, rounds, measure, telemetry, fake_provider, monkeypatch, capsys
):
    """Median time of one call, uninstrumented, instrumented and healthy, and with each step
    raising (short rounds interleaved, one process: the machine's load drifts); printed, never
    asserted (the machine is shared). A step the call never reaches is reported as such: its row
    shows the noise."""
    driver = DRIVERS[driver_name]
    rows: list[str | Step | None] = ["uninstrumented", None, *SDK_STEPS, *STEPS[driver_name]]
    times: dict[str, list[float]] = {}
    fired: dict[str, int] = {}
    for _ in range(rounds):
        for row in rows:
            name = row if isinstance(row, str) else row.name if row else "healthy"
            with monkeypatch.context() as mp:
                injector = Injector(runtime_fault)
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
