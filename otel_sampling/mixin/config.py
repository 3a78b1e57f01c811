"""The one object that tunes every generated dashboard and rule (monitoring-mixin ``_config``).

Selectors, windows, thresholds and ``for`` durations live here, so a dashboard's threshold line and
the alert that pages on it cannot disagree. ``python -m otel_sampling.mixin --help`` lists each
field as a command-line option.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

_DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")  # Prometheus duration syntax


@dataclass(frozen=True)
class MixinConfig:
    """Settings for ``otel_sampling.mixin``; every default is the one the committed files use.

    Durations are Prometheus duration strings (``30s``, ``15m``, ``1d``); ratios are 0-1.

    Raises:
        ValueError: on a malformed duration, a ratio outside 0-1 or a negative count.
    """

    rule_selector: str = ""
    """Label matchers added to every rule's raw series, e.g. ``job="triage-host"`` (empty: all jobs)."""
    window: str = "30m"
    """Window of every recorded ratio and increase the alerts and the overview read."""
    day_window: str = "1d"
    """Window of the per-day alerts (untested fallback, grants per server)."""
    degraded_share_threshold: float = 0.10
    """Share of sampling requests served in degraded mode above which DegradedShareHigh fires."""
    min_requests: int = 20
    """Minimum-traffic guard: fewer requests in ``window`` than this never fire a ratio alert."""
    degraded_share_for: str = "30m"
    degraded_too_long_for: str = "4h"
    """How long a named degradation may stay active before DegradedTooLong fires."""
    expired_for: str = "5m"
    event_for: str = "0m"
    """``for`` of the alerts on discrete events (an incident, a substitution, a violation)."""
    stalls_threshold: int = 3
    """Stalled sampling requests per server in ``window`` above which StallsHigh fires."""
    stalls_for: str = "10m"
    flapping_window: str = "1h"
    flapping_transitions: int = 4
    """Entries into one degradation within ``flapping_window`` at or above which it is flapping."""
    grants_per_day_threshold: int = 10
    """Consent grants per server per ``day_window`` above which GrantsHigh fires."""
    fallback_untested_for: str = "1h"
    runbook_url: str = "https://github.com/otel-sampling/otel-sampling/blob/main/docs/runbook.md"
    """Base of every alert's ``runbook_url``; the anchor is the alert name in lower case."""
    dashboard_refresh: str = "1m"
    dashboard_time_from: str = "now-24h"

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name.endswith(("window", "_for")) and not _DURATION.match(value):
                raise ValueError(f"{field.name}: {value!r} is not a Prometheus duration (like 30m or 1d)")
            if field.name.endswith("threshold") and field.type == "float" and not 0 <= value <= 1:
                raise ValueError(f"{field.name}: {value!r} is not a ratio between 0 and 1")
            if field.type == "int" and value < 0:
                raise ValueError(f"{field.name}: {value!r} must not be negative")

    @classmethod
    def for_short_run(cls) -> MixinConfig:
        """Windows of minutes and ``for`` of seconds, for a scenario that runs for seconds (the demo, the
        end-to-end test); the thresholds stay the defaults, the traffic guard drops to 10 requests."""
        return cls(window="5m", day_window="5m", flapping_window="5m", min_requests=10,
                   degraded_share_for="2s", degraded_too_long_for="1m", expired_for="0m",
                   stalls_for="0m", fallback_untested_for="0m")

    def selector(self, *matchers: str) -> str:
        """``{rule_selector, matchers...}``, or empty when there is nothing to match."""
        parts = [m for m in (self.rule_selector, *matchers) if m]
        return "{" + ", ".join(parts) + "}" if parts else ""
