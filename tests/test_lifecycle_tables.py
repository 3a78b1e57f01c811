"""Lifecycle, read from the target tables themselves.

``tests/test_lifecycle.py`` lists the wrapped functions from the SDKs' structure; here every entry
of every target table (the tables ``instrument()`` and ``uninstrument()`` walk) is checked by
identity, every call shape of the drivers (``tests/drivers.py``) is run after ``uninstrument()`` and
must emit nothing, and the process-level cases run in a fresh interpreter: the SDKs not installed,
a library imported after ``instrument()`` (also after two), and one imported after
``uninstrument()``, each wrapped once or not at all; a process left instrumented still exits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import SPANS, TRACER_PROVIDER
from drivers import DRIVERS, resolve, snapshot, tables
from harness.limits import HANG_S
from otel_sampling.instrumentation._targets import _is_ours, _layers

HERE = Path(__file__).parent
INSTRUMENTORS = list(tables())


def _current(table) -> list:
    return [resolve(t)[2] for t in table]


@pytest.mark.parametrize("cls", INSTRUMENTORS, ids=lambda c: c.__name__)
def test_every_table_entry_is_wrapped_once_and_restored_by_identity(cls, telemetry):
    table = tables()[cls]
    before = _current(table)
    instrumentor = cls()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        for target, original, now in zip(table, before, _current(table), strict=True):
            ours = [layer for layer in _layers(now) if _is_ours(layer)]
            assert len(ours) == 1, f"{target.module}.{target.attribute}: {len(ours)} layers of ours"
            assert now.__wrapped__ is original
    finally:
        instrumentor.uninstrument()
    assert all(a is b for a, b in zip(_current(table), before, strict=True))
    instrumentor.uninstrument()  # a second uninstrument changes nothing
    assert all(a is b for a, b in zip(_current(table), before, strict=True))


def test_all_together_restore_every_entry_in_any_order(telemetry):
    before = {cls: _current(t) for cls, t in tables().items()}
    instrumentors = [cls() for cls in INSTRUMENTORS]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    # Not the order of instrument(), nor its reverse (google-genai's and LiteLLM's, where installed, last).
    for instrumentor in (instrumentors[2], instrumentors[0], instrumentors[3], instrumentors[1], *instrumentors[4:]):
        instrumentor.uninstrument()
    for cls, table in tables().items():
        assert all(a is b for a, b in zip(_current(table), before[cls], strict=True)), cls.__name__


def test_twice_instrumented_every_call_shape_gives_the_telemetry_of_once(telemetry, fake_provider):
    """instrument() twice: each call shape makes as many spans as with one instrument()."""
    counts = []
    for times in (1, 2):
        instrumentors = [cls() for cls in INSTRUMENTORS]
        for instrumentor in instrumentors:
            for _ in range(times):
                instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
        try:
            per_driver = {}
            for name, driver in DRIVERS.items():
                SPANS.clear()
                driver.run(fake_provider)
                per_driver[name] = len(telemetry.spans())
        finally:
            for instrumentor in instrumentors:
                instrumentor.uninstrument()
        counts.append(per_driver)
    assert all(counts[0].values())  # every shape is traced at all
    assert counts[1] == counts[0]


def test_nothing_is_emitted_after_uninstrument_by_any_call_shape(telemetry, fake_provider):
    instrumentors = [cls() for cls in INSTRUMENTORS]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:  # instrumented, every driver emits: the empty results below are not vacuous
        for driver in DRIVERS.values():
            SPANS.clear()
            driver.run(fake_provider)
            assert telemetry.spans()
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
    before = snapshot(telemetry)
    assert before
    SPANS.clear()
    for driver in DRIVERS.values():
        driver.run(fake_provider)
    assert telemetry.spans() == []
    assert snapshot(telemetry) == before


# ---------------------------------------------------------------- in a fresh interpreter
# Blocks the SDKs: their modules cannot be imported and their distributions are not found (what
# importlib.metadata and opentelemetry's dependency check see when a package is not installed).
_BLOCK = """
import importlib.machinery, sys
BLOCKED = {"anthropic", "openai", "mcp", "mcp_types"}
class _Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Blocker())
_find = importlib.machinery.PathFinder.find_distributions
def _without_blocked(*args, **kwargs):
    return (d for d in _find(*args, **kwargs) if d.metadata["Name"].lower() not in BLOCKED)
