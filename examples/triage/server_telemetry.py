"""The ticket-server's own telemetry in the demo: what the MCP server saw of its sampling requests.

The host launches ``server.py`` once per session; for the demo it launches it under
``opentelemetry-instrument`` (``TRIAGE_SERVER_LAUNCHER``), so the server-side instrumentor
(``otel_sampling_mcp_server``) records each request the server sent. The server's spans go to the
demo's trace receiver; its metrics, exported as deltas over OTLP/HTTP, come here
(:class:`ServerMetricsReceiver`), because a stdio server process is gone before anyone could
scrape it.
"""

from __future__ import annotations

import shutil
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)

from otel_sampling import names
from otel_sampling.testing.otlp_receiver import any_value

UNANSWERED_AFTER_S = "5"  # longer than the slowest step (slow-provider, 2.5 s); exit ends the rest


def server_env(traces_endpoint: str, metrics_endpoint: str) -> dict[str, str]:
    """Host environment that makes it launch the server instrumented (see ``host.server_parameters``)."""
    launcher = shutil.which("opentelemetry-instrument", path=str(Path(sys.executable).parent))
    if launcher is None:
        raise SystemExit("opentelemetry-instrument is not installed next to this Python (run `make demo`)")
    server = {
        "OTEL_SERVICE_NAME": "ticket-server",
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
        "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "otel_sampling_mcp,otel_sampling_anthropic,otel_sampling_openai",
        names.ENV_UNANSWERED_AFTER_SECONDS: UNANSWERED_AFTER_S,
    }
    env = {"TRIAGE_SERVER_LAUNCHER": launcher}
    env.update({f"TRIAGE_SERVER_ENV_{key}": value for key, value in server.items()})
    return env


class ServerMetricsReceiver:
    """Sums the delta points of every counter posted to ``/v1/metrics`` by (metric, attributes)."""

    def __init__(self) -> None:
        self.totals: Counter[tuple[str, tuple[tuple[str, Any], ...]]] = Counter()
        lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path != "/v1/metrics":
                    self.send_error(404)
                    return
                request = ExportMetricsServiceRequest()
                try:
                    request.ParseFromString(body)
                except Exception:
                    self.send_error(400)
                    return
                with lock:
                    for resource in request.resource_metrics:
                        for scope in resource.scope_metrics:
                            for metric in scope.metrics:
                                if metric.WhichOneof("data") != "sum":
                                    continue
                                for point in metric.sum.data_points:
                                    labels = tuple(sorted((kv.key, any_value(kv.value)) for kv in point.attributes))
                                    value = getattr(point, point.WhichOneof("value"))
                                    receiver.totals[(metric.name, labels)] += value
                reply = ExportMetricsServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="server-metrics", daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1/metrics"

    def requests(self) -> Counter[tuple[str, str]]:
        """``mcp.sampling.server.requests`` by (path, ending)."""
        found: Counter[tuple[str, str]] = Counter()
        for (metric, labels), value in self.totals.items():
            if metric == names.METRIC_SAMPLING_SERVER_REQUESTS:
                attrs = dict(labels)
                found[(attrs.get(names.SAMPLING_PATH), attrs.get(names.SAMPLING_ENDING))] += int(value)
        return found

    def __enter__(self) -> ServerMetricsReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
