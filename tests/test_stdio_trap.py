"""The stdio trap (``otel_sampling.rules.stdio_trap``, said by ``instrumentation/_stdio_trap.py``).

A host under ``opentelemetry-instrument`` that starts its stdio MCP server with its own environment
passes ``PYTHONPATH`` (opentelemetry-instrumentation's ``sitecustomize``) and ``OTEL_*`` on: the
server then runs the host's exporters, and a console exporter writes to the server's stdout, the
JSON-RPC wire (MCP spec 2025-11-25, basic/transports: "The server MUST NOT write anything to its
stdout that is not a valid MCP message"). Expected values: the SDK's configurator for the
exporter lists (``_get_exporter_names``: split on commas, stripped, ``none`` names none), its
providers for ``OTEL_SDK_DISABLED`` (``"true"`` in any case), mcp 2.x's ``stdio_client`` for the
environment a server gets by default, and real server processes for the rest.
"""

from __future__ import annotations

import os
import pty
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import mcp_types as types
import pytest
import wrapt
from mcp import Client
from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, ConsoleLogRecordExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor

from conftest import TRACER_PROVIDER
from harness.limits import HANG_S
from otel_sampling import state as otel_state
from otel_sampling.instrumentation import _stdio_trap
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor
from otel_sampling.rules.stdio_trap import Collisions, collisions, exporter_names, exports_to_stdout, sdk_disabled

HERE = Path(__file__).parent
REPO = HERE.parent
SERVER = str(HERE / "sampling_server.py")
INSTRUMENT = str(Path(sys.executable).parent / "opentelemetry-instrument")
ARGS = {"hint": "claude-sonnet", "include_context": "thisServer"}

# What the server says on stderr, and what the host's mcp logs when a server's stdout is not JSON-RPC.
STDOUT_WARNING = "serves MCP over stdio and exports its"
PROMETHEUS_WARNING = "serves MCP over stdio and runs the Prometheus exporter"
NOT_JSON_RPC = "Failed to parse JSONRPC message from server"


# ---------------------------------------------------------------------- the rule
class TestExporterNames:
    """``exporter_names``: an ``OTEL_<SIGNAL>_EXPORTER`` value as the SDK's configurator reads it."""

    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            (None, ()),
            ("", ()),
            ("none", ()),
            (" None ", ()),
            ("console", ("console",)),
            ("otlp, console", ("otlp", "console")),
            ("otlp,prometheus", ("otlp", "prometheus")),
        ],
    )
    def test_a_comma_separated_list_of_stripped_names(self, value, expected):
        assert expected == exporter_names(value)

    def test_names_keep_their_case(self):
        """Entry point names are matched as written: the SDK finds no ``Console`` exporter."""
        assert ("Console",) == exporter_names("Console")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, False),
        ("", False),
        ("false", False),
        ("1", False),
        ("true", True),
        (" TRUE ", True),
        ("True", True),
    ],
)
def test_sdk_disabled_is_true_in_any_case(value, expected):
    assert expected == sdk_disabled(value)


@pytest.mark.parametrize(
    ("configured", "attached", "expected"),
    [
        ("console", None, True),  # the provider could not be read: the configured names decide
        ("otlp,console", None, True),
        ("otlp", None, False),
        (None, None, False),  # unset: the distro's default is otlp
        ("otlp", True, True),  # a console exporter attached in code, whatever the environment says
        ("console", False, False),  # the console exporter writes elsewhere (out=sys.stderr)
    ],
)
def test_what_is_attached_decides_before_what_is_configured(configured, attached, expected):
    assert expected == exports_to_stdout(configured, attached)


CONSOLE_TRACES = {"traces": "console", "metrics": "none", "logs": "none"}


class TestCollisions:
    """``collisions``: only a pipe or a socket is a wire; a disabled SDK exports nothing."""

    @pytest.mark.parametrize("stdout", ["pipe", "socket"])
    def test_a_console_exporter_on_a_wire(self, stdout):
        assert Collisions(stdout=("traces",)) == collisions(stdout, CONSOLE_TRACES, {}, None)

    @pytest.mark.parametrize("stdout", ["tty", "file", "device", "other", "closed"])
    def test_no_wire_no_collision(self, stdout):
        configured = {"traces": "console", "metrics": "prometheus", "logs": "console"}
        assert Collisions() == collisions(stdout, configured, {}, None)

    @pytest.mark.parametrize("disabled", ["true", "TRUE"])
    def test_a_disabled_sdk_exports_nothing(self, disabled):
        configured = {"traces": "console", "metrics": "prometheus"}
        assert Collisions() == collisions("pipe", configured, {"logs": True}, disabled)

    def test_the_signals_in_order(self):
        configured = {"traces": "console", "metrics": "otlp", "logs": "console"}
        assert ("traces", "metrics", "logs") == collisions("pipe", configured, {"metrics": True}, "false").stdout

    def test_prometheus_is_a_port_collision(self):
        assert Collisions(prometheus=True) == collisions("pipe", {"metrics": "otlp,prometheus"}, {}, None)

    def test_nothing_configured_nothing_attached(self):
        assert Collisions() == collisions("pipe", {}, {"traces": False, "metrics": False, "logs": False}, None)


