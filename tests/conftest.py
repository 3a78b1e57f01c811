"""Shared fixtures: the real OTel SDK with in-memory exporters, instrumentors, the fake provider."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harness.limits import HANG_S
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor
from otel_sampling.testing.fake_provider import FakeProvider

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))  # the test MCP server module
TRIAGE = HERE.parent / "examples" / "triage"


def _mcp_major() -> int | None:
    try:
        return int(version("mcp").split(".", 1)[0])
    except (PackageNotFoundError, ValueError):
        return None


# The mcp 1.x cells of `make test-matrix`: modules written against the mcp 2.x API are left out.
# They import `mcp_types` (a package only mcp 2.x brings) or mcp 2.x's `Client`, or are named here
# when they use other 2.x-only names; mcp 1.x has its own module, test_mcp_v1.py.
_MCP2_ONLY = {
    "test_bench_contract.py",  # the contract bench builds mcp 2.x types
    "test_lifecycle.py",
    "test_in_flight.py",
    "test_prometheus_e2e.py",
    "test_five_numbers_demo.py",
    "test_fleet.py",
    "test_mcp_connections.py",
    "test_mcp_tool_call.py",
    "test_mcp_tool_outcomes.py",  # mcp.Client and the 2.x low-level Server
    "test_mcp_rejected.py",  # mcp.Client; the mcp 1.x rejections are in test_mcp_v1.py
    "test_restarts.py",
    "test_direct_calls_demo.py",  # the demo's desk-server driver (examples/triage) uses mcp.Client
}
if _mcp_major() == 1:
    _sources = {p.relative_to(HERE).as_posix(): p.read_text(encoding="utf-8") for p in HERE.rglob("test_*.py")}
    _ignored = {
        name
        for name, text in _sources.items()
        if name in _MCP2_ONLY or "mcp_types" in text or "from mcp import Client" in text
    }
    # (a module under a folder, tests/records/..., is named by its path from here)
    while True:  # and the modules that import one of those
        _more = {
            name
            for name, text in _sources.items()
            if name not in _ignored and any(f"from {Path(other).stem} import" in text for other in _ignored)
        }
        if not _more:
            break
        _ignored |= _more
    collect_ignore = sorted(_ignored)


# Under pytest-xdist (`make test` runs `--dist loadfile`), a work unit is a module: one worker runs
# it in a row, so its module-scoped fixtures run once. Modules that share a session-scoped fixture
# too expensive to run once per worker are one unit. (xdist's `loadgroup` would do this, but it
# marks a test's group in its node id, which pytest 9.2 no longer lets it change: pytest-xdist#1386.)
SHARED_UNITS = {
    "test_prometheus_e2e.py": "triage-host",
    "test_five_numbers_demo.py": "triage-host",
    "test_vmalert.py": "triage-host",
}
# The units holding a test with one of these marks are handed out first (`--no-loadscope-reorder`
# keeps the collection order): they are the long ones, and a long unit handed out last leaves the
# other worker idle while it runs.
LONG_MARKERS = ("e2e", "subprocess")


def _unit(nodeid: str) -> str:
    """The work unit of a test: its module, or the unit its module shares."""
    module = nodeid.split("::", 1)[0]
    return SHARED_UNITS.get(Path(module).name, module)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ModuleUnits(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid)

    return ModuleUnits(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):  # not an xdist worker: the collection order stays
        return
    long = {_unit(item.nodeid) for item in items if any(item.get_closest_marker(m) for m in LONG_MARKERS)}
    items.sort(key=lambda item: _unit(item.nodeid) not in long)  # a stable sort: each unit keeps its order


# One global tracer provider for the session: the mcp and anthropic SDKs trace through the global
# provider, and it can be set only once per process.
SPANS = InMemorySpanExporter()
TRACER_PROVIDER = TracerProvider()
TRACER_PROVIDER.add_span_processor(SimpleSpanProcessor(SPANS))
trace.set_tracer_provider(TRACER_PROVIDER)


class Telemetry:
    """What one test exported: finished spans and metric points."""

    def __init__(self) -> None:
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def spans(self, name: str | None = None, scope: str | None = "otel_sampling") -> list:
        return [
            s
            for s in SPANS.get_finished_spans()
            if (name is None or s.name == name) and (scope is None or s.instrumentation_scope.name == scope)
        ]

    def points(self, metric: str) -> list:
        data = self.reader.get_metrics_data()
        found = []
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == metric:
                        found.extend(m.data.data_points)
        return found

    def counts(self, metric: str, *keys: str) -> dict:
        """Sum of a counter (or count of a histogram) grouped by the given attribute keys."""
        out: dict = {}
        for p in self.points(metric):
            key = tuple(p.attributes.get(k) for k in keys)
            out[key] = out.get(key, 0) + (p.value if hasattr(p, "value") else p.count)
        return out

    def incident_causes(self) -> tuple[str, ...]:
        """The causes of the one silent incident our spans recorded (its event); () when none."""
        events = [e for s in self.spans() for e in s.events if e.name == names.EVENT_SILENT_INCIDENT]
        assert len(events) <= 1
        return tuple(events[0].attributes[names.SILENT_INCIDENT_CAUSE]) if events else ()


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    SPANS.clear()
    t = Telemetry()
    yield t
    t.meter_provider.shutdown()


def with_policy(
    telemetry: Telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy_toml: str, *classes
) -> Iterator[Telemetry]:
    """``policy_toml`` as the OTEL_SAMPLING_POLICY file (read at instrument()), then ``classes`` instrumented."""
    path = tmp_path / "policy.toml"
    path.write_text(policy_toml)
    monkeypatch.setenv("OTEL_SAMPLING_POLICY", str(path))
    yield from _instrumented(telemetry, *classes)


@contextlib.contextmanager
def instrumenting(telemetry: Telemetry, *classes) -> Iterator[Telemetry]:
    """``classes`` instrumented into ``telemetry`` for the duration, uninstrumented on the way out."""
    instrumentors = [cls() for cls in classes]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        yield telemetry
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()


def _instrumented(telemetry: Telemetry, *classes) -> Iterator[Telemetry]:
    with instrumenting(telemetry, *classes):
        yield telemetry


def raised_by(run: Callable[[], object]) -> Exception:
    """The exception ``run()`` raises (AssertionError if it returns). Run before instrumenting, it
    is what the SDK alone raises for a scenario: which class a failure mid-stream reaches the
    caller as depends on the SDK release (from 2.17, anthropic raises its ``APIConnectionError`` /
    ``APITimeoutError`` from a failed body read; before, the ``httpx2`` error went through)."""
    try:
        run()
    except Exception as exc:  # noqa: BLE001 - the exception is the result
        return exc
    raise AssertionError(f"{run!r} raised nothing")


@pytest.fixture
def mcp_instrumented(telemetry: Telemetry) -> Iterator[Telemetry]:
    yield from _instrumented(telemetry, MCPSamplingInstrumentor)


@pytest.fixture
def anthropic_instrumented(telemetry: Telemetry) -> Iterator[Telemetry]:
    yield from _instrumented(telemetry, AnthropicInstrumentor)


@pytest.fixture
def openai_instrumented(telemetry: Telemetry) -> Iterator[Telemetry]:
    yield from _instrumented(telemetry, OpenAIInstrumentor)


@pytest.fixture
def instrumented(telemetry: Telemetry) -> Iterator[Telemetry]:
    """Both instrumentors, sharing one meter provider."""
    yield from _instrumented(telemetry, MCPSamplingInstrumentor, AnthropicInstrumentor)


@pytest.fixture(scope="session")
def fake_provider() -> Iterator[FakeProvider]:
    with FakeProvider() as fp:
        yield fp


def load_triage_demo() -> ModuleType:
    """examples/triage/demo.py as a module, with its directory on ``sys.path`` (demo.py imports its
    sibling modules, ``scenario`` and ``five_numbers_report`` among them, as it does when run as a script)."""
    if str(TRIAGE) not in sys.path:
        sys.path.insert(0, str(TRIAGE))
    spec = importlib.util.spec_from_file_location("triage_demo", TRIAGE / "demo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def triage_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """The triage host (examples/triage/host.py) under ``opentelemetry-instrument`` with the real
    Prometheus exporter, as ``make demo`` runs it (``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai/dup``), once
    per session: see :func:`triage_host_running`."""
    with triage_host_running(tmp_path_factory.mktemp("triage")) as host:
        yield host


@contextlib.contextmanager
def triage_host_running(directory: Path, opt_in: str | None = None) -> Iterator[SimpleNamespace]:
    """The triage host, its scenario done, then held until the block ends (it must then exit 0).
    Yields ``done`` (the scenario-done event), ``scrape`` (its /metrics text when the scenario was
    done) and ``target`` (``host:port`` of its /metrics). ``opt_in``: ``OTEL_SEMCONV_STABILITY_OPT_IN``
    instead of the demo's (``""``: unset, the default emission); its log is ``directory/host.log``."""
    from harness.otlp_receiver import OTLPReceiver

    demo = load_triage_demo()
    port = demo.free_port()
    log = directory / "host.log"
    command = [
        str(Path(sys.executable).parent / "opentelemetry-instrument"),
        sys.executable,
        str(TRIAGE / "host.py"),
        "--hold",
    ]
    with FakeProvider() as provider, OTLPReceiver() as receiver, log.open("w") as log_file:
        env = demo.host_env(provider.url, receiver.endpoint, port)
        if opt_in is not None:
            env.pop("OTEL_SEMCONV_STABILITY_OPT_IN")
            if opt_in:
                env["OTEL_SEMCONV_STABILITY_OPT_IN"] = opt_in
        host = subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_file,
            text=True,
            start_new_session=True,
        )
        try:
            lines: queue.Queue[str | None] = queue.Queue()
            threading.Thread(target=demo.pump, args=(host.stdout, lines), daemon=True).start()
            done = demo.wait_for_done(lines, time.monotonic() + demo.HOST_TIMEOUT_S)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=HANG_S) as response:
                scrape = response.read().decode()
            yield SimpleNamespace(done=done, scrape=scrape, target=f"127.0.0.1:{port}")
            host.stdin.write("\n")  # released: it exits, flushing its spans
            host.stdin.close()
            assert host.wait(timeout=HANG_S) == 0, f"the triage host exited with {host.returncode}; see {log}"
        finally:
            if host.poll() is None:
                os.killpg(host.pid, signal.SIGKILL)
                host.wait()


