"""Exporter outage: a collector that is down, or that accepts and never answers, never slows the host.

The real OTLP exporters (gRPC and HTTP/protobuf) behind the processors ``opentelemetry-instrument``
configures (``BatchSpanProcessor``, ``PeriodicExportingMetricReader``) are pointed at

* a closed port (connection refused: the exporters retry with backoff until their timeout), and
* a black hole: a real listening socket that accepts connections and never reads or answers (each
  export waits for its full timeout).

A burst of 50 instrumented calls (the real anthropic SDK against the fake provider) never waits on
an export: no export runs on the calling thread (every export attempt is counted by thread), and no
single call takes as long as one export timeout, which a call that waited on an export would (a
bound from the exporter's own setting, not from the machine's speed: the burst's total time, and
the per-call latencies, are measured in ``make soak``). The span queue is kept small, so the burst
also fills it and spans are dropped (the SDK's behaviour under a long outage) without blocking.
Shutdown returns (it is bounded by the short timeouts set here): the test cannot hang.
``SimpleSpanProcessor`` exports inside ``span.end()`` by design, so there a black hole stalls every
call; the docs say use the batch processor (docs/deploy.md,
"Exporter outage"); the soak measurement below shows both.
"""

from __future__ import annotations

import contextlib
import importlib.util
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import anthropic
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

from harness.limits import HANG_S
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


# The gRPC exporter comes with the otlp-grpc extra (the dev extra has it; otlp is OTLP/HTTP only).
GRPC = pytest.param(
    "grpc",
    marks=pytest.mark.skipif(
        not _installed("opentelemetry.exporter.otlp.proto.grpc"),
        reason="the OTLP gRPC exporter (extra otlp-grpc) is not installed",
    ),
)

EXPORT_TIMEOUT_S = 1.0  # each exporter's own timeout, and the processors' export timeout
SOAK_EXPORT_TIMEOUT_S = 3.0  # the measurement's (docs/deploy.md quotes it)
BURST = 50  # calls: more spans than the queue and one batch hold (16 + 16), so the queue fills
KW = {"model": "claude-req", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}


class BlackHole:
    """A listening socket on 127.0.0.1 that accepts every connection and never reads or answers."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.port = self._socket.getsockname()[1]
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        with contextlib.suppress(OSError):  # closed at exit
            while True:
                self._held.append(self._socket.accept()[0])

    @property
    def accepted(self) -> int:
        return len(self._held)

    def __enter__(self) -> BlackHole:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._socket.close()
        for held in self._held:
            held.close()


def _closed_port() -> int:
    with socket.socket() as s:  # bound then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _HealthyGrpc:
    """An OTLP gRPC receiver that answers every export at once (the healthy baseline)."""

    def __enter__(self) -> _HealthyGrpc:
        import grpc
        from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

        class Traces(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request, context):  # noqa: N802 - the gRPC service's name
                return trace_service_pb2.ExportTraceServiceResponse()

        class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
            def Export(self, request, context):  # noqa: N802
                return metrics_service_pb2.ExportMetricsServiceResponse()

        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), self._server)
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop(grace=None)


# A healthy collector runs in its own process, as a real one does: decoding exports in the host's
# process would charge its CPU and GIL time to the calls being measured.
_HEALTHY = """
import sys
sys.path.insert(0, {tests!r})
if {protocol!r} == "grpc":
    from test_exporter_outage import _HealthyGrpc
    receiver = _HealthyGrpc().__enter__()
    port = receiver.port
else:
    from harness.otlp_receiver import OTLPReceiver
    receiver = OTLPReceiver().__enter__()
    port = int(receiver.endpoint.rsplit(":", 1)[1].split("/", 1)[0])
