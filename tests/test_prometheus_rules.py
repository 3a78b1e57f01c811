"""The committed rule file under promtool: ``check rules`` clean, a unit test per alert, and the
recorded five numbers on a hand-counted set of runs.

Every alert has a case where it fires and a near miss where it must not (low traffic, a short
spike, a narrowing retry, an event outside the window, a count at the threshold). The expected
labels and descriptions are written out here by hand; promtool compares them exactly.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from harness.limits import HANG_S
from otel_sampling import __version__, names
from otel_sampling.mixin import MixinConfig
from otel_sampling.mixin.generate import RULES_FILE
from otel_sampling.mixin.rules import PREFIX, alerting_rules, rule_groups

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "alerts" / RULES_FILE
CONFIG = MixinConfig()  # the committed file is generated from the defaults
# A raw series carries its job (the scrape's) and the instrumentation scope of the meter that wrote
# it, in the labels the Python Prometheus exporter writes.
SCOPE = (
    f'otel_scope_name="{names.SCOPE_NAME}", otel_scope_version="{__version__}", '
    f'otel_scope_schema_url="{names.SCHEMA_URL}"'
)
J = f'job="j", {SCOPE}'
# Another instrumentation's meter writing a metric of the same name: pydantic-ai's
# gen_ai.client.token.usage (its own attributes, no degradation.mode).
FOREIGN = 'job="j", otel_scope_name="pydantic-ai", otel_scope_version="2.68.0", otel_scope_schema_url=""'
S = 'mcp_server_name="s"'
CACHED_MODEL = 'degradation_mode="primary", gen_ai_response_model="m"'
TRACKED = 'degradation_disclosure_tracked="true"'
UNTRACKED = 'degradation_disclosure_tracked="false"'


# The prompt-cache read share's counters (input, cache read): the newest usage counters of a host
# run with OTEL_SEMCONV_STABILITY_OPT_IN, ours of a host on v1.41's names only (the default).
CACHE_PAIRS = {
    "newest": (
        "gen_ai_client_inference_usage_input_tokens_total",
        "gen_ai_client_inference_usage_cache_read_input_tokens_total",
    ),
    "ours": (
        "otel_sampling_client_usage_input_tokens_total",
        "otel_sampling_client_usage_cache_read_input_tokens_total",
    ),
}
CACHE_DROPPED_TO_0 = (
    "Calls to m in primary mode on job j read 0% of their input tokens from the prompt cache over the "
    "last 30m, less than 50% of their share over the last 1d: a cached prefix that no longer matches "
    "(a failover, a changed prompt) is paid at full input price."
)


def req(labels: str) -> str:
    return f"otel_sampling_sampling_requests_total{{{J}, {S}, {labels}}}"


def named_runs(name: str, mode: str, outcome: str = "completed") -> str:
    return f'agent_runs_total{{{J}, agent_run_name="{name}", degradation_mode="{mode}", agent_run_outcome="{outcome}"}}'


TOOL = "tickets/triage"  # a server's tool call is the run <server>/<tool>

# (case name, alert, [(series, values)], eval time, [(extra labels, description)] or [] for a near miss)
CASES = [
    (
        "a tool's runs 25% degraded at 4 runs/min fires after for",
        "RunsDegradedShareHigh",
        [
            (named_runs(TOOL, "degraded"), "0+1x120"),
            (named_runs(TOOL, "primary"), "0+3x120"),
            (named_runs("sampling/createMessage", "primary"), "0+10x120"),  # another name: no dilution
        ],
        "60m",
        [
            (
                {"job": "j", "agent_run_name": TOOL},
                "25% of the runs 'tickets/triage' of job j ended in degraded mode over the last 30m "
                "(threshold 10%, at least 20 runs).",
            )
        ],
    ),
    (
        "low traffic: 1 of 2 runs of a tool degraded per 30m",
        "RunsDegradedShareHigh",
        [(named_runs(TOOL, "degraded"), "0x29 1x29 2x29 3x29"), (named_runs(TOOL, "primary"), "0x29 1x29 2x29 3x29")],
        "110m",
        [],
    ),
    (
        "20% degraded at 5 req/min fires after for",
        "DegradedShareHigh",
        [(req('degradation_mode="degraded"'), "0+1x120"), (req('degradation_mode="primary"'), "0+4x120")],
        "60m",
        [
            (
                {"job": "j"},
                "20% of the sampling requests of job j were served in degraded mode over the last 30m "
                "(threshold 10%, at least 20 requests).",
            )
        ],
    ),
    (
        "low traffic: 1 of 2 requests degraded per 30m",
        "DegradedShareHigh",
        [
            (req('degradation_mode="degraded"'), "0x29 1x29 2x29 3x29"),
            (req('degradation_mode="primary"'), "0x29 1x29 2x29 3x29"),
        ],
        "110m",
        [],
    ),
    (
        "short spike: above the threshold for 19 of 30 minutes",
        "DegradedShareHigh",
        [(req('degradation_mode="degraded"'), "0x60 5+5x4 25x55"), (req('degradation_mode="primary"'), "0+2x120")],
        "80m",
        [],
    ),
    (
        "a named degradation is active",
        "DegradedModeEntered",
        [(f'degradation_active{{{J}, degradation_component="search", degradation_reason="fallback"}}', "1x10")],
        "5m",
        [
            (
                {"job": "j", "degradation_component": "search", "degradation_reason": "fallback"},
                "Degradation 'search' (reason fallback) is active on job j.",
            )
        ],
    ),
    (
        "requests served degraded",
        "DegradedModeEntered",
        [(req('degradation_mode="degraded"'), "_x2 1x10")],
        "5m",
        [
            (
                {"job": "j", "mcp_server_name": "s"},
                "1 sampling requests from server 's' on job j were served in degraded mode over the last 30m.",
            )
        ],
    ),
    (
        "inactive degradation and primary traffic",
        "DegradedModeEntered",
        [
            (f'degradation_active{{{J}, degradation_component="search", degradation_reason="fallback"}}', "0x10"),
            (req('degradation_mode="primary"'), "0+1x10"),
        ],
        "5m",
        [],
    ),
    (
        "active for 290 minutes",
        "DegradedTooLong",
        [(f'degradation_active{{{J}, degradation_component="search", degradation_reason="fallback"}}', "1x300")],
        "290m",
        [
            (
                {"job": "j", "degradation_component": "search", "degradation_reason": "fallback"},
                "Degradation 'search' (reason fallback) on job j has been active for more than 4h.",
            )
        ],
    ),
    (
        "active for 3 hours, then left",
        "DegradedTooLong",
        [(f'degradation_active{{{J}, degradation_component="search", degradation_reason="fallback"}}', "1x180 0x120")],
        "250m",
        [],
    ),
    (
        "active for 200 minutes and still active",
        "DegradedTooLong",
        [(f'degradation_active{{{J}, degradation_component="search", degradation_reason="fallback"}}', "1x300")],
        "200m",
        [],
    ),
    (
        "expired and still active",
        "DegradationExpired",
        [(f'degradation_expired{{{J}, degradation_component="search", degradation_reason="fallback"}}', "0x5 1x20")],
        "15m",
        [
            (
                {"job": "j", "degradation_component": "search", "degradation_reason": "fallback"},
                "Degradation 'search' (reason fallback) on job j is past its expires_at and still active.",
            )
        ],
    ),
    (
        "expired for 3 minutes, then exited",
        "DegradationExpired",
        [
            (
                f'degradation_expired{{{J}, degradation_component="search", degradation_reason="fallback"}}',
                "0x5 1x3 0x20",
            )
        ],
        "15m",
        [],
    ),
    (
        "expired 3 minutes ago and still active",
        "DegradationExpired",
        [(f'degradation_expired{{{J}, degradation_component="search", degradation_reason="fallback"}}', "0x5 1x20")],
        "8m",
        [],
    ),
    # A host that adopted disclosure (it called disclose(), or OTEL_SAMPLING_DISCLOSURE_TRACKED=true)
    # is paged for an undisclosed degraded run; the incidents from before its first disclose() call
    # (tracked "false") do not add to the count.
    (
        "a host that tracks disclosure: one incident, its series created at 1",
        "SilentDegradation",
        [
            (f'degradation_silent_incidents_total{{{J}, agent_run_name="triage", {TRACKED}}}', "_x5 1x30"),
            (f'degradation_silent_incidents_total{{{J}, agent_run_name="triage", {UNTRACKED}}}', "2x35"),
        ],
        "10m",
        [
            (
                {"job": "j", "agent_run_name": "triage"},
                "1 silent-degradation incidents in run 'triage' of job j over the last 30m: a degraded ending or an "
                "outside-policy model with no disclosure.",
            )
        ],
    ),
    (
        "an incident older than the window",
        "SilentDegradation",
        [(f'degradation_silent_incidents_total{{{J}, agent_run_name="triage", {TRACKED}}}', "1x120")],
        "100m",
        [],
    ),
    # A zero-code host never calls disclose() (no framework does): its first ordinary fallback is
    # an incident nobody could have prevented with a disclosure it does not make, so no page.
    (
        "a zero-code host's first fallback",
        "SilentDegradation",
        [
            (
                f'degradation_silent_incidents_total{{{J}, agent_run_name="sampling/createMessage", {UNTRACKED}}}',
                "_x5 1x30",
            )
        ],
        "10m",
        [],
    ),
    (
        "an outside-policy model",
        "SubstitutionOutsidePolicy",
        [(req('otel_sampling_sampling_substitution="outside_policy"'), "_x5 1x30")],
        "10m",
        [
            (
                {"job": "j", "mcp_server_name": "s"},
                "1 sampling requests from server 's' on job j were served by a model the policy does not permit "
                "over the last 30m.",
            )
        ],
    ),
    (
        "within-policy substitutions only",
        "SubstitutionOutsidePolicy",
        [(req('otel_sampling_sampling_substitution="within_policy"'), "0+1x60")],
        "30m",
        [],
    ),
    (
        "a retry with a wider scope",
        "ContextScopeWidened",
        [
            (
                f'otel_sampling_sampling_violations_total{{{J}, {S}, otel_sampling_sampling_violation_kind="scope_widened"}}',
                "_x5 1x30",
            )
        ],
        "10m",
        [
            (
                {"job": "j", "mcp_server_name": "s"},
                "1 'scope_widened' violations by server 's' on job j over the last 30m.",
            )
        ],
    ),
    (
        "a narrowing retry: two requests, no violation",
        "ContextScopeWidened",
        [
            (req('otel_sampling_sampling_include_context_requested="allServers"'), "_x5 1x30"),
            (req('otel_sampling_sampling_include_context_requested="thisServer"'), "_x6 1x30"),
        ],
        "10m",
        [],
    ),
    (
        "another kind of violation",
        "ContextScopeWidened",
        [
            (
                f'otel_sampling_sampling_violations_total{{{J}, {S}, otel_sampling_sampling_violation_kind="decision_flipped"}}',
                "_x5 1x30",
            )
        ],
        "10m",
        [],
    ),
    (
        "a flipped decision",
        "DecisionFlipped",
        [
            (
                f'otel_sampling_sampling_violations_total{{{J}, {S}, otel_sampling_sampling_violation_kind="decision_flipped"}}',
                "_x5 1x30",
            )
        ],
        "10m",
        [
            (
                {"job": "j", "mcp_server_name": "s"},
                "1 'decision_flipped' violations by server 's' on job j over the last 30m.",
            )
        ],
    ),
    (
        "another kind of violation",
        "DecisionFlipped",
        [
            (
                f'otel_sampling_sampling_violations_total{{{J}, {S}, otel_sampling_sampling_violation_kind="scope_widened"}}',
                "_x5 1x30",
            )
        ],
        "10m",
        [],
    ),
    (
        "a denied request re-sent elsewhere",
        "ReroutedAfterDenial",
        [
            (
                f"otel_sampling_sampling_violations_total{{{J}, {S}, "
                f'otel_sampling_sampling_violation_kind="rerouted_after_denial"}}',
                "_x5 1x30",
            )
        ],
        "10m",
        [
            (
                {"job": "j", "mcp_server_name": "s"},
                "1 'rerouted_after_denial' violations by server 's' on job j over the last 30m.",
            )
        ],
    ),
    (
        "a denial that stays denied",
        "ReroutedAfterDenial",
        [(req('otel_sampling_sampling_ending="policy.denied"'), "_x5 1x30")],
        "10m",
        [],
    ),
    (
        "another kind of violation",
        "ReroutedAfterDenial",
        [
            (
                f'otel_sampling_sampling_violations_total{{{J}, {S}, otel_sampling_sampling_violation_kind="scope_widened"}}',
                "_x5 1x30",
            )
        ],
        "10m",
        [],
    ),
    (
        "a budget exhaustion",
        "BudgetExhausted",
        [(req('otel_sampling_sampling_ending="policy.budget_exhausted"'), "_x5 1x30")],
        "10m",
        [
            (
                {"job": "j", "mcp_server_name": "s"},
                "1 sampling requests from server 's' on job j ended policy.budget_exhausted over the last 30m; the reset "
                "time is on the span (otel_sampling.sampling.budget.resets_at).",
            )
        ],
    ),
    (
        "policy denials are not exhaustions",
        "BudgetExhausted",
        [(req('otel_sampling_sampling_ending="policy.denied"'), "_x5 1x30")],
        "10m",
        [],
    ),
    (
        "a stall a minute",
        "StallsHigh",
        [(f"otel_sampling_sampling_stalls_total{{{J}, {S}}}", "0+1x60")],
        "40m",
        [
            (
                {"job": "j", "mcp_server_name": "s"},
                "30 sampling requests from server 's' on job j stalled over the last 30m (threshold 3).",
            )
        ],
    ),
    # the three stalls happen within the window's first minutes, so the count has been 3 for longer than for
    (
        "three stalls, at the threshold",
        "StallsHigh",
        [(f"otel_sampling_sampling_stalls_total{{{J}, {S}}}", "0x10 1 2 3x60")],
        "40m",
        [],
    ),
    (
        "a burst of stalls shorter than for",
        "StallsHigh",
        [(f"otel_sampling_sampling_stalls_total{{{J}, {S}}}", "0x30 10x30")],
        "35m",
        [],
    ),
    (
        "four entries in an hour",
        "DegradationFlapping",
        [
            (
                f'degradation_transitions_total{{{J}, degradation_component="search", degradation_direction="enter"}}',
                "0x10 1x10 2x10 3x10 4x30",
            )
        ],
        "45m",
        [
            (
                {"job": "j", "degradation_component": "search"},
                "Degradation 'search' on job j was entered 4 times in the last 1h (threshold 4).",
            )
        ],
    ),
    (
        "three entries, and exits do not count",
        "DegradationFlapping",
        [
            (
                f'degradation_transitions_total{{{J}, degradation_component="search", degradation_direction="enter"}}',
                "0x10 1x10 2x10 3x60",
            ),
            (
                f'degradation_transitions_total{{{J}, degradation_component="search", degradation_direction="exit"}}',
                "0+1x90",
            ),
        ],
        "45m",
        [],
    ),
    (
        "a day of primary traffic and no fallback",
        "FallbackUntested",
        [(req('degradation_mode="primary", otel_sampling_sampling_ending="completed"'), "0+10x160")],
        "25h",
        [
            (
                {"job": "j"},
                "Job j served sampling requests over the last 1d but none completed in degraded mode and none "
                "was a canary request: the fallback is untested.",
            )
        ],
    ),
    (
        "one completion on the fallback at hour 10",
        "FallbackUntested",
        [
            (req('degradation_mode="primary", otel_sampling_sampling_ending="completed"'), "0+10x160"),
            (req('degradation_mode="degraded", otel_sampling_sampling_ending="completed"'), "0x60 1x100"),
        ],
        "25h",
        [],
    ),
    # the canary's answer was refused, so only the canary branch keeps the alert quiet
    (
        "a canary request at hour 10, refused on the fallback",
        "FallbackUntested",
        [
            (req('degradation_mode="primary", otel_sampling_sampling_ending="completed"'), "0+10x160"),
            (
                req(
                    'degradation_mode="degraded", degradation_reason="canary", otel_sampling_sampling_ending="refused"'
                ),
                "_x60 1x100",
            ),
        ],
        "25h",
        [],
    ),
    (
        "a degraded request that was refused is no tested fallback",
        "FallbackUntested",
        [
            (req('degradation_mode="primary", otel_sampling_sampling_ending="completed"'), "0+10x160"),
            (
                req(
                    'degradation_mode="degraded", degradation_reason="failover", otel_sampling_sampling_ending="refused"'
                ),
                "_x60 1x100",
            ),
        ],
        "25h",
        [
            (
                {"job": "j"},
                "Job j served sampling requests over the last 1d but none completed in degraded mode and none "
                "was a canary request: the fallback is untested.",
            )
        ],
    ),
    # "for a day": a job that started two hours ago has not yet gone a day without fallback traffic
    (
        "a new job with two hours of primary traffic",
        "FallbackUntested",
        [(req('degradation_mode="primary", otel_sampling_sampling_ending="completed"'), "_x138 0+10x20")],
        "25h",
        [],
    ),
    (
        "a canary degradation is no canary request",
        "FallbackUntested",
        [
            (req('degradation_mode="primary", otel_sampling_sampling_ending="completed"'), "0+10x160"),
            (f'degradation_active{{{J}, degradation_component="search", degradation_reason="canary"}}', "0x60 1 0x99"),
        ],
        "25h",
        [
            (
                {"job": "j"},
                "Job j served sampling requests over the last 1d but none completed in degraded mode and none "
                "was a canary request: the fallback is untested.",
            )
        ],
    ),
    (
        "a grant a minute",
        "GrantsHigh",
        [(f"otel_sampling_sampling_grants_total{{{J}, {S}}}", "0+1x100")],
        "60m",
        [
            (
                {"job": "j", "mcp_server_name": "s"},
                "Server 's' on job j received 60 budget grants over the last 1d (threshold 10).",
            )
        ],
    ),
    (
        "ten grants, at the threshold",
        "GrantsHigh",
        [(f"otel_sampling_sampling_grants_total{{{J}, {S}}}", "0+1x10 10x100")],
        "60m",
        [],
    ),
    *(
        case
        for pair, (inputs, reads) in CACHE_PAIRS.items()
        for case in (
            (
                f"a day reading 80 % of input from the cache, then an hour reading none ({pair})",
                "PromptCacheShareDropped",
                [
                    (f"{inputs}{{{J}, {CACHED_MODEL}}}", "0+1000x1560"),
                    (f"{reads}{{{J}, {CACHED_MODEL}}}", "0+800x1500 1200000x60"),
                ],
                "26h",
                [({"job": "j", "degradation_mode": "primary", "gen_ai_response_model": "m"}, CACHE_DROPPED_TO_0)],
            ),
            (
                f"from 80 % to 50 %, above half of the baseline ({pair})",
                "PromptCacheShareDropped",
                [
                    (f"{inputs}{{{J}, {CACHED_MODEL}}}", "0+1000x1560"),
                    (f"{reads}{{{J}, {CACHED_MODEL}}}", "0+800x1500 1200000+500x60"),
                ],
                "26h",
                [],
            ),
        )
    ),
    (
        # instance a on the newest names reads 80 % all along; instance b on ours (3 times a's input)
        # stops reading the cache: (800 + 0) / (1000 + 3000) = 20 % of input over the last 30m. One
        # pair alone would read a's 80 % and stay quiet.
        "two hosts of one job on different emission modes: the share of their sum dropped",
        "PromptCacheShareDropped",
        [
            (f'{CACHE_PAIRS["newest"][0]}{{{J}, instance="a", {CACHED_MODEL}}}', "0+1000x1560"),
            (f'{CACHE_PAIRS["newest"][1]}{{{J}, instance="a", {CACHED_MODEL}}}', "0+800x1560"),
            (f'{CACHE_PAIRS["ours"][0]}{{{J}, instance="b", {CACHED_MODEL}}}', "0+3000x1560"),
            (f'{CACHE_PAIRS["ours"][1]}{{{J}, instance="b", {CACHED_MODEL}}}', "0+2400x1500 3600000x60"),
        ],
        "26h",
        [
            (
                {"job": "j", "degradation_mode": "primary", "gen_ai_response_model": "m"},
                CACHE_DROPPED_TO_0.replace("read 0%", "read 20%"),
            )
        ],
    ),
]
# Drills (docs/api.md "Drills"): the window is the drill's named degradation, reason "drill".
DRILL = f'degradation_active{{{J}, degradation_component="nightly", degradation_reason="drill"}}'
DRILL_NO_ALERT = (
    "Drill 'nightly' on job j failed its target model within the last 2h and none of the degraded-mode "
    "alerts (DegradedShareHigh, DegradedTooLong, DegradationExpired, DegradationFlapping) fired: a real "
    "outage like it would go unnoticed."
)


def in_drill(labels: str) -> str:
    """A sampling-request series whose points were made while the drill 'nightly' ran."""
    return req(f'otel_sampling_drill_name="nightly", {labels}')


DRILL_FALLBACK_FAILED = (
    "During a drill on job j, of the sampling requests that ended during drills over the last "
    "30m, either fewer than 90% of those a model was asked for completed or none completed in "
    "degraded mode: the fallback does not work."
)
DRILL_CASES = [
    (
        "a 10-minute drill nobody was alerted to",
        "DrillWithoutAlert",
        [
            (DRILL, "1x10 0x20"),
            (req('degradation_mode="degraded", otel_sampling_sampling_ending="completed"'), "0+1x30"),
        ],
        "20m",
        [({"job": "j", "degradation_component": "nightly"}, DRILL_NO_ALERT)],
    ),
    # DegradationFlapping (a warning) really fires during the drill: its ALERTS series is what is read
    (
        "a drill during which a degraded-mode alert fired",
        "DrillWithoutAlert",
        [
            (DRILL, "1x10 0x20"),
            (
                f'degradation_transitions_total{{{J}, degradation_component="nightly", degradation_direction="enter"}}',
                "_x2 4x28",
            ),
        ],
        "20m",
        [],
    ),
    ("a drill still running", "DrillWithoutAlert", [(DRILL, "1x30")], "20m", []),
    (
        "a drill whose fallback fails: 1 of 3 requests completed",
        "DrillFallbackFailed",
        [
            (DRILL, "1x30"),
            (in_drill('degradation_mode="primary", otel_sampling_sampling_ending="completed"'), "0+1x30"),
            (in_drill('degradation_mode="primary", otel_sampling_sampling_ending="model.unavailable"'), "0+2x30"),
        ],
        "15m",
        [({"job": "j"}, DRILL_FALLBACK_FAILED)],
    ),
    (
        "a drill whose fallback serves every request",
        "DrillFallbackFailed",
        [
            (DRILL, "1x30"),
            (in_drill('degradation_mode="degraded", otel_sampling_sampling_ending="completed"'), "0+1x30"),
            (in_drill('degradation_mode="primary", otel_sampling_sampling_ending="completed"'), "0+3x30"),
        ],
        "15m",
        [],
    ),
    (
        "the same failing requests without a drill",
        "DrillFallbackFailed",
        [
            (DRILL, "0x30"),
            (req('degradation_mode="primary", otel_sampling_sampling_ending="completed"'), "0+1x30"),
            (req('degradation_mode="primary", otel_sampling_sampling_ending="model.unavailable"'), "0+2x30"),
        ],
        "15m",
        [],
    ),
    # only what ended during the drill counts: the failures before it are no verdict on its fallback
    (
        "failures before the drill, a fallback that serves during it",
        "DrillFallbackFailed",
        [
            (DRILL, "0x10 1x20"),
            (req('degradation_mode="primary", otel_sampling_sampling_ending="model.unavailable"'), "0+5x10 50x20"),
            (in_drill('degradation_mode="degraded", otel_sampling_sampling_ending="completed"'), "_x10 0+1x20"),
        ],
        "25m",
        [],
    ),
    # denials are the host's decisions, not the fallback's: 3 completed of 3 asked for a model
    (
        "a drill in a job that also denies requests",
        "DrillFallbackFailed",
        [
            (DRILL, "1x30"),
            (in_drill('degradation_mode="degraded", otel_sampling_sampling_ending="completed"'), "0+3x30"),
            (in_drill('degradation_mode="degraded", otel_sampling_sampling_ending="policy.denied"'), "0+3x30"),
            (in_drill('degradation_mode="degraded", otel_sampling_sampling_ending="user.denied"'), "0+2x30"),
            (in_drill('degradation_mode="degraded", otel_sampling_sampling_ending="host.unsupported"'), "0+1x30"),
        ],
        "15m",
        [],
    ),
    (
        "a drill whose fallback times out on 1 of 9 asked, beside denials",
        "DrillFallbackFailed",
        [
            (DRILL, "1x30"),
            (in_drill('degradation_mode="degraded", otel_sampling_sampling_ending="completed"'), "0+8x30"),
            (in_drill('degradation_mode="degraded", otel_sampling_sampling_ending="timeout"'), "0+1x30"),
            (in_drill('degradation_mode="degraded", otel_sampling_sampling_ending="policy.denied"'), "0+9x30"),
        ],
        "15m",
        [({"job": "j"}, DRILL_FALLBACK_FAILED)],
    ),
    (
        "still degraded 20 minutes after the drill",
        "DrillRecoveryMissing",
        [
            (DRILL, "1x10 0x40"),
            (req('degradation_mode="degraded", otel_sampling_sampling_ending="completed"'), "0+1x50"),
        ],
        "30m",
        [
            (
                {"job": "j"},
                "A drill on job j is over, yet sampling requests are still served in degraded mode (over the "
                "last 5m, for 10m): the exit from degraded mode does not happen.",
            )
        ],
    ),
    (
        "back to primary 2 minutes after the drill",
        "DrillRecoveryMissing",
        [
            (DRILL, "1x10 0x40"),
            (req('degradation_mode="degraded", otel_sampling_sampling_ending="completed"'), "0+1x12 13x38"),
            (req('degradation_mode="primary", otel_sampling_sampling_ending="completed"'), "0+1x50"),
        ],
        "30m",
        [],
    ),
]
CASES += DRILL_CASES

# Degraded exposure nobody was alerted to: 20% degraded at 5 requests a minute is silent until
# DegradedShareHigh (for 30m) fires; its ALERTS series ends the exposure.
SILENT_TO_OPERATORS = (
    "Job j has been exposed to degraded mode (degraded share above 10% or a named degradation "
    "active) for 15m while none of the degraded-mode alerts (DegradedShareHigh, DegradedTooLong, "
    "DegradationExpired, DegradationFlapping) was firing."
)
SHARE_20 = [(req('degradation_mode="degraded"'), "0+1x120"), (req('degradation_mode="primary"'), "0+4x120")]
CASES += [
    (
        "20% degraded for 20 minutes, before DegradedShareHigh fires",
        "SilentToOperators",
        SHARE_20,
        "20m",
        [({"job": "j"}, SILENT_TO_OPERATORS)],
    ),
    ("the same exposure once DegradedShareHigh fires", "SilentToOperators", SHARE_20, "50m", []),
    (
        "a named degradation active for 20 minutes with no warning alert",
        "SilentToOperators",
        [(f'degradation_active{{{J}, degradation_component="search", degradation_reason="fallback"}}', "1x30")],
        "20m",
        [({"job": "j"}, SILENT_TO_OPERATORS)],
    ),
    (
        "a 5% degraded share",
        "SilentToOperators",
        [(req('degradation_mode="degraded"'), "0+1x60"), (req('degradation_mode="primary"'), "0+19x60")],
        "40m",
        [],
    ),
    ("a drill's own degradation is not exposure", "SilentToOperators", [(DRILL, "1x30")], "20m", []),
]
# Degraded exposure, 1 or 0 per job: a named degradation active 10 minutes, then exited (its
# gauge reads 0); a drill's own degradation is no exposure.
EXPOSURE_SERIES = [
    (f'degradation_active{{{J}, degradation_component="search", degradation_reason="fallback"}}', "1x10 0x20"),
    (DRILL, "1x30"),
]
EXPOSURE = "job:otel_sampling_degraded_exposure:active"
EXPOSURE_EXPECTED = [("5m", 1), ("20m", 0)]


def runs(mode: str, outcome: str) -> str:
    return f'{{{J}, degradation_mode="{mode}", agent_run_outcome="{outcome}"}}'


# The five numbers as recording rules (otel_sampling.mixin.five_numbers, per job), over runs that all
# happened within the window: 10 runs, 4 degraded (2 completed, 2 failed), 6 primary (all
# completed); 4.5 s of the 10.5 s run time in degraded runs; scores and prices exact in binary;
# the degraded calls read nothing from the prompt cache (a failover that lost it).
EVAL = 'gen_ai_evaluation_name="suite"'
FIVE_NUMBERS_SERIES = [
    ("agent_runs_total" + runs("primary", "completed"), "_x2 6x20"),
    ("agent_runs_total" + runs("degraded", "completed"), "_x2 2x20"),
    ("agent_runs_total" + runs("degraded", "failed"), "_x2 2x20"),
    ("agent_run_cost_usd_total" + runs("primary", "completed"), "_x2 0.06x20"),
    ("agent_run_cost_usd_total" + runs("degraded", "completed"), "_x2 0.04x20"),
    ("agent_run_cost_usd_total" + runs("degraded", "failed"), "_x2 0.1x20"),
    ("agent_run_duration_seconds_sum" + runs("primary", "completed"), "_x2 6x20"),
    ("agent_run_duration_seconds_sum" + runs("degraded", "completed"), "_x2 1.5x20"),
    ("agent_run_duration_seconds_sum" + runs("degraded", "failed"), "_x2 3x20"),
    (f'otel_sampling_evaluation_score_sum{{{J}, {EVAL}, degradation_mode="primary"}}', "_x2 3.5x20"),
    (f'otel_sampling_evaluation_score_count{{{J}, {EVAL}, degradation_mode="primary"}}', "_x2 4x20"),
    (f'otel_sampling_evaluation_score_sum{{{J}, {EVAL}, degradation_mode="degraded"}}', "_x2 1.25x20"),
    (f'otel_sampling_evaluation_score_count{{{J}, {EVAL}, degradation_mode="degraded"}}', "_x2 2x20"),
    (f'degradation_silent_incidents_total{{{J}, agent_run_name="triage"}}', "_x2 1x20"),
    (f'gen_ai_client_inference_usage_input_tokens_total{{{J}, degradation_mode="primary"}}', "_x2 1000x20"),
    (f'gen_ai_client_inference_usage_cache_read_input_tokens_total{{{J}, degradation_mode="primary"}}', "_x2 500x20"),
    (f'gen_ai_client_inference_usage_input_tokens_total{{{J}, degradation_mode="degraded"}}', "_x2 200x20"),
    # the degraded calls' provider reported a cache part of 0 (a 0 % share, not "not reported")
    (f'gen_ai_client_inference_usage_cache_read_input_tokens_total{{{J}, degradation_mode="degraded"}}', "0x22"),
    # job k's host emits v1.41's names only: ours of the share, read the same way
    (f'otel_sampling_client_usage_input_tokens_total{{job="k", {SCOPE}, degradation_mode="primary"}}', "_x2 400x20"),
    (
        f'otel_sampling_client_usage_cache_read_input_tokens_total{{job="k", {SCOPE}, degradation_mode="primary"}}',
        "_x2 100x20",
    ),
    (req('degradation_mode="degraded"'), "_x2 3x20"),
    (req('degradation_mode="primary"'), "_x2 9x20"),
    # the framework's own token counts of the same calls, left out of every number
    (f'gen_ai_client_inference_usage_input_tokens_total{{{FOREIGN}, gen_ai_operation_name="chat"}}', "_x2 1200x20"),
    (
        f'gen_ai_client_inference_usage_cache_read_input_tokens_total{{{FOREIGN}, gen_ai_operation_name="chat"}}',
        "_x2 900x20",
    ),
]
FIVE_NUMBERS_EXPECTED = [  # (recorded series, labels, value; None: no such series)
    ("job:agent_run_duration_seconds_degraded:increase30m", {"job": "j"}, 4.5),
    ("job:agent_runs_degraded:ratio30m", {"job": "j"}, 0.4),
    ("job_mode:agent_runs_completed:ratio30m", {"job": "j", "degradation_mode": "primary"}, 1.0),
    ("job_mode:agent_runs_completed:ratio30m", {"job": "j", "degradation_mode": "degraded"}, 0.5),
    # all spend of a mode, failed runs' too, per completed run: (0.04 + 0.1) / 2
    ("job_mode:agent_run_cost_usd:per_completed_run30m", {"job": "j", "degradation_mode": "primary"}, 0.01),
    ("job_mode:agent_run_cost_usd:per_completed_run30m", {"job": "j", "degradation_mode": "degraded"}, 0.07),
    # 3.5 / 4 - 1.25 / 2
    (
        "job_evaluation:otel_sampling_evaluation_score:primary_minus_degraded30m",
        {"job": "j", "gen_ai_evaluation_name": "suite"},
        0.25,
    ),
    ("job:degradation_silent_incidents:increase30m", {"job": "j"}, 1),
    (
        "job_mode:gen_ai_client_inference_usage_cache_read_input_tokens:ratio30m",
        {"job": "j", "degradation_mode": "primary"},
        0.5,
    ),
    (
        "job_mode:gen_ai_client_inference_usage_cache_read_input_tokens:ratio30m",
        {"job": "j", "degradation_mode": "degraded"},
        0,
    ),
    (
        "job_mode:gen_ai_client_inference_usage_cache_read_input_tokens:ratio30m",
        {"job": "k", "degradation_mode": "primary"},
        0.25,
    ),
    # no ratio for the framework's series (they have no mode): they were never read
    (
        "job_mode:gen_ai_client_inference_usage_cache_read_input_tokens:ratio30m",
        {"job": "j", "degradation_mode": ""},
        None,
    ),
    (
        "job_mode_outcome:agent_runs:increase30m",
        {"job": "j", "degradation_mode": "degraded", "agent_run_outcome": "failed"},
        2,
    ),
    ("job:otel_sampling_sampling_degraded:ratio30m", {"job": "j"}, 0.25),
    ("job:otel_sampling_sampling_requests:increase30m", {"job": "j"}, 12),
]


# The five numbers per run name, over one window: the tool run "tickets/triage" 4 runs (2 degraded: 1
# completed, 1 failed; 2 primary completed), 1 silent incident, 0.02 USD primary and 0.06 USD degraded;
# beside it 6 primary runs of another name, never mixed in.
BY_NAME = {"job": "j", "agent_run_name": TOOL}
BY_NAME_SERIES = [
    (named_runs(TOOL, "primary"), "_x2 2x20"),
    (named_runs(TOOL, "degraded"), "_x2 1x20"),
    (named_runs(TOOL, "degraded", "failed"), "_x2 1x20"),
    (named_runs("other", "primary"), "_x2 6x20"),
    (f'agent_run_cost_usd_total{{{J}, agent_run_name="{TOOL}", degradation_mode="primary"}}', "_x2 0.02x20"),
    (f'agent_run_cost_usd_total{{{J}, agent_run_name="{TOOL}", degradation_mode="degraded"}}', "_x2 0.06x20"),
    (f'degradation_silent_incidents_total{{{J}, agent_run_name="{TOOL}"}}', "_x2 1x20"),
]
BY_NAME_EXPECTED = [
    ("job_agent_run_name:agent_runs_degraded:ratio30m", BY_NAME, 0.5),
    ("job_agent_run_name:agent_runs_degraded:ratio30m", {"job": "j", "agent_run_name": "other"}, 0),
    ("job_agent_run_name:degradation_silent_incidents:increase30m", BY_NAME, 1),
    ("job_agent_run_name:degradation_silent_incidents:increase30m", {"job": "j", "agent_run_name": "other"}, 0),
    ("job_agent_run_name_mode:agent_runs_completed:ratio30m", {**BY_NAME, "degradation_mode": "degraded"}, 0.5),
    ("job_agent_run_name_mode:agent_runs_completed:ratio30m", {**BY_NAME, "degradation_mode": "primary"}, 1),
    # 0.06 USD / 1 completed degraded run; 0.02 / 2 primary
    (
        "job_agent_run_name_mode:agent_run_cost_usd:per_completed_run30m",
        {**BY_NAME, "degradation_mode": "degraded"},
        0.06,
    ),
    (
        "job_agent_run_name_mode:agent_run_cost_usd:per_completed_run30m",
        {**BY_NAME, "degradation_mode": "primary"},
        0.01,
    ),
]


# What the fallback breaks: each rate, degraded against primary (by job and mode over 30m).
def call_series(metric: str, mode: str, extra: str = "") -> str:
    return f'{metric}{{{J}, degradation_mode="{mode}", gen_ai_provider_name="p", gen_ai_response_model="m"{extra}}}'


TOOL_CALLS, TOOL_ERRORS = "otel_sampling_client_tool_calls_total", "otel_sampling_client_tool_call_errors_total"
STRUCTURED = "otel_sampling_client_structured_output_requests_total"
STRUCTURED_FAILED = "otel_sampling_client_structured_output_failures_total"
PROVIDER_CALLS, TRUNCATED = "gen_ai_client_operation_duration_seconds_count", "otel_sampling_client_truncations_total"
INVALID = ', otel_sampling_tool_call_error="invalid_arguments"'
MISMATCH = ', otel_sampling_structured_output_failure="schema_mismatch"'
CUT = ', otel_sampling_truncation_kind="max_tokens"'
DEGRADED_JOB = {"job": "j"}  # "> on (job)" keeps the matching labels only


def breakage_description(what: str, value: str, unit: str) -> str:
    return (
        f"In degraded mode, job j had a {what} of {value} over the last 30m, more than 2 times the primary's "
        f"(each side with at least 20 {unit})."
    )


CASES += [
    (
        "tool-call errors: 40% degraded against 10% primary, 10 calls a minute each",
        "FallbackToolErrorsHigher",
        [
            (call_series(TOOL_CALLS, "primary"), "0+10x60"),
            (call_series(TOOL_ERRORS, "primary", INVALID), "0+1x60"),
            (call_series(TOOL_CALLS, "degraded"), "0+10x60"),
            (call_series(TOOL_ERRORS, "degraded", INVALID), "0+4x60"),
        ],
        "50m",
        [(DEGRADED_JOB, breakage_description("tool-call error rate", "40%", "tool calls"))],
    ),
    (
        "tool-call errors: 15% degraded against 10% primary is within the factor",
        "FallbackToolErrorsHigher",
        [
            (call_series(TOOL_CALLS, "primary"), "0+20x60"),
            (call_series(TOOL_ERRORS, "primary", INVALID), "0+2x60"),
            (call_series(TOOL_CALLS, "degraded"), "0+20x60"),
            (call_series(TOOL_ERRORS, "degraded", INVALID), "0+3x60"),
        ],
        "50m",
        [],
    ),
    (
        "structured output: half the degraded answers miss the schema, none of the primary's",
        "FallbackStructuredOutputFailing",
        [
            (call_series(STRUCTURED, "primary"), "0+2x60"),
            (call_series(STRUCTURED, "degraded"), "0+2x60"),
            (call_series(STRUCTURED_FAILED, "degraded", MISMATCH), "0+1x60"),
        ],
        "50m",
        [(DEGRADED_JOB, breakage_description("structured-output failure rate", "50%", "structured-output requests"))],
    ),
    (
        "structured output: every degraded answer fails, but 15 requests in the window",
        "FallbackStructuredOutputFailing",
        [
            (call_series(STRUCTURED, "primary"), "0+2x60"),
            (call_series(STRUCTURED, "degraded"), "0+0.5x60"),
            (call_series(STRUCTURED_FAILED, "degraded", MISMATCH), "0+0.5x60"),
        ],
        "50m",
        [],
    ),
    (
        "truncations: 30% degraded against 10% primary",
        "FallbackTruncatesMore",
        [
            (call_series(PROVIDER_CALLS, "primary", ', otel_sampling_ending="completed"'), "0+10x60"),
            (call_series(TRUNCATED, "primary", CUT), "0+1x60"),
            (call_series(PROVIDER_CALLS, "degraded", ', otel_sampling_ending="completed"'), "0+10x60"),
            (call_series(TRUNCATED, "degraded", CUT), "0+3x60"),
        ],
        "50m",
        [(DEGRADED_JOB, breakage_description("truncation rate", "30%", "provider calls"))],
    ),
    (
        "truncations: the primary served 15 calls in the window, too few to compare",
        "FallbackTruncatesMore",
        [
            (call_series(PROVIDER_CALLS, "primary", ', otel_sampling_ending="completed"'), "0+0.5x60"),
            (call_series(PROVIDER_CALLS, "degraded", ', otel_sampling_ending="completed"'), "0+10x60"),
            (call_series(TRUNCATED, "degraded", CUT), "0+3x60"),
        ],
        "50m",
        [],
    ),
]


def promql_labels(series: str, labels: dict[str, str]) -> str:
    return series + "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


# Alerts over a day window are tested with 10-minute steps (their series values are per 10m):
# a 25-hour test at 1-minute evaluations would take most of the suite's time.
DAY_ALERTS = {"FallbackUntested"}


def promtool_tests(step: str) -> dict:
    """The promtool test document for the alerts of one evaluation step (``1m`` or ``10m``)."""
    rules = {r["alert"]: r for r in alerting_rules(CONFIG)}
    tests = []
    for name, alert, series, eval_time, expected in CASES:
        if (alert in DAY_ALERTS) != (step == "10m"):
            continue
        rule = rules[PREFIX + alert]
        tests.append(
            {
                "name": f"{alert}: {name}",
                "interval": step,
                "input_series": [{"series": s, "values": v} for s, v in series],
                "alert_rule_test": [
                    {
                        "eval_time": eval_time,
                        "alertname": PREFIX + alert,
                        "exp_alerts": [
                            {
                                "exp_labels": {"severity": rule["labels"]["severity"], **labels},
                                "exp_annotations": {
                                    "summary": rule["annotations"]["summary"],
                                    "description": description,
                                    "runbook_url": f"{CONFIG.runbook_url}#{(PREFIX + alert).lower()}",
                                },
                            }
                            for labels, description in expected
                        ],
                    }
                ],
            }
        )
    if step == "10m":
        return {"rule_files": [str(RULES)], "evaluation_interval": step, "tests": tests}
    tests.append(
        {
            "name": "the five numbers and the degraded share, recorded",
            "interval": "1m",
            "input_series": [{"series": s, "values": v} for s, v in FIVE_NUMBERS_SERIES],
            "promql_expr_test": [
                {
                    "expr": promql_labels(series, labels),
                    "eval_time": "10m",
                    "exp_samples": [] if value is None else [{"labels": promql_labels(series, labels), "value": value}],
                }
                for series, labels, value in FIVE_NUMBERS_EXPECTED
            ],
        }
    )
    tests.append(
        {
            "name": "the five numbers per run name, recorded",
            "interval": "1m",
            "input_series": [{"series": s, "values": v} for s, v in BY_NAME_SERIES],
            "promql_expr_test": [
                {
                    "expr": promql_labels(series, labels),
                    "eval_time": "10m",
                    "exp_samples": [{"labels": promql_labels(series, labels), "value": value}],
                }
                for series, labels, value in BY_NAME_EXPECTED
            ],
        }
    )
    tests.append(
        {
            "name": "degraded exposure, recorded",
            "interval": "1m",
            "input_series": [{"series": s, "values": v} for s, v in EXPOSURE_SERIES],
            "promql_expr_test": [
                {
                    "expr": EXPOSURE,
                    "eval_time": time,
                    "exp_samples": [{"labels": promql_labels(EXPOSURE, {"job": "j"}), "value": value}],
                }
                for time, value in EXPOSURE_EXPECTED
            ],
        }
    )
    return {"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": tests}


def promtool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=HANG_S)


def promtool_test(path: Path, tests: dict) -> subprocess.CompletedProcess:
    """``promtool test rules`` on the test document ``tests``, written to ``path``."""
    path.write_text(yaml.safe_dump(tests, sort_keys=False))
    return promtool("test", "rules", str(path))


@pytest.mark.subprocess
def test_check_rules_is_clean():
    result = promtool("check", "rules", "--lint=all", "--lint-fatal", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_alert_has_a_firing_case_and_a_near_miss():
    alerts = {r["alert"].removeprefix(PREFIX) for r in alerting_rules(CONFIG)}
    firing = {alert for _, alert, _, _, expected in CASES if expected}
    near_miss = {alert for _, alert, _, _, expected in CASES if not expected}
    assert firing == alerts
    assert near_miss == alerts


@pytest.mark.subprocess
def test_promtool_unit_tests_pass(tmp_path):
    files = []
    for step in ("1m", "10m"):
        files.append(tmp_path / f"alerts_{step}_test.yaml")
        files[-1].write_text(yaml.safe_dump(promtool_tests(step), sort_keys=False))
    result = promtool("test", "rules", *map(str, files))
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_is_labelled_and_annotated():
    for rule in alerting_rules(CONFIG):
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}, rule["alert"]
        assert rule["annotations"]["summary"].endswith("."), rule["alert"]
        assert set(rule["annotations"]) == {"summary", "description", "runbook_url"}, rule["alert"]


@pytest.mark.parametrize("alert", [r["alert"] for r in alerting_rules(CONFIG)])
def test_every_runbook_link_has_its_section(alert):
    runbook = (ROOT / "docs" / "runbook.md").read_text()
    assert f"\n## {alert}\n" in runbook


@pytest.mark.subprocess
def test_the_degraded_share_is_not_recorded_over_a_quiet_window(tmp_path):
    """Requests that stopped more than a window ago: the share is absent (no NaN sample to graph or
    compare), like every five-numbers ratio; the request count still records 0."""
    tests = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": req('degradation_mode="degraded"'), "values": "1x90"}],
                "promql_expr_test": [
                    {"expr": "job:otel_sampling_sampling_degraded:ratio30m", "eval_time": "60m", "exp_samples": []},
                    {
                        "expr": "job:otel_sampling_sampling_requests:increase30m",
                        "eval_time": "60m",
                        "exp_samples": [
                            {
                                "labels": promql_labels(
                                    "job:otel_sampling_sampling_requests:increase30m", {"job": "j"}
                                ),
                                "value": 0,
                            }
                        ],
                    },
                ],
            }
        ],
    }
    result = promtool_test(tmp_path / "quiet_test.yaml", tests)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.subprocess
def test_a_count_at_the_threshold_does_not_fire_when_increase_extrapolates(tmp_path):
    """Scrapes and rule evaluations are never aligned in production, so ``increase()`` extrapolates
    to the window's edges: 3 stalls read as about 3.03. The count alerts compare whole events
    (``for`` 0, as in ``MixinConfig.for_short_run``, so one evaluation decides)."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump(rule_groups(MixinConfig(stalls_for="0m"))))
    tests = {
        "rule_files": [str(rules)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "40s",  # a scrape every 40 s, an evaluation every minute: every other one is off the grid
                "input_series": [
                    {"series": f"otel_sampling_sampling_stalls_total{{{J}, {S}}}", "values": "1x30 2 3 4x100"}
                ],
                "alert_rule_test": [{"eval_time": "41m", "alertname": f"{PREFIX}StallsHigh", "exp_alerts": []}],
            }
        ],
    }
    result = promtool_test(tmp_path / "extrapolated_test.yaml", tests)
    assert result.returncode == 0, result.stdout + result.stderr
