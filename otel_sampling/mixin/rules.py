"""Prometheus recording and alerting rules, as plain data (written to ``alerts/*.yaml``).

Recording rules follow ``level:metric:operations`` (prometheus.io/docs/practices/rules); every
ratio a dashboard or an alert reuses is recorded once, numerator and denominator summed before the
division. Alerts follow the monitoring-mixins style guide: CamelCase names with one prefix, a
``severity`` of ``critical`` / ``warning`` / ``info``, a static ``summary``, a templated
``description`` and a ``runbook_url`` pointing at the alert's section of ``docs/runbook.md``.
"""

from __future__ import annotations

from typing import Any

from otel_sampling import names
from otel_sampling.mixin import breakage, five_numbers
from otel_sampling.mixin import metrics as m
from otel_sampling.mixin.config import MixinConfig
from otel_sampling.mixin.prometheus_names import label_name
from otel_sampling.mixin.promql import counted, either, label_selector, matchers

PREFIX = "OtelSampling"
BY_JOB = (m.JOB,)  # the level of every recorded series
BY_RUN_NAME = (m.JOB, m.RUN_NAME)  # the five numbers again, per run name (a server's tool: <server>/<tool>)
Rule = dict[str, Any]


class Recorded:
    """The names of the recording rules, for a window (dashboards and alerts read these); the five
    numbers are named by ``otel_sampling.mixin.five_numbers.record_name``."""

    def __init__(self, config: MixinConfig) -> None:
        w = config.window
        self.requests_by_server = f"job_server:{m.SAMPLING_REQUESTS.removesuffix('_total')}:increase{w}"
        self.requests = f"job:{m.SAMPLING_REQUESTS.removesuffix('_total')}:increase{w}"
        # the requests that ended while a drill ran (their points carry the drill's name), by mode and ending
        self.drill_requests = f"job:{m.SAMPLING_REQUESTS.removesuffix('_total')}_during_drills:increase{w}"
        sampling = label_name(names.METRIC_SAMPLING_REQUESTS.removesuffix(".requests"))  # the metrics' family
        self.degraded_ratio = f"job:{sampling}_degraded:ratio{w}"
        number = {key: five_numbers.record_name(key, w, BY_JOB) for key in five_numbers.NUMBERS}
        self.degraded_run_seconds = number["degraded_run_seconds"]
        self.runs = number["runs"]
        self.runs_degraded_ratio = number["degraded_run_share"]
        self.completion_ratio = number["completion_rate_by_mode"]
        self.score_delta = number["quality_delta"]
        self.silent_incidents = number["silent_incidents"]
        self.cost_per_completed_run = number["cost_per_completed_task_by_mode"]
        self.prompt_cache_read_share = number["prompt_cache_read_share_by_mode"]
        by_name = {key: five_numbers.record_name(key, w, BY_RUN_NAME) for key in five_numbers.NUMBERS}
        self.runs_by_name = by_name["runs"]
        self.runs_degraded_ratio_by_name = by_name["degraded_run_share"]
        self.completion_ratio_by_name = by_name["completion_rate_by_mode"]
        self.silent_incidents_by_name = by_name["silent_incidents"]
        self.cost_per_completed_run_by_name = by_name["cost_per_completed_task_by_mode"]
        self.degraded_exposure = "job:otel_sampling_degraded_exposure:active"
        # the cache-read share by mode and served model, over the window and over its baseline window
        cache = m.USAGE_CACHE_READ.removesuffix("_total")
        self.cache_share_by_model = f"job_mode_model:{cache}:ratio{w}"
        self.cache_share_baseline = f"job_mode_model:{cache}:ratio{config.cache_share_baseline_window}"


