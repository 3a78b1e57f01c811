"""A minimal OTLP/HTTP (protobuf) receiver on 127.0.0.1, for the demo and the tests.

``OTLPReceiver`` accepts ``POST /v1/traces``, ``POST /v1/metrics`` and ``POST /v1/logs`` bodies from the real OTLP/HTTP
exporters (``opentelemetry-exporter-otlp-proto-http``), decodes them with ``opentelemetry-proto``
and keeps each span and each metric as a plain dict (JSON-ready). A span::

    {"name", "kind", "trace_id", "span_id", "parent_span_id", "start_ns", "end_ns",
     "status_code", "scope", "schema_url", "service_name", "attributes": {key: value},
     "events": [{"name", "attributes"}], "links": [{"trace_id", "span_id"}]}

A metric (one per metric per export request; a periodic reader exports cumulative totals, so the
last one of a name is the current total)::

    {"name", "unit", "description", "type" ("sum" | "gauge" | "histogram" | ...),
     "monotonic" (sums only), "temporality" ("CUMULATIVE" | "DELTA", sums and histograms),
     "scope", "schema_url", "service_name",
     "points": [{"attributes": {key: value}, "value"} or
                {"attributes", "count", "sum", "bucket_counts": [...], "explicit_bounds": [...]}]}

A log record (events such as ``gen_ai.client.inference.operation.details`` are log records)::

    {"event_name", "body", "severity_text", "trace_id", "span_id", "scope", "attributes": {key: value}}

``.bodies`` keeps every accepted request as ``(path, decompressed protobuf bytes)``, for tests that
scan everything exported byte by byte.

Use it as a context manager; ``.endpoint`` / ``.metrics_endpoint`` are the values for
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` (``.logs_endpoint``:
``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT``), ``.base_url`` the
value for ``OTEL_EXPORTER_OTLP_ENDPOINT`` (the exporters append the signal paths). Bodies may be
compressed as the exporter's ``OTEL_EXPORTER_OTLP_COMPRESSION`` does (``Content-Encoding: gzip`` or
``deflate``). A body that does not decode gets HTTP 400, an unknown path 404.
"""

from __future__ import annotations

import gzip
import threading
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.metrics.v1.metrics_pb2 import AggregationTemporality
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

_KINDS = {value: name.removeprefix("SPAN_KIND_") for name, value in Span.SpanKind.items()}
_STATUS = {value: name.removeprefix("STATUS_CODE_") for name, value in Status.StatusCode.items()}
_TEMPORALITY = {value: name.removeprefix("AGGREGATION_TEMPORALITY_") for name, value in AggregationTemporality.items()}
# The content codings the OTLP/HTTP exporters send (their Compression: none, gzip, deflate).
_DECOMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "": bytes,
    "identity": bytes,
    "gzip": gzip.decompress,
    "deflate": zlib.decompress,
}


def any_value(value: AnyValue) -> Any:
    """A Python value from an OTLP ``AnyValue`` (arrays become lists)."""
    field = value.WhichOneof("value")
    if field == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if field == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, field) if field else None


def _attributes(key_values: Any) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in key_values}