# ---------------------------------------------------------------------- the facts
def test_stdout_kind_names_what_fd_it_is(tmp_path):
    read, write = os.pipe()
    left, right = socket.socketpair()
    controller, terminal = pty.openpty()
    try:
        with (tmp_path / "out").open("w") as file, open(os.devnull, "w") as device:
            kinds = [
                _stdio_trap.stdout_kind(fd) for fd in (write, left.fileno(), terminal, file.fileno(), device.fileno())
            ]
    finally:
        for fd in (read, write, controller, terminal):
            os.close(fd)
        left.close()
        right.close()
    assert ["pipe", "socket", "tty", "file", "device"] == kinds
    assert "closed" == _stdio_trap.stdout_kind(read)  # closed above


class TestAttachedExporters:
    """``attached_stdout_exporters``: an SDK console exporter whose stream is fd 1, per signal."""

    @staticmethod
    def fd1():
        return os.fdopen(1, "w", closefd=False)  # stdout itself (never written to here)

    def test_console_exporters_on_stdout(self):
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter(out=self.fd1())))
        meter_provider = MeterProvider(
            [PeriodicExportingMetricReader(ConsoleMetricExporter(out=self.fd1()), export_interval_millis=3_600_000)]
        )
        logger_provider = LoggerProvider()
        logger_provider.add_log_record_processor(BatchLogRecordProcessor(ConsoleLogRecordExporter(out=self.fd1())))
        try:
            found = _stdio_trap.attached_stdout_exporters(tracer_provider, meter_provider, logger_provider)
        finally:
            for provider in (tracer_provider, meter_provider, logger_provider):
                provider.shutdown()
        assert {"traces": True, "metrics": True, "logs": True} == found

    def test_a_console_exporter_on_stderr_or_another_exporter_is_not_stdout(self, tmp_path):
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
        with (tmp_path / "spans").open("w") as file:
            tracer_provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=file)))
            found = _stdio_trap.attached_stdout_exporters(tracer_provider, MeterProvider(), LoggerProvider())
        assert {"traces": False, "metrics": False, "logs": False} == found

    def test_a_provider_that_is_not_the_sdk_s_cannot_be_read(self):
        from opentelemetry.trace import NoOpTracerProvider

        assert _stdio_trap.attached_stdout_exporters(NoOpTracerProvider())["traces"] is None


# ---------------------------------------------------------------------- where and how it is said
def start_bindings():
    """Every module of mcp 2.x that binds the stdio transport's start, and what it binds."""
    import mcp
    import mcp.server.mcpserver.server
    import mcp.server.stdio

    modules = (mcp, mcp.server.stdio, mcp.server.mcpserver.server)
    return {module.__name__: vars(module)["stdio_server"] for module in modules}


def wrapped(bindings) -> bool:
    return all(isinstance(start, wrapt.FunctionWrapper) for start in bindings.values())


def test_the_start_is_wrapped_while_an_instrumentor_is_instrumented(telemetry):
    """Every binding is wrapped by the first ``instrument()`` and given back by the last
    ``uninstrument()`` (another instrumentor still instrumented keeps the watch)."""
    originals = {
        name: start.__wrapped__ if isinstance(start, wrapt.FunctionWrapper) else start
        for name, start in start_bindings().items()
    }
    host, server = MCPSamplingInstrumentor(), MCPServerSamplingInstrumentor()
    for instrumentor in (host, server):
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        assert wrapped(start_bindings())
        server.uninstrument()
        assert wrapped(start_bindings())  # the host-side instrumentor is still instrumented
    finally:
        host.uninstrument()
        server.uninstrument()
    if not otel_state.hooks_enabled():  # no instrumentor left over by another test
        assert originals == start_bindings()