def recording_rules(config: MixinConfig) -> list[Rule]:
    """Every recorded series: the sampling-request counts and degraded share, then the five numbers
    exactly as ``otel_sampling.mixin.five_numbers`` writes them, per job and per job and run name;
    see ``Recorded`` for the names."""
    r, w, sel = Recorded(config), config.window, config.selector
    mode_degraded = matchers(**{m.MODE: names.MODE_DEGRADED})
    in_a_drill = f'{m.DRILL_NAME}!=""'
    return [
        {
            "record": r.requests_by_server,  # keeps mode, ending and substitution for slicing
            "expr": f"sum by ({m.JOB}, {m.SERVER}, {m.MODE}, {m.ENDING}, {m.SUBSTITUTION}) "
            f"({counted(m.SAMPLING_REQUESTS + sel(), w)})",
        },
        {"record": r.requests, "expr": f"sum by ({m.JOB}) ({r.requests_by_server})"},
        {
            "record": r.drill_requests,
            "expr": f"sum by ({m.JOB}, {m.MODE}, {m.ENDING}) ({counted(m.SAMPLING_REQUESTS + sel(in_a_drill), w)})",
        },
        {
            "record": r.degraded_ratio,  # "or ... * 0": 0, not absent, while nothing ran degraded; "> 0": no NaN
            "expr": f"(sum by ({m.JOB}) ({r.requests_by_server}{{{mode_degraded}}}) or {r.requests} * 0)\n"
            f"/ ({r.requests} > 0)",
        },
        *five_numbers.recording_rules(w, by=BY_JOB, selector=config.rule_selector, scope=config.scope_selector),
        *five_numbers.recording_rules(
            w,
            by=BY_RUN_NAME,
            selector=config.rule_selector,
            scope=config.scope_selector,
            keys=five_numbers.RUN_NUMBERS,
        ),
        degraded_exposure_rule(config),
        *cache_share_rules(config),
        *breakage.recording_rules(config),
    ]


def cache_share_rules(config: MixinConfig) -> list[Rule]:
    """The cache-read share (``gen_ai.client.inference.usage.cache_read.input_tokens`` / ``…input_tokens``,
    or ours, ``otel_sampling.client.usage.*``, from a host on v1.41's names only) per job, mode and
    served model, over ``window`` and over ``cache_share_baseline_window``. No ``or ... * 0`` on the
    reads: where the provider never reported a cache part there is no share."""
    r, sel = Recorded(config), config.selector
    by = f"{m.JOB}, {m.MODE}, {m.RESPONSE_MODEL}"

    def summed(newest: str, ours: str, window: str) -> str:
        return either(
            f"sum by ({by}) ({counted(newest + sel(), window)})", f"sum by ({by}) ({counted(ours + sel(), window)})"
        )

    def share(window: str) -> str:
        reads = summed(m.USAGE_CACHE_READ, m.SHARE_CACHE_READ, window)
        inputs = summed(m.USAGE_INPUT, m.SHARE_INPUT, window)
        return f"(\n{reads}\n)\n/ ((\n{inputs}\n) > 0)"

    return [
        {"record": r.cache_share_by_model, "expr": share(config.window)},
        {"record": r.cache_share_baseline, "expr": share(config.cache_share_baseline_window)},
    ]


def degraded_exposure_rule(config: MixinConfig) -> Rule:
    """Per job, 1 while it is exposed to degraded mode, else 0: the degraded share above
    ``degraded_share_threshold`` with at least ``min_requests`` requests in the window, or a named
    degradation other than a drill active (a drill is exercised on purpose: DrillWithoutAlert)."""
    r, c = Recorded(config), config
    named = m.DEGRADATION_ACTIVE + c.selector(f'{m.REASON}!="{names.REASON_DRILL}"')
    return {
        "record": r.degraded_exposure,
        "expr": (
            f"count by ({m.JOB}) (\n"
            f"  {r.degraded_ratio} > {c.degraded_share_threshold}"
            f" and on ({m.JOB}) {r.requests} >= {c.min_requests}\n"
            f"  or max by ({m.JOB}) ({named}) > 0\n"
            f")\n"
            f"or on ({m.JOB}) ({r.requests} * 0 or max by ({m.JOB}) ({named}) * 0)"
        ),
    }


def _alert(config: MixinConfig, name: str, expr: str, for_: str, severity: str, summary: str, description: str) -> Rule:
    alert = f"{PREFIX}{name}"
    return {
        "alert": alert,
        "expr": expr,
        "for": for_,
        "labels": {"severity": severity},
        "annotations": {
            "summary": summary,
            "description": description,
            "runbook_url": f"{config.runbook_url}#{alert.lower()}",
        },
    }


