"""How the per-call cost grows with the work (``instructions.py --scaling``): label cardinality,
requests in flight, stream length, instructions per call each; and memory per request in flight.

* Labels: the calls cycle through 1, 10, 100 and 200 model names (the label cap is 100, so 200 is
  over it: ours folds the rest into ``_OTHER``, the floor has no cap); the warm-up calls touch
  every name first, so every series exists when the counting starts.
* In flight: 0, 99 and 999 more requests held open while the measured calls run (MCP: sampling
  requests whose callback waits; anthropic: streams read to their first event).
* Stream length: 10, 100 and 1,000 events per stream; per event = the slope from 10 to 1,000.
* Memory: bytes still allocated (tracemalloc, not under valgrind) per request held in flight,
  1,000 held, over bare's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import calls

HERE = Path(__file__).resolve().parent
OURS, BARE, FLOOR, MCP_FLOOR = "otel-sampling", "bare", "floor", "mcp-floor"
LABELS = (1, 10, 100, 200)
HELD = (0, 99, 999)
EVENTS = (10, 100, 1000)
MEMORY_HELD = 1000
LABEL_KINDS = ("anthropic-create", "mcp-legacy")
HELD_KINDS = ("anthropic-stream", "mcp-legacy")
STREAM_KINDS = ("anthropic-stream", "openai-stream")
CONFIGS = (BARE, OURS, FLOOR, MCP_FLOOR)
PER_EVENT_TARGET = 2.0  # ours' added instructions per stream event over the floor's (the performance issue)

Measure = Callable[..., dict[str, dict[str, Any]]]


def _added(rows: dict[str, Any], config: str) -> float | None:
    row, bare = rows.get(config), rows.get(BARE)
    if not hasattr(row, "per_call") or not hasattr(bare, "per_call"):
        return None
    return float(row.per_call - bare.per_call)


def _floor(kind: str) -> str:
    return MCP_FLOOR if kind in calls.MCP_KINDS else FLOOR


def _k(value: float | None) -> str:
    return "" if value is None else f"{value / 1000:,.0f}k"


def _change(value: float | None, first: float | None) -> str:
    return "" if value is None or not first else f"{100 * (value / first - 1):+.1f}%"


def _sweep(
    measure: Measure,
    kinds: Sequence[str],
    n: int,
    warmup: int,
    scenarios: Sequence[calls.Scenario],
) -> list[dict[str, dict[str, Any]]]:
    return [measure(CONFIGS, kinds, n, max(warmup, scenario.labels), scenario) for scenario in scenarios]


def _stream_sweep(measure: Measure, n: int, warmup: int) -> list[dict[str, dict[str, Any]]]:
    """Long streams cost up to a billion instructions a call (the openai SDK parses each chunk into a
    model): fewer calls and one settling call for them; per-event costs average over their events."""
    return [
        measure(
            (BARE, OURS, FLOOR),
            STREAM_KINDS,
            max(2, n * EVENTS[0] // events),
            min(warmup, 10),
            calls.Scenario(events=events),
            settle=None if events == EVENTS[0] else 1,
        )
        for events in EVENTS
    ]


def measure_sweeps(measure: Measure, n: int, warmup: int) -> dict[str, list[dict[str, dict[str, Any]]]]:
    """Every sweep's instruction tables, in :data:`LABELS`, :data:`HELD`, :data:`EVENTS` order."""
    return {
        "labels": _sweep(measure, LABEL_KINDS, n, warmup, [calls.Scenario(labels=k) for k in LABELS]),
        "held": _sweep(measure, HELD_KINDS, n, warmup, [calls.Scenario(held=k) for k in HELD]),
        "streams": _stream_sweep(measure, n, warmup),
    }


def _rows(
    kinds: Sequence[str],
    values: Sequence[int],
    shown: Callable[[int], str],
    measured: Sequence[dict[str, dict[str, Any]]],
) -> list[str]:
    lines = []
    for kind in kinds:
        first_ours = first_floor = None
        for value, table in zip(values, measured, strict=True):
            rows = table[kind]
            ours, floor = _added(rows, OURS), _added(rows, _floor(kind))
            if first_ours is None:
                first_ours, first_floor = ours, floor
            bare = rows.get(BARE)
            lines.append(
                f"| {kind} | {shown(value)} | {_k(getattr(bare, 'per_call', None))} | {_k(ours)} | "
                f"{_change(ours, first_ours)} | {_k(floor)} | {_change(floor, first_floor)} |"
            )
    return lines