@pytest.fixture
def on_a_wire(monkeypatch):
    """The facts of a stdio server with the console span exporter configured; nothing said yet."""
    monkeypatch.setattr(_stdio_trap, "_said", set())
    monkeypatch.setattr(_stdio_trap, "stdout_kind", lambda fd=1: "pipe")
    monkeypatch.setattr(_stdio_trap, "attached_stdout_exporters", dict)  # no SDK provider read
    for name, value in {
        "OTEL_TRACES_EXPORTER": "console",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("OTEL_SDK_DISABLED", raising=False)


def test_said_once_per_process_on_stderr(on_a_wire, capsys):
    for _ in range(3):  # three servers started in one process, or one started three times
        _stdio_trap.check()
    out, err = capsys.readouterr()
    assert err.count(STDOUT_WARNING) == 1
    assert out == ""


def test_a_failed_check_never_stops_the_server_start(on_a_wire, monkeypatch, capsys):
    def broken(fd=1):
        raise RuntimeError("fstat exploded")

    monkeypatch.setattr(_stdio_trap, "stdout_kind", broken)
    started = object()
    assert started is _stdio_trap.start_wrapper(None)(lambda *a, **k: started, None, (), {})
    assert capsys.readouterr() == ("", "")


def test_a_transport_given_its_own_streams_is_not_checked(on_a_wire, capsys):
    """``stdio_server(stdin, stdout)`` serves the streams it is given, not fd 1."""
    started = object()
    wrapper = _stdio_trap.start_wrapper(None)
    assert started is wrapper(lambda *a, **k: started, None, (), {"stdout": object()})
    assert started is wrapper(lambda *a, **k: started, None, (object(), object()), {})
    assert STDOUT_WARNING not in capsys.readouterr().err


# ---------------------------------------------------------------------- real server processes
def server_env(**env: str) -> dict[str, str]:
    """The server's own environment (over mcp's default one): this worktree's otel_sampling, the
    exporters a test names (none by default), our provider instrumentors off (the server makes
    no provider calls; loading those SDKs only slows it down)."""
    return {
        "PYTHONPATH": str(REPO),
        "OTEL_SERVICE_NAME": "stdio-trap-server",
        "OTEL_TRACES_EXPORTER": "none",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "otel_sampling_anthropic,otel_sampling_openai",
        **env,
    }


def sampling_callback():
    async def callback(ctx, params):
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(text="ok"),
            model="claude-sonnet-5-5-20261001",
            stop_reason="endTurn",
        )

    return callback


def session(params: StdioServerParameters, errlog: Path) -> str:
    """One sampling round trip with the server started from ``params`` (its stderr to ``errlog``):
    the tool's text."""

    async def main():
        with errlog.open("w") as err:
            async with Client(
                stdio_client(params, errlog=err), mode="legacy", sampling_callback=sampling_callback()
            ) as client:
                return (await client.call_tool("sample", ARGS)).content[0].text

    return anyio.run(main)


def under_instrument(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=INSTRUMENT, args=[sys.executable, SERVER], env=env)


@pytest.mark.subprocess
def test_a_console_exporter_in_a_stdio_server_is_named_once_on_stderr(tmp_path):
    """The trap as a host meets it: the server is started as plain ``python server.py`` with the
    environment of a host under ``opentelemetry-instrument`` (its sitecustomize on ``PYTHONPATH``,
    the console exporter), so both MCP instrumentors of ours are loaded in it: one warning, on the
    server's stderr, naming the signals and the fixes; the session works."""
    import opentelemetry.instrumentation.auto_instrumentation as auto

    sitecustomize = str(Path(auto.__file__).parent)
    env = server_env(
        PYTHONPATH=os.pathsep.join([sitecustomize, str(REPO)]),
        OTEL_TRACES_EXPORTER="console",
        OTEL_METRICS_EXPORTER="console",
    )
    errlog = tmp_path / "server.err"
    out = session(StdioServerParameters(command=sys.executable, args=[SERVER], env=env), errlog)
    assert out == "claude-sonnet-5-5-20261001|endTurn"  # the sampling request round-tripped
    stderr = errlog.read_text()
    assert stderr.count(STDOUT_WARNING) == 1, stderr
    (line,) = [line for line in stderr.splitlines() if STDOUT_WARNING in line]
    assert "exports its traces and metrics to stdout" in line
    assert "StdioServerParameters(env=None)" in line and "OTEL_SDK_DISABLED=true" in line  # the fixes


@pytest.mark.subprocess
def test_mcp_s_default_environment_passes_no_instrumentation(tmp_path):
    """``StdioServerParameters(env=None)``: the server gets only mcp's allow-list, so neither the
    host's ``PYTHONPATH`` nor its ``OTEL_*``; it runs uninstrumented and its stdout stays JSON-RPC."""
    assert set(get_default_environment()) <= {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}
    errlog = tmp_path / "server.err"
    out = session(StdioServerParameters(command=sys.executable, args=[SERVER]), errlog)
    assert out == "claude-sonnet-5-5-20261001|endTurn"
    assert STDOUT_WARNING not in errlog.read_text()


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "env",
    [
        {},  # no exporter at all
        {"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"},  # the documented fix
    ],
    ids=["no-exporter", "sdk-disabled"],
)
def test_no_warning_without_an_exporter_on_stdout(tmp_path, env, caplog):
    errlog = tmp_path / "server.err"
    out = session(under_instrument(server_env(**env)), errlog)
    assert out == "claude-sonnet-5-5-20261001|endTurn"
    stderr = errlog.read_text()
    assert STDOUT_WARNING not in stderr, stderr
    assert NOT_JSON_RPC not in caplog.text