def alerting_rules(config: MixinConfig) -> list[Rule]:
    """The alerts, one per condition in ``docs/runbook.md``."""
    r, w, dw, sel, c = Recorded(config), config.window, config.day_window, config.selector, config
    server = f"{{{{ $labels.{m.SERVER} }}}}"
    component = f"{{{{ $labels.{m.COMPONENT} }}}}"
    by_server = f"{m.JOB}, {m.SERVER}"
    by_degradation = f"{m.JOB}, {m.COMPONENT}, {m.REASON}"
    tracked = sel(matchers(**{m.DISCLOSURE_TRACKED: "true"}))

    def requests(**labels: str) -> str:
        return f"{r.requests_by_server}{{{matchers(**labels)}}}"

    def violations(kind: str) -> str:
        selector = m.SAMPLING_VIOLATIONS + sel(matchers(**{m.VIOLATION_KIND: kind}))
        return f"sum by ({by_server}) ({counted(selector, w)}) > 0"

    # The threshold alerts compare whole events: increase() extrapolates to the window's edges
    # (3 stalls read as 3.07 when scrapes and evaluations are not aligned), so the count is rounded.
    alerts = [
        _alert(
            c,
            "DegradedShareHigh",
            f"{r.degraded_ratio} > {c.degraded_share_threshold}\nand on ({m.JOB}) {r.requests} >= {c.min_requests}",
            c.degraded_share_for,
            "warning",
            "A high share of sampling requests is served in degraded mode.",
            f"{{{{ $value | humanizePercentage }}}} of the sampling requests of job {{{{ $labels.job }}}} "
            f"were served in degraded mode over the last {w} (threshold {c.degraded_share_threshold:.0%}, "
            f"at least {c.min_requests} requests).",
        ),
        _alert(
            c,
            "RunsDegradedShareHigh",
            f"{r.runs_degraded_ratio_by_name} > {c.degraded_share_threshold}\n"
            f"and on ({m.JOB}, {m.RUN_NAME}) sum by ({m.JOB}, {m.RUN_NAME}) ({r.runs_by_name}) >= {c.min_requests}",
            c.degraded_share_for,
            "warning",
            "A high share of one kind of run ended in degraded mode.",
            f"{{{{ $value | humanizePercentage }}}} of the runs '{{{{ $labels.{m.RUN_NAME} }}}}' of job "
            f"{{{{ $labels.job }}}} ended in degraded mode over the last {w} (threshold "
            f"{c.degraded_share_threshold:.0%}, at least {c.min_requests} runs).",
        ),
        _alert(
            c,
            "DegradedModeEntered",
            f"max by ({by_degradation}) ({m.DEGRADATION_ACTIVE}{sel()}) > 0\n"
            f"or sum by ({by_server}) ({requests(**{m.MODE: names.MODE_DEGRADED})}) > 0",
            "0m",
            "info",
            "The host is running in degraded mode.",
            f"{{{{ if $labels.{m.COMPONENT} }}}}Degradation '{component}' (reason {{{{ $labels.{m.REASON} }}}}) "
            f"is active on job {{{{ $labels.job }}}}.{{{{ else }}}}"
            f"{{{{ $value | humanize }}}} sampling requests from server "
            f"'{server}' on job {{{{ $labels.job }}}} were served in degraded mode over the last {w}.{{{{ end }}}}",
        ),
        _alert(
            c,
            "DegradedTooLong",
            f"max by ({by_degradation}) ({m.DEGRADATION_ACTIVE}{sel()}) > 0",
            c.degraded_too_long_for,
            "warning",
            "A named degradation has been active for too long.",
            f"Degradation '{component}' (reason {{{{ $labels.{m.REASON} }}}}) on job {{{{ $labels.job }}}} "
            f"has been active for more than {c.degraded_too_long_for}.",
        ),
        _alert(
            c,
            "DegradationExpired",
            f"max by ({by_degradation}) ({m.DEGRADATION_EXPIRED}{sel()}) > 0",
            c.expired_for,
            "warning",
            "A degradation is still active past its expiry.",
            f"Degradation '{component}' (reason {{{{ $labels.{m.REASON} }}}}) on job {{{{ $labels.job }}}} "
            f"is past its expires_at and still active.",
        ),
        # Only a host that tracks disclosure is paged: a zero-code host (no disclose() call, which
        # no framework makes) would page on its first ordinary fallback. Its exposure still alerts
        # (DegradedModeEntered, DegradedShareHigh, SubstitutionOutsidePolicy).
        _alert(
            c,
            "SilentDegradation",
            f"sum by ({m.JOB}, {m.RUN_NAME}) ({counted(m.SILENT_INCIDENTS + tracked, w)}) > 0",
            c.event_for,
            "critical",
            "A run was degraded without telling the user.",
            f"{{{{ $value | humanize }}}} silent-degradation incidents in run '{{{{ $labels.{m.RUN_NAME} }}}}' "
            f"of job "
            f"{{{{ $labels.job }}}} over the last {w}: "
            f"a degraded ending or an outside-policy model with no disclosure.",
        ),
        _alert(
            c,
            "SubstitutionOutsidePolicy",
            f"sum by ({by_server}) ({requests(**{m.SUBSTITUTION: names.SUBSTITUTION_OUTSIDE_POLICY})}) > 0",
            c.event_for,
            "warning",
            "A sampling request was served by a model outside the server's policy.",
            f"{{{{ $value | humanize }}}} sampling requests from server '{server}' on job {{{{ $labels.job }}}} "
            f"were served "
            f"by a model the policy does not permit over the last {w}.",
        ),
    ]
    for kind, name, summary in (
        (
            names.VIOLATION_SCOPE_WIDENED,
            "ContextScopeWidened",
            "A retried sampling request asked for a wider context scope.",
        ),
        (names.VIOLATION_DECISION_FLIPPED, "DecisionFlipped", "A repeated sampling request got a different decision."),
        (
            names.VIOLATION_REROUTED_AFTER_DENIAL,
            "ReroutedAfterDenial",
            "A denied sampling request was re-sent through another server.",
        ),
    ):
        alerts.append(
            _alert(
                c,
                name,
                violations(kind),
                c.event_for,
                "warning",
                summary,
                f"{{{{ $value | humanize }}}} '{kind}' violations by server '{server}' "
                f"on job {{{{ $labels.job }}}} over the last {w}.",
            )
        )
    entered = sel(matchers(**{m.DIRECTION: names.DIRECTION_ENTER}))
    degraded_done = sel(matchers(**{m.MODE: names.MODE_DEGRADED, m.ENDING: names.ENDING_COMPLETED}))
    canary = sel(matchers(**{m.REASON: names.REASON_CANARY}))
    alerts += [
        _alert(
            c,
            "BudgetExhausted",
            f"sum by ({by_server}) ({requests(**{m.ENDING: names.ENDING_BUDGET_EXHAUSTED})}) > 0",
            c.event_for,
            "info",
            "A server's sampling budget is exhausted.",
            f"{{{{ $value | humanize }}}} sampling requests from server '{server}' on job {{{{ $labels.job }}}} "
            f"ended "
            f"{names.ENDING_BUDGET_EXHAUSTED} over the last {w}; the reset time is on the span "
            f"({names.SAMPLING_BUDGET_RESETS_AT}).",
        ),
        _alert(
            c,
            "StallsHigh",
            f"round(sum by ({by_server}) ({counted(m.SAMPLING_STALLS + sel(), w)})) > {c.stalls_threshold}",
            c.stalls_for,
            "warning",
            "Sampling requests are stalling.",
            f"{{{{ $value | humanize }}}} sampling requests from server '{server}' on job {{{{ $labels.job }}}} "
            f"stalled "
            f"over the last {w} (threshold {c.stalls_threshold}).",
        ),
        _alert(
            c,
            "DegradationFlapping",
            f"round(sum by ({m.JOB}, {m.COMPONENT}) "
            f"({counted(m.DEGRADATION_TRANSITIONS + entered, c.flapping_window)}))"
            f" >= {c.flapping_transitions}",
            c.event_for,
            "warning",
            "A degradation keeps entering and leaving.",
            f"Degradation '{component}' on job {{{{ $labels.job }}}} was entered "
            f"{{{{ $value | humanize }}}} times in "
            f"the last {c.flapping_window} (threshold {c.flapping_transitions}).",
        ),
        _alert(
            c,
            "FallbackUntested",
            f"sum by ({m.JOB}) ({counted(m.SAMPLING_REQUESTS + sel(), dw)}) > 0\n"
            # "for a day": the job already served requests a day ago (a new job is not yet overdue)
            f"and on ({m.JOB}) count by ({m.JOB}) ({m.SAMPLING_REQUESTS + sel()} offset {dw})\n"
            f"unless on ({m.JOB}) (\n"
            f"  sum by ({m.JOB}) ({counted(m.SAMPLING_REQUESTS + degraded_done, dw)}) > 0\n"
            f"  or sum by ({m.JOB}) ({counted(m.SAMPLING_REQUESTS + canary, dw)}) > 0\n"
            f")",
            c.fallback_untested_for,
            "info",
            "The fallback path carried no traffic for a day.",
            f"Job {{{{ $labels.job }}}} served sampling requests over the last {dw} but none completed in degraded "
            f"mode and none was a canary request: the fallback is untested.",
        ),
        *_drill_alerts(config),
        _alert(
            c,
            "SilentToOperators",
            f"{r.degraded_exposure} > 0\n"
            f"unless on ({m.JOB}) {degraded_mode_alerts_firing(ALERTS_LOOKBACK, c.rule_selector)} > 0",
            c.silent_exposure_for,
            "warning",
            "The job is degraded and no degraded-mode alert fires.",
            f"Job {{{{ $labels.job }}}} has been exposed to degraded mode (degraded share above "
            f"{c.degraded_share_threshold:.0%} or a named degradation active) for {c.silent_exposure_for} "
            f"while none of the degraded-mode alerts ({', '.join(DEGRADED_MODE_ALERTS)}) was firing.",
        ),
        _alert(
            c,
            "PromptCacheShareDropped",
            f"{r.cache_share_by_model}\n< {1 - c.cache_share_drop:g} * {r.cache_share_baseline}",
            c.cache_share_for,
            "warning",
            "The prompt-cache read share of a model dropped against its own baseline.",
            f"Calls to {{{{ $labels.{m.RESPONSE_MODEL} }}}} in {{{{ $labels.{m.MODE} }}}} mode on job "
            f"{{{{ $labels.job }}}} read {{{{ $value | humanizePercentage }}}} of their input tokens from the "
            f"prompt cache over the last {w}, less than {1 - c.cache_share_drop:.0%} of their share over the last "
            f"{c.cache_share_baseline_window}: a cached prefix that no longer matches (a failover, a changed "
            f"prompt) is paid at full input price.",
        ),
        _alert(
            c,
            "GrantsHigh",
            f"round(sum by ({by_server}) ({counted(m.SAMPLING_GRANTS + sel(), dw)})) > {c.grants_per_day_threshold}",
            c.event_for,
            "warning",
            "A server received many consent grants in a day.",
            f"Server '{server}' on job {{{{ $labels.job }}}} received {{{{ $value | humanize }}}} "
            f"budget grants over the last "
            f"{dw} (threshold {c.grants_per_day_threshold}).",
        ),
    ]
    alerts += [_alert(c, *spec) for spec in breakage.alerts(config)]
    return alerts


