"""The one object that tunes every generated dashboard and rule (monitoring-mixin ``_config``).

Selectors, windows, thresholds and ``for`` durations live here, so a dashboard's threshold line and
the alert that pages on it cannot disagree. ``otel-sampling rules --help`` lists each
field as a command-line option.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from otel_sampling.mixin import metrics as m
from otel_sampling.mixin.five_numbers import OUR_SCOPE
from otel_sampling.mixin.promql import label_selector

_DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")  # Prometheus duration syntax
# One PromQL label matcher (name, operator, double-quoted string with escapes), a comma between two.
_MATCHER = r'\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(=~|!~|!=|=)\s*"([^"\\]|\\.)*"\s*'
_MATCHERS = re.compile(rf"^{_MATCHER}(,{_MATCHER})*$")


# The project's repository: [project.urls] in pyproject.toml names the same (tests/test_bundled.py).
REPOSITORY = "https://github.com/otel-sampling/otel-sampling"
# The runbook every alert links to by default (its runbook_url is this plus "#" and the alert name in
# lower case); ``MixinConfig.runbook_url`` / ``--runbook-url`` points the alerts and dashboards elsewhere.
RUNBOOK_URL = f"{REPOSITORY}/blob/main/docs/runbook.md"


def _option(default: object, help_text: str) -> Any:
    """A field whose ``help`` the command line shows."""
    return dataclasses.field(default=default, metadata={"help": help_text})


@dataclass(frozen=True)
class MixinConfig:
    """Settings for ``otel_sampling.mixin``; every default is the one the committed files use.

    Durations are Prometheus duration strings (``30s``, ``15m``, ``1d``); ratios are 0-1.

    Raises:
        ValueError: on a malformed duration, a window of 0, a ratio outside 0-1, a negative count,
            ``flapping_transitions`` or ``breakage_factor`` below 1, a ``gen_ai_semconv`` neither ``old`` nor ``new``, a
            ``cache_share_drop`` outside (0, 1] or a ``rule_selector`` / ``scope_selector`` that is not
            PromQL label matchers.
    """

    rule_selector: str = _option(
        "", 'label matchers added to every raw series the rules read, e.g. job="triage-host" (empty: all jobs)'
    )
    scope_selector: str = _option(
        OUR_SCOPE,
        "label matchers added to every raw series the rules and dashboards read, so that another "
        "instrumentation's metrics of the same name (a framework's own gen_ai.client.token.usage) are left out; "
        "empty: every scope, for an export path that drops the otel_scope_* labels (docs/deploy.md)",
    )
    window: str = _option("30m", "window of every recorded ratio and count the alerts and the overview read")
    day_window: str = _option("1d", "window of the per-day alerts (untested fallback, grants per server)")
    degraded_share_threshold: float = _option(
        0.10,
        "share of sampling requests served degraded above which DegradedShareHigh fires "
        "(and of one run name's runs ended degraded, RunsDegradedShareHigh)",
    )
    min_requests: int = _option(
        20, "traffic guard: with fewer requests (or runs) in the window no ratio alerts or shows"
    )
    degraded_share_for: str = _option("30m", "for of DegradedShareHigh and RunsDegradedShareHigh")
    degraded_too_long_for: str = _option("4h", "how long a named degradation may stay active (DegradedTooLong)")
    expired_for: str = _option("5m", "for of DegradationExpired")
    event_for: str = _option("0m", "for of the alerts on discrete events (incident, substitution, violation)")
    stalls_threshold: int = _option(3, "stalled requests per server in the window above which StallsHigh fires")
    stalls_for: str = _option("10m", "for of StallsHigh")
    flapping_window: str = _option("1h", "window in which degradation entries are counted (DegradationFlapping)")
    flapping_transitions: int = _option(4, "entries into one degradation in flapping_window that count as flapping")
    grants_per_day_threshold: int = _option(10, "consent grants per server per day_window above which GrantsHigh fires")
    fallback_untested_for: str = _option("1h", "for of FallbackUntested")
    drill_window: str = _option(
        "2h",
        'how far back a drill window (degradation_active{degradation_reason="drill"}) '
        "and the alerts during it are looked at (DrillWithoutAlert, DrillRecoveryMissing); "
        "for_short_run: 45s, longer than a drill of seconds plus its recovery window and for",
    )
    drill_completion_threshold: float = _option(
        0.9, "share of sampling requests completed during a drill below which DrillFallbackFailed fires"
    )
    drill_fallback_for: str = _option("5m", "for of DrillFallbackFailed; for_short_run: 2s")
    drill_recovery_window: str = _option(
        "5m",
        "window after a drill in which requests still served degraded count (DrillRecoveryMissing); for_short_run: 5s",
    )
    silent_exposure_for: str = _option(
        "15m", "for of SilentToOperators: how long degraded exposure may go on with no degraded-mode alert firing"
    )
    drill_recovery_for: str = _option(
        "10m", "for of DrillRecoveryMissing: the hysteresis the primary gets to return; for_short_run: 20s"
    )
    gen_ai_semconv: str = _option(
        "old",
        "GenAI inference metric names the dashboards read: old (v1.41's gen_ai.client.operation.duration and "
        "gen_ai.client.token.usage, the host's default) or new (gen_ai.client.inference.*, the host run with "
        "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental); a host with gen_ai/dup has both",
    )
    cache_share_baseline_window: str = _option(
        "1d", "baseline window of PromptCacheShareDropped: the cache-read share the last window is compared with"
    )
    cache_share_drop: float = _option(
        0.5, "fraction of its baseline the cache-read share (by job, mode, model) must lose for PromptCacheShareDropped"
    )
    cache_share_for: str = _option("15m", "for of PromptCacheShareDropped")
    breakage_factor: float = _option(
        2.0,
        "how many times the primary's rate the degraded side's tool-call error, structured-output failure or "
        "truncation rate must exceed for FallbackToolErrorsHigher, FallbackStructuredOutputFailing, "
        "FallbackTruncatesMore (at least 1)",
    )
    breakage_min_calls: int = _option(
        20,
        "traffic guard of those alerts: each side (primary, degraded) needs this many tool calls, structured-output "
        "requests or provider calls in the window",
    )
    breakage_for: str = _option(
        "15m",
        "for of FallbackToolErrorsHigher, FallbackStructuredOutputFailing, FallbackTruncatesMore; for_short_run: 2s",
    )
    runbook_url: str = _option(
        RUNBOOK_URL,
        "base of every alert's runbook_url and of the dashboards' Runbook link "
        "(an alert's anchor: its name in lower case)",
    )
    dashboard_refresh: str = _option("1m", "dashboard auto-refresh")
    dashboard_time_from: str = _option("now-24h", "start of the dashboards' default time range")

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name.endswith(("window", "_for")) and not _DURATION.match(value):
                raise ValueError(f"{field.name}: {value!r} is not a Prometheus duration (like 30m or 1d)")
            if field.name.endswith("window") and not any(int(n) for n in re.findall(r"\d+", value)):
                raise ValueError(f"{field.name}: {value!r} must be longer than 0 (a PromQL range)")
            if field.name.endswith("threshold") and field.type == "float" and not 0 <= value <= 1:
                raise ValueError(f"{field.name}: {value!r} is not a ratio between 0 and 1")
            if field.type == "int" and value < 0:
                raise ValueError(f"{field.name}: {value!r} must not be negative")
        if self.gen_ai_semconv not in ("old", "new"):
            raise ValueError(f"gen_ai_semconv: {self.gen_ai_semconv!r} is neither old nor new")
        if not 0 < self.cache_share_drop <= 1:
            raise ValueError(f"cache_share_drop: {self.cache_share_drop!r} is not a ratio above 0 and at most 1")
        if self.breakage_factor < 1:  # below 1, a fallback as good as the primary would page
            raise ValueError(f"breakage_factor: {self.breakage_factor!r} must be at least 1")
        if self.flapping_transitions < 1:  # ">= 0" entries would fire on every degradation ever entered
            raise ValueError(f"flapping_transitions: {self.flapping_transitions!r} must be at least 1")
        for name in ("rule_selector", "scope_selector"):
            value = getattr(self, name)
            if value and not _MATCHERS.match(value):
                raise ValueError(
                    f'{name}: {value!r} is not a list of label matchers (like job="triage-host", env!="dev"; no braces)'
                )

    @property
    def inference_duration(self) -> str:
        """The Prometheus name of the inference duration histogram the dashboards read."""
        return m.INFERENCE_DURATION if self.gen_ai_semconv == "new" else m.OPERATION_DURATION

    @classmethod
    def for_short_run(cls) -> MixinConfig:
        """Windows of minutes and ``for`` of seconds, for a scenario that runs for seconds (the demo, the
        end-to-end test); the thresholds stay the defaults, the traffic guard drops to 10 requests. The
        drill alerts get windows of seconds: a drill held for seconds, a recovery window of 5s and a
        hysteresis (``drill_recovery_for``) of 20s, all looked back at for 45s (``drill_window``)."""
        return cls(
            window="5m",
            day_window="5m",
            flapping_window="5m",
            min_requests=10,
            degraded_share_for="2s",
            degraded_too_long_for="1m",
            expired_for="0m",
            stalls_for="0m",
            fallback_untested_for="0m",
            drill_window="45s",
            drill_fallback_for="2s",
            drill_recovery_window="5s",
            drill_recovery_for="20s",
            breakage_min_calls=10,
            breakage_for="2s",
        )

    def selector(self, *matchers: str) -> str:
        """``{rule_selector, scope_selector, matchers...}`` for a raw series the rules read, or
        empty when there is nothing to match."""
        return label_selector(self.rule_selector, self.scope_selector, *matchers)
