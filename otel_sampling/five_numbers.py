"""The five numbers that say whether degradation is working, as PromQL over the exported metrics.

Seed essay "Graceful Degradation & Fallback", "Five numbers that say whether degradation is
working". One place for the expressions: dashboards, recording rules and alerts take them from
:func:`expressions` (names come from :mod:`otel_sampling.prometheus_names`, so they follow the
Python Prometheus exporter). Each is over a range ``window`` (a PromQL duration, default ``1h``):

``degraded_run_seconds``
    Time in degraded mode: seconds of agent run time spent in runs that ended degraded.
``degraded_run_share``
    Share of runs affected: degraded runs / all runs (0 to 1).
``quality_delta``
    Mean evaluation score in primary mode minus in degraded mode, per ``gen_ai_evaluation_name``
    (positive: degraded is worse).
``completion_rate_by_mode``
    Task completion rate: completed runs / attempted runs (every outcome but ``denied``), per
    ``degradation_mode``. A task declined by policy, the user or the budget was not attempted in
    any mode; counted as a failure it would lower the primary's rate by the number of denials.
``silent_incidents``
    Silent-degradation incidents: runs that ended degraded (or with a substitution outside
    policy) with no disclosure.
``cost_per_completed_task_by_mode``
    Cost per completed task: USD spent in runs of a mode (failed runs included: their spend
    bought nothing) / completed runs of that mode.

Plus ``prompt_cache_read_share_by_mode``: cache-read input tokens / input tokens, per mode; a
failover that silently loses the provider's prompt cache shows as a lower share in degraded mode
(it reads ``gen_ai.token.type="cache_read"`` points of ``gen_ai.client.token.usage``).

:func:`from_scrape` computes the same numbers from one scrape of a process's ``/metrics`` (every
counter started at zero, so a value is its increase over the process's life): the demo report.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from otel_sampling import names
from otel_sampling.prometheus_names import label_name, metric_name

RUNS = metric_name(names.METRIC_AGENT_RUNS, names.UNIT_RUN, counter=True)
RUN_COST = metric_name(names.METRIC_AGENT_RUN_COST, names.UNIT_USD, counter=True)
RUN_DURATION_SUM = metric_name(names.METRIC_AGENT_RUN_DURATION, names.UNIT_SECONDS) + "_sum"
SCORE_SUM = metric_name(names.METRIC_EVALUATION_SCORE, names.UNIT_ONE) + "_sum"
SCORE_COUNT = metric_name(names.METRIC_EVALUATION_SCORE, names.UNIT_ONE) + "_count"
INCIDENTS = metric_name(names.METRIC_SILENT_INCIDENTS, names.UNIT_INCIDENT, counter=True)
TOKENS_SUM = metric_name(names.METRIC_GEN_AI_TOKEN_USAGE, names.UNIT_TOKEN) + "_sum"

MODE = label_name(names.DEGRADATION_MODE)
OUTCOME = label_name(names.AGENT_RUN_OUTCOME)
EVALUATION = label_name(names.GEN_AI_EVALUATION_NAME)
TOKEN_TYPE = label_name(names.GEN_AI_TOKEN_TYPE)



def _equals(label: str, value: str) -> str:
    return f'{label}="{value}"'


_DEGRADED = _equals(MODE, names.MODE_DEGRADED)
_PRIMARY = _equals(MODE, names.MODE_PRIMARY)
_COMPLETED = _equals(OUTCOME, names.OUTCOME_COMPLETED)
_ATTEMPTED = f'{OUTCOME}!="{names.OUTCOME_DENIED}"'
_CACHE_READ = _equals(TOKEN_TYPE, names.TOKEN_TYPE_CACHE_READ)
_INPUT = _equals(TOKEN_TYPE, names.TOKEN_TYPE_INPUT)


def expressions(window: str = "1h") -> dict[str, str]:
    """The PromQL of each number over ``window`` (``"5m"``, ``"1d"``, or Grafana's ``"$__range"``)."""
    w = window

    def inc(series: str, selector: str = "") -> str:
        return f"increase({series}{{{selector}}}[{w}])" if selector else f"increase({series}[{w}])"

    # Every denominator is filtered with "> 0": in a quiet window the series exist but did not
    # increase, and 0/0 is NaN (x/0 is +Inf) on a dashboard and in a recording rule. No traffic,
    # no ratio: the result is empty instead.
    def mean_score(mode: str) -> str:
        return (f"sum by ({EVALUATION}) ({inc(SCORE_SUM, mode)})"
                f" / (sum by ({EVALUATION}) ({inc(SCORE_COUNT, mode)}) > 0)")

    attempted_by_mode = f"sum by ({MODE}) ({inc(RUNS, _ATTEMPTED)})"
    completed_by_mode = f"sum by ({MODE}) ({inc(RUNS, _COMPLETED)})"
    return {
        "degraded_run_seconds": f"sum({inc(RUN_DURATION_SUM, _DEGRADED)}) or vector(0)",
        "degraded_run_share": f"(sum({inc(RUNS, _DEGRADED)}) or vector(0)) / (sum({inc(RUNS)}) > 0)",
        "quality_delta": f"({mean_score(_PRIMARY)}) - ({mean_score(_DEGRADED)})",
        # a mode with runs but none completed reads 0, not nothing
        "completion_rate_by_mode": f"({completed_by_mode} or 0 * {attempted_by_mode}) / ({attempted_by_mode} > 0)",
        "silent_incidents": f"sum({inc(INCIDENTS)}) or vector(0)",
        "cost_per_completed_task_by_mode": f"sum by ({MODE}) ({inc(RUN_COST)}) / ({completed_by_mode} > 0)",
        "prompt_cache_read_share_by_mode": (
            f"sum by ({MODE}) ({inc(TOKENS_SUM, _CACHE_READ)}) / (sum by ({MODE}) ({inc(TOKENS_SUM, _INPUT)}) > 0)"
        ),
    }


def recording_rules(window: str = "1h") -> list[dict[str, str]]:
    """``{"record", "expr"}`` rules (Prometheus naming ``level:metric:operations``) for a rule group."""
    return [{"record": f"otel_sampling:{key}:{window}", "expr": expr} for key, expr in expressions(window).items()]


@dataclass
class FiveNumbers:
    """The five numbers from one scrape; ``None`` where the metrics hold nothing to divide."""

    degraded_run_seconds: float = 0.0
    runs_by_mode: dict[str, float] = field(default_factory=dict)
    completed_by_mode: dict[str, float] = field(default_factory=dict)
    denied_by_mode: dict[str, float] = field(default_factory=dict)  # declined, not attempted
    cost_by_mode: dict[str, float] = field(default_factory=dict)
    mean_score_by_mode: dict[str, dict[str, float]] = field(default_factory=dict)  # evaluation -> mode -> mean
    silent_incidents: float = 0.0

    @property
    def degraded_run_share(self) -> float | None:
        total = sum(self.runs_by_mode.values())
        return self.runs_by_mode.get(names.MODE_DEGRADED, 0.0) / total if total else None

    def quality_delta(self) -> dict[str, float]:
        """Evaluation name -> primary mean minus degraded mean (only where both modes were scored)."""
        return {name: means[names.MODE_PRIMARY] - means[names.MODE_DEGRADED]
                for name, means in sorted(self.mean_score_by_mode.items())
                if names.MODE_PRIMARY in means and names.MODE_DEGRADED in means}

    def completion_rate(self, mode: str) -> float | None:
        """Completed / attempted runs of ``mode`` (``denied`` ones were not attempted)."""
        attempted = self.runs_by_mode.get(mode, 0.0) - self.denied_by_mode.get(mode, 0.0)
        return self.completed_by_mode.get(mode, 0.0) / attempted if attempted > 0 else None

    def cost_per_completed_task(self, mode: str) -> float | None:
        completed = self.completed_by_mode.get(mode, 0.0)
        return self.cost_by_mode.get(mode, 0.0) / completed if completed else None

    def summary(self) -> str:
        """Two report lines, primary vs degraded."""
        share = self.degraded_run_share
        runs = sum(self.runs_by_mode.values())
        degraded = self.runs_by_mode.get(names.MODE_DEGRADED, 0.0)
        deltas = self.quality_delta()
        quality = ", ".join(
            f"{name} primary {self.mean_score_by_mode[name][names.MODE_PRIMARY]:.2f} vs degraded "
            f"{self.mean_score_by_mode[name][names.MODE_DEGRADED]:.2f} (delta {delta:+.2f})"
            for name, delta in deltas.items()) or "no evaluation in both modes"
        return (
            f"degraded time {self.degraded_run_seconds:.2f} s of run time, runs degraded {degraded:.0f}/{runs:.0f}"
            f" ({_pct(share)}) | quality {quality}\n"
            f"completion primary {_pct(self.completion_rate(names.MODE_PRIMARY))} vs degraded "
            f"{_pct(self.completion_rate(names.MODE_DEGRADED))} | silent incidents {self.silent_incidents:.0f}"
            f" | cost/completed task ${_usd(self.cost_per_completed_task(names.MODE_PRIMARY))} vs "
            f"${_usd(self.cost_per_completed_task(names.MODE_DEGRADED))}"
        )


def from_scrape(metrics_text: str) -> FiveNumbers:
    """The five numbers from one scrape of ``/metrics`` (Prometheus text format)."""
    numbers = FiveNumbers()
    score_sums: dict[tuple[str, str], float] = {}
    score_counts: dict[tuple[str, str], float] = {}
    for name, labels, value in _samples(metrics_text):
        mode = labels.get(MODE, "")
        if name == RUNS:
            _add(numbers.runs_by_mode, mode, value)
            if labels.get(OUTCOME) == names.OUTCOME_COMPLETED:
                _add(numbers.completed_by_mode, mode, value)
            elif labels.get(OUTCOME) == names.OUTCOME_DENIED:
                _add(numbers.denied_by_mode, mode, value)
        elif name == RUN_COST:
            _add(numbers.cost_by_mode, mode, value)
        elif name == RUN_DURATION_SUM and mode == names.MODE_DEGRADED:
            numbers.degraded_run_seconds += value
        elif name == INCIDENTS:
            numbers.silent_incidents += value
        elif name == SCORE_SUM:
            _add(score_sums, (labels.get(EVALUATION, ""), mode), value)
        elif name == SCORE_COUNT:
            _add(score_counts, (labels.get(EVALUATION, ""), mode), value)
    for (evaluation, mode), count in score_counts.items():
        if count:
            numbers.mean_score_by_mode.setdefault(evaluation, {})[mode] = score_sums.get((evaluation, mode), 0.0) / count
    return numbers


def _samples(metrics_text: str) -> Iterable[tuple[str, dict[str, str], float]]:
    # Imported here: prometheus-client is the optional "prometheus" extra; the expressions need none.
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            yield sample.name, sample.labels, sample.value


def _add(target: dict, key: object, value: float) -> None:
    target[key] = target.get(key, 0.0) + value


def _pct(value: float | None) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{100 * value:.0f}%"


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.6f}"
