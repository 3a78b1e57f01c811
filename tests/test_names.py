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


# docs/telemetry.md "Every name we emit, beside the conventions'": | `name` | kind | status | convention |
_SECTION = DOC.split("### Every name we emit, beside the conventions'", 1)[1].split("\n## ", 1)[0]
_NAME_ROWS = dict(re.findall(r"^\| `([^`]+)` \| [a-z, ]+ \| (\w[\w.]*) \| ", _SECTION, re.MULTILINE))
_STATUSES = {"same", "v1.41", "newest", "proposal", "ours"}
_OUR_NAMESPACES = ("otel_sampling.", "degradation.", "agent.", "cache.")


def _emitted_names() -> set[str]:
    """Every attribute, metric, event and span name in names.py (dotted; value sets such as the
    endings left out), and the two span names."""
    dotted = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z0-9_]+)+")
    values = {v for k, v in vars(names).items() if k.isupper() and isinstance(v, str) and dotted.fullmatch(v)} - set(
        names.ENDINGS
    )
    return values | {names.SPAN_SAMPLING, f"{names.OPERATION_CHAT} {{{names.GEN_AI_REQUEST_MODEL}}}"}


def test_the_names_table_lists_every_name_we_emit_and_no_other():
    assert set(_NAME_ROWS) == _emitted_names()
    assert set(_NAME_ROWS.values()) <= _STATUSES


def test_the_names_table_status_follows_the_namespace():
    """Ours never sit in a namespace the conventions own; the conventions' never in ours; every
    metric spec is in the table."""
    for name, status in _NAME_ROWS.items():
        assert (status == "ours") == name.startswith(_OUR_NAMESPACES), name
    assert {spec.name for spec in metrics.SPECS} <= set(_NAME_ROWS)
    assert {n for n, s in _NAME_ROWS.items() if s == "proposal"} == {
        names.MCP_SERVER_NAME,
        names.MCP_SERVER_VERSION,
        names.GEN_AI_USAGE_COST_AMOUNT,
        names.GEN_AI_USAGE_COST_CURRENCY,
        names.GEN_AI_USAGE_COST_SOURCE,
    }