importlib.machinery.PathFinder.find_distributions = _without_blocked
"""

_SETUP = """
import json, logging, sys
sys.path.insert(0, {tests!r})
records = []
class _Keep(logging.Handler):
    def emit(self, record):
        records.append((record.levelname, record.name, record.getMessage()))
logging.getLogger().addHandler(_Keep()); logging.getLogger().setLevel(logging.DEBUG)
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
tracer_provider = TracerProvider(); tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
trace.set_tracer_provider(tracer_provider)
providers = dict(tracer_provider=tracer_provider, meter_provider=MeterProvider(metric_readers=[reader]))
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor
"""

# One call of each library, made by a host that imports the library only now.
_CALLS = {
    "anthropic": """
import anthropic
from otel_sampling.testing.fake_provider import FakeProvider
with FakeProvider() as fp:
    anthropic.Anthropic(base_url=fp.url, api_key="k", max_retries=0).messages.create(
        model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
""",
    "openai": """
import openai
from otel_sampling.testing.fake_provider import FakeProvider
with FakeProvider() as fp:
    openai.OpenAI(base_url=fp.url + "/v1", api_key="k", max_retries=0).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}])
""",
    "mcp": """
import anyio, mcp_types as types
from mcp import Client
from sampling_server import build_server
async def callback(ctx, params):
    return types.CreateMessageResult(role="assistant", content=types.TextContent(text="ok"), model="m")
async def main():
    async with Client(build_server(), mode="legacy", sampling_callback=callback) as client:
        await client.call_tool("sample", {})
