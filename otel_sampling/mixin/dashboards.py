"""The four Grafana dashboards: Overview, MCP sampling, Providers, Degradation.

Every query reads metric and label names from ``otel_sampling.mixin.metrics`` and recorded series
from ``otel_sampling.mixin.rules.Recorded``; thresholds come from the same ``MixinConfig`` as the
alerts. A raw series is selected by ``$job`` and the config's ``scope_selector`` (``panels.raw_selector``); a
recorded series by ``$job`` only (the rules aggregated the scope away after selecting it). Rates
of low-traffic agent work are shown per minute (``reqpm``: Grafana's unit for requests/min;
``rpm`` would be reads/min).
"""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.models import dashboard as dm

from otel_sampling import names
from otel_sampling.mixin import breakage_row, five_numbers
from otel_sampling.mixin import metrics as m
from otel_sampling.mixin.config import MixinConfig
from otel_sampling.mixin.panels import (
    JOB,
    PanelBuilder,
    annotation,
    assign_panel_ids,
    dashboard,
    label_variable,
    raw_selector,
    row,
    runbook_link,
    stat_panel,
    state_panel,
    table_panel,
    thresholds,
    timeseries_panel,
)
from otel_sampling.mixin.promql import counted, label_selector, matchers
from otel_sampling.mixin.rules import (
    ALERTS_LOOKBACK,
    DEGRADED_MODE_ALERTS,
    MODEL_ASKED,
    PREFIX,
    Recorded,
    alerting_rules,
    degraded_mode_alerts_firing,
)

RATE = "$__rate_interval"
RANGE = "$__range"
SERVER = f'{m.SERVER}=~"$server"'
PROVIDER = f'{m.PROVIDER}=~"$provider"'


def _per_minute(series: str, selector: str, by: str) -> str:
    return f"sum by ({by}) (60 * rate({series}{selector}[{RATE}]))"


def _share(part: str, whole: str) -> str:
    """``part / whole`` of two unlabelled sums: 0 while ``part`` has no series (nothing completed, no
    error yet), nothing (not NaN) while ``whole`` counted nothing."""
    return f"({part} or vector(0)) / ({whole} > 0)"


def _per_completed_run(config: MixinConfig, histogram: str, count_matcher: str = "") -> str:
    """The mean per completed run of a per-run histogram over the dashboard's range, by job and mode:
    its ``_sum`` over its ``_count`` (``count_matcher`` picks one point per run where a run records
    several, one per token type)."""
    done = matchers(**{m.RUN_OUTCOME: names.OUTCOME_COMPLETED})
    by = f"{m.JOB}, {m.MODE}"
    total = counted(f"{histogram}_sum{raw_selector(config, done)}", RANGE)
    runs = counted(f"{histogram}_count{raw_selector(config, done, count_matcher)}", RANGE)
    return f"sum by ({by}) ({total})\n/ (sum by ({by}) ({runs}) > 0)"


def _good_ratio(good: float, ok: float) -> dash.ThresholdsConfig:
    return thresholds((None, "red"), (ok, "yellow"), (good, "green"))


