"""The ticket-server's own telemetry in the demo: what the MCP server saw of its sampling requests.

The host launches ``server.py`` once per session; for the demo it launches it under
``opentelemetry-instrument`` (``TRIAGE_SERVER_LAUNCHER``), so the server-side instrumentor
(``otel_sampling_mcp_server``) records each request the server sent. The server's spans go to the
demo's OTLP receiver; so do its metrics, exported as deltas over OTLP/HTTP and summed by
:func:`server_requests`, because a stdio server process is gone before anyone could scrape it.
"""

from __future__ import annotations

import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from otel_sampling import names

UNANSWERED_AFTER_S = "5"  # longer than the slowest step (slow-provider, 2.5 s); exit ends the rest


def launcher() -> str:
    """``opentelemetry-instrument`` next to this Python."""
    found = shutil.which("opentelemetry-instrument", path=str(Path(sys.executable).parent))
    if found is None:
        raise SystemExit("opentelemetry-instrument is not installed next to this Python (run `make demo`)")
    return found


def exporting_env(service_name: str, traces_endpoint: str, metrics_endpoint: str) -> dict[str, str]:
    """A stdio server's OpenTelemetry environment: spans and delta metrics over OTLP/HTTP (one
    process per session: their deltas add up), no logs, nothing on stdout (the MCP channel)."""
    return {
        "OTEL_SERVICE_NAME": service_name,
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": traces_endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "200",
        "OTEL_METRICS_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": metrics_endpoint,
        "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": "delta",  # one process per session: sum them
        "OTEL_METRIC_EXPORT_INTERVAL": "500",
        "OTEL_LOGS_EXPORTER": "none",
    }


def server_env(traces_endpoint: str, metrics_endpoint: str) -> dict[str, str]:
    """Host environment that makes it launch the server instrumented (see ``host.server_parameters``)."""
    server = {
        **exporting_env("ticket-server", traces_endpoint, metrics_endpoint),
        "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "otel_sampling_mcp,otel_sampling_anthropic,otel_sampling_openai",
        names.ENV_UNANSWERED_AFTER_SECONDS: UNANSWERED_AFTER_S,
    }
    env = {"TRIAGE_SERVER_LAUNCHER": launcher()}
    env.update({f"TRIAGE_SERVER_ENV_{key}": value for key, value in server.items()})
    return env


def server_requests(metrics: list[dict[str, Any]]) -> Counter[tuple[str, str]]:
    """``otel_sampling.sampling.server.requests`` by (path, ending): the sum of the delta points the server
    processes posted (``OTLPReceiver.metrics``; one process per session, so deltas add up)."""
    found: Counter[tuple[str, str]] = Counter()
    for metric in metrics:
        if metric["name"] == names.METRIC_SAMPLING_SERVER_REQUESTS:
            for point in metric["points"]:
                attrs = point["attributes"]
                found[(attrs.get(names.SAMPLING_PATH), attrs.get(names.SAMPLING_ENDING))] += int(point["value"])
    return found
