"""One benchmark configuration, alone in a fresh process: ``python worker.py CONFIG --kinds ...``.

Installs the same telemetry set-up for every configuration (a global ``TracerProvider`` with a
``SimpleSpanProcessor`` over an exporter that only counts spans, and a global ``MeterProvider``
with an ``InMemoryMetricReader``; ``bare-untraced`` leaves the tracer provider out), then the
configuration's instrumentation, then measures each call kind. Prints one JSON object on stdout:
per kind the spans each instrumentation scope emitted per call, the attribute count of the
configuration's span, the histogram measurements per call, and what the mode measured:

* timing (``run.py``, the default): the median and spread of the per-call times
  (:func:`calls.time_calls`) and the objects still alive after the timed calls (per call, after a
  full collection);
* ``--count N`` (``instructions.py``, under callgrind): each kind in a child forked after the
  set-up, warm-up calls, then a few settling calls and windows of N and 2N calls between the marks
  of ``callgrind_marks.c`` (GC off around them): the instruction counts are in callgrind's dumps;
* ``--memory N``: the bytes still allocated (tracemalloc) per request held in flight, N held.

Instrumentations monkey-patch SDK classes for the whole process, hence one process per
configuration (the drivers, ``run.py`` and ``instructions.py``, start them).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import importlib.util
import json
import os
import random
import statistics
import sys
import traceback
import tracemalloc
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
GEMINI_KINDS = ("gemini-create", "gemini-stream")
LITELLM_KINDS = ("litellm-create", "litellm-stream")


def _ours() -> None:
    # No price source: the floors price nothing, so ours measures the same telemetry (genai-prices,
    # installed with the package, would add the look-up, the cost attributes and the cost point).
    os.environ["OTEL_SAMPLING_PRICE_SOURCE"] = "none"
    from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
    from otel_sampling.instrumentation.google_genai import GoogleGenAIInstrumentor
    from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
    from otel_sampling.instrumentation.openai import OpenAIInstrumentor

    for instrumentor in (AnthropicInstrumentor, OpenAIInstrumentor, GoogleGenAIInstrumentor, MCPSamplingInstrumentor):
        instrumentor().instrument()
    if importlib.util.find_spec("litellm") is not None:  # wraps LiteLLM once a call kind imports it
        from otel_sampling.instrumentation.litellm import LiteLLMInstrumentor

        LiteLLMInstrumentor().instrument()


def _ours_with_server() -> None:
    from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor

    _ours()
    MCPServerSamplingInstrumentor().instrument()


def _floor() -> None:
    import floor

    floor.install()


def _sdk_limit() -> None:
    import sdk_limit

    sdk_limit.install()


def _mcp_floor(runs: bool = True) -> Callable[[], None]:
    def install() -> None:
        import mcp_floor

        mcp_floor.install(runs=runs)

    return install


def _peer(module: str, cls: str, **options: Any) -> Callable[[], None]:
    def install() -> None:
        getattr(__import__(module, fromlist=[cls]), cls)().instrument(**options)

    return install


def _litellm_logging_inline() -> None:
    """Run LiteLLM's logging thread pool's tasks on the calling thread, where they are counted.

    LiteLLM hands each call's success logging (and, on a stream, each chunk's) to its own thread
    pool (``litellm_core_utils.thread_pool_executor.executor``, the one object every module
    submits to); callgrind counts the main thread only (``instructions.py``), so its callbacks'
    work would not be counted at all. Inline, their instructions are the same, without the
    hand-off.
    """
    from concurrent.futures import Future

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from litellm.litellm_core_utils.thread_pool_executor import executor

    def submit(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        done: Future[Any] = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - as the pool would: kept in the future
            done.set_exception(exc)
        return done

    executor.submit = submit  # type: ignore[method-assign]


def _litellm_otel() -> None:
    """LiteLLM's own OpenTelemetry callback, as its docs set it up (``litellm.callbacks = ["otel"]``,
    its defaults: spans on the global ``TracerProvider``, no metrics), its logging run inline."""
    _litellm_logging_inline()
    import litellm

    litellm.callbacks = ["otel"]


class Config(NamedTuple):
    """``kinds`` it applies to, the instrumentation ``scope`` prefix its spans carry (None: bare),
    the ``install`` step, the ``package`` whose version the report names, whether a global SDK
    ``TracerProvider`` is set (``traced``; without one the SDKs' own spans cost next to nothing),
    and the configuration its added cost is counted over (``reference``: bare, unless the
    configuration changes how the SDK itself runs)."""

    kinds: tuple[str, ...]
    scope: str | tuple[str, ...] | None
    install: Callable[[], None]
    package: str | None = None
    traced: bool = True
    reference: str = "bare"


CONFIGS: dict[str, Config] = {
    "bare": Config(calls.KINDS, None, lambda: None),
    # The SDKs with no tracer provider: bare minus this is what their own spans cost (mcp 2.x, anthropic).
    "bare-untraced": Config(calls.KINDS, None, lambda: None, traced=False),
    "otel-sampling": Config(calls.KINDS, "otel_sampling", _ours, "otel-sampling"),
    # Both sides of the in-memory round trip instrumented (host and server share the process here).
    "otel-sampling+server": Config(calls.MCP_KINDS, "otel_sampling", _ours_with_server, "otel-sampling"),
    "floor": Config(calls.PROVIDER_KINDS, "bench.floor", _floor),
    # The floor's span and points recorded by the SDK alone, none of the floor's reading (sdk_limit.py).
    "sdk-limit": Config(calls.PROVIDER_KINDS, "bench.sdk_limit", _sdk_limit),
    "mcp-floor": Config(calls.MCP_KINDS, "bench.mcp_floor", _mcp_floor()),
    # The MCP floor without the implicit runs' points: the difference is what they cost.
    "mcp-floor-no-runs": Config(calls.MCP_KINDS, "bench.mcp_floor", _mcp_floor(runs=False)),
    "opentelemetry-instrumentation-anthropic": Config(
        ANTHROPIC_KINDS,
        "opentelemetry.instrumentation.anthropic",
        _peer("opentelemetry.instrumentation.anthropic", "AnthropicInstrumentor"),
        "opentelemetry-instrumentation-anthropic",
    ),
    "openinference-instrumentation-anthropic": Config(
        ANTHROPIC_KINDS,
        "openinference.instrumentation.anthropic",
        _peer("openinference.instrumentation.anthropic", "AnthropicInstrumentor"),
        "openinference-instrumentation-anthropic",
    ),
    "opentelemetry-instrumentation-openai": Config(
        OPENAI_KINDS,
        "opentelemetry.instrumentation.openai",
        _peer("opentelemetry.instrumentation.openai", "OpenAIInstrumentor"),
        "opentelemetry-instrumentation-openai",
    ),
    "opentelemetry-instrumentation-openai-v2": Config(
        # Its spans come from the GenAI utility's handler, under that scope.
        OPENAI_KINDS,
        ("opentelemetry.instrumentation.openai_v2", "opentelemetry.util.genai"),
        _peer("opentelemetry.instrumentation.openai_v2", "OpenAIInstrumentor"),
        "opentelemetry-instrumentation-openai-v2",
    ),
    "opentelemetry-instrumentation-google-genai": Config(
        # Its releases (1.1b1 to 1.3b0 at least) declare google-genai < 3 and, on 3.x, decline to instrument
        # unless told to skip that check; its spans come from the GenAI utility's handler.
        GEMINI_KINDS,
        ("opentelemetry.instrumentation.google_genai", "opentelemetry.util.genai"),
        _peer("opentelemetry.instrumentation.google_genai", "GoogleGenAiSdkInstrumentor", skip_dep_check=True),
        "opentelemetry-instrumentation-google-genai",
    ),
    # LiteLLM's own OpenTelemetry callback (its "otel" callback; tracer name "litellm").
    # Counted over bare LiteLLM with its logging run inline as here, no callback: what the callback
    # adds (LiteLLM's own logging, which bare runs on its pool, runs either way).
    "litellm-otel": Config(LITELLM_KINDS, "litellm", _litellm_otel, "litellm", reference="litellm-logging-inline"),
    "litellm-logging-inline": Config(LITELLM_KINDS, None, _litellm_logging_inline),
}
PEERS = tuple(name for name in CONFIGS if name.startswith(("opentelemetry-", "openinference-", "litellm-otel")))
# Versions the report names (the SDKs every configuration shares, and the instrumentations).
PACKAGES = (
    "anthropic",
    "openai",
    "google-genai",
    "litellm",
    "mcp",
    "httpx2",
    "opentelemetry-api",
    "opentelemetry-sdk",
    "wrapt",
    "otel-sampling",
    *dict.fromkeys(package for package in (CONFIGS[name].package for name in PEERS) if package),
)


class CountingExporter(SpanExporter):
    """Counts finished spans per instrumentation scope, keeps the attribute count of the last span of
    each scope (with ``keep``, its attributes too), and nothing else (no span is retained)."""

    def __init__(self, keep: bool = False) -> None:
        self.spans: Counter[str] = Counter()
        self.attributes: dict[str, int] = {}
        self.last: dict[str, dict[str, Any]] | None = {} if keep else None

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        for span in spans:
            scope = span.instrumentation_scope.name if span.instrumentation_scope else ""
            self.spans[scope] += 1
            self.attributes[scope] = len(span.attributes or ())
            if self.last is not None:
                self.last[scope] = dict(span.attributes or {})
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


def telemetry(traced: bool = True, keep: bool = False) -> tuple[CountingExporter, InMemoryMetricReader]:
    """The global providers every configuration shares: with ``traced``, a ``TracerProvider`` with a
    ``SimpleSpanProcessor`` over a :class:`CountingExporter` (keeping each scope's last span's
    attributes with ``keep``); a ``MeterProvider`` with an ``InMemoryMetricReader``."""
    exporter = CountingExporter(keep)
    if traced:
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(tracer_provider)
    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    return exporter, reader


def _alive() -> int:
    gc.collect()
    return len(gc.get_objects())


class Seen(NamedTuple):
    """Spans and histogram measurements so far: per call after the calls made since (:meth:`per_call`)."""

    spans: Counter[str]
    points: Counter[str]

    @classmethod
    def now(cls, exporter: CountingExporter, reader: InMemoryMetricReader) -> Seen:
        return cls(Counter(exporter.spans), histogram_counts(reader))

    def per_call(
        self, exporter: CountingExporter, reader: InMemoryMetricReader, scope: str | tuple[str, ...] | None, made: int
    ) -> dict[str, Any]:
        """Spans per scope, the configuration's own spans and attribute count, histogram points, per call."""
        spans = {s: (n - self.spans[s]) / made for s, n in exporter.spans.items() if n > self.spans[s]}
        points = {m: (n - self.points[m]) / made for m, n in histogram_counts(reader).items() if n > self.points[m]}
        mine = [s for s in spans if scope is not None and s.startswith(scope)]
        return {
            "spans_per_call": spans,
            "own_spans_per_call": sum(spans[s] for s in mine),
            "own_attributes": max((exporter.attributes[s] for s in mine), default=0),
            "histogram_points_per_call": points,
        }


def measure(
    kind: str,
    warmup: int,
    iterations: int,
    exporter: CountingExporter,
    reader: InMemoryMetricReader,
    scope: str | tuple[str, ...] | None,
    profile: str | None,
    clock: str,
) -> dict[str, Any]:
    before = Seen.now(exporter, reader)
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
    return {
        "median_ns": statistics.median(timings),
        "p10_ns": statistics.quantiles(timings, n=10)[0] if len(timings) > 1 else timings[0],
        "p90_ns": statistics.quantiles(timings, n=10)[-1] if len(timings) > 1 else timings[0],
        "calls": iterations,
        **before.per_call(exporter, reader, scope, warmup + iterations),
        "retained_objects_per_call": (alive[1] - alive[0]) / iterations,
    }


class Marks:
    """The callgrind marks of ``callgrind_marks.c`` (a shared library built by ``instructions.py``):
    ``"start"`` collects garbage, turns GC off and starts counting; any other label dumps the count
    since the last mark as ``<kind>:<label>``; :meth:`stop` stops counting and turns GC back on."""

    def __init__(self, library: str, kind: str) -> None:
        self._library = ctypes.CDLL(library)
        self._kind = kind

    def __call__(self, label: str) -> None:
        if label == "start":
            gc.collect()
            gc.disable()
            self._library.bench_start()
        else:
            self._library.bench_dump(f"{self._kind}:{label}".encode())

    def stop(self) -> None:
        self._library.bench_stop()
        gc.enable()


# Calls counted right after counting starts, then thrown away: the first calls after the switch
# (and after gc.collect()) pay a one-off that neither later window has.
SETTLE = 5


def count(
    kind: str,
    warmup: int,
    n: int,
    marks: str,
    scenario: calls.Scenario,
    exporter: CountingExporter,
    reader: InMemoryMetricReader,
    scope: str | tuple[str, ...] | None,
    settle: int = SETTLE,
) -> dict[str, Any]:
    """Warm-up calls, then windows ``0`` (``settle`` calls, not used), ``1`` (n calls) and ``2``
    (2n calls) between callgrind marks (the scenario's held requests open from before the warm-up
    to after the last window)."""
    before = Seen.now(exporter, reader)
    mark = Marks(marks, kind)
    windows = (settle, n, 2 * n)
    try:
        calls.count_calls(kind, warmup, windows, mark, scenario)
    finally:
        mark.stop()
    made = warmup + sum(windows) + scenario.held  # the held requests end after the last window
    return {"calls": n, "windows": list(windows), **before.per_call(exporter, reader, scope, made)}


def memory(kind: str, warmup: int, held: int) -> dict[str, Any]:
    """Bytes still allocated (tracemalloc) per request held in flight: ``held`` of them, after warm-up."""
    taken: list[int] = []

    def snapshot() -> None:
        gc.collect()
        taken.append(tracemalloc.get_traced_memory()[0])

    if kind in calls.PROVIDER_KINDS:
        provider = calls.provider_calls(kind)
        for i in range(warmup):
            provider.call(i)
        tracemalloc.start()
        snapshot()
        finish = provider.hold(held)
        snapshot()
        finish()
    else:
        import anyio

        async def run() -> None:
            async with calls.mcp_calls(kind) as session:
                for i in range(warmup):
                    await session.call(i)
                tracemalloc.start()
                snapshot()
                await session.hold(held)
                snapshot()

        anyio.run(run)
    tracemalloc.stop()
    return {"held": held, "bytes_per_held": (taken[1] - taken[0]) / held}


def _in_child(measure_one: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``measure_one()`` in a child forked from this process (the set-up done, no call made yet), so
    that every call kind starts from the same state; its result comes back through a pipe."""
    sys.stdout.flush()
    sys.stderr.flush()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read)
        # The same random draws in every run (span ids, exemplar reservoir choices): their paths
        # differ in length, and the runs should differ only in what they measure.
        random.seed(0)
        try:
            result = measure_one()
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, with the reason
            result = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0], "traceback": traceback.format_exc()}
        with os.fdopen(write, "w", encoding="utf-8") as pipe:
            pipe.write(json.dumps(result))
        os._exit(0)
    os.close(write)
    with os.fdopen(read, encoding="utf-8") as pipe:
        text = pipe.read()
    _, status = os.waitpid(pid, 0)
    return json.loads(text) if text else {"error": f"the measuring child died (wait status {status})"}


_TRACE_CONTEXT = {"traceparent", "tracestate", "baggage"}


def exported(
    kind: str, made: int, exporter: CountingExporter, reader: InMemoryMetricReader, scope: str | tuple[str, ...] | None
) -> dict[str, Any]:
    """What ``made`` calls of ``kind`` exported (``--telemetry``): the attributes of the last span of
    the configuration's own scopes, and every metric stream as its name and label sets (values
    left out: durations differ from call to call), and the names of the trace-context headers
    (``traceparent``, ``tracestate``, ``baggage``) on the last request sent to the provider."""
    calls.SENT.clear()
    calls.count_calls(kind, made, [], lambda label: None)
    assert exporter.last is not None
    spans = {s: a for s, a in exporter.last.items() if scope is not None and s.startswith(scope)}
    streams: dict[str, list[dict[str, Any]]] = {}
    data = reader.get_metrics_data()
    for resource_metrics in data.resource_metrics if data else ():
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                streams.setdefault(metric.name, []).extend(dict(p.attributes or {}) for p in metric.data.data_points)
    sent = calls.SENT.get("request")
    propagated = sorted(k for k in sent.headers if k.lower() in _TRACE_CONTEXT) if sent is not None else []
    return {"spans": spans, "metrics": streams, "trace_context": propagated}


def drag(loops: int) -> None:
    """Make every instrumented entry point slower by ``loops`` empty loop turns per call: a
    deliberately slowed wrapper, to see ``make bench-check`` fail (``instructions.py --drag``)."""
    import wrapt

    def spin() -> None:
        for _ in range(loops):
            pass

    def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        spin()
        return wrapped(*args, **kwargs)

    async def async_wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        spin()
        return await wrapped(*args, **kwargs)

    wrapt.wrap_function_wrapper("anthropic.resources.messages.messages", "Messages.create", wrapper)
    wrapt.wrap_function_wrapper("openai.resources.chat.completions.completions", "Completions.create", wrapper)
    wrapt.wrap_function_wrapper("mcp.client.session", "ClientSession.dispatch_input_request", async_wrapper)


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
    parser.add_argument("--count", type=int, metavar="N", help="count instructions: windows of N and 2N calls")
    parser.add_argument("--marks", help="with --count: the built callgrind_marks shared library")
    parser.add_argument("--settle", type=int, default=SETTLE, help="with --count: settling calls, not counted")
    parser.add_argument("--memory", type=int, metavar="N", help="bytes per request held in flight, N held")
    parser.add_argument("--labels", type=int, default=1, help="distinct model names the calls cycle through")
    parser.add_argument("--held", type=int, default=0, help="requests held in flight while the calls run")
    parser.add_argument("--events", type=int, default=0, help="events per provider stream (0: as recorded)")
    parser.add_argument("--drag", type=int, default=0, help="slow every instrumented call by this many loop turns")
    parser.add_argument("--telemetry", type=int, metavar="N", help="what N calls exported (span attributes, metrics)")
    args = parser.parse_args(argv)
    config = CONFIGS[args.config]
    kinds = [k for k in args.kinds.split(",") if k in config.kinds]
    scenario = calls.Scenario(labels=args.labels, held=args.held, events=args.events)

    exporter, reader = telemetry(config.traced, keep=bool(args.telemetry))

    out: dict[str, Any] = {
        "config": args.config,
        "python": sys.version.split()[0],
        "versions": versions(),
        "scenario": scenario._asdict(),
        "kinds": {},
    }
    try:
        config.install()
        if args.drag:
            drag(args.drag)
    except Exception as exc:  # noqa: BLE001 - reported as "did not run", with the reason
        out["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0]
        out["traceback"] = traceback.format_exc()
        print(json.dumps(out))
        return 0
    if args.count or args.memory or args.telemetry:
        calls.preload(kinds)
    for kind in kinds:
        if args.count:
            out["kinds"][kind] = _in_child(
                lambda kind=kind: count(
                    kind, args.warmup, args.count, args.marks, scenario, exporter, reader, config.scope, args.settle
                )
            )
            continue
        if args.memory:
            out["kinds"][kind] = _in_child(lambda kind=kind: memory(kind, args.warmup, args.memory))
            continue
        if args.telemetry:
            out["kinds"][kind] = _in_child(
                lambda kind=kind: exported(kind, args.telemetry, exporter, reader, config.scope)
            )
            continue
        try:
            out["kinds"][kind] = measure(
                kind, args.warmup, args.iterations, exporter, reader, config.scope, args.profile, args.clock
            )
        except Exception as exc:  # noqa: BLE001 - a configuration that breaks the SDK call is reported
            out["kinds"][kind] = {
                "error": f"{type(exc).__name__}: {exc}".splitlines()[0],
                "traceback": traceback.format_exc(),
            }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
