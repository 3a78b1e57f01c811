"""The fault cases (shared cases README) whose tests were missing or partial elsewhere:

* 9: anthropic and openai imported after ``instrument()`` (called twice) are wrapped once, give one
  span per call, and emit nothing after ``uninstrument()``; imported after ``uninstrument()`` they
  are not wrapped (fresh interpreters; mcp has its own in test_mcp_review).
* 10: a raising span exporter and raising attribute extractors / classifiers never change what the
  caller sees (provider results and errors, MCP answers and error frames).
* 11: a non-streamed provider call whose task is cancelled ends ``cancelled`` and the cancellation
  propagates (the streamed case is in test_provider_review).
* 12: the host's peer-cancel reasons stay bounded under 100k cancellations nobody reads.
* 14: a tool result with ``isError=true`` keeps ``error.type=tool_error`` on the tools/call span and
  reaches the host unchanged, and the sampling request made inside that tool stays ``completed``.
"""

import asyncio
import contextlib
import subprocess
import sys
from collections import Counter
from typing import Annotated

import anthropic
import anyio
import mcp_types as types
import openai
import pytest
from mcp import Client, MCPError
from mcp.server.mcpserver import MCPServer, Resolve, Sample
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from conftest import TRACER_PROVIDER
from otel_sampling import names
from otel_sampling.instrumentation import _provider
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor
from otel_sampling.instrumentation.mcp_v2 import CANCEL_REASONS_PER_DISPATCHER, _CancelReasons
from otel_sampling.instrumentation.openai import OpenAIInstrumentor
from otel_sampling.records.sampling import SamplingRecord
from otel_sampling.rules import endings

MSG = [{"role": "user", "content": "hi"}]

# ---------------------------------------------------------------- case 9
LATE_IMPORT = """
import sys, wrapt
assert "anthropic" not in sys.modules and "openai" not in sys.modules
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor
from otel_sampling.testing.fake_provider import FakeProvider
spans = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(spans))
instrumentors = [AnthropicInstrumentor(), OpenAIInstrumentor()]
if sys.argv[1] == "uninstrument-first":
    for i in instrumentors:
        i.instrument(tracer_provider=provider); i.uninstrument()
else:
    for i in instrumentors:
        i.instrument(tracer_provider=provider); i.instrument(tracer_provider=provider)  # twice
import anthropic, openai                                 # imported only now
from anthropic._base_client import SyncAPIClient as A
from openai._base_client import SyncAPIClient as O
def layers(f):
    n = 0
    while isinstance(f, wrapt.FunctionWrapper):
        n, f = n + 1, f.__wrapped__
    return n
print(layers(vars(A)["request"]), layers(vars(O)["request"]))
def calls(fp):
    anthropic.Anthropic(base_url=fp.url, api_key="k", max_retries=0, open_telemetry=False).messages.create(
        model="claude-req", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    openai.OpenAI(base_url=fp.url + "/v1", api_key="k", max_retries=0).chat.completions.create(
        model="gpt-req", messages=[{"role": "user", "content": "hi"}])
    return len([s for s in spans.get_finished_spans() if s.instrumentation_scope.name == "otel_sampling"])
with FakeProvider() as fp:
    print(calls(fp))
    for i in instrumentors:
        i.uninstrument()
    print(layers(vars(A)["request"]), layers(vars(O)["request"]), calls(fp))
"""


