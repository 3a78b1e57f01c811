"""The five numbers from a real workload, scraped through the real Prometheus exporter.

The workload (four runs of one task) fixes every number by construction:

| run | mode | disclosed | outcome | cost USD | eval score |
|---|---|---|---|---|---|
| 1 | primary | - | completed | 0.25 | 1.0 |
| 2 | primary | - | completed | 0.25 | 0.75 |
| 3 | degraded (named degradation) | yes | completed | 0.5 | 0.5 |
| 4 | degraded (a fallback span) | no | failed | 0.25 | 0.25 |

so: degraded share 2/4; quality delta 0.875 - 0.375 = 0.5; completion 100% primary, 50% degraded;
one silent incident (run 4); cost per completed task 0.5 / 2 = 0.25 primary, 0.75 / 1 degraded.
(Scores and costs are binary fractions: the sums are exact.) The PromQL is then evaluated by
``promtool test rules`` over series built from the scrape.
"""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

import otel_sampling as osm
from conftest import TRACER_PROVIDER
from otel_sampling import names, runs, state
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.mixin import five_numbers
from otel_sampling.mixin.prometheus_names import metric_name

# The report from one scrape is the triage demo's (examples/triage/five_numbers_report.py).
TRIAGE = Path(__file__).resolve().parents[1] / "examples" / "triage"
if str(TRIAGE) not in sys.path:
    sys.path.append(str(TRIAGE))
five_numbers_report = importlib.import_module("five_numbers_report")

OTHER = trace.get_tracer("someone-elses-instrumentation", tracer_provider=TRACER_PROVIDER)
EVAL = "triage-suite"


@pytest.fixture
def scrape():
    """Instrument with a real PrometheusMetricReader; return a function that scrapes it."""
    registry = CollectorRegistry()
    provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)])
    instrumentor = MCPSamplingInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=provider)
    yield lambda: generate_latest(registry).decode()
    instrumentor.uninstrument()
    for leftover in state.active_degradations():
        leftover.exit()
    provider.shutdown()


def workload() -> float:
    """The four runs of the table above; returns their wall time in seconds (an upper bound)."""
    start = time.perf_counter()
    for score in (1.0, 0.75):
        with osm.run("triage"):
            runs.add_cost(0.25)
            osm.record_evaluation(EVAL, score)
    with osm.run("triage"):
        with osm.degraded("search", reason="sources unavailable", owner="oncall", expires_at="2099-01-01T00:00:00Z"):
            runs.add_cost(0.5)
        osm.disclose("Answered without sources", kind="inline")
        osm.record_evaluation(EVAL, 0.5)
    with pytest.raises(RuntimeError), osm.run("triage") as failed:
        with OTHER.start_as_current_span(
            "fallback call",
            attributes={names.DEGRADATION_MODE: names.MODE_DEGRADED, names.DEGRADATION_REASON: [names.REASON_FALLBACK]},
        ):
            runs.add_cost(0.25)
        raise RuntimeError("the fallback's answer did not parse")
    osm.record_evaluation(EVAL, 0.25, run=failed)
    return time.perf_counter() - start


def test_series_names_match_the_real_exporter(scrape):
    workload()
    exported = {s.name for f in text_string_to_metric_families(scrape()) for s in f.samples}
    expected = {
        five_numbers.RUNS,
        five_numbers.RUN_COST,
        five_numbers.RUN_DURATION_SUM,
        five_numbers.SCORE_SUM,
        five_numbers.SCORE_COUNT,
        five_numbers.INCIDENTS,
        metric_name(names.METRIC_DEGRADATION_ACTIVE, names.UNIT_ONE),
        metric_name(names.METRIC_DEGRADATION_TRANSITIONS, names.UNIT_TRANSITION, counter=True),
    }
    assert expected <= exported
    assert expected == {
        "agent_runs_total",
        "agent_run_cost_usd_total",
        "agent_run_duration_seconds_sum",
        "otel_sampling_evaluation_score_sum",
        "otel_sampling_evaluation_score_count",
        "degradation_silent_incidents_total",
        "degradation_active",
        "degradation_transitions_total",
    }


def test_the_five_numbers_from_the_scrape(scrape):
    wall = workload()
    numbers = five_numbers_report.from_scrape(scrape())
    assert numbers.degraded_run_share == 0.5
    assert numbers.quality_delta() == {EVAL: 0.5}
    assert numbers.completion_rate("primary") == 1.0
    assert numbers.completion_rate("degraded") == 0.5
    assert numbers.silent_incidents == 1
    assert numbers.cost_per_completed_task("primary") == 0.25
    assert numbers.cost_per_completed_task("degraded") == 0.75
    assert 0 < numbers.degraded_run_seconds < wall