def overview(config: MixinConfig) -> dash.Dashboard:
    r, w, n = Recorded(config), config.window, config.min_requests
    job = label_selector(JOB)
    server_var = label_variable("server", "MCP server", m.SAMPLING_REQUESTS, m.SERVER, raw_selector(config))
    run_var = label_variable("run_name", "Run name", m.AGENT_RUNS, m.RUN_NAME, raw_selector(config))
    d = dashboard(
        config,
        "otel-sampling-overview",
        "Overview",
        "The five numbers of graceful degradation, endings and substitutions: are we degraded, and does it "
        "hurt? The MCP server filter applies to the sampling-request panels (runs span servers); the run "
        "name filter to the runs-by-name row (a server's tool call is the run <server>/<tool>).",
        (server_var, run_var),
    )
    servers = label_selector(JOB, SERVER)  # of the recorded series; raw ones add the scope
    degraded = label_selector(JOB, SERVER, matchers(**{m.MODE: names.MODE_DEGRADED}))
    share = thresholds((None, "green"), (0.01, "yellow"), (config.degraded_share_threshold, "red"))
    small = f"n < {n}"
    completed = matchers(**{m.RUN_OUTCOME: names.OUTCOME_COMPLETED})

    def runs_at_least(by: str, selector: str = "") -> str:
        """Low-traffic guard: a ratio is shown only with at least ``min_requests`` runs behind it."""
        return f"and on ({by}) sum by ({by}) ({r.runs}{{{JOB}{', ' + selector if selector else ''}}}) >= {n}"

    one_per_run = matchers(**{m.TOKEN_TYPE: names.TOKEN_TYPE_INPUT})  # a run records a point per token type
    for panel in (
        stat_panel(
            f"Time in degraded mode ({w})",
            "Agent run time spent in runs that ended degraded, over the last "
            f"{w} (recorded {r.degraded_run_seconds}). Named degradations over time: Degradation dashboard.",
            [(f"{r.degraded_run_seconds}{job}", "{{job}}")],
            "s",
        ),
        stat_panel(
            f"Runs degraded ({w})",
            f"Finished agent runs in degraded mode / all finished runs over the last {w}; shown from {n} runs on.",
            [(f"{r.runs_degraded_ratio}{job} {runs_at_least(m.JOB)}", "{{job}}")],
            "percentunit",
            steps=share,
            no_value=small,
        ),
        stat_panel(
            f"Quality delta ({w})",
            f"Mean evaluation score in primary mode minus degraded mode "
            f"over the last {w}, "
            "per evaluation suite (sums and counts added before dividing). "
            "Positive: the fallback answers worse.",
            [(f"{r.score_delta}{job}", f"{{{{{m.EVALUATION_NAME}}}}}")],
            "none",
            decimals=2,
            steps=thresholds((None, "green"), (0.02, "yellow"), (0.05, "red")),
        ),
        stat_panel(
            f"Completion by mode ({w})",
            f"Runs that completed / finished runs, per mode, over the last {w}; shown from {n} runs per mode on.",
            [(f"{r.completion_ratio}{job} {runs_at_least(f'{m.JOB}, {m.MODE}')}", f"{{{{{m.MODE}}}}}")],
            "percentunit",
            steps=_good_ratio(0.95, 0.8),
            no_value=small,
        ),
        stat_panel(
            f"Silent incidents ({w})",
            "Runs that ended degraded (or served outside policy) "
            "without a disclosure. "
            "Target 0; runbook: OtelSamplingSilentDegradation.",
            [(f"sum({r.silent_incidents}{job})", "incidents")],
            "short",
            steps=thresholds((None, "green"), (1, "red")),
        ),
        stat_panel(
            f"Cost per completed run ({w})",
            f"Run cost in USD / completed runs, per mode, over the last {w}; "
            f"shown from {n} completed runs per mode on.",
            [
                (
                    f"{r.cost_per_completed_run}{job} {runs_at_least(f'{m.JOB}, {m.MODE}', completed)}",
                    f"{{{{{m.MODE}}}}}",
                )
            ],
            "currencyUSD",
            decimals=3,
            no_value=small,
        ),
        stat_panel(
            "Steps per completed run",
            "Provider calls per completed run (agent.run.steps), per mode, over the selected range: a weaker "
            "fallback takes more turns, and so can cost more per task though it is cheaper per token.",
            [(_per_completed_run(config, m.AGENT_RUN_STEPS), f"{{{{{m.MODE}}}}}")],
            "short",
            decimals=1,
            width=12,
        ),
        stat_panel(
            "Tokens per completed run",
            "Input and output tokens per completed run (agent.run.tokens), per mode, over the selected range.",
            [(_per_completed_run(config, m.AGENT_RUN_TOKENS, one_per_run), f"{{{{{m.MODE}}}}}")],
            "short",
            decimals=0,
            width=12,
        ),
    ):
        d = d.with_panel(panel)
    d = (
        d.with_panel(
            timeseries_panel(
                "Sampling requests by ending",
                "Sampling requests per minute by ending (otel_sampling.sampling.ending), selected servers.",
                [(_per_minute(m.SAMPLING_REQUESTS, raw_selector(config, SERVER), m.ENDING), f"{{{{{m.ENDING}}}}}")],
                "reqpm",
            )
        )
        .with_panel(
            timeseries_panel(
                f"Degraded share of sampling requests ({w})",
                f"Sampling requests served in degraded mode / all, over the last {w} (recorded "
                f"{r.requests_by_server}), drawn from {n} requests on; the line is the OtelSamplingDegradedShareHigh "
                "threshold.",
                [
                    (
                        f"(sum by ({m.JOB}) ({r.requests_by_server}{degraded}) "
                        f"or sum by ({m.JOB}) ({r.requests_by_server}{servers}) * 0)\n"
                        f"/ sum by ({m.JOB}) ({r.requests_by_server}{servers})\n"
                        f"and on ({m.JOB}) sum by ({m.JOB}) ({r.requests_by_server}{servers}) >= {n}",
                        "{{job}}",
                    )
                ],
                "percentunit",
                threshold=config.degraded_share_threshold,
            )
        )
        .with_panel(
            timeseries_panel(
                "Substitutions",
                "Sampling requests per minute served another model than asked (or unjudged), by judgement "
                "(within_policy, outside_policy, without_policy, unjudged).",
                [
                    (
                        _per_minute(
                            m.SAMPLING_REQUESTS,
                            raw_selector(config, SERVER, f'{m.SUBSTITUTION}!="{names.SUBSTITUTION_NONE}"'),
                            m.SUBSTITUTION,
                        ),
                        f"{{{{{m.SUBSTITUTION}}}}}",
                    )
                ],
                "reqpm",
                width=24,
            )
        )
        .with_row(row("Runs by name"))
    )
    for panel in _runs_by_name(config):
        d = d.with_panel(panel)
    return d


