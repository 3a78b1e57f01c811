"""The generated dashboards and rules: committed = fresh generation, the Grafana schema of the pinned
SDK build, linter rules, and no name outside the metric contract."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from harness.dashboards import dashboard_queries, expand, legend_labels, load, panels, queries, rows
from harness.grafana_model import model_errors
from harness.limits import HANG_S
from otel_sampling import names
from otel_sampling.mixin import MixinConfig, breakage, five_numbers
from otel_sampling.mixin import metrics as m
from otel_sampling.mixin.__main__ import main
from otel_sampling.mixin.generate import render
from otel_sampling.mixin.rules import DEGRADED_MODE_ALERTS, PREFIX, Recorded, alerting_rules, rule_groups

ROOT = Path(__file__).resolve().parents[1]
DASHBOARDS = sorted((ROOT / "dashboards").glob("*.json"))


def test_committed_files_equal_a_fresh_generation():
    stale = [path for path, text in render(MixinConfig()).items() if (ROOT / path).read_text() != text]
    assert not stale, f"run `make generate` and commit: {stale}"
    assert {p.name for p in DASHBOARDS} == {Path(p).name for p in render(MixinConfig()) if p.startswith("dashboards/")}


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_dashboard_matches_the_grafana_schema(path):
    assert model_errors(load(path)) == []


def test_the_schema_check_catches_a_broken_panel():
    dashboard = load(DASHBOARDS[0])
    broken = copy.deepcopy(dashboard)
    broken["panels"][1]["options"]["reduceOptions"]["calcs"] = "lastNotNull"
    broken["panels"][2]["targets"][0]["refId"] = 7
    broken["panels"][2]["options"]["graphMode"] = "sparkline"
    broken["panels"][2]["gridPos"]["wide"] = 3
    broken["style"] = "dark"  # removed from the dashboard schema after Grafana 10
    errors = "\n".join(model_errors(broken))
    assert "'lastNotNull' is not a list" in errors
    assert "7 is not of type str" in errors
    assert "'sparkline' is not one of ['area', 'line', 'none']" in errors
    assert "/panels/2/gridPos/wide: not in the schema" in errors
    assert "/style: not in the schema" in errors
    broken_row = copy.deepcopy(load(ROOT / "dashboards" / "degradation.json"))
    index, row = next((i, p) for i, p in enumerate(broken_row["panels"]) if p["type"] == "row")
    row["collapsed"] = "no"
    assert model_errors(broken_row) == [f"/panels/{index}/collapsed: 'no' is not of type bool"]
    null_options = copy.deepcopy(dashboard)
    null_options["panels"][0]["options"] = None
    assert [e.split(":")[0] for e in model_errors(null_options)] == ["/panels/0"]


def lint(dashboard: dict) -> list[str]:
    """grafana/dashboard-linter rules (a Python mirror; the linter is a Go binary) plus layout checks."""
    problems = []
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    datasource = variables.get("datasource", {})
    if datasource.get("type") != "datasource" or datasource.get("label") != "Data source":
        problems.append("template-datasource-rule")
    for name, variable in variables.items():
        if variable["type"] != "query":
            continue
        if variable["datasource"]["uid"] != "${datasource}" or not variable["multi"] or variable["allValue"] != ".+":
            problems.append(f"template-job-rule: {name}")
        if variable["refresh"] != 2:
            problems.append(f"template-on-time-change-reload-rule: {name}")
    if "job" not in variables:
        problems.append("template-job-rule: no job variable")
    if dashboard.get("editable", True):
        problems.append("uneditable-dashboard")
    ids = [p.get("id") for p in panels(dashboard)]
    if None in ids or 0 in ids or len(set(ids)) != len(ids):
        problems.append(f"panel ids not unique: {ids}")
    cells: dict[tuple[int, int], int] = {}
    for panel in panels(dashboard):
        where = f"panel {panel['id']} '{panel['title']}'"
        grid = panel["gridPos"]
        if grid["x"] + grid["w"] > 24:
            problems.append(f"{where}: wider than the 24-column grid")
        for cell in (
            (x, y) for x in range(grid["x"], grid["x"] + grid["w"]) for y in range(grid["y"], grid["y"] + grid["h"])
        ):
            if cell in cells:
                problems.append(f"{where} overlaps panel {cells[cell]}")
                break
            cells[cell] = panel["id"]
        if panel["type"] == "row":  # the linter's panel rules skip rows: they hold no query
            if not panel.get("title") or (panel.get("panels") and not panel.get("collapsed")):
                problems.append(f"{where}: a row needs a title, and only a collapsed row holds its panels")
            continue
        if panel["datasource"]["uid"] != "${datasource}":
            problems.append(f"panel-datasource-rule: {where}")
        if not panel.get("title") or not panel.get("description"):
            problems.append(f"panel-title-description-rule: {where}")
        defaults = panel["fieldConfig"]["defaults"]
        if not defaults.get("unit") and not defaults.get("mappings"):
            problems.append(f"panel-units-rule: {where}")
        if not panel.get("targets"):
            problems.append(f"panel-no-targets-rule: {where}")
        legend = (panel.get("options") or {}).get("legend")
        if legend is not None and not legend.get("showLegend"):
            problems.append(f"legend hidden: {where}")
        for target in panel["targets"]:
            expr, ref = target["expr"], target["refId"]
            if not ref or target["datasource"]["uid"] != "${datasource}":
                problems.append(f"target refId/datasource: {where}")
            if not target.get("legendFormat"):
                problems.append(f"target legend: {where} {ref}")
            for label in legend_labels(target.get("legendFormat", "")):
                if label not in identifiers(expr) and not any(label in r for r in recorded_reads(expr)):
                    problems.append(f"legend label {label} not in the query: {where} {ref}")
            for window in re.findall(r"\b(?:rate|irate|increase)\([^\[]*\[([^\]]+)\]", expr):
                if window not in ("$__rate_interval", "$__range"):
                    problems.append(f"target-rate-interval-rule: {where} {ref} [{window}]")
            if 'job=~"$job"' not in expr:
                problems.append(f"target-job-rule: {where} {ref}")
            for counter in re.findall(r"\b(\w+_total)\b(?:\{[^}]*\})?(?!\s*\[|\{)", COUNTED.sub("", expr)):
                problems.append(f"target-counter-agg-rule: {where} {ref}: {counter} outside rate/increase")
    return problems


# The first-count idiom of otel_sampling.mixin.promql.counted: "(x unless x offset W)" reads a counter
# whole on purpose (a series born inside W); the increase(x[W]) beside it is checked as usual.
COUNTED = re.compile(r"\((\w+(?:\{[^}]*\})?) unless \1 offset [^)\s]+\)")


def recorded_reads(expr: str) -> list[str]:
    """The expressions of the recorded series ``expr`` reads."""
    return [
        rule["expr"]
        for group in rule_groups(MixinConfig())["groups"]
        for rule in group["rules"]
        if rule.get("record", "\0") in expr
    ]


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_dashboard_passes_the_linter_rules(path):
    assert lint(load(path)) == []


def test_the_linter_catches_what_the_sdk_gets_wrong():
    broken = copy.deepcopy(load(DASHBOARDS[0]))
    target = next(p for p in broken["panels"] if p["type"] == "timeseries")
    target["id"] = broken["panels"][0]["id"]
    target["description"] = ""
    target["options"]["legend"]["showLegend"] = False
    target["targets"][0]["expr"] = "sum(otel_sampling_sampling_requests_total) + sum(x_total unless y_total offset 1m)"
    target["targets"][0]["legendFormat"] = "{{mcp_server_name}}"
    problems = "\n".join(lint(broken))
    for rule in (
        "panel ids not unique",
        "panel-title-description-rule",
        "legend hidden",
        "target-job-rule",
        "target-counter-agg-rule",
        "legend label mcp_server_name not in the query",
    ):
        assert rule in problems
    for counter in ("otel_sampling_sampling_requests_total", "x_total", "y_total"):  # "x unless y" is not the idiom
        assert f"{counter} outside rate/increase" in problems
    holding = copy.deepcopy(load(ROOT / "dashboards" / "degradation.json"))
    row = next(p for p in holding["panels"] if p["type"] == "row")
    row["panels"] = [holding["panels"].pop()]  # Grafana reads a row's own list only when it is collapsed
    assert [p for p in lint(holding) if "only a collapsed row holds its panels" in p]


PROMQL_WORDS = {
    "sum",
    "max",
    "min",
    "avg",
    "count",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "and",
    "or",
    "unless",
    "offset",
    "bool",
    "rate",
    "irate",
    "increase",
    "histogram_quantile",
    "avg_over_time",
    "max_over_time",
    "sum_over_time",
    "vector",
    "label_values",
    "inf",
    "round",
    "ALERTS",
    "alertname",
    "alertstate",  # Prometheus's own alert series
}


def identifiers(expr: str) -> set[str]:
    """Metric, label and function names in ``expr`` (string literals, durations, variables removed)."""
    expr = re.sub(r'"[^"]*"', '""', expr)
    expr = re.sub(r"\$\{?\w+(:\w+)?\}?", "", expr)
    expr = re.sub(r"\b\d+(\.\d+)?(ms|s|m|h|d|w|y)?\b", "", expr)
    return set(re.findall(r"[A-Za-z_:][\w:]*", expr))


def test_no_query_names_anything_outside_the_contract():
    recorded = {
        rule["record"] for group in rule_groups(MixinConfig())["groups"] for rule in group["rules"] if "record" in rule
    }
    labels = {v for k, v in vars(m).items() if k.isupper() and isinstance(v, str)} - set(m.SERIES)
    known = set(m.SERIES) | recorded | labels | PROMQL_WORDS
    rules = yaml.safe_load((ROOT / "alerts" / "otel-sampling.yaml").read_text())
    exprs = [e for _, e, _ in dashboard_queries(ROOT / "dashboards")]
    exprs += [r["expr"] for g in rules["groups"] for r in g["rules"]]
    unknown = {name for expr in exprs for name in identifiers(expr)} - known
    assert not unknown


def test_the_contract_check_sees_a_foreign_name():
    assert identifiers('sum by (model) (rate(llm_calls_total{job=~"$job"}[5m]))') - PROMQL_WORDS == {
        "model",
        "llm_calls_total",
        "job",
    }


def test_cli_writes_files_with_the_given_thresholds(tmp_path, capsys):
    assert main(["--out", str(tmp_path), "--window", "1h", "--min-requests", "50"]) == 0
    rules = (tmp_path / "alerts" / "otel-sampling.yaml").read_text()
    assert (
        "job:otel_sampling_sampling_degraded:ratio1h > 0.1\n"
        "      and on (job) job:otel_sampling_sampling_requests:increase1h >= 50"
    ) in rules
    assert sorted(p.name for p in (tmp_path / "dashboards").iterdir()) == [
        "degradation.json",
        "mcp-sampling.json",
        "overview.json",
        "providers.json",
    ]
    assert str(tmp_path / "alerts" / "otel-sampling.yaml") in capsys.readouterr().out


def test_cli_rejects_a_bad_duration(capsys):
    assert main(["--out", "unused", "--window", "half an hour"]) == 2
    assert "window: 'half an hour' is not a Prometheus duration" in capsys.readouterr().err


@pytest.mark.subprocess
def test_cli_help_runs_as_a_module():
    result = subprocess.run([sys.executable, "-m", "otel_sampling.mixin", "--help"], capture_output=True, text=True)
    assert result.returncode == 0
    assert "--degraded-share-threshold" in result.stdout


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"degraded_share_threshold": 1.5}, "not a ratio"),
        ({"min_requests": -1}, "must not be negative"),
        ({"degraded_share_for": "15 minutes"}, "not a Prometheus duration"),
        ({"window": "0m"}, "window: '0m' must be longer than 0"),  # PromQL rejects a [0m] range
        ({"flapping_window": "0s"}, "flapping_window: '0s' must be longer than 0"),
        ({"rule_selector": "job=triage"}, "rule_selector: 'job=triage' is not a list of label matchers"),
        ({"rule_selector": '{job="triage"}'}, "is not a list of label matchers"),
        ({"flapping_transitions": 0}, "flapping_transitions: 0 must be at least 1"),  # '>= 0' fires always
        ({"scope_selector": "otel_sampling"}, "scope_selector: 'otel_sampling' is not a list of label matchers"),
    ],
)
def test_config_rejects_bad_values(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        MixinConfig(**kwargs)


@pytest.mark.parametrize("selector", ['job="triage-host"', 'job=~"a|b", env!="dev"', 'path="a\\"b"', ""])
def test_config_accepts_label_matchers(selector):
    assert MixinConfig(rule_selector=selector).rule_selector == selector


@pytest.mark.subprocess
def test_instrumentation_never_imports_the_mixin():
    code = (
        "import sys, otel_sampling, otel_sampling.instrumentation.mcp, otel_sampling.instrumentation.anthropic, "
        "otel_sampling.instrumentation.openai; "
        "print([m for m in sys.modules "
        "if m.startswith(('otel_sampling.mixin', 'grafana_foundation_sdk', 'yaml'))])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


# Each contract instrument as docs/telemetry.md defines it (kind, unit) -> the name the mixin queries.
CONTRACT = [
    ("counter", names.METRIC_SAMPLING_REQUESTS, names.UNIT_REQUEST, m.SAMPLING_REQUESTS),
    ("histogram", names.METRIC_SAMPLING_DURATION, names.UNIT_SECONDS, m.SAMPLING_DURATION + "_bucket"),
    ("updown", names.METRIC_SAMPLING_IN_FLIGHT, names.UNIT_REQUEST, m.SAMPLING_IN_FLIGHT),
    ("counter", names.METRIC_SAMPLING_STALLS, names.UNIT_REQUEST, m.SAMPLING_STALLS),
    ("counter", names.METRIC_SAMPLING_VIOLATIONS, names.UNIT_VIOLATION, m.SAMPLING_VIOLATIONS),
    ("counter", names.METRIC_SAMPLING_GRANTS, names.UNIT_GRANT, m.SAMPLING_GRANTS),
    ("counter", names.METRIC_SAMPLING_GRANTED_USD, names.UNIT_USD, m.SAMPLING_GRANTED_USD),
    ("counter", names.METRIC_SAMPLING_SERVER_REQUESTS, names.UNIT_REQUEST, m.SAMPLING_SERVER_REQUESTS),
    ("histogram", names.METRIC_GEN_AI_OPERATION_DURATION, names.UNIT_SECONDS, m.OPERATION_DURATION + "_count"),
    ("histogram", names.METRIC_GEN_AI_TOKEN_USAGE, names.UNIT_TOKEN, m.TOKEN_USAGE + "_sum"),
    ("counter", names.METRIC_CLIENT_COST, names.UNIT_USD, m.PROVIDER_COST),
    ("gauge", names.METRIC_DEGRADATION_ACTIVE, names.UNIT_ONE, m.DEGRADATION_ACTIVE),
    ("gauge", names.METRIC_DEGRADATION_EXPIRED, names.UNIT_ONE, m.DEGRADATION_EXPIRED),
    ("counter", names.METRIC_DEGRADATION_TRANSITIONS, names.UNIT_TRANSITION, m.DEGRADATION_TRANSITIONS),
    ("counter", names.METRIC_SILENT_INCIDENTS, names.UNIT_INCIDENT, m.SILENT_INCIDENTS),
    ("counter", names.METRIC_AGENT_RUNS, names.UNIT_RUN, m.AGENT_RUNS),
    ("counter", names.METRIC_AGENT_RUN_COST, names.UNIT_USD, m.AGENT_RUN_COST),
    ("histogram", names.METRIC_AGENT_RUN_DURATION, names.UNIT_SECONDS, m.AGENT_RUN_DURATION + "_sum"),
    ("histogram", names.METRIC_AGENT_RUN_STEPS, names.UNIT_CALL, m.AGENT_RUN_STEPS + "_sum"),
    ("histogram", names.METRIC_AGENT_RUN_TOKENS, names.UNIT_TOKEN, m.AGENT_RUN_TOKENS + "_count"),
    ("histogram", names.METRIC_EVALUATION_SCORE, names.UNIT_ONE, m.EVALUATION_SCORE + "_count"),
    ("counter", names.METRIC_CACHE_LOOKUPS, names.UNIT_LOOKUP, m.CACHE_LOOKUPS),
    ("counter", names.METRIC_DRILLS, names.UNIT_DRILL, m.DRILLS),
    ("histogram", names.METRIC_GEN_AI_INFERENCE_DURATION, names.UNIT_SECONDS, m.INFERENCE_DURATION + "_count"),
    ("counter", names.METRIC_GEN_AI_USAGE_INPUT_TOKENS, names.UNIT_TOKEN, m.USAGE_INPUT),
    ("counter", names.METRIC_GEN_AI_USAGE_OUTPUT_TOKENS, names.UNIT_TOKEN, m.USAGE_OUTPUT),
    ("counter", names.METRIC_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, names.UNIT_TOKEN, m.USAGE_CACHE_READ),
    ("counter", names.METRIC_GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS, names.UNIT_TOKEN, m.USAGE_CACHE_WRITE),
    ("counter", names.METRIC_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS, names.UNIT_TOKEN, m.USAGE_REASONING),
    ("counter", names.METRIC_CLIENT_USAGE_INPUT_TOKENS, names.UNIT_TOKEN, m.SHARE_INPUT),
    ("counter", names.METRIC_CLIENT_USAGE_CACHE_READ_INPUT_TOKENS, names.UNIT_TOKEN, m.SHARE_CACHE_READ),
    ("counter", names.METRIC_CLIENT_TOOL_CALLS, names.UNIT_TOOL_CALL, m.TOOL_CALLS),
    ("counter", names.METRIC_CLIENT_TOOL_CALL_ERRORS, names.UNIT_TOOL_CALL, m.TOOL_CALL_ERRORS),
    ("counter", names.METRIC_CLIENT_STRUCTURED_OUTPUT_REQUESTS, names.UNIT_CALL, m.STRUCTURED_REQUESTS),
    ("counter", names.METRIC_CLIENT_STRUCTURED_OUTPUT_FAILURES, names.UNIT_CALL, m.STRUCTURED_FAILURES),
    ("counter", names.METRIC_CLIENT_TRUNCATIONS, names.UNIT_CALL, m.TRUNCATIONS),
    ("histogram", names.METRIC_CLIENT_CONTEXT_UTILIZATION, names.UNIT_ONE, m.CONTEXT_UTILIZATION + "_bucket"),
    ("counter", names.METRIC_HOST_TOOL_CALLS, names.UNIT_TOOL_CALL, m.HOST_TOOL_CALLS),
    ("counter", names.METRIC_AGENT_RUN_REPEATED_TOOL_CALLS, names.UNIT_CALL, m.REPEATED_TOOL_CALLS),
]


def test_the_mixin_names_are_what_the_real_exporter_exports():
    """Also for the metrics not emitted yet: created as the contract defines them, they export under
    exactly the names the dashboards and rules query."""
    registry = CollectorRegistry()
    provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)])
    meter = provider.get_meter(names.SCOPE_NAME)
    attributes = {names.DEGRADATION_MODE: names.MODE_DEGRADED}
    for kind, otel_name, unit, _ in CONTRACT:
        if kind == "counter":
            meter.create_counter(otel_name, unit=unit).add(1, attributes)
        elif kind == "updown":
            meter.create_up_down_counter(otel_name, unit=unit).add(1, attributes)
        elif kind == "gauge":
            meter.create_gauge(otel_name, unit=unit).set(1, attributes)
        else:
            meter.create_histogram(otel_name, unit=unit).record(1, attributes)
    exported = {
        sample.name
        for family in text_string_to_metric_families(generate_latest(registry).decode())
        for sample in family.samples
    }
    provider.shutdown()
    assert {series for *_, series in CONTRACT} <= exported
    assert set(m.SERIES) <= exported


def test_the_rule_selector_reaches_every_raw_series():
    groups = rule_groups(MixinConfig(rule_selector='job="triage-host"'))["groups"]
    exprs = [rule["expr"] for group in groups for rule in group["rules"]]
    selectors = _raw_selectors(exprs)
    assert len(selectors) > 30
    assert all(selector.startswith('{job="triage-host"') for selector in selectors), [
        selector for selector in selectors if not selector.startswith('{job="triage-host"')
    ]


def _raw_selectors(exprs: list[str]) -> list[str]:
    """The selector (``{...}`` or empty) of every raw series named in ``exprs``."""
    series = re.compile(r"\b(" + "|".join(sorted(m.SERIES, key=len, reverse=True)) + r")\b(\{[^}]*\})?")
    return [match.group(2) or "" for expr in exprs for match in series.finditer(expr)]


@pytest.mark.parametrize("config", [MixinConfig(), MixinConfig(scope_selector='otel_scope_name=~"otel_sampling|x"')])
def test_the_scope_selector_reaches_every_raw_series_of_the_rules_and_dashboards(config):
    """Another instrumentation's metric of the same name (a framework's gen_ai.client.token.usage)
    is never read; recorded series carry no scope (the rules summed it away) and are read without."""
    rules = [rule["expr"] for group in rule_groups(config)["groups"] for rule in group["rules"]]
    dashboards = [
        expr
        for path, text in render(config).items()
        if path.startswith("dashboards/")
        for _, expr, _ in queries(json.loads(text), path)
    ]
    selectors = _raw_selectors(rules + dashboards)
    assert len(selectors) > 60
    assert all(config.scope_selector in selector for selector in selectors), [
        s for s in selectors if config.scope_selector not in s
    ]
    recorded = {
        rule["record"] for group in rule_groups(config)["groups"] for rule in group["rules"] if "record" in rule
    }
    reads_of_recorded = re.findall(r"\b(" + "|".join(map(re.escape, recorded)) + r")(\{[^}]*\})?", " ".join(dashboards))
    assert reads_of_recorded
    assert not [s for _, s in reads_of_recorded if "otel_scope" in s]


def test_without_a_scope_selector_no_series_is_selected_by_scope():
    """For an export path that drops the scope labels (docs/deploy.md): an empty scope_selector."""
    config = MixinConfig(scope_selector="")
    text = "".join(render(config).values())
    assert "otel_scope" not in text
    assert not re.search(r"[\w:]\{\}", text)  # no empty selector left behind


def test_the_five_numbers_are_recorded_as_the_runtime_package_writes_them():
    config = MixinConfig(rule_selector='job="triage-host"')
    recorded = rule_groups(config)["groups"][0]["rules"]
    expected = five_numbers.recording_rules(config.window, by=("job",), selector='job="triage-host"')
    assert [rule for rule in recorded if rule in expected] == expected


def panel_expr(stem: str, title: str) -> str:
    """The first query of a committed dashboard's panel, Grafana variables expanded."""
    [panel] = [p for p in panels(load(ROOT / "dashboards" / f"{stem}.json")) if p["title"] == title]
    return str(expand(panel["targets"][0]["expr"]))