print(port, flush=True)
sys.stdin.read()  # until the test closes our stdin
"""


@contextlib.contextmanager
def collector(kind: str, protocol: str) -> Iterator[tuple[int, BlackHole | None]]:
    """(port, black hole or None) of a collector that is ``healthy``, ``closed`` or a ``blackhole``."""
    if kind == "closed":
        yield _closed_port(), None
    elif kind == "blackhole":
        with BlackHole() as hole:
            yield hole.port, hole
    else:
        script = _HEALTHY.format(tests=str(Path(__file__).parent), protocol=protocol)
        with subprocess.Popen(
            [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        ) as process:
            try:
                yield int(process.stdout.readline()), None
            finally:
                process.stdin.close()
                process.wait(timeout=HANG_S)


def _exporters(protocol: str, port: int, timeout_s: float = EXPORT_TIMEOUT_S):
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        endpoint = f"127.0.0.1:{port}"
        return (
            OTLPSpanExporter(endpoint=endpoint, insecure=True, timeout=timeout_s),
            OTLPMetricExporter(endpoint=endpoint, insecure=True, timeout=timeout_s),
        )
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    base = f"http://127.0.0.1:{port}"
    return (
        OTLPSpanExporter(endpoint=f"{base}/v1/traces", timeout=timeout_s),
        OTLPMetricExporter(endpoint=f"{base}/v1/metrics", timeout=timeout_s),
    )


def _counting(exporter: object, threads: list[int] | None) -> object:
    """``exporter`` whose every ``export`` appends the ident of the thread it runs on to ``threads``."""
    if threads is None:
        return exporter
    export = exporter.export  # type: ignore[attr-defined]

    def counted(*args, **kwargs):
        threads.append(threading.get_ident())
        return export(*args, **kwargs)

    exporter.export = counted  # type: ignore[attr-defined]
    return exporter


def providers(
    protocol: str,
    port: int,
    simple: bool = False,
    queue_size: int = 16,
    batch_size: int = 16,
    export_threads: list[int] | None = None,
    timeout_s: float = EXPORT_TIMEOUT_S,
) -> tuple[TracerProvider, MeterProvider]:
    """Providers exporting often (every 10 ms) through a span queue of ``queue_size`` (by default one
    batch: shutdown drains one export, not many), with short timeouts; each export attempt's thread
    ident goes to ``export_threads`` when given."""
    span_exporter, metric_exporter = (_counting(e, export_threads) for e in _exporters(protocol, port, timeout_s))
    timeout_ms = timeout_s * 1000
    tracer_provider = TracerProvider(shutdown_on_exit=False)
    tracer_provider.add_span_processor(
        SimpleSpanProcessor(span_exporter)
        if simple
        else BatchSpanProcessor(
            span_exporter,
            max_queue_size=queue_size,
            schedule_delay_millis=10,
            max_export_batch_size=batch_size,
            export_timeout_millis=timeout_ms,
        )
    )
    reader = PeriodicExportingMetricReader(metric_exporter, export_interval_millis=10, export_timeout_millis=timeout_ms)
    return tracer_provider, MeterProvider(metric_readers=[reader], shutdown_on_exit=False)


def shut_down(*providers_: object) -> float:
    """Shut the providers down side by side; the seconds it took (bounded by the exporters' timeouts)."""
    start = time.perf_counter()
    threads = [threading.Thread(target=p.shutdown, daemon=True) for p in providers_]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=HANG_S)  # a hang check, not a timing bound: shutdown is bounded by the timeouts
    assert not any(t.is_alive() for t in threads), "provider shutdown hung"
    return time.perf_counter() - start


def burst(
    fake_provider,
    tracer_provider,
    meter_provider,
    calls: int = BURST,
    instrumented: bool = True,
    cpu: list[float] | None = None,
) -> list[float]:
    """``calls`` anthropic calls (each checked); the seconds each took (wall clock), and in ``cpu``
    the calling thread's CPU seconds for each (what the call itself did, free of scheduling noise)."""
    instrumentor = AnthropicInstrumentor()
    if instrumented:
        instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    client = anthropic.Anthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0, open_telemetry=False)
    durations = []
    try:
        for _ in range(calls):
            start, start_cpu = time.perf_counter(), time.thread_time()
            message = client.messages.create(**KW)
            durations.append(time.perf_counter() - start)
            if cpu is not None:
                cpu.append(time.thread_time() - start_cpu)
            assert message.stop_reason == "end_turn"
    finally:
        client.close()
        if instrumented:
            instrumentor.uninstrument()
    return durations