def decode(body: bytes) -> list[dict[str, Any]]:
    """Spans of one ``ExportTraceServiceRequest`` body, as dicts."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    {
                        "name": span.name,
                        "kind": _KINDS.get(span.kind, str(span.kind)),
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex() or None,
                        "start_ns": span.start_time_unix_nano,
                        "end_ns": span.end_time_unix_nano,
                        "status_code": _STATUS.get(span.status.code, str(span.status.code)),
                        "scope": scope_spans.scope.name,
                        "schema_url": scope_spans.schema_url,
                        "service_name": resource.get("service.name"),
                        "attributes": _attributes(span.attributes),
                        "events": [{"name": e.name, "attributes": _attributes(e.attributes)} for e in span.events],
                        "links": [
                            {"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex()} for link in span.links
                        ],
                    }
                )
    return spans


def decode_logs(body: bytes) -> list[dict[str, Any]]:
    """Log records of one ``ExportLogsServiceRequest`` body, as dicts."""
    request = ExportLogsServiceRequest()
    request.ParseFromString(body)
    return [
        {
            "event_name": record.event_name,
            "body": any_value(record.body),
            "severity_text": record.severity_text,
            "trace_id": record.trace_id.hex(),
            "span_id": record.span_id.hex(),
            "scope": scope_logs.scope.name,
            "attributes": _attributes(record.attributes),
        }
        for resource_logs in request.resource_logs
        for scope_logs in resource_logs.scope_logs
        for record in scope_logs.log_records
    ]


def _point(point: Any, histogram: bool) -> dict[str, Any]:
    decoded: dict[str, Any] = {"attributes": _attributes(point.attributes)}
    if histogram:
        decoded.update(
            count=point.count,
            sum=point.sum,
            bucket_counts=list(point.bucket_counts),
            explicit_bounds=list(point.explicit_bounds),
        )
    else:
        decoded["value"] = getattr(point, point.WhichOneof("value"))
    return decoded


def decode_metrics(body: bytes) -> list[dict[str, Any]]:
    """Metrics of one ``ExportMetricsServiceRequest`` body, as dicts (histograms: explicit buckets)."""
    request = ExportMetricsServiceRequest()
    request.ParseFromString(body)
    metrics = []
    for resource_metrics in request.resource_metrics:
        resource = _attributes(resource_metrics.resource.attributes)
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data")
                data = getattr(metric, kind)
                metrics.append(
                    {
                        "name": metric.name,
                        "unit": metric.unit,
                        "description": metric.description,
                        "type": kind,
                        "monotonic": data.is_monotonic if kind == "sum" else None,
                        "temporality": _TEMPORALITY.get(data.aggregation_temporality)
                        if hasattr(data, "aggregation_temporality")
                        else None,
                        "scope": scope_metrics.scope.name,
                        "schema_url": scope_metrics.schema_url,
                        "service_name": resource.get("service.name"),
                        "points": [_point(p, kind == "histogram") for p in data.data_points],
                    }
                )
    return metrics


# path -> (decoder, where the decoded items go, the empty success reply)
_Route = tuple[Callable[[bytes], list[dict[str, Any]]], str, bytes]


class OTLPReceiver:
    """Collects spans, metrics and log records posted to ``http://127.0.0.1:<port>/v1/{traces,metrics,logs}``
    (thread-safe)."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.metrics: list[dict[str, Any]] = []
        self.logs: list[dict[str, Any]] = []
        self.bodies: list[tuple[str, bytes]] = []
        lock = threading.Lock()
        receiver = self
        routes: dict[str, _Route] = {
            "/v1/traces": (decode, "spans", ExportTraceServiceResponse().SerializeToString()),
            "/v1/metrics": (decode_metrics, "metrics", ExportMetricsServiceResponse().SerializeToString()),
            "/v1/logs": (decode_logs, "logs", ExportLogsServiceResponse().SerializeToString()),
        }

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path not in routes:
                    self.send_error(404)
                    return
                decoder, store, reply = routes[self.path]
                try:
                    body = _DECOMPRESS[self.headers.get("Content-Encoding", "").strip().lower()](body)
                    items = decoder(body)
                except Exception:  # noqa: BLE001 - a malformed body is the sender's problem: say so, keep serving
                    self.send_error(400)
                    return
                with lock:
                    getattr(receiver, store).extend(items)
                    receiver.bodies.append((self.path, body))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="otlp-receiver", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def endpoint(self) -> str:
        """The traces endpoint (``/v1/traces``)."""
        return f"{self.base_url}/v1/traces"

    @property
    def metrics_endpoint(self) -> str:
        return f"{self.base_url}/v1/metrics"

    @property
    def logs_endpoint(self) -> str:
        return f"{self.base_url}/v1/logs"

    def latest_metrics(self) -> dict[str, dict[str, Any]]:
        """The last export of each metric name (cumulative temporality: the current totals)."""
        with_latest: dict[str, dict[str, Any]] = {}
        for metric in list(self.metrics):
            with_latest[metric["name"]] = metric
        return with_latest

    def __enter__(self) -> OTLPReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