# A share whose numerator has no series (nothing completed, nothing failed) reads 0, not "No data";
# an empty range reads nothing, not NaN. (Raw series carry our scope label, as the exporter writes it.)
OURS = f'job="j", otel_scope_name="{names.SCOPE_NAME}"'


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("stem", "title", "series", "expected"),
    [
        (
            "mcp-sampling",
            "Completed",
            [
                (
                    f'otel_sampling_sampling_requests_total{{{OURS}, mcp_server_name="s", '
                    f'otel_sampling_sampling_ending="provider.error"}}',
                    "0+1x90",
                )
            ],
            [0],
        ),
        (
            "mcp-sampling",
            "Completed",
            [
                (
                    f'otel_sampling_sampling_requests_total{{{OURS}, mcp_server_name="s", '
                    f'otel_sampling_sampling_ending="completed"}}',
                    "5x90",
                )
            ],
            [],
        ),
        (
            "providers",
            "Failed calls",
            [(f'gen_ai_client_operation_duration_seconds_count{{{OURS}, gen_ai_provider_name="anthropic"}}', "0+1x90")],
            [0],
        ),
        (
            "providers",
            "Failed calls",
            [(f'gen_ai_client_operation_duration_seconds_count{{{OURS}, gen_ai_provider_name="anthropic"}}', "5x90")],
            [],
        ),
    ],
)
def test_a_share_panel_reads_zero_without_numerator_and_nothing_without_traffic(
    tmp_path, stem, title, series, expected
):
    tests = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": s, "values": v} for s, v in series],
                "promql_expr_test": [
                    {
                        "expr": panel_expr(stem, title),
                        "eval_time": "90m",
                        "exp_samples": [{"labels": "{}", "value": value} for value in expected],
                    }
                ],
            }
        ],
    }
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(tests, sort_keys=False))
    result = subprocess.run(
        ["promtool", "test", "rules", str(tmp_path / "test.yaml")], capture_output=True, text=True, timeout=HANG_S
    )
    assert result.returncode == 0, result.stdout + result.stderr


