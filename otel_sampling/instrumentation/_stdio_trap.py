"""The stdio trap: said once on stderr when a process that serves MCP over stdio exports telemetry
into its own wire, or takes its host's Prometheus port (:mod:`otel_sampling.rules.stdio_trap`
decides; this module gathers the facts and says it).

Where: the start of the server-side stdio transport, ``stdio_server()`` (mcp 2.x and 1.x), the
one sure sign that this process is an MCP stdio server. It is wrapped in every mcp module that
binds the name (:data:`START_POINTS`: its own module, the ``mcp`` package, which re-exports it,
and the high-level servers that import it, ``MCPServer`` in 2.x and ``FastMCP`` in 1.x), while any
otel-sampling instrumentor is instrumented, in the modules loaded at its ``instrument()`` (the
MCP instrumentors load them all; ``opentelemetry-instrument`` instruments before the program's
own imports). Only a call that serves the process's own stdout (no ``stdout`` argument) is
checked, before the transport takes fd 1 over.

Facts: the kind of fd 1 (:func:`stdout_kind`); ``OTEL_<SIGNAL>_EXPORTER`` and
``OTEL_SDK_DISABLED``; and which exporters attached to the global SDK providers write to stdout
(:func:`attached_stdout_exporters`: an exporter whose ``out`` stream, the attribute of the SDK's
console exporters, is fd 1).

Said: one line per collision, once per process, written to ``sys.stderr`` itself rather than
through logging: a logging handler may write to stdout (a ``StreamHandler`` on ``sys.stdout``,
or the SDK's ``LoggingHandler`` feeding a console log exporter), and stdout is the wire. Never
raises into the server's start: a failure is logged at DEBUG and the server starts.
"""

from __future__ import annotations

import logging
import os
import stat
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from opentelemetry import _logs, metrics, trace
from opentelemetry.environment_variables import OTEL_LOGS_EXPORTER, OTEL_METRICS_EXPORTER, OTEL_TRACES_EXPORTER
from opentelemetry.sdk import _logs as sdk_logs
from opentelemetry.sdk import metrics as sdk_metrics
from opentelemetry.sdk import trace as sdk_trace
from opentelemetry.sdk.environment_variables import (
    OTEL_EXPORTER_PROMETHEUS_HOST,
    OTEL_EXPORTER_PROMETHEUS_PORT,
    OTEL_SDK_DISABLED,
)

from otel_sampling.rules import stdio_trap
from otel_sampling.rules.stdio_trap import Collisions

logger = logging.getLogger(__name__)

#: (module, attribute) of every binding of the stdio transport's start in mcp 2.x and 1.x.
START_POINTS = (
    ("mcp.server.stdio", "stdio_server"),
    ("mcp", "stdio_server"),
    ("mcp.server.mcpserver.server", "stdio_server"),  # MCPServer.run_stdio_async (2.x)
    ("mcp.server.fastmcp.server", "stdio_server"),  # FastMCP.run_stdio_async (1.x)
)

_ENVIRONMENT = {"traces": OTEL_TRACES_EXPORTER, "metrics": OTEL_METRICS_EXPORTER, "logs": OTEL_LOGS_EXPORTER}
# The Prometheus exporter's defaults (OpenTelemetry SDK environment variables specification).
_PROMETHEUS_DEFAULTS = ("localhost", "9464")
_FIX = (
    "Start the server with mcp's default environment (StdioServerParameters(env=None) passes only "
    "HOME, LOGNAME, PATH, SHELL, TERM and USER) or with OTEL_SDK_DISABLED=true"
)
_SEE = 'otel-sampling docs/deploy.md, "MCP stdio servers"'
_said: set[str] = set()  # a collision is said once per process


def start_wrapper(_state: object) -> Callable[..., Any]:
    """The wrapper of ``stdio_server(stdin=None, stdout=None)``: checks, then starts the transport
    exactly as called (its result, or its exception, unchanged)."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if kwargs.get("stdout", args[1] if len(args) > 1 else None) is None:  # it serves fd 1
            check()
        return wrapped(*args, **kwargs)

    return wrapper


def check() -> None:
    """Say each collision of this process's telemetry with its stdio wire that was not said yet."""
    try:
        configured = {signal: os.environ.get(name) for signal, name in _ENVIRONMENT.items()}
        found = stdio_trap.collisions(
            stdout_kind(), configured, attached_stdout_exporters(), os.environ.get(OTEL_SDK_DISABLED)
        )
        for key, message in _messages(found):
            if key not in _said:
                _said.add(key)
                sys.stderr.write(message + "\n")
                sys.stderr.flush()
    except Exception:
        logger.debug("otel-sampling: could not check the stdio server's exporters", exc_info=True)