def _runs_by_name(config: MixinConfig) -> list[PanelBuilder]:
    """The five numbers per run name (recorded per job and run name): the runs of one task kind, of
    one server's tool (``<server>/<tool>``, its provider calls included), beside the sampling ones."""
    r, w, n = Recorded(config), config.window, config.min_requests
    by = f"{m.JOB}, {m.RUN_NAME}"
    named = label_selector(JOB, f'{m.RUN_NAME}=~"$run_name"')
    enough = f"and on ({by}) sum by ({by}) ({r.runs_by_name}{named}) >= {n}"
    legend = f"{{{{{m.RUN_NAME}}}}}"
    by_mode = f"{{{{{m.RUN_NAME}}}}} {{{{{m.MODE}}}}}"
    return [
        timeseries_panel(
            f"Degraded share of runs by name ({w})",
            f"Runs of each name that ended degraded / all its runs over the last {w} (recorded "
            f"{r.runs_degraded_ratio_by_name}), drawn from {n} runs on; the line is the "
            "OtelSamplingRunsDegradedShareHigh threshold.",
            [(f"{r.runs_degraded_ratio_by_name}{named} {enough}", legend)],
            "percentunit",
            threshold=config.degraded_share_threshold,
        ).links([runbook_link(config, f"{PREFIX}RunsDegradedShareHigh")]),
        timeseries_panel(
            f"Silent incidents by run name ({w})",
            f"Runs of each name that ended degraded (or served outside policy) without a disclosure over the "
            f"last {w} (recorded {r.silent_incidents_by_name}). Target 0.",
            [(f"{r.silent_incidents_by_name}{named}", legend)],
            "short",
        ).links([runbook_link(config, f"{PREFIX}SilentDegradation")]),
        timeseries_panel(
            f"Completion by run name and mode ({w})",
            f"Runs of each name that completed / attempted, per mode, over the last {w} (recorded "
            f"{r.completion_ratio_by_name}).",
            [(f"{r.completion_ratio_by_name}{named}", by_mode)],
            "percentunit",
        ),
        timeseries_panel(
            f"Cost per completed run by name and mode ({w})",
            f"USD spent in runs of each name and mode (failed runs included) / its completed runs, over the "
            f"last {w} (recorded {r.cost_per_completed_run_by_name}).",
            [(f"{r.cost_per_completed_run_by_name}{named}", by_mode)],
            "currencyUSD",
        ),
    ]