#: The degraded-mode alerts that reach someone (severity warning or critical): a drill during
#: which none of them fired was not noticed (DegradedModeEntered is info, routed nowhere, and
#: fires on the drill's own degradation).
DEGRADED_MODE_ALERTS = ("DegradedShareHigh", "DegradedTooLong", "DegradationExpired", "DegradationFlapping")
#: How far back SilentToOperators (and the dashboard panel showing its condition) looks for a
#: firing degraded-mode alert: one evaluation's ``ALERTS`` sample may be up to an interval old.
ALERTS_LOOKBACK = "1m"


def degraded_mode_alerts_firing(window: str, selector: str) -> str:
    """Per job, how many of ``DEGRADED_MODE_ALERTS`` were firing at some point in ``window``
    (Prometheus's own ``ALERTS`` series, which carries the rule selector's job but no scope)."""
    names_ = "|".join(PREFIX + name for name in DEGRADED_MODE_ALERTS)
    alerts = "ALERTS" + label_selector('alertstate="firing"', f'alertname=~"{names_}"', selector)
    return f"count by ({m.JOB}) (max_over_time({alerts}[{window}]))"


#: The sampling requests a model was asked for (a matcher): all but the host's decisions not to
#: sample (a denial, no sampling support), which say nothing of a fallback.
MODEL_ASKED = (
    f'{m.ENDING}!~"'
    + "|".join(e.replace(".", "\\\\.") for e in (*names.DECISION_ENDINGS, names.ENDING_HOST_UNSUPPORTED))
    + '"'
)


