"""The demo's "what the fallback breaks" table, primary vs degraded, read from one scrape of the
host's ``/metrics`` (every counter starts at zero, so a value is its increase over the run).

Rows (the names of ``docs/telemetry.md``, "What the fallback breaks"): the model's tool calls and the ones it got
wrong (``otel_sampling.client.tool_calls``, ``otel_sampling.client.tool_call.errors``), the
structured-output requests that failed (``otel_sampling.client.structured_output.requests`` /
``.failures``), truncations (``otel_sampling.client.truncations``), the host's ``tools/call`` that
came back an error (``otel_sampling.host.tool_calls``), steps and tokens per completed task
(``agent.run.steps``, ``agent.run.tokens``, runs with outcome ``completed``), repeated tool calls
(``agent.run.repeated_tool_calls``) and cost per completed task (``agent.run.cost.usd`` over
``agent.runs`` completed). A row whose series the host did not export shows ``n/a``. The checks
hold the agent loop's tasks (``agent_loop.TASKS``) to what the scrape shows.

The per-task rows compare like for like: the runs of one name, the agent loop's
(``agent_loop.RUN_NAME``, by ``agent.run.name``), primary vs degraded, so steps, tokens and cost per
completed task show what the fallback does to that task; the scripted sampling scenario's runs are
other tasks and stay out. The per-call rows have no run name (their labels are bounded to mode and
model): every provider call and ``tools/call`` of the host.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

import agent_loop
from otel_sampling import names
from otel_sampling.mixin.five_numbers import RUN_COST, RUNS
from otel_sampling.mixin.prometheus_names import SCOPE_NAME_LABEL, label_name, metric_name

MODES = (names.MODE_PRIMARY, names.MODE_DEGRADED)
MODE, OUTCOME, TOKEN_TYPE = (
    label_name(n) for n in (names.DEGRADATION_MODE, names.AGENT_RUN_OUTCOME, names.GEN_AI_TOKEN_TYPE)
)
KIND = label_name(names.SAMPLING_VIOLATION_KIND)
RUN_NAME = label_name(names.AGENT_RUN_NAME)
TOOL_CALL_OUTCOME = label_name("otel_sampling.tool_call.outcome")


def _counter(name: str) -> str:
    return metric_name(name, "{call}", counter=True)  # a unit in braces adds no suffix


TOOL_CALLS = _counter("otel_sampling.client.tool_calls")
TOOL_CALL_ERRORS = _counter("otel_sampling.client.tool_call.errors")
STRUCTURED_REQUESTS = _counter("otel_sampling.client.structured_output.requests")
STRUCTURED_FAILURES = _counter("otel_sampling.client.structured_output.failures")
TRUNCATIONS = _counter("otel_sampling.client.truncations")
HOST_TOOL_CALLS = _counter("otel_sampling.host.tool_calls")
REPEATED = metric_name(names.METRIC_AGENT_RUN_REPEATED_TOOL_CALLS, names.UNIT_CALL, counter=True)
VIOLATIONS = metric_name(names.METRIC_SAMPLING_VIOLATIONS, names.UNIT_VIOLATION, counter=True)
STEPS = metric_name(names.METRIC_AGENT_RUN_STEPS, names.UNIT_CALL)
TOKENS = metric_name(names.METRIC_AGENT_RUN_TOKENS, names.UNIT_TOKEN)


def _samples(metrics_text: str) -> Iterable[tuple[str, dict[str, str], float]]:
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            if sample.labels.get(SCOPE_NAME_LABEL, names.SCOPE_NAME) == names.SCOPE_NAME:
                yield sample.name, sample.labels, sample.value


class Scrape:
    """Sums by mode of the series the table reads; ``seen``: the series present at all. The run
    series (steps, tokens, runs, cost) only of the runs named ``run_name``."""

    def __init__(self, metrics_text: str, run_name: str) -> None:
        self.sums: dict[tuple[str, str], float] = {}
        self.seen: set[str] = set()
        self.side_effect_violations = 0.0
        completed = (STEPS + "_sum", STEPS + "_count", TOKENS + "_sum", TOKENS + "_count", RUNS)
        for name, labels, value in _samples(metrics_text):
            mode = labels.get(MODE, "")
            if name in (*completed, RUN_COST) and labels.get(RUN_NAME) != run_name:
                continue  # another task: not compared with this one
            if name in completed:
                if labels.get(OUTCOME) != names.OUTCOME_COMPLETED:
                    continue
                if name.startswith(TOKENS) and name.endswith("_count") and labels.get(TOKEN_TYPE) != "input":
                    continue  # one point per run and token type: count the runs once
            elif name == HOST_TOOL_CALLS:
                if labels.get(TOOL_CALL_OUTCOME) == "ok":
                    continue
            elif name == VIOLATIONS:
                if labels.get(KIND) == names.VIOLATION_REPEATED_SIDE_EFFECT:
                    self.side_effect_violations += value
                continue
            elif name not in (
                TOOL_CALLS,
                TOOL_CALL_ERRORS,
                STRUCTURED_REQUESTS,
                STRUCTURED_FAILURES,
                TRUNCATIONS,
                REPEATED,
                RUN_COST,
            ):
                continue
            self.seen.add(name)
            self.sums[(name, mode)] = self.sums.get((name, mode), 0.0) + value

    def get(self, name: str, mode: str) -> float | None:
        return self.sums.get((name, mode), 0.0) if name in self.seen else None

    def per(self, numerator: str, denominator: str, mode: str) -> float | None:
        top, bottom = self.get(numerator, mode), self.get(denominator, mode)
        return top / bottom if top is not None and bottom else None


def _count(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f}"


def _of(part: float | None, whole: float | None) -> str:
    return "n/a" if part is None else f"{part:.0f}/{whole:.0f}" if whole is not None else f"{part:.0f}"


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.6f}"


def _mean(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def lines(metrics_text: str, done: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The table and its problems (what the agent loop drove that the scrape does not show)."""
    s = Scrape(metrics_text, agent_loop.RUN_NAME)
    per_call = [
        ("tool-call errors / tool calls", lambda m: _of(s.get(TOOL_CALL_ERRORS, m), s.get(TOOL_CALLS, m))),
        ("host tools/call not ok", lambda m: _count(s.get(HOST_TOOL_CALLS, m))),
        (
            "structured output failures / requests",
            lambda m: _of(s.get(STRUCTURED_FAILURES, m), s.get(STRUCTURED_REQUESTS, m)),
        ),
        ("truncations", lambda m: _count(s.get(TRUNCATIONS, m))),
        ("repeated tool calls", lambda m: _count(s.get(REPEATED, m))),
    ]
    per_task = [
        ("completed tasks", lambda m: _count(s.get(RUNS, m))),
        ("steps per completed task", lambda m: _mean(s.per(STEPS + "_sum", STEPS + "_count", m))),
        ("tokens per completed task", lambda m: _mean(s.per(TOKENS + "_sum", TOKENS + "_count", m))),
        ("cost per completed task (USD)", lambda m: _usd(s.per(RUN_COST, RUNS, m))),
    ]
    width = max(len(label) for label, _ in per_call + per_task) + 4
    out = [
        "What the fallback breaks, by mode".ljust(width) + "".join(m.rjust(12) for m in MODES),
        "  every provider call and tools/call of the host",
        *(("    " + label).ljust(width) + "".join(cell(m).rjust(12) for m in MODES) for label, cell in per_call),
        f"    repeated_side_effect violations: {s.side_effect_violations:.0f}",
        f"  the {agent_loop.RUN_NAME} task (runs named {agent_loop.RUN_NAME}, agent_loop.py)",
        *(("    " + label).ljust(width) + "".join(cell(m).rjust(12) for m in MODES) for label, cell in per_task),
    ]
    tasks = done.get("agent_tasks", [])
    degraded_tasks = sum(t.expected_mode == names.MODE_DEGRADED for t in agent_loop.TASKS)
    problems = []
    if [t.get("steps") for t in tasks] != [t.expected_steps for t in agent_loop.TASKS]:
        problems.append(f"agent loop tasks {tasks} did not take the steps {agent_loop.TASKS} drives")
    # The sampling scenario repeats tool calls of its own (a retried ticket in a live run); the agent
    # loop adds one repeat of its side-effect tool per degraded task, and none in a primary one.
    degraded_repeats = s.get(REPEATED, names.MODE_DEGRADED) or 0.0
    if degraded_repeats < degraded_tasks:
        problems.append(
            f"{degraded_repeats:.0f} repeated tool calls in degraded mode, the agent loop drove {degraded_tasks}"
        )
    if s.side_effect_violations != degraded_tasks:
        problems.append(f"{s.side_effect_violations:.0f} repeated_side_effect violations, expected {degraded_tasks}")
    # The task's own numbers: the steps each task took (agent_loop.TASKS), averaged by mode.
    for mode in MODES:
        driven = [t.expected_steps for t in agent_loop.TASKS if t.expected_mode == mode]
        expected = sum(driven) / len(driven) if driven else None
        seen = (s.get(RUNS, mode), s.per(STEPS + "_sum", STEPS + "_count", mode))
        if seen != (len(driven), expected):
            problems.append(
                f"{agent_loop.RUN_NAME} {mode}: (completed tasks, steps per task) {seen}, "
                f"the agent loop drove {(len(driven), expected)}"
            )
    for series, what in (
        (TOOL_CALL_ERRORS, "tool-call errors"),
        (TRUNCATIONS, "truncations"),
        (STRUCTURED_FAILURES, "structured output failures"),
    ):
        if series in s.seen and not (s.get(series, names.MODE_DEGRADED) and not s.get(series, names.MODE_PRIMARY)):
            problems.append(
                f"{what}: primary {s.get(series, names.MODE_PRIMARY)}, degraded {s.get(series, names.MODE_DEGRADED)}"
                " (the agent loop drives them on the fallback only)"
            )
    return out, problems