def mcp_sampling(config: MixinConfig) -> dash.Dashboard:
    s = raw_selector(config, SERVER)
    server_var = label_variable("server", "MCP server", m.SAMPLING_REQUESTS, m.SERVER, raw_selector(config))
    d = dashboard(
        config,
        "otel-sampling-mcp",
        "MCP sampling",
        "Per MCP server: which server's sampling is failing, waiting or substituted, and why.",
        (server_var,),
    )
    completed = raw_selector(config, SERVER, f'{m.ENDING}="{names.ENDING_COMPLETED}"')
    budget = raw_selector(config, SERVER, f'{m.ENDING}="{names.ENDING_BUDGET_EXHAUSTED}"')
    return (
        d.with_panel(
            stat_panel(
                "Sampling requests",
                "Sampling requests in the selected range (the n behind the other numbers).",
                [(f"sum({counted(m.SAMPLING_REQUESTS + s, RANGE)})", "requests")],
                "short",
                width=6,
            )
        )
        .with_panel(
            stat_panel(
                "Completed",
                "Requests that ended completed / all requests, selected range.",
                [
                    (
                        _share(
                            f"sum({counted(m.SAMPLING_REQUESTS + completed, RANGE)})",
                            f"sum({counted(m.SAMPLING_REQUESTS + s, RANGE)})",
                        ),
                        "completed",
                    )
                ],
                "percentunit",
                steps=_good_ratio(0.98, 0.9),
                width=6,
            )
        )
        .with_panel(
            stat_panel(
                "p95 sampling latency",
                "95th percentile of otel_sampling.sampling.duration over the selected range (human approval included).",
                [
                    (
                        f"histogram_quantile(0.95, sum by ({m.LE}) "
                        f"({counted(m.SAMPLING_DURATION + '_bucket' + s, RANGE)}))",
                        "p95",
                    )
                ],
                "s",
                width=6,
            )
        )
        .with_panel(
            stat_panel(
                "In flight",
                "Sampling requests waiting for an answer now.",
                [(f"sum({m.SAMPLING_IN_FLIGHT}{s})", "in flight")],
                "short",
                width=6,
            )
        )
        .with_panel(
            timeseries_panel(
                "Endings by server",
                "Sampling requests per minute by server and ending.",
                [
                    (
                        _per_minute(m.SAMPLING_REQUESTS, s, f"{m.SERVER}, {m.ENDING}"),
                        f"{{{{{m.SERVER}}}}} {{{{{m.ENDING}}}}}",
                    )
                ],
                "reqpm",
            )
        )
        .with_panel(
            timeseries_panel(
                "Substitution kinds",
                "Sampling requests per minute by substitution judgement.",
                [
                    (
                        _per_minute(m.SAMPLING_REQUESTS, s, f"{m.SERVER}, {m.SUBSTITUTION}"),
                        f"{{{{{m.SERVER}}}}} {{{{{m.SUBSTITUTION}}}}}",
                    )
                ],
                "reqpm",
            )
        )
        .with_panel(
            table_panel(
                "Served models",
                "Requests in the selected range by server, served model "
                "(CreateMessageResult.model) and judgement; hints are span attributes "
                f"({names.SAMPLING_MODEL_HINTS}), not labels.",
                [
                    (
                        f"sum by ({m.SERVER}, {m.RESPONSE_MODEL}, {m.SUBSTITUTION}) "
                        f"({counted(m.SAMPLING_REQUESTS + s, RANGE)})",
                        "requests",
                    )
                ],
                "short",
                width=12,
            )
        )
        .with_panel(
            table_panel(
                "Context scope requested vs granted",
                "Requests in the selected range "
                "by includeContext "
                "requested by the server and granted by the host "
                "(unreported: the host did not say).",
                [
                    (
                        f"sum by ({m.SERVER}, {m.SCOPE_REQUESTED}, {m.SCOPE_GRANTED}) "
                        f"({counted(m.SAMPLING_REQUESTS + s, RANGE)})",
                        "requests",
                    )
                ],
                "short",
                width=12,
            )
        )
        .with_panel(
            timeseries_panel(
                "Violations by kind",
                "Policy violations per interval by server and kind "
                "(scope widened, decision flipped, rerouted after denial, ...).",
                [
                    (
                        f"sum by ({m.SERVER}, {m.VIOLATION_KIND}) ({counted(m.SAMPLING_VIOLATIONS + s, RATE)})",
                        f"{{{{{m.SERVER}}}}} {{{{{m.VIOLATION_KIND}}}}}",
                    )
                ],
                "short",
                bars=True,
            )
        )
        .with_panel(
            timeseries_panel(
                "Stalls and in flight",
                "Requests waiting now (in flight) and requests that "
                f"stalled per interval (runbook: OtelSamplingStallsHigh, threshold "
                f"{config.stalls_threshold} per {config.window}).",
                [
                    (f"sum by ({m.SERVER}) ({m.SAMPLING_IN_FLIGHT}{s})", "in flight {{" + m.SERVER + "}}"),
                    (f"sum by ({m.SERVER}) ({counted(m.SAMPLING_STALLS + s, RATE)})", "stalled {{" + m.SERVER + "}}"),
                ],
                "short",
            )
        )
        .with_panel(
            timeseries_panel(
                "Grants and budget exhaustions",
                "Consent grants and requests that ended "
                f"{names.ENDING_BUDGET_EXHAUSTED} per interval, by server. "
                f"The reset time is on "
                f"each span ({names.SAMPLING_BUDGET_RESETS_AT}), not a label.",
                [
                    (f"sum by ({m.SERVER}) ({counted(m.SAMPLING_GRANTS + s, RATE)})", "grants {{" + m.SERVER + "}}"),
                    (
                        f"sum by ({m.SERVER}) ({counted(m.SAMPLING_REQUESTS + budget, RATE)})",
                        "budget exhausted {{" + m.SERVER + "}}",
                    ),
                ],
                "short",
                width=24,
                bars=True,
            )
        )
    )


