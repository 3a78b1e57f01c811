"""The "What the fallback breaks" row of the Degradation dashboard: each signal, primary and degraded
side by side (``otel_sampling.mixin.breakage`` names the rates and records them)."""

from __future__ import annotations

from otel_sampling.mixin import breakage
from otel_sampling.mixin import metrics as m
from otel_sampling.mixin.config import MixinConfig
from otel_sampling.mixin.panels import JOB, PanelBuilder, raw_selector, timeseries_panel
from otel_sampling.mixin.promql import counted, label_selector

RATE = "$__rate_interval"
MODE_LEGEND = f"{{{{{m.MODE}}}}}"


def panels(config: MixinConfig) -> list[PanelBuilder]:
    """One panel per rate (recorded, by mode), then the kinds behind them, the context utilization,
    the host's tool-call outcomes and its repeated tool calls, each by mode."""
    job = label_selector(JOB)
    j = raw_selector(config)
    found: list[PanelBuilder] = [
        timeseries_panel(
            rate.title,
            f"{rate.title} by mode over the last {config.window} (recorded): primary and degraded side by side. "
            f"Alert: OtelSampling{rate.key}, when the degraded side exceeds {config.breakage_factor:g} times the "
            f"primary with at least {config.breakage_min_calls} {rate.unit_text} on each side.",
            [(f"max by ({m.MODE}) ({rate.ratio}{job})", MODE_LEGEND)],
            "percentunit",
            width=8,
        )
        for rate in breakage.rates(config)
    ]
    by_kind = (
        (m.TOOL_CALL_ERRORS, m.TOOL_CALL_ERROR, "Tool-call errors by kind", "not_offered or invalid_arguments"),
        (
            m.STRUCTURED_FAILURES,
            m.STRUCTURED_FAILURE,
            "Structured-output failures by kind",
            "invalid_json or schema_mismatch",
        ),
        (m.TRUNCATIONS, m.TRUNCATION_KIND, "Truncations by kind", "max_tokens or context_length"),
    )
    for series, label, title, kinds in by_kind:
        found.append(
            timeseries_panel(
                title,
                f"Per interval, by mode and kind ({kinds}).",
                [(f"sum by ({m.MODE}, {label}) ({counted(series + j, RATE)})", f"{{{{{m.MODE}}}}} {{{{{label}}}}}")],
                "short",
                width=8,
                bars=True,
            )
        )
    found += [
        timeseries_panel(
            "Context utilization (p95)",
            "Input tokens over the served model's context window, 95th percentile by mode (where the price "
            "source knows the window): a fallback with a smaller window runs closer to 1.",
            [
                (
                    f"histogram_quantile(0.95, sum by ({m.MODE}, {m.LE}) "
                    f"(rate({m.CONTEXT_UTILIZATION}_bucket{j}[{RATE}])))",
                    MODE_LEGEND,
                )
            ],
            "percentunit",
            width=12,
        ),
        timeseries_panel(
            "MCP tool calls by outcome",
            "tools/call requests the host sent, per interval, by the mode of the run that sent them and their "
            "outcome (ok, is_error, error_frame).",
            [
                (
                    f"sum by ({m.MODE}, {m.TOOL_CALL_OUTCOME}) ({counted(m.HOST_TOOL_CALLS + j, RATE)})",
                    f"{{{{{m.MODE}}}}} {{{{{m.TOOL_CALL_OUTCOME}}}}}",
                )
            ],
            "short",
            width=12,
            bars=True,
        ),
        timeseries_panel(
            "Repeated tool calls",
            "tools/call requests a run sent again with the same tool and arguments, per interval, by mode and "
            "whether the policy names the tool as having side effects (a repeat of one is also a "
            "repeated_side_effect violation): retries multiply side effects.",
            [
                (
                    f"sum by ({m.MODE}, {m.TOOL_SIDE_EFFECT}) ({counted(m.REPEATED_TOOL_CALLS + j, RATE)})",
                    f"{{{{{m.MODE}}}}} side effect {{{{{m.TOOL_SIDE_EFFECT}}}}}",
                )
            ],
            "short",
            width=12,
            bars=True,
        ),
    ]
    return found