POLICY_TOML = """
[servers."sampling-test-server"]
primary_model = "claude-sonnet-5-5"
permitted_models = ["claude-sonnet-5-5", "claude-haiku-5-5"]
context_ceiling = "thisServer"
"""


@pytest.fixture
def policy_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A policy file for the test server, named by OTEL_SAMPLING_POLICY (set before instrument())."""
    path = tmp_path / "policy.toml"
    path.write_text(POLICY_TOML)
    monkeypatch.setenv("OTEL_SAMPLING_POLICY", str(path))
    return path


# ---------------------------------------------------------------- hostile values (Hypothesis strategies)
# What a hostile peer can send, shared by the ending rules' tests (tests/rules/test_endings.py) and
# the tests that drive the same answers through the real wrappers (tests/test_endings_total.py).
# Imported here, after the fixtures above, so this section merges as one appended block.
import asyncio  # noqa: E402
from typing import Any  # noqa: E402

from hypothesis import strategies as st  # noqa: E402

if sys.version_info < (3, 11):  # anyio brings the backport there
    from exceptiongroup import BaseExceptionGroup

from otel_sampling import names  # noqa: E402

# Text as a hostile peer sends it: controls, bidi overrides, lone surrogates, long runs.
hostile_text = (
    st.text(st.characters(codec=None, categories=None), max_size=64)
    | st.sampled_from(["", "\x00", "\ud800", "\u202e", "timed out after 1s", "policy.denied", "completed"])
    | st.integers(1000, 20_000).map(lambda n: "x" * n)
)
codes = st.integers(min_value=-(2**63), max_value=2**63) | st.sampled_from([-1, -32001, -32003, -32600, -32603, 0])
json_leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | hostile_text
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(hostile_text, inner, max_size=4),
    max_leaves=20,
)
#: ``ErrorData.data`` as sent: any JSON, or a mapping whose ``reason`` may or may not be an ending.
frame_data = json_value | st.fixed_dictionaries(
    {"reason": st.sampled_from(names.ENDINGS) | hostile_text | json_leaf},
    optional={"resetsAt": json_leaf, "extra": json_value},
)
stop_reasons = (
    st.none()
    | st.sampled_from(["endTurn", "stopSequence", "maxTokens", "refusal", "content_filter", "toolUse"])
    | hostile_text
)


def exception_of(kind: str, code: int, message: str, data: Any) -> BaseException:
    """One exception of ``kind`` (:data:`EXCEPTION_KINDS`); the mcp ones are mcp 2.x's ``MCPError``."""
    if kind in ("mcp", "group", "wide group"):
        from mcp import MCPError  # mcp 2.x: drawn only by the tests that run there

        if kind == "mcp":
            return MCPError(code=code, message=message, data=data)
        if kind == "group":
            return BaseExceptionGroup("g", [MCPError(code=code, message=message, data=data)])
        return BaseExceptionGroup("g", [ValueError(message), MCPError(code=code, message=message)])
    if kind == "nested group":
        return BaseExceptionGroup("g", [BaseExceptionGroup("h", [ValueError(message)])])
    return {
        "cancelled": asyncio.CancelledError,
        "timeout": TimeoutError,
        "value": ValueError,
        "runtime": RuntimeError,
        "key": KeyError,
        "keyboard": KeyboardInterrupt,
        "exit": SystemExit,
        "os": OSError,
    }[kind](message)