def providers(config: MixinConfig) -> dash.Dashboard:
    p = raw_selector(config, PROVIDER)
    duration = config.inference_duration
    provider_var = label_variable("provider", "Provider", duration + "_count", m.PROVIDER, raw_selector(config))
    d = dashboard(
        config,
        "otel-sampling-providers",
        "Providers",
        "Provider SDK calls: is a provider failing, slow, falling back or expensive?",
        (provider_var,),
    )
    errors = raw_selector(config, PROVIDER, f'{m.ERROR_TYPE}!=""')
    bucket = f"{duration}_bucket{p}"

    calls = f"sum({counted(duration + '_count' + p, RANGE)})"
    return (
        d.with_panel(
            stat_panel(
                "Provider calls",
                "Provider calls in the selected range (the n behind the other numbers).",
                [(calls, "calls")],
                "short",
                width=6,
            )
        )
        .with_panel(
            stat_panel(
                "Failed calls",
                "Calls that ended with an error.type / all calls, selected range.",
                [(_share(f"sum({counted(duration + '_count' + errors, RANGE)})", calls), "failed")],
                "percentunit",
                steps=thresholds((None, "green"), (0.01, "yellow"), (0.05, "red")),
                width=6,
            )
        )
        .with_panel(
            stat_panel(
                "p95 call latency",
                "95th percentile of the inference duration (gen_ai.client.operation.duration, or "
                "gen_ai.client.inference.duration with the newest names) over the selected range.",
                [(f"histogram_quantile(0.95, sum by ({m.LE}) ({counted(bucket, RANGE)}))", "p95")],
                "s",
                width=6,
            )
        )
        .with_panel(
            stat_panel(
                "Cost in range",
                "Provider cost in USD over the selected range (otel_sampling.client.cost.usd).",
                [(f"sum({counted(m.PROVIDER_COST + p, RANGE)})", "USD")],
                "currencyUSD",
                decimals=2,
                width=6,
            )
        )
        .with_panel(
            timeseries_panel(
                "Latency percentiles",
                "p50, p95 and p99 of the inference duration by provider (buckets summed before the quantile).",
                [
                    (
                        f"histogram_quantile({q}, sum by ({m.PROVIDER}, {m.LE}) (rate({bucket}[{RATE}])))",
                        f"p{int(q * 100)} {{{{{m.PROVIDER}}}}}",
                    )
                    for q in (0.5, 0.95, 0.99)
                ],
                "s",
            )
        )
        .with_panel(
            timeseries_panel(
                "Errors by type",
                "Failed provider calls per minute by error.type.",
                [
                    (
                        _per_minute(duration + "_count", errors, f"{m.PROVIDER}, {m.ERROR_TYPE}"),
                        f"{{{{{m.PROVIDER}}}}} {{{{{m.ERROR_TYPE}}}}}",
                    )
                ],
                "reqpm",
            )
        )
        .with_panel(
            timeseries_panel(
                "Tokens by type",
                _tokens_description(config),
                _token_queries(config, p),
                "short",
            )
        )
        .with_panel(
            timeseries_panel(
                "Prompt-cache share by mode",
                "Cache-read input tokens / input tokens, per mode (the gen_ai.client.inference.usage.* "
                "counters, or otel_sampling.client.usage.* from a host on v1.41's GenAI names only). "
                "0: the provider reported no cache reads; no line: it reported no cache part. A failover that "
                "loses the provider's prompt cache shows as a lower share in degraded mode.",
                [
                    (
                        five_numbers.expressions(RATE, selector=f"{JOB}, {PROVIDER}", scope=config.scope_selector)[
                            "prompt_cache_read_share_by_mode"
                        ],
                        f"{{{{{m.MODE}}}}}",
                    )
                ],
                "percentunit",
            )
        )
        .with_panel(
            timeseries_panel(
                "Cost ($/h)",
                "Provider cost in USD per hour by provider and served model.",
                [
                    (
                        f"sum by ({m.PROVIDER}, {m.RESPONSE_MODEL}) (3600 * rate({m.PROVIDER_COST}{p}[{RATE}]))",
                        f"{{{{{m.PROVIDER}}}}} {{{{{m.RESPONSE_MODEL}}}}}",
                    )
                ],
                "currencyUSD",
            )
        )
        .with_panel(
            timeseries_panel(
                "Calls by mode",
                "Provider calls per minute by degradation.mode: degraded calls are fallbacks and failovers.",
                [(_per_minute(duration + "_count", p, m.MODE), f"{{{{{m.MODE}}}}}")],
                "reqpm",
            )
        )
        .with_panel(
            table_panel(
                "Requested and served models",
                "Provider calls in the selected range by requested "
                "model, served model and mode: a fallback shows as a different served model.",
                [
                    (
                        f"sum by ({m.PROVIDER}, {m.REQUEST_MODEL}, {m.RESPONSE_MODEL}, {m.MODE}) "
                        f"({counted(duration + '_count' + p, RANGE)})",
                        "calls",
                    )
                ],
                "short",
            )
        )
    )


