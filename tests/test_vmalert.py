"""A second ruler: the bundled rule file, unchanged, in vmalert with VictoriaMetrics, and the same
alerts and recorded values as Prometheus on the same data.

The data is the demo's: the session's triage host (``triage_host``: the example under
``opentelemetry-instrument`` with the real Prometheus exporter) ran its scenario once, and its
scrape, repeated once a minute for two hours (``harness.history.steady_history``: the demo's
workload as a steady stream, every share the scenario's), is imported into VictoriaMetrics.
vmalert's replay mode evaluates ``alerts/otel-sampling.yaml`` over those two hours, ``for:``
included, with no wall-clock dependence. Prometheus's rule engine (``promtool test rules``)
evaluates the same file on the same history, and must give the same firing and pending alerts,
with the same labels, and the same recorded series and values at the end.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from harness.history import import_text, promtool_input, selector, steady_history
from harness.limits import HANG_S
from harness.prometheus import JOB, wait_until
from harness.victoria_metrics import VictoriaMetrics, check_rules, replay
from otel_sampling.mixin.generate import RULES_FILE
from otel_sampling.mixin.rules import PREFIX
from test_prometheus_e2e import EXPECTED_FIRING

# The replay takes a pause between rules (about 75 s for the file): more than the suite's per-test default.
pytestmark = [pytest.mark.e2e, pytest.mark.subprocess]
RULES = Path(__file__).resolve().parents[1] / "alerts" / RULES_FILE
STEP_S = 60
STEPS = 120  # two hours: past the longest window the alerts that can fire read (1h) and every `for:` they use
# What the demo's workload, once a minute, drives beyond what one pass of it drives (EXPECTED_FIRING):
EXPECTED_STEADY = EXPECTED_FIRING | {
    # the search outage is entered twice per pass: 2 a minute, threshold 4 in 1h
    f"{PREFIX}DegradationFlapping",
    # 2 stalls per pass: 60 in 30m, threshold 3, for 10m
    f"{PREFIX}StallsHigh",
    # 4 budget grants per pass: threshold 10 a day
    f"{PREFIX}GrantsHigh",
    # the incident-agent's tasks per pass (agent_loop.py): on the fallback 2 of 6 tool calls wrong and
    # every structured answer off its schema, none on the primary; enough calls on both sides once the
    # passes add up (20 each in 30m)
    f"{PREFIX}FallbackToolErrorsHigher",
    f"{PREFIX}FallbackStructuredOutputFailing",
}
# Not firing at the end: DegradedTooLong and DegradationExpired (the outage has ended when the
# scrape is taken), FallbackUntested (the fallback completed requests; and there is no day-old data),
# and the drill alerts (the drill has been stopped when the scrape is taken: its degradation_active is 0).
# The drill is entered once per pass, like the search outage: DegradationFlapping fires on it too.
RELATIVE_TOLERANCE = 1e-9  # VictoriaMetrics answers with 15 significant digits


def rules() -> dict:
    return yaml.safe_load(RULES.read_text())


def recorded_names() -> list[str]:
    return [rule["record"] for group in rules()["groups"] for rule in group["rules"] if "record" in rule]


def label_key(labels: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in labels.items() if k != "__name__"))


@pytest.fixture(scope="module")
def replayed(triage_host):
    """The history, and what vmalert's replay of the bundled rules left in VictoriaMetrics at its last step."""
    history = steady_history(triage_host.scrape, STEPS, job=JOB, instance=triage_host.target)
    # whole hours, in the past: every step is a multiple of the interval, as vmalert aligns its queries
    start = int(time.time()) // 3600 * 3600 - 3 * 3600
    end = start + STEPS * STEP_S
    with VictoriaMetrics() as vm:
        vm.import_text(import_text(history, start, STEP_S))
        wait_until(
            lambda: len(vm.samples_at('{__name__=~".+"}', end)) == len(history),
            HANG_S,
            "the imported history to be searchable",
        )
        replay(vm, [RULES], start, end, interval_s=STEP_S)
        recorded = {name: vm.export(name, start, end) for name in recorded_names()}
        yield SimpleNamespace(
            history=history,
            steps=STEPS + 1,
            recorded=recorded,
            at_end={name: vm.samples_at(name, end) for name in recorded},
            alerts={
                state: {label_key(labels) for labels, _ in vm.samples_at(f'ALERTS{{alertstate="{state}"}}', end)}
                for state in ("firing", "pending")
            },
        )


def test_vmalert_parses_the_bundled_rules():
    result = check_rules([RULES])
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_recorded_series_has_a_value_at_every_step(replayed):
    """A recording rule that reads another was queried after the other's results were stored (else
    the replay raced: raise ``rules_delay_s``)."""
    for name, series in replayed.recorded.items():
        assert series, f"{name}: nothing recorded"
        short = [s["metric"] for s in series if len(s["timestamps"]) != replayed.steps]
        assert not short, f"{name}: series without a value at every step: {short}"


def test_vmalert_fires_what_the_steady_demo_drives(replayed):
    firing = {dict(key)["alertname"] for key in replayed.alerts["firing"]}
    assert firing == EXPECTED_STEADY
    assert all("instance" not in dict(key) for key in replayed.alerts["firing"])  # per job, as the rules mean


def test_prometheus_gives_the_same_alerts_and_recorded_values(replayed, tmp_path):
    """promtool evaluates the same file over the same history; every alert vmalert fired (or holds
    pending) at the end, and every series it recorded with its value, is what Prometheus has."""
    tests = [
        {
            "expr": f'ALERTS{{alertstate="{state}"}}',
            "eval_time": f"{STEPS}m",
            "exp_samples": [{"labels": selector("ALERTS", key), "value": 1} for key in sorted(keys)],
        }
        for state, keys in replayed.alerts.items()
    ]
    for name, samples in replayed.at_end.items():
        tests.append(
            {
                "expr": f"count({name})",
                "eval_time": f"{STEPS}m",
                "exp_samples": [{"labels": "{}", "value": len(samples)}] if samples else [],
            }
        )
        for labels, value in samples:
            key = label_key(labels)
            tests.append(
                {
                    "expr": f"abs({selector(name, key)} - {value!r}) <= bool {abs(value) * RELATIVE_TOLERANCE!r}",
                    "eval_time": f"{STEPS}m",
                    "exp_samples": [{"labels": selector("", key), "value": 1}],
                }
            )
    spec = tmp_path / "same_data.test.json"
    spec.write_text(
        json.dumps(
            {
                "rule_files": [str(RULES)],
                "evaluation_interval": f"{STEP_S}s",
                "tests": [
                    {
                        "interval": f"{STEP_S}s",
                        "input_series": promtool_input(replayed.history),
                        "promql_expr_test": tests,
                    }
                ],
            }
        )
    )
    result = subprocess.run(
        ["promtool", "test", "rules", spec.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-20_000:]