@pytest.mark.subprocess
@pytest.mark.parametrize("outage", ["closed", "blackhole"])
@pytest.mark.parametrize("protocol", [GRPC, "http"])
def test_a_burst_never_waits_on_an_unreachable_collector(protocol, outage, fake_provider):
    export_threads: list[int] = []
    with collector(outage, protocol) as (port, hole):
        tracer_provider, meter_provider = providers(protocol, port, export_threads=export_threads)
        durations = burst(fake_provider, tracer_provider, meter_provider)
        deadline = time.monotonic() + HANG_S
        while not export_threads and time.monotonic() < deadline:  # the exporters' threads are trying
            time.sleep(0.05)
        if hole is not None:  # not vacuous: an export was stuck in the hole while the burst ran
            assert hole.accepted >= 1
        took = shut_down(tracer_provider, meter_provider)  # asserts that shutdown returned
    print(
        f"{protocol} {outage}: {BURST} calls, slowest {max(durations) * 1e3:.1f} ms, "
        f"{len(export_threads)} export attempts, shutdown {took:.2f}s"
    )
    assert export_threads, "no export was attempted: the outage was never met"
    assert threading.get_ident() not in export_threads, "an export ran on the calling thread"
    # A call that waited on an export would take the export's own timeout (EXPORT_TIMEOUT_S) at the least.
    assert max(durations) < EXPORT_TIMEOUT_S


# ---------------------------------------------------------------- measured, not asserted: make soak
@pytest.mark.subprocess
@pytest.mark.soak
def test_measure_the_added_latency_under_exporter_outage(fake_provider, capsys):
    """Median and p99 per-call time of N instrumented calls with a healthy collector (its own
    process), a closed port and a black hole (both protocols), next to N uninstrumented calls;
    printed, not asserted. The span queue and batch have the SDK's default sizes (2048 and 512: the
    queue never fills here, and shutdown drains one batch), and for the black hole also a queue of
    16 ("queue full": every further span is dropped, and the SDK logs one WARNING per dropped span,
    which is then part of each call's cost)."""
    calls, rounds = 500, 4
    samples: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    conditions = [
        (p, o, q)
        for p in ("grpc", "http")
        for o, q in (("healthy", 2048), ("closed", 2048), ("blackhole", 2048), ("blackhole", 16))
    ]
    for _ in range(rounds):  # interleaved rounds: the machine's load drifts
        samples.setdefault("uninstrumented", []).extend(
            burst(fake_provider, None, None, calls, instrumented=False, cpu=cpu.setdefault("uninstrumented", []))
        )
        for protocol, outage, queue_size in conditions:
            with collector(outage, protocol) as (port, _hole):
                tracer_provider, meter_provider = providers(
                    protocol,
                    port,
                    queue_size=queue_size,
                    batch_size=min(queue_size, 512),
                    timeout_s=SOAK_EXPORT_TIMEOUT_S,
                )
                name = f"{protocol} {outage}" + (" queue full" if queue_size < calls else "")
                samples.setdefault(name, []).extend(
                    burst(fake_provider, tracer_provider, meter_provider, calls, cpu=cpu.setdefault(name, []))
                )
                shut_down(tracer_provider, meter_provider)
    with collector("blackhole", "http") as (port, _hole):  # the synchronous processor, for contrast
        tracer_provider, meter_provider = providers("http", port, simple=True, timeout_s=SOAK_EXPORT_TIMEOUT_S)
        name = "http blackhole SimpleSpanProcessor"
        samples[name] = burst(fake_provider, tracer_provider, meter_provider, 3, cpu=cpu.setdefault(name, []))
        shut_down(tracer_provider, meter_provider)

    def quantiles(values: list[float]) -> tuple[float, float]:
        ordered = sorted(values)
        return statistics.median(ordered) * 1e6, ordered[int(0.99 * (len(ordered) - 1))] * 1e6

    base = {p: quantiles(samples[f"{p} healthy"])[0] for p in ("grpc", "http")}
    base_cpu = {p: statistics.median(cpu[f"{p} healthy"]) * 1e6 for p in ("grpc", "http")}
    with capsys.disabled():
        print(
            f"\nper-call time, N={calls * rounds} calls per row: wall median / p99 and the calling thread's "
            "CPU median (µs); added = median - healthy median"
        )
        for name, values in samples.items():
            median, p99 = quantiles(values)
            cpu_median = statistics.median(cpu[name]) * 1e6
            protocol = name.split()[0]
            added = (
                f"  added {median - base[protocol]:+8.1f} wall, {cpu_median - base_cpu[protocol]:+7.1f} cpu"
                if protocol in base
                else ""
            )
            print(f"  {name:38s} {median:10.1f} / {p99:10.1f}  cpu {cpu_median:8.1f}{added}   (n={len(values)})")