def _tokens_description(config: MixinConfig) -> str:
    if config.gen_ai_semconv == "new":
        return (
            "Tokens per minute by kind (gen_ai.client.inference.usage.*): cache reads and writes are part of "
            "input, reasoning part of output."
        )
    return "Tokens per minute by gen_ai.token.type (input, output; gen_ai.client.token.usage)."


def _token_queries(config: MixinConfig, selector: str) -> list[tuple[str, str]]:
    if config.gen_ai_semconv == "new":
        kinds = (
            (m.USAGE_INPUT, "input"),
            (m.USAGE_OUTPUT, "output"),
            (m.USAGE_CACHE_READ, "cache read"),
            (m.USAGE_CACHE_WRITE, "cache write"),
            (m.USAGE_REASONING, "reasoning"),
        )
        return [(f"60 * sum(rate({series}{selector}[{RATE}]))", legend) for series, legend in kinds]
    return [(_per_minute(m.TOKEN_USAGE + "_sum", selector, m.TOKEN_TYPE), f"{{{{{m.TOKEN_TYPE}}}}}")]


def degradation(config: MixinConfig) -> dash.Dashboard:
    j = raw_selector(config)
    d = dashboard(
        config,
        "otel-sampling-degradation",
        "Degradation",
        "Named degradations: what is degraded, since when, is it flapping, is the fallback exercised, what "
        "did the drills prove, and was anyone alerted?",
    )
    canary = raw_selector(config, matchers(**{m.REASON: names.REASON_CANARY}))
    degraded_done = raw_selector(config, matchers(**{m.MODE: names.MODE_DEGRADED, m.ENDING: names.ENDING_COMPLETED}))
    hits = raw_selector(config, matchers(**{m.CACHE_RESULT: "hit"}))
    entered = raw_selector(config, matchers(**{m.DIRECTION: names.DIRECTION_ENTER}))
    drill_windows, drill_panels = _drills_row(config)
    d = (
        d.with_panel(
            stat_panel(
                "Active degradations",
                "Named degradations active now.",
                [(f"count({m.DEGRADATION_ACTIVE}{j} > 0) or vector(0)", "active")],
                "short",
                steps=thresholds((None, "green"), (1, "orange")),
                width=8,
            )
        )
        .with_panel(
            stat_panel(
                "Active past expiry",
                "Degradations still active after their expires_at (runbook: OtelSamplingDegradationExpired).",
                [(f"count({m.DEGRADATION_EXPIRED}{j} > 0) or vector(0)", "expired")],
                "short",
                steps=thresholds((None, "green"), (1, "red")),
                width=8,
            )
        )
        .with_panel(
            stat_panel(
                "Entries in range",
                "How many times a degradation was entered in the selected range.",
                [(f"sum({counted(m.DEGRADATION_TRANSITIONS + entered, RANGE)})", "entries")],
                "short",
                width=8,
            )
        )
        .with_panel(
            state_panel(
                "Degradation state",
                "Each named degradation over time (component, reason). "
                f"Owner and expiry are span attributes ({names.DEGRADATION_OWNER}, "
                f"{names.DEGRADATION_EXPIRES_AT}): find them on the spans of that time.",
                [
                    (
                        f"max by ({m.COMPONENT}, {m.REASON}) ({m.DEGRADATION_ACTIVE}{j})",
                        f"{{{{{m.COMPONENT}}}}} ({{{{{m.REASON}}}}})",
                    )
                ],
                states=(("normal", "green"), ("degraded", "orange")),
            )
        )
        .with_panel(
            table_panel(
                "Active and expired",
                "Degradations active now, with 1 in 'expired' when past their expires_at.",
                [
                    (f"max by ({m.COMPONENT}, {m.REASON}) ({m.DEGRADATION_ACTIVE}{j})", "active"),
                    (f"max by ({m.COMPONENT}, {m.REASON}) ({m.DEGRADATION_EXPIRED}{j})", "expired"),
                ],
                "short",
                width=12,
            )
        )
        .with_panel(
            timeseries_panel(
                "Transitions (flapping)",
                "Entries and exits per interval by degradation "
                f"(runbook: OtelSamplingDegradationFlapping, {config.flapping_transitions} "
                f"entries per {config.flapping_window}).",
                [
                    (
                        f"sum by ({m.COMPONENT}, {m.DIRECTION}) ({counted(m.DEGRADATION_TRANSITIONS + j, RATE)})",
                        f"{{{{{m.COMPONENT}}}}} {{{{{m.DIRECTION}}}}}",
                    )
                ],
                "short",
                bars=True,
            )
        )
        .with_panel(
            timeseries_panel(
                "Traffic through the fallback",
                "Canary sampling requests (deliberate "
                "fallback traffic, marked by otel_sampling.canary()) and sampling requests "
                "completed in degraded mode, per minute; neither for a day: "
                "OtelSamplingFallbackUntested.",
                [
                    (_per_minute(m.SAMPLING_REQUESTS, canary, m.SERVER), "canary {{" + m.SERVER + "}}"),
                    (
                        _per_minute(m.SAMPLING_REQUESTS, degraded_done, m.SERVER),
                        "completed degraded {{" + m.SERVER + "}}",
                    ),
                ],
                "reqpm",
            )
        )
        .with_panel(
            timeseries_panel(
                "Cache hits by provenance",
                "Cache hits per interval by the mode that stored "
                "the entry and whether it matches the current configuration.",
                [
                    (
                        f"sum by ({m.CACHE_PROVENANCE_MODE}, {m.CACHE_PROVENANCE_MATCH}) "
                        f"({counted(m.CACHE_LOOKUPS + hits, RATE)})",
                        f"{{{{{m.CACHE_PROVENANCE_MODE}}}}} {{{{{m.CACHE_PROVENANCE_MATCH}}}}}",
                    )
                ],
                "short",
                width=12,
            )
        )
        .annotation(drill_windows)
        .with_row(row("Drills"))
    )
    for panel in drill_panels:
        d = d.with_panel(panel)
    d = d.with_row(row("Silent to operators"))
    for panel in _silent_to_operators(config):
        d = d.with_panel(panel)
    d = d.with_row(row("What the fallback breaks"))
    for panel in breakage_row.panels(config):
        d = d.with_panel(panel)
    return d