# ---------------------------------------------------------------- the Drills and Silent-to-operators rows

DEGRADATION = ROOT / "dashboards" / "degradation.json"
ALERT_NAMES = [rule["alert"] for rule in alerting_rules(MixinConfig())]
DRILL_ALERTS = [name for name in ALERT_NAMES if name.startswith(f"{PREFIX}Drill")]
DRILL_ACTIVE = re.compile(rf'{m.DEGRADATION_ACTIVE}\{{[^}}]*{m.REASON}="{names.REASON_DRILL}"[^}}]*\}}')


def row_queries(title: str) -> list[str]:
    return [target["expr"] for panel in rows(load(DEGRADATION))[title] for target in panel["targets"]]


def test_the_degradation_dashboard_has_a_drills_row_and_a_silent_to_operators_row():
    layout = rows(load(DEGRADATION))
    assert list(layout)[:2] == ["Drills", "Silent to operators"]
    assert all(layout.values())
    drills = "\n".join(row_queries("Drills"))
    assert m.DRILLS in drills and m.DRILL_NAME in drills and m.DRILL_OUTCOME in drills
    assert DRILL_ACTIVE.search(drills)  # the drill window: the drill's named degradation
    assert len(DRILL_ALERTS) == 3
    assert all(f'alertname="{alert}"' in drills for alert in DRILL_ALERTS)  # every Drill* alert of the rules
    silent = "\n".join(row_queries("Silent to operators"))
    assert Recorded(MixinConfig()).degraded_exposure in silent
    assert f'alertname="{PREFIX}SilentToOperators"' in silent
    assert all(f"{PREFIX}{alert}" in silent for alert in DEGRADED_MODE_ALERTS)


