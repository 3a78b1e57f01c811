"""A steady history made from one scrape: the workload that scrape counted, repeated every step.

A scrape of a host that ran its scenario once says what one pass of the workload counts. Rules
written for hours of traffic (30-minute windows, ``for: 30m``) need that workload as a steady
stream: :func:`steady_history` turns the scrape into ``steps + 1`` samples per series, one per
step, in which every counter and histogram series grows by its scraped value each step (the
workload once per step, so every rate and share is the scrape's) and every gauge keeps its
scraped value. The same history is written for two rulers:

* :func:`import_text`: Prometheus text exposition with a timestamp on every sample, the body
  VictoriaMetrics' ``/api/v1/import/prometheus`` takes;
* :func:`promtool_input`: promtool's ``input_series`` (``promtool test rules``), one value per
  step of its ``interval``.

The scrape is read with ``prometheus_client``'s parser; OpenMetrics ``_created`` samples are left
out (they are timestamps, not counts).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

GROWING_TYPES = ("counter", "histogram")


@dataclass(frozen=True)
class Series:
    """One series of a history: ``values[k]`` is its sample at step ``k``."""

    name: str
    labels: tuple[tuple[str, str], ...]
    values: tuple[float, ...]

    def selector(self) -> str:
        return selector(self.name, self.labels)


def selector(name: str, labels: Iterable[tuple[str, str]]) -> str:
    """``name{label="value",...}`` matching exactly these labels in their order, values quoted as JSON
    strings (PromQL accepts them)."""
    return name + "{" + ",".join(f"{k}={json.dumps(v)}" for k, v in labels) + "}"


def steady_history(scrape: str, steps: int, **labels: str) -> list[Series]:
    """The scrape repeated each step for ``steps`` steps (``steps + 1`` samples per series).

    Args:
        scrape: Prometheus text exposition (one ``/metrics`` response).
        steps: how many steps after the first sample; at least 1.
        labels: target labels added to every series (``job``, ``instance``), as a scrape adds them.

    Returns:
        One :class:`Series` per scraped sample: a counter or histogram sample ``v`` as
        ``v, 2v, ..., (steps + 1) v``, a gauge (or untyped) sample as ``v`` every step.

    Raises:
        ValueError: ``steps`` is below 1.
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    history = []
    for family in text_string_to_metric_families(scrape):
        grows = family.type in GROWING_TYPES
        for sample in family.samples:
            if sample.name.endswith("_created"):
                continue
            value = float(sample.value)
            values = tuple(value * (k + 1) if grows else value for k in range(steps + 1))
            history.append(Series(sample.name, tuple(sorted({**sample.labels, **labels}.items())), values))
    return history


def import_text(history: Iterable[Series], start_s: int, step_s: int) -> str:
    """The history as text exposition with millisecond timestamps: sample ``k`` at ``start_s + k * step_s``."""
    return "".join(
        f"{series.selector()} {value!r} {(start_s + k * step_s) * 1000}\n"
        for series in history
        for k, value in enumerate(series.values)
    )


def promtool_input(history: Iterable[Series]) -> list[dict[str, str]]:
    """The history as promtool ``input_series``: sample ``k`` at ``k`` times the test's ``interval``."""
    return [{"series": series.selector(), "values": " ".join(repr(v) for v in series.values)} for series in history]
