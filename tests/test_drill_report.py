"""The demo's drill report (examples/triage/drill_report.py) reads what a real Prometheus saw.

A real Prometheus (the bundled rules, ``MixinConfig.for_short_run()``, as ``make demo`` runs them)
scrapes a /metrics endpoint whose counters the test sets between the checkpoints, as the triage
host's scenario moves them: six requests on the primary; the drill (its named degradation active,
five requests, every primary call failed as overloaded); the stop; the exit. ``DrillWatch`` holds
at each checkpoint exactly as it holds the host. The expected report is what the test drove, not
what the code computes: a fallback that serves and a primary that returns leave the drill alerts
quiet and no problem; a fallback that fails and a primary that never returns are named, with the
alerts Prometheus fired on them.
"""

from __future__ import annotations

import shutil
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest

from harness.limits import HANG_S
from harness.prometheus import PrometheusServer, StaticMetrics
from otel_sampling import names
from otel_sampling.mixin import MixinConfig
from otel_sampling.mixin import metrics as m
from otel_sampling.mixin.generate import RULES_FILE, write

TRIAGE = Path(__file__).resolve().parents[1] / "examples" / "triage"
sys.path.insert(0, str(TRIAGE))
import drill_report  # noqa: E402

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.subprocess,
    pytest.mark.skipif(
        shutil.which("prometheus") is None, reason="the Prometheus server (Debian package prometheus) is not installed"
    ),
]

DRILL = "primary-outage-drill"
PRIMARY, FALLBACK = "claude-sonnet-5-5", "claude-haiku-5-5"
SCOPE = 'otel_scope_name="otel_sampling"'
OVERLOADED = "overloaded_error"  # anthropic's error type for a 529 (the drill's default failure)


class Metrics:
    """The host's /metrics as the test sets it: ``requests[(mode, ending, model, drill)]`` (``drill``:
    the drill's name on a request that ended while it ran, as the points carry it, else ""), the drill's
    ``degradation_active``, ``calls[error_type]`` on the primary and the drills counter.
    ``degraded_every_scrape``: each scrape first counts one more request served degraded."""

    def __init__(self) -> None:
        self.requests: Counter[tuple[str, str, str, str]] = Counter()
        self.calls: Counter[str] = Counter()
        self.drill_active: int | None = None
        self.drills: Counter[str] = Counter()
        self.degraded_every_scrape = False
        self.lock = threading.Lock()

    def text(self) -> str:
        with self.lock:
            if self.degraded_every_scrape:
                self.requests[(names.MODE_DEGRADED, names.ENDING_COMPLETED, FALLBACK, "")] += 1
            out = []
            for (mode, ending, model, drill), n in sorted(self.requests.items()):
                during = f',{m.DRILL_NAME}="{drill}"' if drill else ""
                out.append(
                    f'{m.SAMPLING_REQUESTS}{{{SCOPE},{m.SERVER}="ticket-server",{m.MODE}="{mode}",'
                    f'{m.ENDING}="{ending}",{m.RESPONSE_MODEL}="{model}",{m.SUBSTITUTION}="none"{during}}} {n}'
                )
            for error, n in sorted(self.calls.items()):
                out.append(
                    f'{m.OPERATION_DURATION}_count{{{SCOPE},{m.REQUEST_MODEL}="{PRIMARY}",'
                    f'{m.ERROR_TYPE}="{error}"}} {n}'
                )
            if self.drill_active is not None:
                out.append(
                    f'{m.DEGRADATION_ACTIVE}{{{SCOPE},{m.COMPONENT}="{DRILL}",'
                    f'{m.REASON}="{names.REASON_DRILL}"}} {self.drill_active}'
                )
            for outcome, n in sorted(self.drills.items()):
                out.append(
                    f'{drill_report.DRILLS}{{{SCOPE},{drill_report.DRILL_NAME_LABEL}="{DRILL}",'
                    f'{drill_report.DRILL_OUTCOME_LABEL}="{outcome}"}} {n}'
                )
            return "\n".join(out) + "\n"


def served(metrics: Metrics, mode: str, model: str, ending: str = names.ENDING_COMPLETED, n: int = 1) -> None:
    with metrics.lock:
        metrics.requests[(mode, ending, model, DRILL if metrics.drill_active else "")] += n