anyio.run(main)
""",
}
_INSTRUMENTORS = {
    "anthropic": "AnthropicInstrumentor",
    "openai": "OpenAIInstrumentor",
    "mcp": "MCPSamplingInstrumentor",
}


def _run(script: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG_S, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.subprocess
@pytest.mark.parametrize("skip_dep_check", [True, False], ids=["opentelemetry-instrument", "instrument()"])
def test_without_the_sdks_instrument_returns_quietly_and_wraps_nothing(skip_dep_check):
    """``opentelemetry-instrument`` (``skip_dep_check=True``): our check skips each instrumentor at
    DEBUG. A direct ``instrument()``: OpenTelemetry's ``BaseInstrumentor`` checks first and logs its
    own one ERROR line per instrumentor ("no installed version was found"); nothing else is said."""
    script = (
        _BLOCK
        + _SETUP.format(tests=str(HERE))
        + textwrap.dedent(f"""
        instrumentors = [AnthropicInstrumentor(), OpenAIInstrumentor(), MCPSamplingInstrumentor(),
                         MCPServerSamplingInstrumentor()]
        for instrumentor in instrumentors:
            instrumentor.instrument(skip_dep_check={skip_dep_check}, **providers)
        loaded = sorted(m for m in sys.modules if m.partition(".")[0] in BLOCKED)
        print(json.dumps({{"loaded": loaded, "loud": [r for r in records if r[0] not in ("DEBUG", "INFO")],
                          "skipped": [r[2] for r in records if "skipped" in r[2]]}}))
    """)
    )
    out = _run(script)
    assert out["loaded"] == []
    if skip_dep_check:
        assert out["loud"] == [] and len(out["skipped"]) == 4  # each instrumentor said why, at DEBUG
    else:
        assert [(level, logger) for level, logger, _ in out["loud"]] == [
            ("ERROR", "opentelemetry.instrumentation.instrumentor")
        ] * 4
        assert all("no installed version was found" in message for _, _, message in out["loud"])


@pytest.mark.subprocess
@pytest.mark.parametrize("library", _CALLS)
def test_a_library_imported_after_instrument_is_instrumented(library):
    script = (
        _SETUP.format(tests=str(HERE))
        + textwrap.dedent(f"""
        assert {library!r} not in sys.modules
        instrumentor = {_INSTRUMENTORS[library]}()
        instrumentor.instrument(**providers)
    """)
        + _CALLS[library]
        + textwrap.dedent("""
        instrumentor.uninstrument()
        print(json.dumps({"spans": [s.name for s in spans.get_finished_spans()
                                    if s.instrumentation_scope.name == "otel_sampling"]}))
    """)
    )
    # The host answers model "m" where the server hinted "claude-sonnet": without a policy that is a
    # substitution, so the request's own run ends degraded and undisclosed (a silent incident).
    expected = ["sampling/createMessage", "degradation.silent_incident"] if library == "mcp" else ["chat m"]
    assert _run(script)["spans"] == expected


@pytest.mark.subprocess
@pytest.mark.parametrize("library", _CALLS)
def test_a_library_imported_after_uninstrument_is_not_instrumented(library):
    script = (
        _SETUP.format(tests=str(HERE))
        + textwrap.dedent(f"""
        instrumentor = {_INSTRUMENTORS[library]}()
        instrumentor.instrument(**providers)
        instrumentor.uninstrument()  # the host's import below finds the modules instrument() had loaded
    """)
        + _CALLS[library]
        + textwrap.dedent("""
        data = reader.get_metrics_data()
        print(json.dumps({"spans": [s.name for s in spans.get_finished_spans()
                                    if s.instrumentation_scope.name == "otel_sampling"],
                          "points": sum(len(m.data.data_points) for rm in (data.resource_metrics if data else ())
                                        for sm in rm.scope_metrics for m in sm.metrics)}))
    """)
    )
    assert _run(script) == {"spans": [], "points": 0}


_MCP_LATE_IMPORT = """
import sys, wrapt
assert "mcp" not in sys.modules
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor
host, server = MCPSamplingInstrumentor(), MCPServerSamplingInstrumentor()
host.instrument(); server.instrument()
from mcp.client.session import ClientSession            # imported after instrument(): wrapped
from mcp.server.session import ServerSession
print(isinstance(vars(ClientSession)["dispatch_input_request"], wrapt.FunctionWrapper),
      isinstance(vars(ServerSession)["send_request"], wrapt.FunctionWrapper))
server.uninstrument(); host.uninstrument()
from mcp.client.session import ClientSession            # imported after uninstrument(): not wrapped
from mcp.server.runner import ServerRunner
print(isinstance(vars(ClientSession)["dispatch_input_request"], wrapt.FunctionWrapper),
      isinstance(vars(ServerRunner)["_on_request"], wrapt.FunctionWrapper))
import threading
host.instrument()  # left instrumented: the watchdog thread must not keep the process alive
print(all(t.daemon for t in threading.enumerate() if t.name == "otel-sampling-watchdog"))
"""


@pytest.mark.subprocess
def test_mcp_imported_after_instrument_is_wrapped_and_after_uninstrument_is_not():
    """In a fresh interpreter where mcp is not imported yet; a process that exits still
    instrumented exits (the stall watchdog is a daemon thread)."""
    proc = subprocess.run([sys.executable, "-c", _MCP_LATE_IMPORT], capture_output=True, text=True, timeout=HANG_S)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True", "False", "False", "True"]


_PROVIDERS_LATE_IMPORT = """
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
    proc = subprocess.run(
        [sys.executable, "-c", _PROVIDERS_LATE_IMPORT, order], capture_output=True, text=True, timeout=HANG_S
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


@pytest.mark.subprocess
def test_providers_imported_after_instrument_twice_are_wrapped_once_and_restored():
    # wrapped once each; one span per call (2); after uninstrument: no layer, still 2 spans
    assert _late_import("instrument-twice") == ["1", "1", "2", "0", "0", "2"]


@pytest.mark.subprocess
def test_providers_imported_after_uninstrument_are_not_wrapped():
    assert _late_import("uninstrument-first") == ["0", "0", "0", "0", "0", "0"]
