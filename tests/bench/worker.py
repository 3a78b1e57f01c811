"""One benchmark configuration, alone in a fresh process: ``python worker.py CONFIG --kinds ...``.

Installs the same telemetry set-up for every configuration (a global ``TracerProvider`` with a
``SimpleSpanProcessor`` over an exporter that only counts spans, and a global ``MeterProvider``
with an ``InMemoryMetricReader``), then the configuration's instrumentation, then times each call
kind (:func:`calls.time_calls`). Prints one JSON object on stdout: per kind the median and the
spread of the per-call times, the spans each instrumentation scope emitted per call, the attribute
count of the configuration's span, the histogram measurements per call, and the objects still
alive after the timed calls (per call, after a full collection).

Instrumentations monkey-patch SDK classes for the whole process, hence one process per
configuration (the driver, ``run.py``, starts them).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import statistics
import sys
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))  # calls, floor

import calls
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

ANTHROPIC_KINDS = ("anthropic-create", "anthropic-stream")
OPENAI_KINDS = ("openai-create", "openai-stream")


def _ours() -> None:
    from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
    from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
    from otel_sampling.instrumentation.openai import OpenAIInstrumentor

    for instrumentor in (AnthropicInstrumentor, OpenAIInstrumentor, MCPSamplingInstrumentor):
        instrumentor().instrument()


def _ours_with_server() -> None:
    from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor

    _ours()
    MCPServerSamplingInstrumentor().instrument()


def _floor() -> None:
    import floor

    floor.install()


def _peer(module: str, cls: str) -> Callable[[], None]:
    def install() -> None:
        getattr(__import__(module, fromlist=[cls]), cls)().instrument()
    return install


class Config(NamedTuple):
    """``kinds`` it applies to, the instrumentation ``scope`` prefix its spans carry (None: bare),
    the ``install`` step, and the ``package`` whose version the report names."""

    kinds: tuple[str, ...]
    scope: str | tuple[str, ...] | None
    install: Callable[[], None]
    package: str | None = None


CONFIGS: dict[str, Config] = {
    "bare": Config(calls.KINDS, None, lambda: None),
    "otel-sampling": Config(calls.KINDS, "otel_sampling", _ours, "otel-sampling"),
    # Both sides of the in-memory round trip instrumented (host and server share the process here).
    "otel-sampling+server": Config(calls.MCP_KINDS, "otel_sampling", _ours_with_server, "otel-sampling"),
    "floor": Config(calls.PROVIDER_KINDS, "bench.floor", _floor),
    "opentelemetry-instrumentation-anthropic": Config(
        ANTHROPIC_KINDS, "opentelemetry.instrumentation.anthropic",
        _peer("opentelemetry.instrumentation.anthropic", "AnthropicInstrumentor"),
        "opentelemetry-instrumentation-anthropic"),
    "openinference-instrumentation-anthropic": Config(
        ANTHROPIC_KINDS, "openinference.instrumentation.anthropic",
        _peer("openinference.instrumentation.anthropic", "AnthropicInstrumentor"),
        "openinference-instrumentation-anthropic"),
    "opentelemetry-instrumentation-openai": Config(
        OPENAI_KINDS, "opentelemetry.instrumentation.openai",
        _peer("opentelemetry.instrumentation.openai", "OpenAIInstrumentor"),
        "opentelemetry-instrumentation-openai"),
    "opentelemetry-instrumentation-openai-v2": Config(
        # Its spans come from the GenAI utility's handler, under that scope.
        OPENAI_KINDS, ("opentelemetry.instrumentation.openai_v2", "opentelemetry.util.genai"),
        _peer("opentelemetry.instrumentation.openai_v2", "OpenAIInstrumentor"),
        "opentelemetry-instrumentation-openai-v2"),
}
PEERS = tuple(name for name in CONFIGS if name.startswith(("opentelemetry-", "openinference-")))
# Versions the report names (the SDKs every configuration shares, and the instrumentations).
PACKAGES = ("anthropic", "openai", "mcp", "httpx2", "opentelemetry-api", "opentelemetry-sdk", "wrapt",
            "otel-sampling", *PEERS)


class CountingExporter(SpanExporter):
    """Counts finished spans per instrumentation scope, keeps the attribute count of the last span of
    each scope, and nothing else (no span is retained)."""

    def __init__(self) -> None:
        self.spans: Counter[str] = Counter()
        self.attributes: dict[str, int] = {}

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        for span in spans:
            scope = span.instrumentation_scope.name if span.instrumentation_scope else ""
            self.spans[scope] += 1
            self.attributes[scope] = len(span.attributes or ())
        return SpanExportResult.SUCCESS


def histogram_counts(reader: InMemoryMetricReader) -> Counter[str]:
    """Measurements recorded so far into each histogram (cumulative)."""
    counts: Counter[str] = Counter()
    data = reader.get_metrics_data()
    for resource_metrics in data.resource_metrics if data else ():
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                for point in metric.data.data_points:
                    if isinstance(point, HistogramDataPoint):
                        counts[metric.name] += point.count
    return counts


def _alive() -> int:
    gc.collect()
    return len(gc.get_objects())


def measure(kind: str, warmup: int, iterations: int, exporter: CountingExporter, reader: InMemoryMetricReader,
            scope: str | tuple[str, ...] | None, profile: str | None, clock: str) -> dict[str, Any]:
    spans_before, points_before = Counter(exporter.spans), histogram_counts(reader)
    alive: list[int] = []

    @contextlib.contextmanager
    def timed() -> Iterator[None]:
        """Around the timed calls, on the warmed-up client: live objects before and after."""
        alive.append(_alive())
        if profile:
            from pyinstrument import Profiler

            # async_mode="disabled": sample whatever the thread runs (the MCP server tasks too).
            with Profiler(interval=0.0001, async_mode="disabled") as profiler:
                yield
            Path(profile).write_text(profiler.output_html(), encoding="utf-8")
            print(profiler.output_text(unicode=True, show_all=False), file=sys.stderr)
        else:
            yield
        alive.append(_alive())

    timings = calls.time_calls(kind, warmup, iterations, timed, calls.CLOCKS[clock])
    retained = (alive[1] - alive[0]) / iterations
    made = warmup + iterations
    spans = {s: (n - spans_before[s]) / made for s, n in exporter.spans.items() if n > spans_before[s]}
    points = {m: (n - points_before[m]) / made for m, n in histogram_counts(reader).items() if n > points_before[m]}
    own = sum(n for s, n in spans.items() if scope is not None and s.startswith(scope))
    own_attributes = max((exporter.attributes[s] for s in spans if scope is not None and s.startswith(scope)),
                         default=0)
    return {
        "median_ns": statistics.median(timings),
        "p10_ns": statistics.quantiles(timings, n=10)[0] if len(timings) > 1 else timings[0],
        "p90_ns": statistics.quantiles(timings, n=10)[-1] if len(timings) > 1 else timings[0],
        "calls": iterations,
        "spans_per_call": spans,
        "own_spans_per_call": own,
        "own_attributes": own_attributes,
        "histogram_points_per_call": points,
        "retained_objects_per_call": retained,
    }


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for package in PACKAGES:
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = None
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", choices=sorted(CONFIGS))
    parser.add_argument("--kinds", default=",".join(calls.KINDS), help="comma-separated call kinds")
    parser.add_argument("--iterations", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--clock", choices=sorted(calls.CLOCKS), default="cpu")
    parser.add_argument("--profile", help="write a pyinstrument HTML profile of the timed calls here (one kind)")
    args = parser.parse_args(argv)
    config = CONFIGS[args.config]
    kinds = [k for k in args.kinds.split(",") if k in config.kinds]

    exporter = CountingExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(tracer_provider)
    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))

    out: dict[str, Any] = {"config": args.config, "python": sys.version.split()[0], "versions": versions(),
                           "kinds": {}}
    try:
        config.install()
    except Exception as exc:  # noqa: BLE001 - reported as "did not run", with the reason
        out["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0]
        out["traceback"] = traceback.format_exc()
        print(json.dumps(out))
        return 0
    for kind in kinds:
        try:
            out["kinds"][kind] = measure(kind, args.warmup, args.iterations, exporter, reader, config.scope,
                                         args.profile, args.clock)
        except Exception as exc:  # noqa: BLE001 - a configuration that breaks the SDK call is reported
            out["kinds"][kind] = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0],
                                  "traceback": traceback.format_exc()}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