def _late_import(order: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", LATE_IMPORT, order], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_providers_imported_after_instrument_twice_are_wrapped_once_and_restored():
    # wrapped once each; one span per call (2); after uninstrument: no layer, still 2 spans
    assert _late_import("instrument-twice") == ["1", "1", "2", "0", "0", "2"]


def test_providers_imported_after_uninstrument_are_not_wrapped():
    assert _late_import("uninstrument-first") == ["0", "0", "0", "0", "0", "0"]


# ---------------------------------------------------------------- case 10
class RaisingExporter(SpanExporter):
    def export(self, spans):
        raise RuntimeError("broken exporter")

    def shutdown(self) -> None: ...


def _boom(*args, **kwargs):
    raise RuntimeError("broken extractor")


def _provider_calls(fp) -> list:
    """What a caller sees from a success and a failure of each SDK: type and the facts it reads."""
    seen = []
    claude = anthropic.Anthropic(base_url=fp.url, api_key="k", max_retries=0, open_telemetry=False)
    gpt = openai.OpenAI(base_url=fp.url + "/v1", api_key="k", max_retries=0)
    for call in (lambda h: claude.messages.create(model="claude-req", max_tokens=8, messages=MSG, extra_headers=h),
                 lambda h: gpt.chat.completions.create(model="gpt-req", messages=MSG, extra_headers=h)):
        result = call({})
        seen.append((type(result), result.model, str(result.usage)))
        try:
            call({"x-fake-scenario": "status=429,no_retry"})
        except (anthropic.APIStatusError, openai.APIStatusError) as exc:
            body = {k: v for k, v in exc.body.items() if k != "request_id"}  # the fake's ids are random
            seen.append((type(exc), exc.status_code, body))
    return seen


def test_broken_exporter_and_extractors_never_change_what_the_provider_caller_sees(telemetry, fake_provider,
                                                                                   monkeypatch):
    bare = _provider_calls(fake_provider)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(RaisingExporter()))
    instrumentors = [AnthropicInstrumentor(), OpenAIInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=provider, meter_provider=telemetry.meter_provider)
    try:
        assert _provider_calls(fake_provider) == bare  # the exporter raises on every span
        for name in ("parsed", "failure", "server_of"):  # reading the response, the error, the client
            monkeypatch.setattr(_provider.ProviderState, name, _boom)
        assert _provider_calls(fake_provider) == bare
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
    # the calls were instrumented all along: 4 calls per run, 2 runs
    assert sum(telemetry.counts(names.METRIC_GEN_AI_OPERATION_DURATION).values()) == 8


def build_server() -> MCPServer:
    # This module has no `from __future__ import annotations`: MCPServer evaluates the tool annotations.
    server = MCPServer("fault-server", version="1.0.0")

    def ask() -> Sample:
        return Sample([types.SamplingMessage(role="user", content=types.TextContent(text="hi"))], max_tokens=8)

    @server.tool()
    async def sample(answer: Annotated[types.CreateMessageResult, Resolve(ask)]) -> str:
        return answer.model

    @server.tool()
    async def sample_then_fail(answer: Annotated[types.CreateMessageResult, Resolve(ask)]) -> str:
        raise ValueError(f"the tool failed after {answer.model} answered")

    return server


ANSWERS = [
    types.CreateMessageResult(role="assistant", content=types.TextContent(text="ok"), model="claude-x",
                              stop_reason="endTurn"),
    types.ErrorData(code=-32003, message="Denied", data={"reason": "policy.denied"}),
]


