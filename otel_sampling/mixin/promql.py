"""Small PromQL builders shared by the five numbers, the rules and the dashboards.

Plain strings, no dependency (importable without the ``mixin`` extra).
"""

from __future__ import annotations


def matchers(**labels: str) -> str:
    """``otel_sampling_sampling_ending="completed", ...`` from keyword arguments (values taken verbatim)."""
    return ", ".join(f'{k}="{v}"' for k, v in labels.items())


def label_selector(*matchers: str) -> str:
    """``{a, b}`` of the non-empty ``matchers`` (each one or more comma-separated label matchers),
    or empty when every one is empty (no ``name{}`` left behind)."""
    parts = [m for m in matchers if m]
    return "{" + ", ".join(parts) + "}" if parts else ""


def counted(series: str, window: str) -> str:
    """What a counter counted within ``window``, including the first count of a new series.

    ``increase()`` cannot see the first value of a series: the OTel SDK exports a counter's label
    set only from its first ``add()``, so a series appears at 1, not 0, and the one event that
    created it is lost (an incident that happens once would never alert). Prometheus 2.x has no
    created-timestamp zero injection, so a series that had no sample ``window`` ago counts with its
    whole value, every other series with its ``increase()``.
    ``series`` is a selector such as ``agent_runs_total{job="a"}``.
    """
    return f"(({series} unless {series} offset {window}) or increase({series}[{window}]))"


def either(a: str, b: str) -> str:
    """``a + b`` where both have an element of the same labels, else whichever has one: the sum of two
    aggregated metrics of which each source exports one (``a`` and ``b`` are ``sum by (...)``
    expressions over the same labels)."""
    return f"({a} + {b})\nor {a}\nor {b}"