def _drills_row(config: MixinConfig) -> tuple[dash.AnnotationQuery, list[PanelBuilder]]:
    """The drill windows (an annotation on the drill's named degradation, by drill name) and the
    panels of the Drills row."""
    r, w, j = Recorded(config), config.window, raw_selector(config)
    drill = m.DEGRADATION_ACTIVE + raw_selector(config, matchers(**{m.REASON: names.REASON_DRILL}))
    # The recorded counts cover the last window, which overlaps a drill while one ran within it.
    drilled = f"and on ({m.JOB}) max by ({m.JOB}) (max_over_time({drill}[{w}])) > 0"
    degraded = {m.MODE: names.MODE_DEGRADED}
    completed = {m.ENDING: names.ENDING_COMPLETED}

    def requests(**labels: str) -> str:  # ended during drills, of those a model was asked for: as the alert counts
        return f"sum by ({m.JOB}) ({r.drill_requests}{label_selector(JOB, MODEL_ASKED, matchers(**labels))})"

    def alert_state(alert: str) -> str:
        """2 while ``alert`` fires, 1 while it is pending, 0 from the first drill on (the drill's gauge
        exists, at 0 once the drill ended)."""

        def alerts(state: str) -> str:
            return "ALERTS" + label_selector(matchers(alertstate=state, alertname=alert), JOB)

        return f"max(2 * {alerts('firing')} or {alerts('pending')})\nor max({drill}) * 0"

    drill_alerts = [rule["alert"] for rule in alerting_rules(config) if rule["alert"].startswith(f"{PREFIX}Drill")]
    windows = annotation("Drill windows", f"max by ({m.COMPONENT}) ({drill}) > 0", "purple")
    return windows, [
        timeseries_panel(
            "Drills by name and outcome",
            "Drills ended per interval by drill name and outcome "
            f"({names.DRILL_OUTCOME_COMPLETED}: its window ran out; {names.DRILL_OUTCOME_STOPPED}: "
            f"stopped before; {names.DRILL_OUTCOME_ABORTED}: uninstrument() or SIGTERM). The drill "
            "windows are the purple annotations on every time series of this dashboard.",
            [
                (
                    f"sum by ({m.DRILL_NAME}, {m.DRILL_OUTCOME}) ({counted(m.DRILLS + j, RATE)})",
                    f"{{{{{m.DRILL_NAME}}}}} {{{{{m.DRILL_OUTCOME}}}}}",
                )
            ],
            "short",
            bars=True,
        ),
        timeseries_panel(
            "Sampling requests completed during drills",
            "Of the sampling requests that ended during "
            f"drills over the last {w} (recorded {r.drill_requests}), those that completed / all a model "
            "was asked for (the host's denials left out), of all requests and of those "
            f"served in degraded mode, drawn while a drill ran within those {w}; the line is the "
            "OtelSamplingDrillFallbackFailed threshold for all requests (it also fires when none "
            "completed in degraded mode).",
            [
                (
                    f"({requests(**completed)} or {requests()} * 0)\n/ ({requests()} > 0)\n{drilled}",
                    "{{job}} all asked for a model",
                ),
                (
                    f"({requests(**degraded, **completed)} or {requests(**degraded)} * 0)\n"
                    f"/ ({requests(**degraded)} > 0)\n{drilled}",
                    "{{job}} degraded mode",
                ),
            ],
            "percentunit",
            threshold=config.drill_completion_threshold,
        ),
        timeseries_panel(
            "Back to primary after a drill",
            "Sampling requests per minute by mode. The time back "
            "to primary is the gap between a drill window's end (annotation) and the degraded line "
            "falling to 0 while primary traffic goes on. It is read off the graph, not computed: a "
            "counter scraped every interval dates the last degraded request only to that interval, "
            "and a pause in traffic would read as a recovery. Still degraded over the last "
            f"{config.drill_recovery_window}, for {config.drill_recovery_for}, after a drill: "
            "OtelSamplingDrillRecoveryMissing.",
            [(_per_minute(m.SAMPLING_REQUESTS, j, m.MODE), f"{{{{{m.MODE}}}}}")],
            "reqpm",
        ),
        state_panel(
            "Drill alerts",
            "Each drill alert over time, from Prometheus's ALERTS series: firing, "
            "pending (waiting out its for) or normal; no data before a process's first drill (the "
            "drill's degradation_active series). Runbook: Running a drill.",
            [(alert_state(alert), alert.removeprefix(PREFIX)) for alert in drill_alerts],
            states=(("normal", "green"), ("pending", "yellow"), ("firing", "red")),
            width=12,
        ),
    ]