async def _ask_all(mode: str) -> list:
    seen = []
    for answer in ANSWERS:
        async def callback(ctx, params, answer=answer):
            return answer
        async with Client(build_server(), mode=mode, sampling_callback=callback) as client:
            try:
                out = await client.call_tool("sample", {})
                seen.append(("result", out.is_error, out.content[0].text))
            except MCPError as exc:
                seen.append((type(exc), exc.error.code, exc.error.message, exc.error.data))
    return seen


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_broken_classifiers_never_change_what_the_mcp_host_sees(telemetry, monkeypatch, mode):
    """Host and server side: the answers are unchanged and every request still ends (its span ends,
    in-flight goes back down), as many as when classifying works."""
    bare = anyio.run(_ask_all, mode)
    instrumentors = [MCPSamplingInstrumentor(), MCPServerSamplingInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        assert anyio.run(_ask_all, mode) == bare
        working = Counter(s.kind.name for s in telemetry.spans(names.SPAN_SAMPLING))  # as many must end below
        for name in ("from_result", "from_error_frame", "from_exception", "from_cancellation"):
            monkeypatch.setattr(endings, name, _boom)
        assert anyio.run(_ask_all, mode) == bare
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
    ended = Counter(s.kind.name for s in telemetry.spans(names.SPAN_SAMPLING))
    assert working["SERVER"] == 2 and ended["SERVER"] == 4  # the host's spans
    if mode == "legacy":  # the server's (CLIENT) spans; on 2026-07-28 a denied one ends later, unanswered
        assert working["CLIENT"] == 2 and ended["CLIENT"] == 4
    assert telemetry.counts(names.METRIC_SAMPLING_IN_FLIGHT) == {(): 0}
    assert bare[0] == ("result", False, "claude-x") and bare[1][1] == -32003
    # The fallback endings (docs/telemetry.md): a result is completed, an error frame error with its code.
    assert telemetry.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_ENDING) == \
        {(names.ENDING_COMPLETED,): 2, (names.ENDING_POLICY_DENIED,): 1, (names.ENDING_ERROR,): 1}
    (unclassified,) = [s for s in telemetry.spans(names.SPAN_SAMPLING) if s.kind.name == "SERVER"
                       and s.attributes[names.SAMPLING_ENDING] == names.ENDING_ERROR]
    assert unclassified.attributes[names.ERROR_TYPE] == "-32003"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_unclassifiable_exceptions_and_cancellations_end_with_the_documented_fallbacks(telemetry, monkeypatch,
                                                                                      mode):
    """docs/telemetry.md: an exception ends as ``error`` with ``error.type`` ``_unknown``, a
    cancellation as ``cancelled``, when classifying them raises."""
    monkeypatch.setattr(endings, "from_exception", _boom)
    monkeypatch.setattr(endings, "from_cancellation", _boom)
    started = anyio.Event()

    async def raising(ctx, params):
        raise RuntimeError("provider 503")

    async def hanging(ctx, params):
        started.set()
        await anyio.sleep_forever()

    async def host() -> None:
        async with Client(build_server(), mode=mode, sampling_callback=raising) as client:
            with contextlib.suppress(Exception):
                await client.call_tool("sample", {})
        async with Client(build_server(), mode=mode, sampling_callback=hanging) as client:
            async with anyio.create_task_group() as tg:  # the host gives up once its callback runs
                tg.start_soon(client.call_tool, "sample", {})
                await started.wait()
                tg.cancel_scope.cancel()

    instrumentor = MCPSamplingInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        anyio.run(host)
    finally:
        instrumentor.uninstrument()
    assert telemetry.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_ENDING) == \
        {(names.ENDING_ERROR,): 1, (names.ENDING_CANCELLED,): 1}
    errors = {s.attributes[names.SAMPLING_ENDING]: s.attributes.get(names.ERROR_TYPE)
              for s in telemetry.spans(names.SPAN_SAMPLING)}
    assert errors == {names.ENDING_ERROR: names.UNKNOWN_LABEL, names.ENDING_CANCELLED: names.ERROR_TYPE_CANCELLED}
    assert telemetry.counts(names.METRIC_SAMPLING_IN_FLIGHT) == {(): 0}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("step", ["deactivate", "cancel_reasons"])
def test_broken_bookkeeping_before_the_ending_still_ends_every_request(telemetry, monkeypatch, mode, step):
    """The host's answers are unchanged, and each request still ends with the ending it had:
    its span ends and in-flight goes back down (a failed step before the ending is not a leak)."""
    bare = anyio.run(_ask_all, mode)
    instrumentor = MCPSamplingInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        if step == "deactivate":
            monkeypatch.setattr(SamplingRecord, "deactivate", _boom)
        else:
            monkeypatch.setattr(_CancelReasons, "pop", _boom)
        assert anyio.run(_ask_all, mode) == bare
    finally:
        instrumentor.uninstrument()
    path = {"legacy": names.PATH_RPC, "auto": names.PATH_MRTR}[mode]
    assert telemetry.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_PATH, names.SAMPLING_ENDING) == \
        {(path, names.ENDING_COMPLETED): 1, (path, names.ENDING_POLICY_DENIED): 1}
    assert len(telemetry.spans(names.SPAN_SAMPLING)) == 2
    assert telemetry.counts(names.METRIC_SAMPLING_IN_FLIGHT) == {(): 0}


