"""How many of our modules one host request walks through: modules entered and module-to-module hops.

The request: an mcp 2.x host (``mcp.Client``, legacy JSON-RPC path) with the MCP and anthropic
instrumentors, whose sampling callback makes one synchronous anthropic ``messages.create`` against
the bundled fake provider and returns its answer. Two requests run; the second (a warm process:
imports done, caches filled) is traced with :func:`sys.setprofile` from the entry to the exit of
the ``dispatch_input_request`` wrapper, frames of that wrapper's call only.

A *hop* is a call that enters an ``otel_sampling`` module from a frame of another module (another
of ours, the SDK's, the event loop's: a coroutine resumed by the loop re-enters its module). The
script prints each module with the times it was entered, then the totals; docs/architecture.md
quotes them.

    .venv/bin/python tests/bench/trace_hops.py [--pairs]

``--pairs`` also prints every (from, to) pair of modules with its count.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the sampling test server

import anthropic
import anyio
import mcp_types as types
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_sampling.instrumentation import mcp_v2
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.testing.fake_provider import FakeProvider

PACKAGE = "otel_sampling"


def _wrapper_code() -> CodeType:
    """The code of the ``dispatch_input_request`` wrapper (the inner function of ``_dispatch_wrapper``)."""
    for const in mcp_v2._dispatch_wrapper.__code__.co_consts:
        if isinstance(const, CodeType) and const.co_name == "wrapper":
            return const
    raise LookupError("mcp_v2._dispatch_wrapper has no inner wrapper")


class HopTracer:
    """A profile function counting the calls that enter one of our modules inside the wrapper's call."""

    def __init__(self, wrapper: CodeType) -> None:
        self._wrapper = wrapper
        self.entered: Counter[str] = Counter()
        self.pairs: Counter[tuple[str, str]] = Counter()

    def _inside(self, frame: FrameType | None) -> bool:
        while frame is not None:
            if frame.f_code is self._wrapper:
                return True
            frame = frame.f_back
        return False

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith(PACKAGE):
            return
        caller = frame.f_back.f_globals.get("__name__", "") if frame.f_back is not None else ""
        if caller == module or not self._inside(frame):
            return
        self.entered[module] += 1
        self.pairs[(caller if caller.startswith(PACKAGE) else "(outside)", module)] += 1


def _callback(fake_provider: FakeProvider):
    client = anthropic.Anthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)

    async def callback(ctx: Any, params: Any) -> Any:
        message = client.messages.create(
            model="claude-sonnet-4-5", max_tokens=params.max_tokens, messages=[{"role": "user", "content": "hi"}]
        )
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(text=message.content[0].text),
            model=message.model,
            stop_reason="endTurn",
        )

    return callback, client


async def _request(callback: Any) -> None:
    from mcp import Client

    from sampling_server import build_server

    async with Client(build_server(), mode="legacy", sampling_callback=callback) as client:
        await client.call_tool("sample", {"hint": "claude-sonnet", "include_context": "thisServer"})


def measure() -> HopTracer:
    """Run the two requests; the tracer of the second."""
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    instrumentors = [MCPSamplingInstrumentor(), AnthropicInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    tracer = HopTracer(_wrapper_code())
    try:
        with FakeProvider() as fake_provider:
            callback, client = _callback(fake_provider)
            try:
                anyio.run(_request, callback)  # warm-up: imports, caches, the first connection
                sys.setprofile(tracer)
                try:
                    anyio.run(_request, callback)
                finally:
                    sys.setprofile(None)
            finally:
                client.close()
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
        meter_provider.shutdown()
    return tracer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", action="store_true", help="also print every (from, to) module pair")
    args = parser.parse_args()
    tracer = measure()
    for module, times in tracer.entered.most_common():
        print(f"{times:4d}  {module}")
    if args.pairs:
        print()
        for (source, target), times in tracer.pairs.most_common():
            print(f"{times:4d}  {source} -> {target}")
    hops = sum(tracer.entered.values())
    modules = len(tracer.entered)
    print(f"\n{modules} modules entered, {hops} hops ({hops - modules} re-entries)")


if __name__ == "__main__":
    main()