def test_what_the_fallback_breaks_shows_each_rate_by_mode_beside_its_alert():
    """Each compared rate reads its recorded ratio by mode (primary and degraded side by side) and
    names the alert that compares them; the kinds, the context utilization and the host's tool-call
    outcomes are by mode too."""
    layout = rows(load(DEGRADATION))
    assert list(layout)[2] == "What the fallback breaks"
    panels = layout["What the fallback breaks"]
    for rate in breakage.rates(MixinConfig()):
        (panel,) = [p for p in panels if p["title"] == rate.title]
        assert [t["expr"] for t in panel["targets"]] == [f'max by ({m.MODE}) ({rate.ratio}{{job=~"$job"}})']
        assert f"{PREFIX}{rate.key}" in panel["description"]
    queries = "\n".join(row_queries("What the fallback breaks"))
    for series in (m.TOOL_CALL_ERRORS, m.STRUCTURED_FAILURES, m.TRUNCATIONS, m.CONTEXT_UTILIZATION, m.HOST_TOOL_CALLS):
        assert series in queries
    assert all(f"by ({m.MODE}" in q for q in row_queries("What the fallback breaks"))


def test_the_drill_windows_annotate_the_degradation_dashboard_only():
    annotations = {path.stem: {a["name"]: a["expr"] for a in load(path)["annotations"]["list"]} for path in DASHBOARDS}
    assert [stem for stem, named in annotations.items() if "Drill windows" in named] == ["degradation"]
    expr = annotations["degradation"]["Drill windows"]
    assert DRILL_ACTIVE.search(expr) and expr.startswith(f"max by ({m.COMPONENT}) (") and expr.endswith("> 0")


