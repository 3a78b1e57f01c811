"""The demo's report of the five numbers, read from one scrape of a process's ``/metrics``.

Every counter of a process starts at zero, so a value in one scrape is its increase over the
process's life: :func:`from_scrape` gives the same numbers the PromQL of
``otel_sampling.mixin.five_numbers`` gives over a window, without a Prometheus server. The series
and label names come from that module, so the report and the PromQL read the same series.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from otel_sampling import names
from otel_sampling.mixin.five_numbers import (
    CACHE_READ_TOKENS,
    EVALUATION,
    INCIDENTS,
    INPUT_TOKENS,
    MODE,
    OUTCOME,
    RUN_COST,
    RUN_DURATION_SUM,
    RUNS,
    SCORE_COUNT,
    SCORE_SUM,
    SHARE_CACHE_READ_TOKENS,
    SHARE_INPUT_TOKENS,
)
from otel_sampling.mixin.prometheus_names import SCOPE_NAME_LABEL


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
    input_tokens_by_mode: dict[str, float] = field(default_factory=dict)
    cache_read_tokens_by_mode: dict[str, float] = field(default_factory=dict)

    @property
    def degraded_run_share(self) -> float | None:
        total = sum(self.runs_by_mode.values())
        return self.runs_by_mode.get(names.MODE_DEGRADED, 0.0) / total if total else None

    def quality_delta(self) -> dict[str, float]:
        """Evaluation name -> primary mean minus degraded mean (only where both modes were scored)."""
        return {
            name: means[names.MODE_PRIMARY] - means[names.MODE_DEGRADED]
            for name, means in sorted(self.mean_score_by_mode.items())
            if names.MODE_PRIMARY in means and names.MODE_DEGRADED in means
        }

    def completion_rate(self, mode: str) -> float | None:
        """Completed / attempted runs of ``mode`` (``denied`` ones were not attempted)."""
        attempted = self.runs_by_mode.get(mode, 0.0) - self.denied_by_mode.get(mode, 0.0)
        return self.completed_by_mode.get(mode, 0.0) / attempted if attempted > 0 else None

    def cost_per_completed_task(self, mode: str) -> float | None:
        completed = self.completed_by_mode.get(mode, 0.0)
        return self.cost_by_mode.get(mode, 0.0) / completed if completed else None

    def prompt_cache_read_share(self, mode: str) -> float | None:
        """Cache-read input tokens / input tokens of the provider calls of ``mode``."""
        tokens = self.input_tokens_by_mode.get(mode, 0.0)
        return self.cache_read_tokens_by_mode.get(mode, 0.0) / tokens if tokens else None

    def summary(self) -> str:
        """Two report lines, primary vs degraded."""
        share = self.degraded_run_share
        runs = sum(self.runs_by_mode.values())
        degraded = self.runs_by_mode.get(names.MODE_DEGRADED, 0.0)
        deltas = self.quality_delta()
        quality = (
            ", ".join(
                f"{name} primary {self.mean_score_by_mode[name][names.MODE_PRIMARY]:.2f} vs degraded "
                f"{self.mean_score_by_mode[name][names.MODE_DEGRADED]:.2f} (delta {delta:+.2f})"
                for name, delta in deltas.items()
            )
            or "no evaluation in both modes"
        )
        return (
            f"degraded time {self.degraded_run_seconds:.2f} s of run time, runs degraded {degraded:.0f}/{runs:.0f}"
            f" ({_pct(share)}) | quality {quality}\n"
            f"completion primary {_pct(self.completion_rate(names.MODE_PRIMARY))} vs degraded "
            f"{_pct(self.completion_rate(names.MODE_DEGRADED))} | silent incidents {self.silent_incidents:.0f}"
            f" | cost/completed task ${_usd(self.cost_per_completed_task(names.MODE_PRIMARY))} vs "
            f"${_usd(self.cost_per_completed_task(names.MODE_DEGRADED))}"
            f" | prompt-cache reads {_pct(self.prompt_cache_read_share(names.MODE_PRIMARY))} vs "
            f"{_pct(self.prompt_cache_read_share(names.MODE_DEGRADED))} of input"
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
        elif name in (INPUT_TOKENS, SHARE_INPUT_TOKENS):  # a host exports one of the two, never both
            _add(numbers.input_tokens_by_mode, mode, value)
        elif name in (CACHE_READ_TOKENS, SHARE_CACHE_READ_TOKENS):
            _add(numbers.cache_read_tokens_by_mode, mode, value)
    for (evaluation, mode), count in score_counts.items():
        if count:
            mean = score_sums.get((evaluation, mode), 0.0) / count
            numbers.mean_score_by_mode.setdefault(evaluation, {})[mode] = mean
    return numbers


def _samples(metrics_text: str) -> Iterable[tuple[str, dict[str, str], float]]:
    """Every sample our meter wrote (otel_scope_name, as the PromQL selects them: a framework's own
    gen_ai.client.token.usage shares the name), and those with no scope label (target_info)."""
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            if sample.labels.get(SCOPE_NAME_LABEL, names.SCOPE_NAME) == names.SCOPE_NAME:
                yield sample.name, sample.labels, sample.value


def _add(target: dict[Any, float], key: object, value: float) -> None:
    target[key] = target.get(key, 0.0) + value


def _pct(value: float | None) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{100 * value:.0f}%"


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.6f}"
