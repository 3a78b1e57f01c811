"""The five numbers that say whether degradation is working, as PromQL over the exported metrics.

The one place for their PromQL: the mixin's recording rules, its Overview and Providers dashboards
and ``docs/telemetry.md`` take the expressions from :func:`expressions` and the rule names from
:func:`record_name` (metric names come from :mod:`otel_sampling.mixin.prometheus_names`, so they
follow the Python Prometheus exporter). Each is over a range ``window`` (a PromQL duration,
default ``1h``):

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
(it reads the ``gen_ai.client.inference.usage.cache_read.input_tokens`` and ``…input_tokens``
counters of semantic-conventions-genai #374, emitted under ``OTEL_SEMCONV_STABILITY_OPT_IN=
gen_ai_latest_experimental`` or ``gen_ai/dup``, added to ours,
``otel_sampling.client.usage.cache_read.input_tokens`` and ``…input_tokens``, emitted instead of
them with v1.41's names only, the default: so it has data in every mode; absent where the provider
never reported a cache part), and
``runs``: finished runs per mode and outcome, the n behind the numbers (dashboards hide a ratio
over too few runs).

Every series is selected by our instrumentation scope (``OUR_SCOPE``: ``otel_scope_name="otel_sampling"``):
a framework's own GenAI instrumentation records the GenAI metrics too (without
``degradation.mode``), into the same series names.

Counts are taken with :func:`otel_sampling.mixin.promql.counted` (a series born inside the window
counts with its whole value: the OTel SDK creates a series at its first ``add()``). A number that
divides reads 0, not nothing, when its numerator has no series but its denominator has (the
``or ... * 0`` idiom); a number over no runs at all is absent.

The series and label names (``RUNS``, ``MODE``, ...) are public: the triage demo's report
(``examples/triage/five_numbers_report.py``) reads the same numbers from one scrape. Plain Python:
importable without the ``mixin`` extra.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Final

from otel_sampling import names
from otel_sampling.mixin.prometheus_names import SCOPE_NAME_LABEL, label_name, metric_name
from otel_sampling.mixin.promql import counted, either, label_selector, matchers

RUNS = metric_name(names.METRIC_AGENT_RUNS, names.UNIT_RUN, counter=True)
RUN_COST = metric_name(names.METRIC_AGENT_RUN_COST, names.UNIT_USD, counter=True)
RUN_DURATION_SUM = metric_name(names.METRIC_AGENT_RUN_DURATION, names.UNIT_SECONDS) + "_sum"
SCORE_SUM = metric_name(names.METRIC_EVALUATION_SCORE, names.UNIT_ONE) + "_sum"
SCORE_COUNT = metric_name(names.METRIC_EVALUATION_SCORE, names.UNIT_ONE) + "_count"
INCIDENTS = metric_name(names.METRIC_SILENT_INCIDENTS, names.UNIT_INCIDENT, counter=True)
# The cache-read share reads the #374 usage counters where the host emits them, ours otherwise
# (a host exports one pair, never both: records/provider_call.record_inference).
INPUT_TOKENS = metric_name(names.METRIC_GEN_AI_USAGE_INPUT_TOKENS, names.UNIT_TOKEN, counter=True)
CACHE_READ_TOKENS = metric_name(names.METRIC_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, names.UNIT_TOKEN, counter=True)
SHARE_INPUT_TOKENS = metric_name(names.METRIC_CLIENT_USAGE_INPUT_TOKENS, names.UNIT_TOKEN, counter=True)
SHARE_CACHE_READ_TOKENS = metric_name(names.METRIC_CLIENT_USAGE_CACHE_READ_INPUT_TOKENS, names.UNIT_TOKEN, counter=True)

MODE = label_name(names.DEGRADATION_MODE)
OUTCOME = label_name(names.AGENT_RUN_OUTCOME)
EVALUATION = label_name(names.GEN_AI_EVALUATION_NAME)

# The series our meter wrote, as the exporters label them (otel_scope_name).
OUR_SCOPE = matchers(**{SCOPE_NAME_LABEL: names.SCOPE_NAME})

_DEGRADED = matchers(**{MODE: names.MODE_DEGRADED})
_PRIMARY = matchers(**{MODE: names.MODE_PRIMARY})
_COMPLETED = matchers(**{OUTCOME: names.OUTCOME_COMPLETED})
_ATTEMPTED = f'{OUTCOME}!="{names.OUTCOME_DENIED}"'  # a declined task was never attempted


@dataclass(frozen=True)
class _Number:
    labels: tuple[str, ...]  # labels of the result besides the caller's ``by``
    metric: str  # the metric part of the rule name (Prometheus ``level:metric:operations``)
    operation: str  # the operation part, the window appended


# What each expression keeps besides ``by``, and how its recording rule is named.
NUMBERS: dict[str, _Number] = {
    "degraded_run_seconds": _Number((), RUN_DURATION_SUM.removesuffix("_sum") + "_degraded", "increase"),
    "degraded_run_share": _Number((), RUNS.removesuffix("_total") + "_degraded", "ratio"),
    "quality_delta": _Number((EVALUATION,), SCORE_SUM.removesuffix("_sum"), "primary_minus_degraded"),
    "completion_rate_by_mode": _Number((MODE,), RUNS.removesuffix("_total") + "_completed", "ratio"),
    "silent_incidents": _Number((), INCIDENTS.removesuffix("_total"), "increase"),
    "cost_per_completed_task_by_mode": _Number((MODE,), RUN_COST.removesuffix("_total"), "per_completed_run"),
    "prompt_cache_read_share_by_mode": _Number((MODE,), CACHE_READ_TOKENS.removesuffix("_total"), "ratio"),
    "runs": _Number((MODE, OUTCOME), RUNS.removesuffix("_total"), "increase"),
}
# The numbers read from run series alone (agent.runs, agent.run.*, degradation.silent_incidents), which
# carry agent.run.name: the ones a grouping by run name splits (an evaluation score and a provider
# call's tokens carry no run name).
RUN_NUMBERS: Final = (
    "degraded_run_seconds",
    "degraded_run_share",
    "completion_rate_by_mode",
    "silent_incidents",
    "cost_per_completed_task_by_mode",
    "runs",
)
# Label names as they appear in a rule's level (Prometheus rule naming joins the labels with "_").
_LEVEL_NAMES = {MODE: "mode", OUTCOME: "outcome", EVALUATION: "evaluation"}


def expressions(
    window: str = "1h", *, by: tuple[str, ...] = (), selector: str = "", scope: str = OUR_SCOPE
) -> dict[str, str]:
    """The PromQL of each number (and of ``runs``) over ``window``.

    Args:
        window: a PromQL duration (``"5m"``, ``"1d"``) or a Grafana variable (``"$__range"``).
        by: labels every result keeps besides its own (``("job",)`` for one value per job);
            default: one value in all (per mode or evaluation name where the number has them).
        selector: label matchers added first to every series read, e.g. ``'job=~"$job"'``.
        scope: label matchers that select our instrumentation scope, added next (empty: any
            scope, for an export path that drops the ``otel_scope_*`` labels).
    """

    def count(series: str, *matching: str) -> str:
        return counted(series + label_selector(selector, scope, *matching), window)

    def total(series: str, *matching: str, also: tuple[str, ...] = ()) -> str:
        labels = ", ".join((*by, *also))
        return f"sum by ({labels}) ({count(series, *matching)})" if labels else f"sum({count(series, *matching)})"

    def ratio(numerator: str, denominator: str) -> str:
        """0, not nothing, where the denominator has series and the numerator has none; nothing,
        not NaN, where the denominator did not grow in the window (a quiet window)."""
        return f"({numerator} or {denominator} * 0)\n/ ({denominator} > 0)"

    # Every denominator is filtered with "> 0": in a quiet window the series exist but did not
    # increase, and 0/0 is NaN (x/0 is +Inf) on a dashboard and in a recording rule. No traffic,
    # no ratio: the result is empty instead.
    def mean_score(mode: str) -> str:
        return f"{total(SCORE_SUM, mode, also=(EVALUATION,))}\n/ ({total(SCORE_COUNT, mode, also=(EVALUATION,))} > 0)"

    attempted_by_mode = total(RUNS, _ATTEMPTED, also=(MODE,))
    completed_by_mode = total(RUNS, _COMPLETED, also=(MODE,))
    # No "or ... * 0" on the cache reads: a mode whose calls never reported a cache part has no
    # share (not reported), a mode whose calls reported 0 has 0 (record_inference records reported 0s).
    reads = either(total(CACHE_READ_TOKENS, also=(MODE,)), total(SHARE_CACHE_READ_TOKENS, also=(MODE,)))
    inputs = either(total(INPUT_TOKENS, also=(MODE,)), total(SHARE_INPUT_TOKENS, also=(MODE,)))
    cache_share = f"(\n{reads}\n)\n/ ((\n{inputs}\n) > 0)"
    return {
        "degraded_run_seconds": f"{total(RUN_DURATION_SUM, _DEGRADED)}\nor {total(RUN_DURATION_SUM)} * 0",
        "degraded_run_share": ratio(total(RUNS, _DEGRADED), total(RUNS)),
        "quality_delta": f"(\n{mean_score(_PRIMARY)}\n)\n- (\n{mean_score(_DEGRADED)}\n)",
        "completion_rate_by_mode": ratio(completed_by_mode, attempted_by_mode),
        "silent_incidents": f"{total(INCIDENTS)}\nor {total(RUNS)} * 0",
        "cost_per_completed_task_by_mode": f"{total(RUN_COST, also=(MODE,))}\n/ ({completed_by_mode} > 0)",
        "prompt_cache_read_share_by_mode": cache_share,
        "runs": total(RUNS, also=(MODE, OUTCOME)),
    }


def record_name(key: str, window: str, by: tuple[str, ...] = ("job",)) -> str:
    """The recorded series of number ``key`` (``level:metric:operations``, prometheus.io/docs/practices/rules):
    ``record_name("completion_rate_by_mode", "30m")`` is ``job_mode:agent_runs_completed:ratio30m``.

    Raises:
        KeyError: an unknown key.
        ValueError: no label to name the level by (an empty ``by`` for a number without labels).
    """
    number = NUMBERS[key]
    level = "_".join(_LEVEL_NAMES.get(label, label) for label in (*by, *number.labels))
    if not level:
        raise ValueError(f'{key}: a recording rule needs a level; pass by=("job",) or other labels')
    return f"{level}:{number.metric}:{number.operation}{window}"


def recording_rules(
    window: str = "1h",
    *,
    by: tuple[str, ...] = ("job",),
    selector: str = "",
    scope: str = OUR_SCOPE,
    keys: Collection[str] | None = None,
) -> list[dict[str, str]]:
    """``{"record", "expr"}`` for every number (and ``runs``), or those of ``keys`` (e.g.
    :data:`RUN_NUMBERS`), for a rule group; other arguments as in :func:`expressions` and
    :func:`record_name`."""
    return [
        {"record": record_name(key, window, by), "expr": expr}
        for key, expr in expressions(window, by=by, selector=selector, scope=scope).items()
        if keys is None or key in keys
    ]