# ---------------------------------------------------------------- case 11
@pytest.mark.parametrize("sdk", ["anthropic", "openai"])
def test_a_task_cancelled_before_the_answer_ends_cancelled_and_propagates(telemetry, fake_provider, sdk):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = AnthropicInstrumentor() if sdk == "anthropic" else OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider, meter_provider=telemetry.meter_provider)
    slow = {"extra_headers": {"x-fake-scenario": "delay=5", "x-case": "11"}}

    async def main() -> asyncio.Task:
        if sdk == "anthropic":
            c = anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="k", max_retries=0, open_telemetry=False)
            call = c.messages.create(model="claude-req", max_tokens=8, messages=MSG, **slow)
        else:
            c = openai.AsyncOpenAI(base_url=fake_provider.url + "/v1", api_key="k", max_retries=0)
            call = c.chat.completions.create(model="gpt-req", messages=MSG, **slow)
        before = len(fake_provider.requests)
        task = asyncio.ensure_future(call)
        while len(fake_provider.requests) == before:  # in flight at the provider, not merely scheduled
            await asyncio.sleep(0.01)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await c.close()
        return task

    try:
        task = asyncio.run(main())
    finally:
        instrumentor.uninstrument()
    assert task.cancelled()  # the CancelledError reached the task, unchanged
    (span,) = exporter.get_finished_spans()
    assert (span.attributes[names.ENDING], span.attributes[names.ERROR_TYPE]) == ("cancelled", "cancelled")
    assert telemetry.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.ENDING) == {("cancelled",): 1}


# ---------------------------------------------------------------- case 12
def test_peer_cancel_reasons_stay_bounded_when_nobody_reads_them():
    from mcp.shared.dispatcher import coerce_request_id

    reasons, connection = _CancelReasons(coerce_request_id), object.__new__(type("Conn", (), {}))
    for i in range(100_000):
        reasons.note(connection, {"requestId": i, "reason": "caller cancelled " + "x" * 10_000})
        if i % 3 == 1:  # a third are read (a request of ours); the rest never are
            assert reasons.pop(connection, i) is not None
    kept = reasons._by_dispatcher[connection]
    assert len(kept) == CANCEL_REASONS_PER_DISPATCHER
    assert all(len(reason) <= 256 for reason in kept.values())
    assert reasons.pop(connection, 99_998) == "caller cancelled " + "x" * (256 - len("caller cancelled "))


# ---------------------------------------------------------------- case 14
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_tool_error_after_a_completed_sampling_request(telemetry, mode):
    host, server = MCPSamplingInstrumentor(), MCPServerSamplingInstrumentor()
    for instrumentor in (host, server):
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)

    async def main():
        async def callback(ctx, params):
            return ANSWERS[0]
        async with Client(build_server(), mode=mode, sampling_callback=callback) as client:
            return await client.call_tool("sample_then_fail", {})

    try:
        out = anyio.run(main)
    finally:
        server.uninstrument()
        host.uninstrument()
    assert out.is_error  # the tool's error, as mcp reports it to the host
    tool_spans = [s for s in telemetry.spans(scope=None) if s.name == "tools/call sample_then_fail"]
    # 2026-07-28: the first round answers input-required (no error); the round that ran the tool is the last
    assert [s.attributes.get(names.ERROR_TYPE) for s in tool_spans][-1:] == ["tool_error"]
    assert {s.attributes.get(names.ERROR_TYPE) for s in tool_spans} <= {None, "tool_error"}
    host_span = [s for s in telemetry.spans(names.SPAN_SAMPLING) if s.kind.name == "SERVER"]
    assert [s.attributes[names.SAMPLING_ENDING] for s in host_span] == ["completed"]
    assert names.ERROR_TYPE not in host_span[0].attributes
