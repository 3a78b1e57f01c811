"""What the fallback breaks: the recording rules and alerts that compare the degraded side with the
primary (``docs/telemetry.md``, "What the fallback breaks"; ``docs/runbook.md``).

Three rates, each by job and ``degradation.mode`` over the config's ``window``, numerator and
denominator summed before the division (0 while the numerator has no series, nothing while the
denominator counted nothing):

==============================  ===========================================  ====================================
rate                            numerator                                    denominator
==============================  ===========================================  ====================================
tool-call error rate            ``otel_sampling.client.tool_call.errors``    ``otel_sampling.client.tool_calls``
structured-output failure rate  ``….structured_output.failures``             ``….structured_output.requests``
truncation rate                 ``otel_sampling.client.truncations``         provider calls (the inference
                                                                             duration histogram's count)
==============================  ===========================================  ====================================

An alert fires when the degraded side's rate exceeds ``breakage_factor`` times the primary's while
each side counted at least ``breakage_min_calls`` in the window (a primary at 0 and a degraded side
above 0 exceeds any factor). Kept apart from ``rules.py`` so that it imports nothing of it:
``rules.py`` turns :func:`alerts` into alerting rules.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from otel_sampling import names
from otel_sampling.mixin import metrics as m
from otel_sampling.mixin.config import MixinConfig
from otel_sampling.mixin.promql import counted, matchers

BY = f"{m.JOB}, {m.MODE}"


class Rate(NamedTuple):
    """One compared rate: its recorded ratio and denominator, and what the alert and panel say."""

    key: str  # the alert's name (after the prefix)
    title: str  # what the rate is, for panels and alert texts
    ratio: str  # recorded: numerator / denominator by job and mode
    volume: str  # recorded: the denominator by job and mode
    numerator: str  # raw series
    denominator: str  # raw series
    unit_text: str  # what the denominator counts, in words


def rates(config: MixinConfig) -> tuple[Rate, Rate, Rate]:
    w = config.window

    def record(series: str, kind: str) -> str:
        return f"job_mode:{series.removesuffix('_total')}:{kind}{w}"

    def rate(key: str, title: str, numerator: str, denominator: str, unit_text: str, volume: str = "") -> Rate:
        volume = volume or record(denominator, "increase")
        return Rate(key, title, record(numerator, "ratio"), volume, numerator, denominator, unit_text)

    return (
        rate("FallbackToolErrorsHigher", "Tool-call error rate", m.TOOL_CALL_ERRORS, m.TOOL_CALLS, "tool calls"),
        rate(
            "FallbackStructuredOutputFailing",
            "Structured-output failure rate",
            m.STRUCTURED_FAILURES,
            m.STRUCTURED_REQUESTS,
            "structured-output requests",
        ),
        # provider calls: the inference duration histogram's count, recorded under a name of its own
        rate(
            "FallbackTruncatesMore",
            "Truncation rate",
            m.TRUNCATIONS,
            f"{config.inference_duration}_count",
            "provider calls",
            f"job_mode:otel_sampling_client_provider_calls:increase{w}",
        ),
    )


def recording_rules(config: MixinConfig) -> list[dict[str, Any]]:
    """Each rate's denominator and ratio, by job and mode."""
    w, sel = config.window, config.selector()
    recorded: list[dict[str, Any]] = []
    for rate in rates(config):
        whole = f"sum by ({BY}) ({counted(rate.denominator + sel, w)})"
        part = f"sum by ({BY}) ({counted(rate.numerator + sel, w)})"
        recorded += [
            {"record": rate.volume, "expr": whole},
            {"record": rate.ratio, "expr": f"({part} or {rate.volume} * 0)\n/ ({rate.volume} > 0)"},
        ]
    return recorded


def alerts(config: MixinConfig) -> list[tuple[str, str, str, str, str, str]]:
    """``(name, expr, for, severity, summary, description)`` of each rate's alert."""
    c = config
    degraded, primary = matchers(**{m.MODE: names.MODE_DEGRADED}), matchers(**{m.MODE: names.MODE_PRIMARY})
    found = []
    for rate in rates(config):
        expr = (
            f"{rate.ratio}{{{degraded}}}\n"
            f"> on ({m.JOB}) {c.breakage_factor:g} * {rate.ratio}{{{primary}}}\n"
            f"and on ({m.JOB}) {rate.volume}{{{degraded}}} >= {c.breakage_min_calls}\n"
            f"and on ({m.JOB}) {rate.volume}{{{primary}}} >= {c.breakage_min_calls}"
        )
        found.append(
            (
                rate.key,
                expr,
                c.breakage_for,
                "warning",
                f"The fallback's {rate.title.lower()} is well above the primary's.",
                f"In degraded mode, job {{{{ $labels.job }}}} had a {rate.title.lower()} of "
                f"{{{{ $value | humanizePercentage }}}} over the last {c.window}, more than {c.breakage_factor:g} "
                f"times the primary's (each side with at least {c.breakage_min_calls} {rate.unit_text}).",
            )
        )
    return found