def run_drill(tmp_path: Path, fallback_serves: bool, primary_returns: bool) -> tuple[list[str], list[str]]:
    """Drive the scenario's drill through the metrics and the watch; the report and its problems."""
    config = MixinConfig.for_short_run()
    write(config, tmp_path)
    metrics = Metrics()
    with (
        StaticMetrics(metrics.text) as endpoint,
        PrometheusServer([endpoint.target], [tmp_path / "alerts" / RULES_FILE]) as prom,
    ):
        watch = drill_report.DrillWatch(prom, config, DRILL, deadline_s=HANG_S)  # a wait bounds a hang
        served(metrics, names.MODE_PRIMARY, PRIMARY, n=6)  # before the drill: under the traffic guard (10)
        with metrics.lock:
            metrics.calls[""] += 6
        watch({"name": drill_report.STARTING})
        with metrics.lock:  # the drill: five requests, each primary call failed by it
            metrics.drill_active = 1
            metrics.calls[OVERLOADED] += 5
        if fallback_serves:
            served(metrics, names.MODE_DEGRADED, FALLBACK, n=5)
        else:
            served(metrics, names.MODE_DEGRADED, names.UNKNOWN_LABEL, names.ENDING_MODEL_UNAVAILABLE, n=5)
        watch({"name": drill_report.RUNNING})
        with metrics.lock:  # stopped by the host
            metrics.drill_active = 0
            metrics.drills[names.DRILL_OUTCOME_STOPPED] += 1
        if primary_returns:  # the exit: the primary flaps twice, then serves
            for mode, model in (
                (names.MODE_DEGRADED, FALLBACK),
                (names.MODE_PRIMARY, PRIMARY),
                (names.MODE_DEGRADED, FALLBACK),
            ):
                served(metrics, mode, model)
                watch({"name": "exit-step"})
            served(metrics, names.MODE_PRIMARY, PRIMARY)
        else:
            metrics.degraded_every_scrape = True  # every request keeps going to the fallback
        watch({"name": drill_report.RECOVERED})
        metrics.degraded_every_scrape = False
        expected = drill_report.Expected(
            drill_name=DRILL, fallback_model=FALLBACK, primary_model=PRIMARY, drill_requests=5, flaps=2
        )
        return drill_report.lines(watch, expected)


def line(report: list[str], start: str) -> str:
    (found,) = [text for text in report if text.strip().startswith(start)]
    return found


def test_a_drill_the_fallback_serves_proves_every_point(tmp_path: Path) -> None:
    report, problems = run_drill(tmp_path, fallback_serves=True, primary_returns=True)
    text = "\n".join(report)
    assert problems == [], text
    assert "degraded-mode alerts firing: none" in line(report, "before the drill: 6 sampling requests")
    # 5 of 11 requests degraded: above 10% with at least 10 requests
    assert "degraded share 45% > 10% over 11 requests" in line(report, "fired during the drill: OtelSamplingDegradedSh")
    assert line(report, f"fallback during the drill: 5/5 sampling requests completed in degraded mode on {FALLBACK}")
    assert f"{OVERLOADED} 5" in line(report, "fallback during the drill")
    assert "completion share over 5m 100% at its lowest" in line(report, "DrillFallbackFailed's condition")
    exit_line = line(report, "exit, as Prometheus saw it")
    assert "2 requests served degraded" in exit_line and "mode back to primary +" in exit_line
    sequence = exit_line.split(": ", 1)[1].split(";")[0].split(", ")
    assert [part.split(" +")[0] for part in sequence] == ["degraded", "primary", "degraded", "primary"]
    for alert in drill_report.DRILL_ALERTS:
        assert "(firing never)" in line(report, f"{alert}:")
    assert line(report, f"{drill_report.DRILLS} by outcome: stopped 1")


def test_a_failed_fallback_and_a_missing_recovery_are_named(tmp_path: Path) -> None:
    report, problems = run_drill(tmp_path, fallback_serves=False, primary_returns=False)
    text = "\n".join(report + problems)
    assert line(report, "fallback during the drill: 0/5 sampling requests completed in degraded mode"), text
    # none of the 5 requests that ended during the drill completed
    assert "completion share over 5m 0% at its lowest" in line(report, "DrillFallbackFailed's condition"), text
    assert any("0 of 5 sampling requests completed on the fallback" in p for p in problems), text
    assert any("DrillFallbackFailed was still pending as the drill ended" in p for p in problems) or (
        f"{drill_report.PREFIX}DrillFallbackFailed fired on the demo's drill" in problems
    ), text
    # degraded traffic every second after the stop, for longer than drill_recovery_for (20s)
    assert line(report, "OtelSamplingDrillRecoveryMissing: FIRED"), text
    assert "OtelSamplingDrillRecoveryMissing fired on the demo's drill" in problems, text
    assert "after the drill Prometheus never saw the primary serve again" in problems, text
    # the drill was still noticed: a degraded share fired, so DrillWithoutAlert stays quiet
    assert "(firing never)" in line(report, "OtelSamplingDrillWithoutAlert:"), text