HEADER = [
    "| call kind | {what} | bare/call | ours added | ours vs first | floor added | floor vs first |",
    "|---|---:|---:|---:|---:|---:|---:|",
]


def _header(what: str) -> list[str]:
    return [HEADER[0].format(what=what), HEADER[1]]


def memory(
    configs: Sequence[str] = CONFIGS, kinds: Sequence[str] = HELD_KINDS, held: int = MEMORY_HELD, warmup: int = 20
) -> dict[str, dict[str, float]]:
    """``kind -> config -> bytes per held request`` (native runs: tracemalloc)."""
    found: dict[str, dict[str, float]] = {kind: {} for kind in kinds}
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    for config in configs:
        proc = subprocess.run(
            [
                sys.executable,
                str(HERE / "worker.py"),
                config,
                "--kinds",
                ",".join(kinds),
                "--memory",
                str(held),
                "--warmup",
                str(warmup),
            ],
            capture_output=True,
            text=True,
            env=environment,
            check=True,
        )
        for kind, result in json.loads(proc.stdout.strip().splitlines()[-1])["kinds"].items():
            if "bytes_per_held" in result:
                found[kind][config] = result["bytes_per_held"]
    return found


def tables(measure: Measure, n: int, warmup: int) -> list[str]:
    return render(measure_sweeps(measure, n, warmup), memory(), n)


def render(sweeps: dict[str, list[dict[str, dict[str, Any]]]], found: dict[str, dict[str, float]], n: int) -> list[str]:
    labels, held, streams = sweeps["labels"], sweeps["held"], sweeps["streams"]
    lines = [
        f"Windows of {n} and {2 * n} calls (streams of 100 and 1,000 events: 2 and 4, after one settling "
        "call); instructions per call, added = over bare's.",
        "",
        "Label cardinality (distinct model names the calls cycle through; the cap is 100):",
        "",
        *_header("model names"),
        *_rows(LABEL_KINDS, LABELS, str, labels),
        "",
        "Requests in flight while the measured calls run (the measured one included):",
        "",
        *_header("in flight"),
        *_rows(HELD_KINDS, HELD, lambda k: f"{k + 1:,}", held),
        "",
        "Stream length (events per stream):",
        "",
        *_header("events"),
        *_rows(STREAM_KINDS, EVENTS, lambda k: f"{k:,}", streams),
        "",
        "Per stream event (the slope from 10 to 1,000 events), added over bare's (target: ours ≤ "
        f"{PER_EVENT_TARGET}x the floor's):",
        "",
        "| call kind | bare/event | ours added/event | floor added/event | ours x floor |",
        "|---|---:|---:|---:|---:|",
    ]
    for kind in STREAM_KINDS:
        short, long = streams[0][kind], streams[-1][kind]
        span = EVENTS[-1] - EVENTS[0]
        slopes = {}
        for config in (BARE, OURS, FLOOR):
            if hasattr(short.get(config), "per_call") and hasattr(long.get(config), "per_call"):
                slopes[config] = (long[config].per_call - short[config].per_call) / span
        if len(slopes) == 3:
            ours, floor = slopes[OURS] - slopes[BARE], slopes[FLOOR] - slopes[BARE]
            # Below 1k an event the floor's slope is the long streams' noise (a few calls of up to 10^9 each).
            ratio = f"{ours / floor:.2f}x" if floor > 1000 else "the floor adds about nothing"
            lines.append(
                f"| {kind} | {slopes[BARE] / 1000:,.1f}k | {ours / 1000:,.1f}k | {floor / 1000:,.1f}k | {ratio} |"
            )
    lines += [
        "",
        f"Memory per request in flight ({MEMORY_HELD:,} held; tracemalloc, bytes still allocated), over bare's:",
        "",
        "| call kind | bare bytes/request | ours added | floor added |",
        "|---|---:|---:|---:|",
    ]
    for kind, rows in found.items():
        bare = rows.get(BARE)
        if bare is None:
            continue
        ours, floor = rows.get(OURS), rows.get(_floor(kind))
        lines.append(
            f"| {kind} | {bare:,.0f} | {'' if ours is None else f'{ours - bare:+,.0f}'} | "
            f"{'' if floor is None else f'{floor - bare:+,.0f}'} |"
        )
    return lines