def test_the_silent_to_operators_panels_link_to_its_runbook_section():
    [rule] = [r for r in alerting_rules(MixinConfig()) if r["alert"] == f"{PREFIX}SilentToOperators"]
    url = rule["annotations"]["runbook_url"]
    assert all(
        [link["url"] for link in panel["links"]] == [url] for panel in rows(load(DEGRADATION))["Silent to operators"]
    )
    anchor = url.split("#")[1]
    headings = re.findall(r"^## (\S+)$", (ROOT / "docs" / "runbook.md").read_text(), re.M)
    assert anchor in [heading.lower() for heading in headings]  # GitHub's anchor of the heading


def test_the_drill_completion_line_is_the_drill_fallback_failed_threshold():
    for threshold in (MixinConfig().drill_completion_threshold, 0.75):
        model = json.loads(render(MixinConfig(drill_completion_threshold=threshold))["dashboards/degradation.json"])
        [panel] = [p for p in rows(model)["Drills"] if p["title"] == "Sampling requests completed during drills"]
        steps = panel["fieldConfig"]["defaults"]["thresholds"]["steps"]
        assert [step["value"] for step in steps] == [None, threshold]
        assert panel["fieldConfig"]["defaults"]["custom"]["thresholdsStyle"]["mode"] == "line"