def _series(metrics_text: str) -> list[dict]:
    """Every sample of the scrape as a promtool input series that starts at 0 one minute earlier."""
    out = []
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            labels = ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(sample.labels.items()))
            out.append({"series": f"{sample.name}{{{labels}}}", "values": f"0 {sample.value!r}"})
    return out


@pytest.mark.subprocess
@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian package prometheus) is not installed")
def test_the_promql_evaluates_to_the_same_numbers(scrape, tmp_path: Path):
    wall = workload()
    text = scrape()
    window = "5m"
    promql = five_numbers.expressions(window)
    expected = {
        "degraded_run_share": [({}, 0.5)],
        "quality_delta": [({"gen_ai_evaluation_name": EVAL}, 0.5)],
        "completion_rate_by_mode": [({"degradation_mode": "primary"}, 1.0), ({"degradation_mode": "degraded"}, 0.5)],
        "silent_incidents": [({}, 1.0)],
        "cost_per_completed_task_by_mode": [
            ({"degradation_mode": "primary"}, 0.25),
            ({"degradation_mode": "degraded"}, 0.75),
        ],
        # the histogram's own sum: the PromQL must read exactly the degraded runs' time
        "degraded_run_seconds": [({}, five_numbers_report.from_scrape(text).degraded_run_seconds)],
    }
    assert 0 < expected["degraded_run_seconds"][0][1] < wall
    tests = [
        {
            "expr": promql[key],
            "eval_time": "1m",
            "exp_samples": [
                {"labels": "{" + ",".join(f"{k}={json.dumps(v)}" for k, v in labels.items()) + "}", "value": value}
                for labels, value in samples
            ],
        }
        for key, samples in expected.items()
    ]
    rules = tmp_path / "five_numbers.rules.json"  # JSON is YAML
    rules.write_text(
        json.dumps({"groups": [{"name": "otel-sampling-five-numbers", "rules": five_numbers.recording_rules(window)}]})
    )
    spec = tmp_path / "five_numbers.test.json"
    spec.write_text(
        json.dumps(
            {
                "rule_files": [rules.name],
                "evaluation_interval": "1m",
                "tests": [{"interval": "1m", "input_series": _series(text), "promql_expr_test": tests}],
            }
        )
    )
    checked = subprocess.run(["promtool", "check", "rules", str(rules)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    result = subprocess.run(["promtool", "test", "rules", spec.name], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_docs_show_the_promql_of_the_module():
    telemetry = (Path(__file__).resolve().parents[1] / "docs" / "telemetry.md").read_text()
    for key, expr in five_numbers.expressions("1h").items():
        assert f"```promql\n{expr}\n```" in telemetry, key
        assert five_numbers.record_name(key, "30m") in telemetry, key


def test_recorded_names_follow_the_rule_naming_convention():
    assert five_numbers.record_name("completion_rate_by_mode", "30m") == "job_mode:agent_runs_completed:ratio30m"
    assert five_numbers.record_name("quality_delta", "1h", by=()) == (
        "evaluation:otel_sampling_evaluation_score:primary_minus_degraded1h"
    )
    with pytest.raises(ValueError, match="needs a level"):
        five_numbers.record_name("degraded_run_share", "1h", by=())
    with pytest.raises(KeyError):
        five_numbers.record_name("happiness", "1h")


def test_prompt_cache_read_share_from_the_scrape():
    """Usage counters as the provider instrumentation adds to them (semantic-conventions-genai #374:
    cache reads are part of input; a call whose answer reported no cache part adds nothing to the
    cache-read counter). A framework's own counters (another scope, no degradation.mode) are not
    read, as the PromQL does not select them."""
    registry = CollectorRegistry()
    provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)])
    ours, theirs = provider.get_meter(names.SCOPE_NAME), provider.get_meter("pydantic-ai")
    inputs = ours.create_counter(names.METRIC_GEN_AI_USAGE_INPUT_TOKENS, unit=names.UNIT_TOKEN)
    reads = ours.create_counter(names.METRIC_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, unit=names.UNIT_TOKEN)
    for name in (names.METRIC_GEN_AI_USAGE_INPUT_TOKENS, names.METRIC_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS):
        # another description: the exporter writes it as a family of its own (labels of its own)
        theirs.create_counter(name, unit=names.UNIT_TOKEN, description="Tokens.").add(
            1000, {names.GEN_AI_OPERATION_NAME: "chat"}
        )
    for mode, points in (
        (names.MODE_PRIMARY, [(525, 400), (525, 400), (25, None)]),
        (names.MODE_DEGRADED, [(525, 400), (25, None), (25, None), (25, None)]),
    ):
        for input_tokens, cache_read in points:
            inputs.add(input_tokens, {names.DEGRADATION_MODE: mode})
            if cache_read is not None:
                reads.add(cache_read, {names.DEGRADATION_MODE: mode})
    numbers = five_numbers_report.from_scrape(generate_latest(registry).decode())
    provider.shutdown()
    assert numbers.prompt_cache_read_share(names.MODE_PRIMARY) == 800 / 1075
    assert numbers.prompt_cache_read_share(names.MODE_DEGRADED) == 400 / 600
    assert numbers.prompt_cache_read_share("unknown") is None
    assert numbers.prompt_cache_read_share("") is None  # the framework's points: no mode, not read