def _drill_alerts(config: MixinConfig) -> list[Rule]:
    """What a drill proves (docs/runbook.md "Running a drill"): the drill window is the drill's
    named degradation, ``degradation_active{degradation_reason="drill"}`` by drill name (component)."""
    c, r, dw, sel = config, Recorded(config), config.drill_window, config.selector
    by_drill = f"{m.JOB}, {m.COMPONENT}"
    drill = m.DEGRADATION_ACTIVE + sel(matchers(**{m.REASON: names.REASON_DRILL}))
    name = f"{{{{ $labels.{m.COMPONENT} }}}}"
    # A drill that ran within the window and is over now (one series per job and drill name).
    ended = (
        f"max by ({by_drill}) (max_over_time({drill}[{dw}])) > 0\n"
        f"unless on ({by_drill}) max by ({by_drill}) ({drill}) > 0"
    )
    running = f"max by ({m.JOB}) ({drill}) > 0"

    def during_drills(*matchers_: str) -> str:
        return f"sum by ({m.JOB}) ({r.drill_requests}{label_selector(*matchers_)})"

    completed = matchers(**{m.ENDING: names.ENDING_COMPLETED})
    asked, asked_done = during_drills(MODEL_ASKED), during_drills(completed)
    degraded_done = during_drills(matchers(**{m.MODE: names.MODE_DEGRADED}), completed)
    degraded_now = m.SAMPLING_REQUESTS + sel(matchers(**{m.MODE: names.MODE_DEGRADED}))
    return [
        _alert(
            c,
            "DrillWithoutAlert",
            f"{ended}\nunless on ({m.JOB}) {degraded_mode_alerts_firing(dw, c.rule_selector)} > 0",
            "0m",
            "warning",
            "A drill ran and no degraded-mode alert fired.",
            f"Drill '{name}' on job {{{{ $labels.job }}}} failed its target model within the last {dw} and "
            f"none of the degraded-mode alerts ({', '.join(DEGRADED_MODE_ALERTS)}) fired: "
            f"a real outage like it would go unnoticed.",
        ),
        _alert(
            c,
            "DrillFallbackFailed",
            f"(\n"
            f"  ({asked_done} or {asked} * 0) / ({asked} > 0) < {c.drill_completion_threshold}\n"
            f"  or ({asked} > 0 unless on ({m.JOB}) {degraded_done} > 0)\n"
            f")\n"
            f"and on ({m.JOB}) {running}",
            c.drill_fallback_for,
            "critical",
            "During a drill the fallback did not serve.",
            f"During a drill on job {{{{ $labels.job }}}}, of the sampling requests that ended during drills "
            f"over the last {c.window}, either fewer than {c.drill_completion_threshold:.0%} of those a model "
            f"was asked for completed or none completed in "
            f"degraded mode: the fallback does not work.",
        ),
        _alert(
            c,
            "DrillRecoveryMissing",
            f"max by ({m.JOB}) (max_over_time({drill}[{dw}])) > 0\n"
            f"unless on ({m.JOB}) {running}\n"
            f"and on ({m.JOB}) sum by ({m.JOB}) ({counted(degraded_now, c.drill_recovery_window)}) > 0",
            c.drill_recovery_for,
            "warning",
            "After a drill the primary did not return.",
            f"A drill on job {{{{ $labels.job }}}} is over, yet sampling requests are still served in degraded "
            f"mode (over the last {c.drill_recovery_window}, for {c.drill_recovery_for}): the exit from degraded "
            f"mode does not happen.",
        ),
    ]


#: The alerts that read other alerts' ``ALERTS`` series: evaluated in a group of their own, after
#: the alerts they read (a ruler that replays one group after the other, vmalert ``-replay``,
#: has the ``ALERTS`` of the earlier groups by then; Prometheus reads the previous evaluation's).
#: No recording rule reads ``ALERTS``: recording groups come first in a mixin (prometheusRules).
READS_ALERTS = (f"{PREFIX}DrillWithoutAlert", f"{PREFIX}SilentToOperators")


def rule_groups(config: MixinConfig) -> dict[str, Any]:
    """The ``groups:`` document of ``alerts/otel-sampling.yaml`` (a Prometheus rule file)."""
    alerts = alerting_rules(config)
    return {
        "groups": [
            {"name": "otel-sampling.rules", "rules": recording_rules(config)},
            {"name": "otel-sampling.alerts", "rules": [a for a in alerts if a["alert"] not in READS_ALERTS]},
            {"name": "otel-sampling.alerts-on-alerts", "rules": [a for a in alerts if a["alert"] in READS_ALERTS]},
        ]
    }
