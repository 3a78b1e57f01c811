"""A minimal OTLP/HTTP (protobuf) trace receiver on 127.0.0.1, for the demo and the tests.

``OTLPTraceReceiver`` accepts ``POST /v1/traces`` bodies from the real OTLP/HTTP span exporter,
decodes them with ``opentelemetry-proto`` and keeps each span as a plain dict (JSON-ready)::

    {"name", "kind", "trace_id", "span_id", "parent_span_id", "start_ns", "end_ns",
     "status_code", "scope", "service_name", "attributes": {key: value},
     "events": [{"name", "attributes"}], "links": [{"trace_id", "span_id"}]}

Use it as a context manager; ``.endpoint`` is the value for ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

_KINDS = {value: name.removeprefix("SPAN_KIND_") for name, value in Span.SpanKind.items()}
_STATUS = {value: name.removeprefix("STATUS_CODE_") for name, value in Status.StatusCode.items()}


def any_value(value: AnyValue) -> Any:
    """A Python value from an OTLP ``AnyValue`` (arrays become lists)."""
    field = value.WhichOneof("value")
    if field == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if field == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, field) if field else None


def decode(body: bytes) -> list[dict[str, Any]]:
    """Spans of one ``ExportTraceServiceRequest`` body, as dicts."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = {kv.key: any_value(kv.value) for kv in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append({
                    "name": span.name,
                    "kind": _KINDS.get(span.kind, str(span.kind)),
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex() or None,
                    "start_ns": span.start_time_unix_nano,
                    "end_ns": span.end_time_unix_nano,
                    "status_code": _STATUS.get(span.status.code, str(span.status.code)),
                    "scope": scope_spans.scope.name,
                    "service_name": resource.get("service.name"),
                    "attributes": {kv.key: any_value(kv.value) for kv in span.attributes},
                    "events": [{"name": e.name, "attributes": {kv.key: any_value(kv.value) for kv in e.attributes}}
                               for e in span.events],
                    "links": [{"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex()} for link in span.links],
                })
    return spans


class OTLPTraceReceiver:
    """Collects spans posted to ``http://127.0.0.1:<port>/v1/traces`` (thread-safe)."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path != "/v1/traces":
                    self.send_error(404)
                    return
                try:
                    spans = decode(body)
                except Exception:  # a malformed body is the sender's problem: say so, keep serving
                    self.send_error(400)
                    return
                with lock:
                    receiver.spans.extend(spans)
                reply = ExportTraceServiceResponse().SerializeToString()
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
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1/traces"

    def __enter__(self) -> OTLPTraceReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