def _silent_to_operators(config: MixinConfig) -> list[PanelBuilder]:
    """Degraded exposure while no degraded-mode alert fires (OtelSamplingSilentToOperators), per job."""
    r, alert = Recorded(config), f"{PREFIX}SilentToOperators"
    exposure = f"max by ({m.JOB}) ({r.degraded_exposure}{{{JOB}}})"  # by job: the metric name dropped
    alerted = degraded_mode_alerts_firing(ALERTS_LOOKBACK, JOB)
    firing = "ALERTS" + label_selector(matchers(alertstate="firing", alertname=alert), JOB)
    return [
        state_panel(
            "Silent to operators",
            f"Per job: exposed to degraded mode ({r.degraded_exposure}: the "
            f"degraded share above {config.degraded_share_threshold:.0%} with at least "
            f"{config.min_requests} requests in {config.window}, or a named degradation other than a "
            f"drill active) while none of the degraded-mode alerts ({', '.join(DEGRADED_MODE_ALERTS)}) "
            f"fires: silent; exposed while one fires: alerted. Silent for {config.silent_exposure_for} "
            f"fires {alert}.",
            [(f"2 * {exposure} unless on ({m.JOB}) {alerted} > 0\nor {exposure}", "{{job}}")],
            states=(("normal", "green"), ("alerted", "yellow"), ("silent", "red")),
            width=16,
        ).links([runbook_link(config, alert)]),
        stat_panel(
            "Silent-to-operators incidents",
            f"Firings of {alert} in the selected range, per job (its "
            "ALERTS series, counted at 1m resolution: a firing that ends and starts again within a "
            "minute counts once); 0 for a job the rules evaluated with none. Target 0.",
            [
                (
                    f"sum by ({m.JOB}) (sum_over_time(({firing} unless {firing} offset 1m)[{RANGE}:1m]))\n"
                    f"or {exposure} * 0",
                    "{{job}}",
                )
            ],
            "short",
            steps=thresholds((None, "green"), (1, "red")),
            width=8,
        ).links([runbook_link(config, alert)]),
    ]


DASHBOARDS = {
    "overview": overview,
    "mcp-sampling": mcp_sampling,
    "providers": providers,
    "degradation": degradation,
}


def build(config: MixinConfig) -> dict[str, dm.Dashboard]:
    """File stem -> built dashboard model, panel ids assigned."""
    built = {}
    for stem, make in DASHBOARDS.items():
        model = make(config).build()
        assign_panel_ids(model)
        built[stem] = model
    return built