def _messages(found: Collisions) -> Iterable[tuple[str, str]]:
    if found.stdout:
        *others, last = found.stdout
        signals = f"{', '.join(others)} and {last}" if others else last
        yield (
            "stdout",
            (
                f"otel-sampling: WARNING: this process serves MCP over stdio and exports its {signals} to stdout, "
                "which is the JSON-RPC pipe to its host: the host reads telemetry where it expects messages "
                '(mcp logs "Failed to parse JSONRPC message from server"). ' + _FIX + "; to instrument the "
                "server on purpose, export with otlp or write the console exporter to sys.stderr (" + _SEE + ")."
            ),
        )
    if found.prometheus:
        host = os.environ.get(OTEL_EXPORTER_PROMETHEUS_HOST) or _PROMETHEUS_DEFAULTS[0]
        port = os.environ.get(OTEL_EXPORTER_PROMETHEUS_PORT) or _PROMETHEUS_DEFAULTS[1]
        yield (
            "prometheus",
            (
                f"otel-sampling: WARNING: this process serves MCP over stdio and runs the Prometheus exporter on "
                f"{host}:{port}, the port of its host when the host passed its own environment on, and of every other "
                "server started that way: whichever of them starts second cannot listen there. " + _FIX + "; to "
                "instrument the server on purpose, give it its own OTEL_EXPORTER_PROMETHEUS_PORT or export its "
                "metrics with otlp (" + _SEE + ")."
            ),
        )


def stdout_kind(fd: int = 1) -> str:
    """What ``fd`` is: ``tty``, ``pipe``, ``socket``, ``file``, ``device``, ``other``, or ``closed``
    (:mod:`otel_sampling.rules.stdio_trap` names them)."""
    try:
        if os.isatty(fd):
            return stdio_trap.TTY
        mode = os.fstat(fd).st_mode
    except OSError:
        return stdio_trap.CLOSED
    for test, kind in (
        (stat.S_ISFIFO, stdio_trap.PIPE),
        (stat.S_ISSOCK, stdio_trap.SOCKET),
        (stat.S_ISREG, stdio_trap.FILE),
        (stat.S_ISCHR, stdio_trap.DEVICE),
    ):
        if test(mode):
            return kind
    return stdio_trap.OTHER


def attached_stdout_exporters(
    tracer_provider: Any = None, meter_provider: Any = None, logger_provider: Any = None
) -> dict[str, bool | None]:
    """Signal -> whether an exporter attached to its provider (default: the global one) writes to
    stdout; None when the provider is not the SDK's or its exporters could not be read.

    Reads the SDK's own structure (opentelemetry-sdk 1.x): the span processors of the
    ``TracerProvider`` (``SimpleSpanProcessor.span_exporter``, ``BatchSpanProcessor``'s batch
    processor's exporter), the metric readers of the ``MeterProvider`` (``_exporter`` of a
    ``PeriodicExportingMetricReader``) and the log record processors of the ``LoggerProvider``
    (as for spans).
    """
    tracer_provider = tracer_provider or trace.get_tracer_provider()
    meter_provider = meter_provider or metrics.get_meter_provider()
    logger_provider = logger_provider or _logs.get_logger_provider()
    return {
        "traces": _writes_to_stdout(
            tracer_provider, sdk_trace.TracerProvider, ("_active_span_processor", "_span_processors")
        ),
        "metrics": _writes_to_stdout(meter_provider, sdk_metrics.MeterProvider, ("_metric_readers",)),
        "logs": _writes_to_stdout(
            logger_provider, sdk_logs.LoggerProvider, ("_multi_log_record_processor", "_log_record_processors")
        ),
    }


def _writes_to_stdout(provider: Any, sdk_class: type, path: tuple[str, ...]) -> bool | None:
    if not isinstance(provider, sdk_class):
        return None
    pipeline: Any = provider
    for attribute in path:
        pipeline = getattr(pipeline, attribute, None)
    if not isinstance(pipeline, Sequence) or isinstance(pipeline, str):
        return None
    return any(_is_stdout(getattr(exporter, "out", None)) for stage in pipeline for exporter in _exporters(stage))


def _exporters(stage: Any) -> Iterable[Any]:
    """The exporters of one span or log record processor, or of one metric reader."""
    yield getattr(stage, "span_exporter", None)
    yield getattr(stage, "_exporter", None)
    yield getattr(getattr(stage, "_batch_processor", None), "_exporter", None)


def _is_stdout(stream: Any) -> bool:
    try:
        return stream is not None and stream.fileno() == 1
    except (AttributeError, OSError, ValueError):  # no file behind it (io.UnsupportedOperation is both)
        return False
