"""How an OTel metric or attribute name reads in Prometheus (the Python Prometheus exporter's rules).

Dashboards, alert rules and the demo report write PromQL; they take names from here so one
function owns the translation (OpenTelemetry "Prometheus and OpenMetrics compatibility":
invalid characters become ``_``, the unit is appended as a word, counters get ``_total``,
and units in curly braces, which are annotations, are dropped).
"""

from __future__ import annotations

import re

# The label every exporter that follows the specification ("Instrumentation Scope") puts the
# name of the meter's instrumentation scope in (with otel_scope_version and otel_scope_schema_url):
# opentelemetry-exporter-prometheus, the Collector's prometheus and prometheus_remote_write
# exporters, and Prometheus' and Mimir's OTLP endpoints where scope promotion is on.
SCOPE_NAME_LABEL = "otel_scope_name"

_INVALID = re.compile(r"[^a-zA-Z0-9_:]")
# The exporter maps the dimensionless unit "1" to no suffix (opentelemetry-exporter-prometheus
# _mapping.py: the specification says "ratio", the exporter does not): degradation_active.
_UNIT_WORDS = {"s": "seconds", "ms": "milliseconds", "By": "bytes", "1": ""}


def label_name(attribute: str) -> str:
    """``mcp.server.name`` -> ``mcp_server_name``."""
    return _INVALID.sub("_", attribute)


def metric_name(otel_name: str, unit: str = "", *, counter: bool = False) -> str:
    """The Prometheus series name of an OTel instrument.

    Args:
        otel_name: the instrument name, e.g. ``otel_sampling.sampling.duration``.
        unit: its UCUM unit; ``{...}`` annotations add nothing, ``s`` adds ``_seconds``.
        counter: True for a monotonic Counter (adds ``_total``).

    A histogram's series add ``_bucket``, ``_sum`` and ``_count`` to the returned name.
    """
    name = label_name(otel_name)
    word = "" if unit.startswith("{") else _UNIT_WORDS.get(unit, label_name(unit))
    if word and not name.endswith("_" + word):
        name = f"{name}_{word}"
    return f"{name}_total" if counter else name
