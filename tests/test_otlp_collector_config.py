"""docs/collector.yaml: the Collector configuration docs/deploy.md ships, checked without a collector.

No otelcol binary is installable on the test machines, so ``otelcol validate`` cannot run here. This
checks what it would catch first: every pipeline names defined components, every defined
component is used, each component type is one the Collector documents (otelcol-contrib >= 0.154
names, see the file's header) with the settings it requires, and the endpoints agree with the host
side (the OTLP/HTTP exporter's default port) and with the backends' documented ingest paths.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest

yaml = pytest.importorskip("yaml")

CONFIG = yaml.safe_load((Path(__file__).parents[1] / "docs" / "collector.yaml").read_text())
SIGNALS = {"traces", "metrics", "logs"}
# Component types the config may use, and the settings each one requires (Collector READMEs:
# otlpreceiver, memorylimiterprocessor, batchprocessor, otlpexporter, otlphttpexporter,
# prometheusremotewriteexporter).
KNOWN = {
    "receivers": {"otlp": {"protocols"}},
    "processors": {"memory_limiter": {"check_interval"}, "batch": set()},
    "exporters": {"otlp_grpc": {"endpoint"}, "otlp_http": set(), "prometheus_remote_write": {"endpoint"}},
}


def _type(component_id: str) -> str:
    return component_id.split("/", 1)[0]


def test_pipelines_reference_defined_components_and_every_component_is_used():
    pipelines = CONFIG["service"]["pipelines"]
    assert {_type(name) for name in pipelines} <= SIGNALS
    for kind in KNOWN:
        used = {component for pipeline in pipelines.values() for component in pipeline.get(kind, ())}
        assert used == set(CONFIG[kind]), kind
    for pipeline in pipelines.values():
        assert pipeline["receivers"] and pipeline["exporters"]
        assert pipeline["processors"][0] == "memory_limiter"  # the Collector docs: first in the pipeline


def test_components_are_documented_types_with_their_required_settings():
    for kind, types in KNOWN.items():
        for component_id, settings in CONFIG[kind].items():
            assert _type(component_id) in types, component_id
            assert types[_type(component_id)] <= set(settings or {}), component_id
    (http_exporter,) = [s for c, s in CONFIG["exporters"].items() if _type(c) == "otlp_http"]
    assert {"endpoint", "metrics_endpoint"} & set(http_exporter)


def test_endpoints_match_the_host_exporters_and_the_backends():
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import DEFAULT_ENDPOINT

    protocols = CONFIG["receivers"]["otlp"]["protocols"]
    # Hosts export OTLP/HTTP; the receiver listens where the exporter sends by default.
    assert protocols["http"]["endpoint"].rsplit(":", 1)[1] == str(urlsplit(DEFAULT_ENDPOINT).port) == "4318"
    assert protocols["grpc"]["endpoint"].endswith(":4317")
    exporters = CONFIG["exporters"]
    # Prometheus' OTLP receiver path (prometheus.io guide "Using Prometheus as your OpenTelemetry
    # backend") and Mimir's remote-write path (Mimir docs "Configure the OpenTelemetry Collector").
    assert urlsplit(exporters["otlp_http/prometheus"]["metrics_endpoint"]).path == "/api/v1/otlp/v1/metrics"
    assert urlsplit(exporters["prometheus_remote_write/mimir"]["endpoint"]).path == "/api/v1/push"
    traces = [
        e
        for p, pipeline in CONFIG["service"]["pipelines"].items()
        if _type(p) == "traces"
        for e in pipeline["exporters"]
    ]
    assert all(exporters[e]["endpoint"].endswith(":4317") for e in traces)  # Tempo / Jaeger OTLP gRPC