def panel_exprs(title: str) -> list[str]:
    """The queries of a Degradation panel (or annotation), in refId order, Grafana variables expanded."""
    model = load(DEGRADATION)
    annotations = [a["expr"] for a in model["annotations"]["list"] if a["name"] == title]
    [targets] = [p["targets"] for p in panels(model) if p["title"] == title and p["type"] != "row"] or [[]]
    return [str(expand(expr)) for expr in annotations + [t["expr"] for t in targets]]


def drill_active(values: str) -> tuple[str, str]:
    return (
        f'{m.DEGRADATION_ACTIVE}{{{OURS}, {m.COMPONENT}="claude-outage", {m.REASON}="{names.REASON_DRILL}"}}',
        values,
    )


def requests(mode: str, ending: str, values: str, drill: str = "") -> tuple[str, str]:
    during = f', {m.DRILL_NAME}="{drill}"' if drill else ""
    return (
        f'{m.SAMPLING_REQUESTS}{{{OURS}, {m.SERVER}="s", {m.MODE}="{mode}", {m.ENDING}="{ending}"{during}}}',
        values,
    )


# A drill from 20m to 30m (the gauge absent before: no drill had run; 0 after), counted as it ends. Steady traffic,
# so that every window's increase() extrapolates alike: 2 primary completions a minute, 1 degraded
# completion and 1 degraded request the fallback model could not serve (model.unavailable); the
# requests that ended during the drill carry its name (10 minutes of the same mix).
DRILL_RUN = [
    drill_active("_x20 1x9 0x90"),
    (
        f'{m.DRILLS}{{{OURS}, {m.DRILL_NAME}="claude-outage", {m.DRILL_OUTCOME}="{names.DRILL_OUTCOME_COMPLETED}"}}',
        "_x30 1x90",
    ),
    requests(names.MODE_PRIMARY, names.ENDING_COMPLETED, "0+2x120"),
    requests(names.MODE_DEGRADED, names.ENDING_COMPLETED, "0+1x120"),
    requests(names.MODE_DEGRADED, names.ENDING_MODEL_UNAVAILABLE, "0+1x120"),
    requests(names.MODE_PRIMARY, names.ENDING_COMPLETED, "_x20 0+2x10 20x90", drill="claude-outage"),
    requests(names.MODE_DEGRADED, names.ENDING_COMPLETED, "_x20 0+1x10 10x90", drill="claude-outage"),
    requests(names.MODE_DEGRADED, names.ENDING_MODEL_UNAVAILABLE, "_x20 0+1x10 10x90", drill="claude-outage"),
]
SEARCH = f'{m.COMPONENT}="search", {m.REASON}="outage"'
K = f'job="k", otel_scope_name="{names.SCOPE_NAME}"'
# Job j: a named degradation active from 0m to 60m, past its expiry from 21m (DegradationExpired,
# for 5m, fires at 26m); job k has the gauge at 0 (never exposed).
SILENT_RUN = [
    (f"{m.DEGRADATION_ACTIVE}{{{OURS}, {SEARCH}}}", "1x60 0x60"),
    (f"{m.DEGRADATION_EXPIRED}{{{OURS}, {SEARCH}}}", "0x20 1x40 0x60"),
    (f"{m.DEGRADATION_ACTIVE}{{{K}, {SEARCH}}}", "0x120"),
]
NORMAL, PENDING, FIRING = 0, 1, 2  # the Drill alerts panel's states
EXPOSED_ALERTED, SILENT = 1, 2  # the Silent to operators panel's