def run_server(stdout, env: dict[str, str], command: list[str] | None = None) -> subprocess.CompletedProcess:
    """Start the server with ``stdout``, its stdin at end of file (it serves, reads EOF and exits)."""
    proc = subprocess.run(
        command or [INSTRUMENT, sys.executable, SERVER],
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.PIPE,
        env={**get_default_environment(), **env},
        text=True,
        timeout=HANG_S,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.subprocess
@pytest.mark.parametrize(("kind", "warned"), [("pipe", True), ("socket", True), ("file", False), ("tty", False)])
def test_only_a_pipe_or_a_socket_is_a_wire(tmp_path, kind, warned):
    """mcp's stdio_client gives its server a pipe, a libuv host (Node.js) a socketpair; a server
    started by hand writes to a terminal, or its stdout goes to a file: those are no wire. The
    warning goes to stderr, never to stdout."""
    env = server_env(OTEL_TRACES_EXPORTER="console")
    if kind == "pipe":
        proc = run_server(subprocess.PIPE, env)
        assert "otel-sampling" not in proc.stdout
    elif kind == "socket":
        ours, theirs = socket.socketpair()
        with ours, theirs:
            proc = run_server(theirs.fileno(), env)
    elif kind == "tty":
        controller, terminal = pty.openpty()
        try:
            proc = run_server(terminal, env)
        finally:
            os.close(terminal)
            os.close(controller)
    else:
        with (tmp_path / "stdout").open("w") as file:
            proc = run_server(file, env)
    assert proc.stderr.count(STDOUT_WARNING) == (1 if warned else 0), proc.stderr


# A server that sets up its SDK in code, instruments the server side itself and serves over stdio.
CODE_SERVER = """
import sys
sys.path.insert(0, {here!r})
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter({out})))
trace.set_tracer_provider(provider)
MCPServerSamplingInstrumentor().instrument()
from sampling_server import build_server
build_server().run()
"""


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("out", "configured", "warned"),
    [
        ("", "none", True),  # ConsoleSpanExporter() writes to sys.stdout, whatever the environment says
        ("out=sys.stderr", "console", False),  # the fix in code: the environment no longer decides
    ],
    ids=["console-on-stdout", "console-on-stderr"],
)
def test_a_console_exporter_set_up_in_code(out, configured, warned):
    script = CODE_SERVER.format(here=str(HERE), out=out)
    stderr = run_server(
        subprocess.PIPE, server_env(OTEL_TRACES_EXPORTER=configured), command=[sys.executable, "-c", script]
    ).stderr
    assert stderr.count(STDOUT_WARNING) == (1 if warned else 0), stderr


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.subprocess
def test_the_prometheus_exporter_in_a_stdio_server_is_named_once():
    port = str(free_port())
    stderr = run_server(
        subprocess.PIPE,
        server_env(
            OTEL_METRICS_EXPORTER="prometheus",
            OTEL_EXPORTER_PROMETHEUS_HOST="127.0.0.1",
            OTEL_EXPORTER_PROMETHEUS_PORT=port,
        ),
    ).stderr
    assert stderr.count(PROMETHEUS_WARNING) == 1, stderr
    assert f"127.0.0.1:{port}" in stderr


@pytest.mark.subprocess
def test_a_server_whose_host_holds_the_prometheus_port_starts_uninstrumented():
    """When the host listens first, the server's ``opentelemetry-instrument`` fails to set up at all
    (its only sign is the SDK's own error on stderr): nothing of ours is loaded to say more."""
    with socket.socket() as host:
        host.bind(("127.0.0.1", 0))
        host.listen()
        port = str(host.getsockname()[1])
        stderr = run_server(
            subprocess.PIPE,
            server_env(
                OTEL_METRICS_EXPORTER="prometheus",
                OTEL_EXPORTER_PROMETHEUS_HOST="127.0.0.1",
                OTEL_EXPORTER_PROMETHEUS_PORT=port,
            ),
        ).stderr
    assert "Failed to auto initialize OpenTelemetry" in stderr and "Address already in use" in stderr
    assert PROMETHEUS_WARNING not in stderr