EXCEPTION_KINDS = (
    "mcp",
    "group",
    "nested group",
    "wide group",
    "cancelled",
    "timeout",
    "value",
    "runtime",
    "key",
    "keyboard",
    "exit",
    "os",
)
exceptions = st.builds(
    exception_of, st.sampled_from(EXCEPTION_KINDS), codes.filter(lambda c: abs(c) < 2**31), hostile_text, json_value
)


# ---------------------------------------------------------------- a host calling the real anthropic SDK
SAMPLE_ARGS = {"hint": "claude-sonnet", "include_context": "thisServer"}


def provider_host_callback(fake_provider: FakeProvider, primary_scenario: str = "", fallback: str | None = None):
    """A host sampling callback (mcp 2.x) asking the fake provider for claude-sonnet-5-5 with
    ``primary_scenario``; on an overload, ``fallback`` if given, else an error frame ``model.unavailable``."""
    import anthropic
    import mcp_types as types

    async def callback(ctx, params):
        client = anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
        try:
            try:
                message = await client.messages.create(
                    model="claude-sonnet-5-5",
                    max_tokens=params.max_tokens,
                    messages=[{"role": "user", "content": "hi"}],
                    extra_headers={"x-fake-scenario": primary_scenario},
                )
            except anthropic.OverloadedError:
                if fallback is None:
                    return types.ErrorData(code=-32603, message="No model", data={"reason": "model.unavailable"})
                message = await client.messages.create(
                    model=fallback, max_tokens=params.max_tokens, messages=[{"role": "user", "content": "hi"}]
                )
        finally:
            await client.close()
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(text=message.content[0].text),
            model=message.model,
            stop_reason="endTurn",
        )

    return callback


async def call_sample_tool(mode: str, callback) -> Any:
    """The test server's ``sample`` tool called once over an in-memory mcp 2.x session (``mode``:
    ``legacy`` or ``auto``); the tool result, or the exception the client raised."""
    from mcp import Client

    from sampling_server import build_server

    async with Client(build_server(), mode=mode, sampling_callback=callback) as client:
        try:
            return await client.call_tool("sample", SAMPLE_ARGS)
        except Exception as exc:  # noqa: BLE001 - what the client got is the subject
            return exc


# ---------------------------------------------------------------- both MCP sides, trace context
@pytest.fixture
def mcp_both_instrumented(telemetry: Telemetry) -> Iterator[Telemetry]:
    """The host and the server instrumentors, sharing one meter provider."""
    from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor

    yield from _instrumented(telemetry, MCPSamplingInstrumentor, MCPServerSamplingInstrumentor)


def traceparent_of(span) -> str:
    """W3C Trace Context ``traceparent`` naming ``span``: version 00, trace id, span id, trace flags."""
    context = span.get_span_context()
    ids = f"{trace.format_trace_id(context.trace_id)}-{trace.format_span_id(context.span_id)}"
    return f"00-{ids}-{int(context.trace_flags):02x}"
