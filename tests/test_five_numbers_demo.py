"""The five numbers on the example workload: the triage host runs its scenario under
``opentelemetry-instrument`` with the real Prometheus exporter, its ``/metrics`` is scraped, and
``promtool`` evaluates every five-number expression to the value the scenario implies.

What the scenario implies, per run (a step, or the steps of a live run; ``scenario.expected_run``
and the steps' endings): its mode and whether it is a silent incident; it completed when every
step's ending is ``completed``; each completed step was scored ``QUALITY_BY_MODEL[expected_model]``
in the run's mode.
The scores are binary fractions, so the means are exact. Cost and run time are not the scenario's
to say: they are checked against the exporter's own sums.
"""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from otel_sampling import names
from otel_sampling.mixin import five_numbers

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        shutil.which("promtool") is None, reason="promtool (Debian package prometheus) is not installed"
    ),
]


@pytest.fixture(scope="module")
def demo_run(triage_host):
    """(the scenario module, the runs that ran, the scrape) of the session's triage host run."""
    scenario = importlib.import_module("scenario")  # demo.py's sibling, on the path triage_host set
    return scenario, scenario.runs_done(triage_host.done["steps"]), triage_host.scrape


def _implied(scenario, ran) -> dict[str, list[tuple[dict[str, str], float]]]:
    runs, completed, incidents = Counter(), Counter(), 0
    scores: dict[str, list[float]] = {names.MODE_PRIMARY: [], names.MODE_DEGRADED: []}
    for run in ran:
        mode, incident = scenario.expected_run(run)
        runs[mode] += 1
        incidents += incident
        if all(step.expected_ending == names.ENDING_COMPLETED for step in run):
            completed[mode] += 1
        # as host.py scores: every usable answer (a completed step), in the run's mode
        scores[mode] += [
            scenario.QUALITY_BY_MODEL.get(step.expected_model, 0.5)
            for step in run
            if step.expected_ending == names.ENDING_COMPLETED
        ]
    delta = sum(scores["primary"]) / len(scores["primary"]) - sum(scores["degraded"]) / len(scores["degraded"])
    return {
        "degraded_run_share": [({}, runs["degraded"] / len(ran))],
        "silent_incidents": [({}, float(incidents))],
        "quality_delta": [({names.GEN_AI_EVALUATION_NAME.replace(".", "_"): scenario.EVALUATION_NAME}, delta)],
        "_completed": [({"degradation_mode": m}, float(completed[m])) for m in runs],
    }


def _series(text: str) -> list[dict]:
    out = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(sample.labels.items()))
            out.append({"series": f"{sample.name}{{{labels}}}", "values": f"0 {sample.value!r}"})
    return out


def _exported(text: str, series: str, **labels: str) -> float:
    """Sum of the exporter's samples of ``series`` with these labels, read with prometheus_client
    (not with five_numbers_report.from_scrape, which is under test here)."""
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == series and all(sample.labels.get(k) == v for k, v in labels.items())
    )


def test_promql_gives_the_numbers_the_scenario_implies(demo_run, tmp_path: Path):
    scenario, ran, text = demo_run
    report = importlib.import_module("five_numbers_report")  # demo.py's sibling, on the path triage_host set
    # The host's incident-agent runs (agent_loop.py, after the scenario) are not the scenario's: left out.
    agent_loop = importlib.import_module("agent_loop")
    text = "\n".join(line for line in text.splitlines() if f'agent_run_name="{agent_loop.RUN_NAME}"' not in line)
    scraped = report.from_scrape(text)
    assert _exported(text, five_numbers.RUNS) == len(ran)  # the scenario's runs, no other run in the host
    assert sum(scraped.runs_by_mode.values()) == len(ran)
    expected = _implied(scenario, ran)
    completed = {labels["degradation_mode"]: value for labels, value in expected.pop("_completed")}
    assert scraped.completed_by_mode == completed

    def runs(mode: str, **outcome: str) -> float:
        return _exported(text, five_numbers.RUNS, **{five_numbers.MODE: mode}, **outcome)

    # the host decides which runs were declined (outcome "denied"); completion is over the others
    denied = {five_numbers.OUTCOME: names.OUTCOME_DENIED}
    expected["completion_rate_by_mode"] = [
        ({"degradation_mode": mode}, completed[mode] / (runs(mode) - runs(mode, **denied))) for mode in completed
    ]
    # cost and run time are not the scenario's to say: the exporter's own sums
    expected["cost_per_completed_task_by_mode"] = [
        (
            {"degradation_mode": mode},
            _exported(text, five_numbers.RUN_COST, **{five_numbers.MODE: mode}) / completed[mode],
        )
        for mode in completed
    ]
    expected["degraded_run_seconds"] = [
        ({}, _exported(text, five_numbers.RUN_DURATION_SUM, **{five_numbers.MODE: names.MODE_DEGRADED}))
    ]
    assert expected["silent_incidents"][0][1] >= 1 and 0 < expected["degraded_run_share"][0][1] < 1

    promql = five_numbers.expressions("5m")
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
    spec = tmp_path / "demo.test.json"
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
