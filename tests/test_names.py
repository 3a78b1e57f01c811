"""docs/telemetry.md documents every name in otel_sampling.names and every instrument in
otel_sampling.metrics, and names nothing else of ours."""

from __future__ import annotations

import re
from pathlib import Path

from otel_sampling import metrics, names

DOC = (Path(__file__).parents[1] / "docs" / "telemetry.md").read_text()
SKIP = {"SCOPE_NAME"}  # stated in prose


def _string_values() -> dict[str, str]:
    values = {}
    for key, value in vars(names).items():
        if key.isupper() and key not in SKIP:
            for item in value if isinstance(value, tuple) else (value,):
                if isinstance(item, str):
                    values[f"{key}={item}"] = item
    return values


def test_every_name_is_documented():
    missing = sorted(
        k
        for k, v in _string_values().items()
        if f"`{v}`" not in DOC and not v.startswith("OTEL_") and v not in ("s", "{request}", "{token}", "chat")
    )
    assert missing == []
    for env in (names.ENV_POLICY, names.ENV_LABEL_VALUE_LIMIT, names.ENV_ATTRIBUTE_MAX_LENGTH):
        assert f"`{env}`" in DOC


def test_buckets_are_documented():
    for buckets in (names.MCP_DURATION_BUCKETS, names.GEN_AI_DURATION_BUCKETS, names.GEN_AI_TOKEN_BUCKETS):
        assert ", ".join(str(b) for b in buckets) in " ".join(DOC.split())


def test_docs_name_nothing_of_ours_that_the_module_lacks():
    ours = set(_string_values().values())
    documented = set(re.findall(r"`((?:otel_sampling\.sampling|degradation)\.[a-z_.]+)`", DOC))
    assert documented - ours == set()


# docs/telemetry.md "Metrics": | `name` | Kind ..., `unit` | ...
_METRIC_ROWS = {
    name: (kind, unit)
    for name, kind, unit in re.findall(r"^\| `([a-z_.]+)` \| (\w+)[^|]*?, `([^`]+)` \|", DOC, re.MULTILINE)
}
_KINDS = {
    metrics.COUNTER: "Counter",
    metrics.HISTOGRAM: "Histogram",
    metrics.UP_DOWN_COUNTER: "UpDownCounter",
    metrics.GAUGE: "Gauge",
}


def test_every_metric_spec_is_the_documented_instrument():
    """metrics.SPECS (one spec per instrument) and the docs' metrics table name the same
    instruments, each with the same kind and unit."""
    assert {spec.name for spec in metrics.SPECS} == set(_METRIC_ROWS)
    for spec in metrics.SPECS:
        assert _METRIC_ROWS[spec.name] == (_KINDS[spec.kind], spec.unit), spec.name


def test_every_histogram_has_its_documented_buckets():
    """Histograms carry explicit bucket advice, as docs/telemetry.md lists it; other kinds carry none."""
    flat = " ".join(DOC.split())
    for spec in metrics.SPECS:
        if spec.kind == metrics.HISTOGRAM:
            assert spec.buckets and ", ".join(str(b) for b in spec.buckets) in flat, spec.name
        else:
            assert spec.buckets is None, spec.name