@pytest.mark.subprocess
@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian package prometheus) is not installed")
def test_a_quiet_window_gives_no_ratio_rather_than_nan(scrape, tmp_path: Path):
    """Every series exists (the process ran before) but nothing happened in the window: a share, a
    rate, a delta or a cost per task has nothing to divide and is absent, not NaN or +Inf; the
    counts are 0."""
    workload()
    quiet = [{**s, "values": f"{s['values'].split()[1]}x3"} for s in _series(scrape())]  # flat for 3 minutes
    quiet += [
        {"series": f'{series}{{degradation_mode="primary"}}', "values": "100x3"}
        for series in (five_numbers.INPUT_TOKENS, five_numbers.CACHE_READ_TOKENS)
    ]  # no provider instrumented here
    promql = {key: expr for key, expr in five_numbers.expressions("1m").items() if key != "runs"}  # counts, 0
    expected = {key: [] for key in promql}
    expected["degraded_run_seconds"] = [({}, 0.0)]
    expected["silent_incidents"] = [({}, 0.0)]
    tests = [
        {"expr": promql[key], "eval_time": "3m", "exp_samples": [{"labels": "{}", "value": v} for _, v in samples]}
        for key, samples in expected.items()
    ]
    spec = tmp_path / "quiet.test.json"
    spec.write_text(
        json.dumps(
            {
                "rule_files": [],
                "evaluation_interval": "1m",
                "tests": [{"interval": "1m", "input_series": quiet, "promql_expr_test": tests}],
            }
        )
    )
    result = subprocess.run(["promtool", "test", "rules", spec.name], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_from_scrape_of_a_process_with_no_runs_has_no_ratios():
    numbers = five_numbers_report.from_scrape("")
    assert (
        numbers.degraded_run_share,
        numbers.completion_rate("primary"),
        numbers.cost_per_completed_task("degraded"),
        numbers.quality_delta(),
    ) == (None, None, None, {})
    assert "n/a" in numbers.summary()


def declined_workload() -> None:
    """Two primary runs completed, one declined by policy (the host says so), one degraded run
    completed and one failed: the declined task was never attempted, so it is no failure of the
    primary (a denial is a decision, not a coin flip; completion is of the tasks a
    mode was asked to do)."""
    for _ in range(2):
        with osm.run("triage"):
            runs.add_cost(0.25)
    with osm.run("triage") as declined:
        declined.set_outcome(names.OUTCOME_DENIED)
    for outcome in (names.OUTCOME_COMPLETED, names.OUTCOME_FAILED):
        with osm.run("triage") as degraded_run:
            with OTHER.start_as_current_span("fallback call", attributes={names.DEGRADATION_MODE: names.MODE_DEGRADED}):
                runs.add_cost(0.25)
            degraded_run.set_outcome(outcome)


@pytest.mark.subprocess
def test_a_declined_task_is_not_a_failed_one(scrape, tmp_path: Path):
    declined_workload()
    text = scrape()
    numbers = five_numbers_report.from_scrape(text)
    assert (numbers.completion_rate("primary"), numbers.completion_rate("degraded")) == (1.0, 0.5)
    assert numbers.degraded_run_share == 2 / 5  # exposure: every run, declined ones too
    assert (numbers.cost_per_completed_task("primary"), numbers.cost_per_completed_task("degraded")) == (0.25, 0.5)
    if shutil.which("promtool") is None:  # reported as a skip, not a silent pass (make test installs it)
        pytest.skip("promtool (Debian package prometheus) is not installed")
    promql = five_numbers.expressions("5m")
    tests = [
        {
            "expr": promql["completion_rate_by_mode"],
            "eval_time": "1m",
            "exp_samples": [
                {"labels": '{degradation_mode="primary"}', "value": 1.0},
                {"labels": '{degradation_mode="degraded"}', "value": 0.5},
            ],
        }
    ]
    spec = tmp_path / "declined.test.json"
    spec.write_text(
        json.dumps(
            {
                "rule_files": [],
                "evaluation_interval": "1m",
                "tests": [{"interval": "1m", "input_series": _series(text), "promql_expr_test": tests}],
            }
        )
    )
    result = subprocess.run(["promtool", "test", "rules", spec.name], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