# (case, series, [(panel title, ref index, eval time, [(labels, value)])]); percentages as round(100 * x).
BEHAVIOUR = [
    (
        "drill windows and what completed during them",
        DRILL_RUN,
        [
            ("Drill windows", 0, "25m", [(f'{{{m.COMPONENT}="claude-outage"}}', 1)]),
            ("Drill windows", 0, "10m", []),
            ("Drill windows", 0, "45m", []),
            (
                "Drills by name and outcome",
                0,
                "30m",
                [(f'{{{m.DRILL_NAME}="claude-outage", {m.DRILL_OUTCOME}="completed"}}', 1)],
            ),
            (
                "Drills by name and outcome",
                0,
                "40m",
                [(f'{{{m.DRILL_NAME}="claude-outage", {m.DRILL_OUTCOME}="completed"}}', 0)],
            ),
            # 3 of 4 requests completed; of the degraded ones 1 of 2; the drill ran within the last 30m
            ("Sampling requests completed during drills", 0, "45m", [('{job="j"}', 75)]),
            ("Sampling requests completed during drills", 1, "45m", [('{job="j"}', 50)]),
            ("Sampling requests completed during drills", 0, "70m", []),  # the drill ended 40m ago
            ("Sampling requests completed during drills", 0, "15m", []),  # no drill yet
            # 75% < 90%: DrillFallbackFailed pending from 21m (the first requests that ended during the
            # drill), firing from 26m, resolved when the drill ends
            ("Drill alerts", 1, "10m", []),
            ("Drill alerts", 1, "22m", [("{}", PENDING)]),
            ("Drill alerts", 1, "27m", [("{}", FIRING)]),
            ("Drill alerts", 1, "35m", [("{}", NORMAL)]),
            # still degraded after the drill: DrillRecoveryMissing pending from 30m, firing after its 10m
            ("Drill alerts", 2, "35m", [("{}", PENDING)]),
            ("Drill alerts", 2, "45m", [("{}", FIRING)]),
        ],
    ),
    (
        "a drill with no traffic: no degraded-mode alert fired",
        [drill_active("_x20 1x9 0x90")],
        [
            ("Drill alerts", 0, "25m", [("{}", NORMAL)]),
            ("Drill alerts", 0, "35m", [("{}", FIRING)]),  # DrillWithoutAlert, once the drill ended
            ("Drill alerts", 1, "35m", [("{}", NORMAL)]),
            ("Drill alerts", 2, "35m", [("{}", NORMAL)]),
        ],
    ),
    (
        "exposure nobody was alerted to",
        SILENT_RUN,
        [
            ("Silent to operators", 0, "10m", [('{job="j"}', SILENT), ('{job="k"}', NORMAL)]),
            ("Silent to operators", 0, "40m", [('{job="j"}', EXPOSED_ALERTED), ('{job="k"}', NORMAL)]),
            ("Silent to operators", 0, "70m", [('{job="j"}', NORMAL), ('{job="k"}', NORMAL)]),
            # SilentToOperators fired once (15m, after its for, until DegradationExpired fired at 26m)
            ("Silent-to-operators incidents", 0, "60m", [('{job="j"}', 1), ('{job="k"}', 0)]),
            ("Silent-to-operators incidents", 0, "10m", [('{job="j"}', 0), ('{job="k"}', 0)]),
        ],
    ),
]


@pytest.mark.subprocess
@pytest.mark.parametrize(("series", "checks"), [case[1:] for case in BEHAVIOUR], ids=[case[0] for case in BEHAVIOUR])
def test_the_drill_and_silent_panels_read_what_the_rules_record(tmp_path, series, checks):
    """The panels' queries against the committed rule file (its recorded series and the ALERTS it
    writes) in promtool, on a drill and on an exposure with the times the rules give them."""

    def expr(title: str, ref: int) -> str:
        query = panel_exprs(title)[ref]
        return f"round(100 * ({query}))" if "completed during drills" in title else query

    tests = {
        "rule_files": [str(ROOT / "alerts" / "otel-sampling.yaml")],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": s, "values": v} for s, v in series],
                "promql_expr_test": [
                    {
                        "expr": expr(title, ref),
                        "eval_time": time,
                        "exp_samples": [{"labels": labels, "value": value} for labels, value in expected],
                    }
                    for title, ref, time, expected in checks
                ],
            }
        ],
    }
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(tests, sort_keys=False))
    result = subprocess.run(
        ["promtool", "test", "rules", str(tmp_path / "test.yaml")], capture_output=True, text=True, timeout=HANG_S
    )
    assert result.returncode == 0, result.stdout + result.stderr
