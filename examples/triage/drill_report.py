"""What the demo's drill proved, read from a real Prometheus that scraped the live host while it ran.

The host (``host.py --checkpoints``) stops at the scenario's checkpoints; ``DrillWatch`` holds it
there until Prometheus has seen what the scenario drove so far (bounded polling, generous
deadlines: a busy machine is slow, never wrong):

* ``drill-starting`` (the live run's first step answered, the drill not started): a scrape after
  it and the rules evaluated after that, so that the drill's traffic is counted from there;
* ``drill-running`` (the drill's steps answered by the fallback, the drill still running): a scrape
  that shows the drill, a degraded-mode alert firing, and the rules evaluated after both;
* ``exit-step`` (a step of the exit answered): a scrape after it, so each one is seen on its own;
* ``drill-recovered`` (the drill stopped, the primary flapped and serves again): until the drill is
  out of ``drill_window``, so that no alert can fire on it any more (what the scenario runs after
  this is not the drill's), and the rules evaluated after that.

``lines`` then reads Prometheus (``ALERTS``, the recorded series, the raw counters, with
``query_range`` and instant queries at the marked times; the host's counts at a checkpoint at the
timestamp of a scrape taken while it was held there, never at a wall-clock mark) and says which drill alerts and which
degraded-mode alerts fired during or after the drill and why, the fallback's completion during the
drill, the time to recover and the drills counter; its problems are what the scenario is designed
to prove and Prometheus did not show:

1. no degraded-mode alert fires before the drill (too few requests for the traffic guard), and one
   (``DegradedShareHigh``) fires while it runs: the drill was noticed, ``DrillWithoutAlert`` stays quiet;
2. the fallback serves every request of the drill (completed, degraded, on the fallback model) while
   the drill fails each primary call with the SDK's overloaded error: ``DrillFallbackFailed`` never
   fires (it may be pending as the drill starts, before the first fallback completion is recorded,
   never as it ends);
3. after the stop the primary flaps (degraded requests after the drill) and then serves again
   within the hysteresis: ``DrillRecoveryMissing`` may be pending, never firing;
4. ``otel_sampling_drills_total`` counts the drill once, ``stopped`` (by the host, not its window).

The time to recover is reported, never checked: it is wall time on a shared machine.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.prometheus import PrometheusError, PrometheusServer, _instant, wait_until
from otel_sampling import names
from otel_sampling.mixin import MixinConfig
from otel_sampling.mixin import metrics as m
from otel_sampling.mixin.prometheus_names import label_name, metric_name
from otel_sampling.mixin.promql import counted, matchers
from otel_sampling.mixin.rules import DEGRADED_MODE_ALERTS, MODEL_ASKED, PREFIX, Recorded

DEADLINE_S = 180.0  # per wait: generous, the machine is busy; a wait that runs out is reported, not raised
STEP_S = 1.0  # query_range resolution: the scrape and evaluation interval of the demo's Prometheus
DRILLS = metric_name(names.METRIC_DRILLS, names.UNIT_DRILL, counter=True)
DRILL_NAME_LABEL, DRILL_OUTCOME_LABEL = label_name(names.DRILL_NAME), label_name(names.DRILL_OUTCOME)
DRILL_ALERTS = tuple(PREFIX + a for a in ("DrillWithoutAlert", "DrillFallbackFailed", "DrillRecoveryMissing"))
NOTICING_ALERTS = tuple(PREFIX + a for a in DEGRADED_MODE_ALERTS)
STARTING, RUNNING, RECOVERED = "drill-starting", "drill-running", "drill-recovered"  # scenario.CHECKPOINT_*


def drill_selector(drill_name: str) -> str:
    """The drill's window: its named degradation's ``degradation_active`` series."""
    return m.DEGRADATION_ACTIVE + "{" + matchers(**{m.REASON: names.REASON_DRILL, m.COMPONENT: drill_name}) + "}"


@dataclass
class DrillWatch:
    """Called with each checkpoint event of the host; returns once Prometheus has seen what it must
    (see the module docstring). ``marks``: wall time (epoch seconds) of each checkpoint as it
    arrived and as it was released (``<name>:released``); ``held``: the timestamp of the latest
    scrape before the release, taken while the host was held (its samples are the host's counts at
    the checkpoint: a scrape is stamped when it starts and reads the counts later, so a wall-time
    mark may fall before a sample that already holds what came after it); ``notes``: the waits that
    ran out; ``deadline_s``: the bound of each wait."""

    prom: PrometheusServer
    config: MixinConfig
    drill_name: str
    deadline_s: float = DEADLINE_S
    started: float = field(default_factory=time.time)
    marks: dict[str, float] = field(default_factory=dict)
    held: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __call__(self, event: dict[str, Any]) -> None:
        name = str(event.get("name"))
        self.marks[name] = time.time()
        self._wait(lambda: self._scraped_after(self.marks[name]), f"a scrape after the checkpoint {name!r}")
        drill = drill_selector(self.drill_name)
        if name == RUNNING:
            self._wait(lambda: self.prom.query(f"{drill} == 1"), "Prometheus to see the drill running")
            noticing = "|".join(NOTICING_ALERTS)
            self._wait(
                lambda: self.prom.query(f'ALERTS{{alertstate="firing", alertname=~"{noticing}"}}'),
                "a degraded-mode alert to fire during the drill",
            )
        elif name == RECOVERED:
            window = self.config.drill_window
            self._wait(
                lambda: not self.prom.query(f"max_over_time({drill}[{window}]) > 0"),
                f"the drill to leave drill_window ({window})",
            )
        if name in (STARTING, RUNNING, RECOVERED):
            try:
                self.prom.wait_for_rules(self.deadline_s)
            except PrometheusError as e:
                self.notes.append(str(e))
        # every target scraped since the checkpoint arrived: the oldest of their latest scrapes
        scraped = self.prom.query("min(timestamp(up))")
        if scraped:
            self.held[name] = float(scraped[0]["value"][1])
        self.marks[f"{name}:released"] = time.time()

    def _scraped_after(self, instant: float) -> bool:
        targets = self.prom.api("targets")["activeTargets"]
        return bool(targets) and all(t["health"] == "up" and _epoch(t["lastScrape"]) > instant for t in targets)

    def _wait(self, probe: Callable[[], Any], what: str) -> None:
        try:
            wait_until(probe, self.deadline_s, what)
        except PrometheusError as e:
            self.notes.append(str(e))


def _epoch(rfc3339: str) -> float:
    return _instant(rfc3339).timestamp()


Series = tuple[dict[str, str], list[tuple[float, float]]]


class Reader:
    """Instant and range queries over the demo's Prometheus, values as floats."""

    def __init__(self, prom: PrometheusServer, start: float, end: float) -> None:
        self.prom, self.start, self.end = prom, start, end

    def at(self, expr: str, instant: float) -> float | None:
        """The single value of ``expr`` at ``instant`` (None when it selects nothing)."""
        result = self.prom.api("query", query=expr, time=f"{instant:.3f}")["result"]
        return float(result[0]["value"][1]) if result else None

    def by(self, expr: str, instant: float, label: str) -> dict[str, float]:
        result = self.prom.api("query", query=expr, time=f"{instant:.3f}")["result"]
        return {r["metric"].get(label, ""): float(r["value"][1]) for r in result}

    def delta(self, expr: str, labels: tuple[str, ...], start: float, stop: float) -> dict[tuple[str, ...], float]:
        """How much ``sum by (labels) (expr)`` rose from ``start`` to ``stop``, by label values (a series
        absent at ``start`` counts from 0); only what rose."""

        def read(instant: float) -> dict[tuple[str, ...], float]:
            result = self.prom.api("query", query=f"sum by ({', '.join(labels)}) ({expr})", time=f"{instant:.3f}")
            return {tuple(x["metric"].get(k, "") for k in labels): float(x["value"][1]) for x in result["result"]}

        before, after = read(start), read(stop)
        return {k: v - before.get(k, 0.0) for k, v in after.items() if v - before.get(k, 0.0) > 0}

    def series(self, expr: str, start: float | None = None, end: float | None = None) -> list[Series]:
        """``query_range`` of ``expr`` (default: the whole run) at ``STEP_S``: (labels, [(time, value)])."""
        data = self.prom.api(
            "query_range",
            query=expr,
            start=f"{start or self.start:.3f}",
            end=f"{end or self.end:.3f}",
            step=f"{STEP_S}",
        )
        return [(r["metric"], [(float(t), float(v)) for t, v in r["values"]]) for r in data["result"]]

    def one(self, expr: str, start: float | None = None, end: float | None = None) -> list[tuple[float, float]]:
        found = self.series(expr, start, end)
        return found[0][1] if found else []


@dataclass
class AlertTimes:
    """When one alert was pending and firing (query_range samples of its ``ALERTS`` series)."""

    pending: list[float] = field(default_factory=list)
    firing: list[float] = field(default_factory=list)


def alert_times(reader: Reader) -> dict[str, AlertTimes]:
    found: dict[str, AlertTimes] = {}
    for labels, values in reader.series(f'ALERTS{{alertname=~"{PREFIX}.*"}}'):
        times = found.setdefault(labels["alertname"], AlertTimes())
        (times.firing if labels.get("alertstate") == "firing" else times.pending).extend(t for t, _ in values)
    for times in found.values():
        times.pending.sort()
        times.firing.sort()
    return found


def _span(instants: list[float], origin: float) -> str:
    return f"+{instants[0] - origin:.1f}s..+{instants[-1] - origin:.1f}s" if instants else "never"


@dataclass(frozen=True)
class Expected:
    """What the scenario drove (scenario.py), for the checks."""

    drill_name: str
    fallback_model: str
    primary_model: str
    drill_requests: int  # the drill steps: each one request, answered by the fallback
    flaps: int  # the steps after the stop on which the primary failed again (answered by the fallback)
    # error.type of the calls the drill fails: the anthropic SDK's OverloadedError carries the API's
    # own "overloaded_error" (docs/api.md "Drills")
    drill_error_type: str = "overloaded_error"


def lines(watch: DrillWatch, expected: Expected, end: float | None = None) -> tuple[list[str], list[str]]:
    """The drill report and its problems (see the module docstring)."""
    config, marks = watch.config, watch.marks
    reader = Reader(watch.prom, watch.started, end or time.time())
    out = [
        f"Drill report (Prometheus scraping the live host every {STEP_S:.0f}s; rules with short windows: "
        f"drill_window {config.drill_window}, drill_recovery_window {config.drill_recovery_window}, "
        f"drill_recovery_for {config.drill_recovery_for}, degraded_share_for {config.degraded_share_for})"
    ]
    problems = [f"drill report: timed out waiting: {note}" for note in watch.notes]
    if any(k not in watch.held for k in (STARTING, RUNNING, RECOVERED)):
        reached = f"reached: {sorted(marks)}; scraped while held: {sorted(watch.held)}"
        return out, [*problems, f"drill report: the host did not reach every checkpoint ({reached})"]

    # the drill window, as Prometheus saw it
    active = reader.one(f"max({drill_selector(expected.drill_name)})")
    on = [t for t, v in active if v >= 1]
    if not on:
        return out, [*problems, f"Prometheus never saw drill {expected.drill_name!r} running"]
    first_on, last_on = on[0], on[-1]
    off = next((t for t, v in active if t > last_on and v == 0), last_on + STEP_S)
    # before the drill: the host held at its checkpoint, everything so far scraped and evaluated
    before = marks[f"{STARTING}:released"]
    out.append(
        f"  drill {expected.drill_name!r} on {expected.primary_model}: seen running for "
        f"{last_on - first_on + STEP_S:.0f}s (from the first scrape that showed it, t=0), stopped by the "
        f"host at +{off - first_on:.1f}s"
    )

    # 1. noticed: a degraded-mode alert fires during the drill, none before it
    r = Recorded(config)
    alerts = alert_times(reader)
    share_before, requests_before = (
        reader.at(f"max({r.degraded_ratio})", before),
        reader.at(f"sum({r.requests})", before),
    )
    fired_before = [a for a in NOTICING_ALERTS if any(t < first_on for t in alerts.get(a, AlertTimes()).firing)]
    during = {
        a: [t for t in alerts.get(a, AlertTimes()).firing if first_on <= t <= off]
        for a in (*NOTICING_ALERTS, PREFIX + "DegradedModeEntered")
    }
    noticed = [a for a in NOTICING_ALERTS if during[a]]
    out.append(
        f"  before the drill: {requests_before or 0:.0f} sampling requests in {config.window}, degraded share "
        f"{_pct(share_before)} (traffic guard {config.min_requests} requests): degraded-mode alerts firing: "
        f"{', '.join(fired_before) or 'none'}"
    )
    for alert in (*NOTICING_ALERTS, PREFIX + "DegradedModeEntered"):
        if during[alert]:
            at = during[alert][0]
            detail = ""
            if alert == PREFIX + "DegradedShareHigh":
                share, requests = reader.at(f"max({r.degraded_ratio})", at), reader.at(f"sum({r.requests})", at)
                detail = (
                    f": degraded share {_pct(share)} > {config.degraded_share_threshold:.0%} over "
                    f"{requests or 0:.0f} requests >= {config.min_requests}, for {config.degraded_share_for}"
                )
            out.append(f"  fired during the drill: {alert} from +{at - first_on:.1f}s{detail}")
    if fired_before:
        problems.append(f"degraded-mode alerts {fired_before} fired before the drill: the drill is not what they saw")
    if not noticed:
        problems.append(f"none of {list(NOTICING_ALERTS)} fired during the drill: it went unnoticed")

    # 2. the fallback served: the requests and provider calls made during the drill, from the counts
    # of the host held before it to those of the host held with the drill's steps answered
    all_requests = m.SAMPLING_REQUESTS + config.selector()
    drill_from, drill_to = watch.held[STARTING], watch.held[RUNNING]
    served = reader.delta(all_requests, (m.MODE, m.ENDING, m.RESPONSE_MODEL), drill_from, drill_to)
    total = sum(served.values())
    fallback_done = sum(
        v
        for (mode, ending, model), v in served.items()
        if mode == names.MODE_DEGRADED and ending == names.ENDING_COMPLETED and model == expected.fallback_model
    )
    on_primary = matchers(**{m.REQUEST_MODEL: expected.primary_model})
    primary_calls = m.OPERATION_DURATION + "_count" + config.selector(on_primary)
    calls = reader.delta(primary_calls, (m.ERROR_TYPE,), drill_from, drill_to)
    completed = f"sum({r.drill_requests}{{{matchers(**{m.ENDING: names.ENDING_COMPLETED})}}})"
    asked = f"sum({r.drill_requests}{{{MODEL_ASKED}}})"  # as the alert counts: denials left out
    completion = [v for _, v in reader.one(f"({completed} or {asked} * 0) / {asked}", first_on, last_on)]
    served_text = ", ".join(f"{mode}/{ending}/{model} {v:.0f}" for (mode, ending, model), v in sorted(served.items()))
    calls_text = ", ".join(f"{error or 'ok'} {v:.0f}" for (error,), v in sorted(calls.items())) or "none"
    out.append(
        f"  fallback during the drill: {fallback_done:.0f}/{total:.0f} sampling requests completed in degraded "
        f"mode on {expected.fallback_model} (mode/ending/model: {served_text}); calls to "
        f"{expected.primary_model} by error type: {calls_text} (failed by the drill before leaving the process)"
    )
    lowest = min(completion) if completion else None
    out.append(
        f"  DrillFallbackFailed's condition during the drill: completion share over {config.window} "
        f"{_pct(lowest)} at its lowest (fires below {config.drill_completion_threshold:.0%}), "
        f"completed in degraded mode {fallback_done:.0f} (fires at 0)"
    )
    if total != expected.drill_requests or fallback_done != expected.drill_requests:
        problems.append(
            f"during the drill {fallback_done:.0f} of {total:.0f} sampling requests completed on the "
            f"fallback {expected.fallback_model}; the scenario drove {expected.drill_requests}"
        )
    if calls.get((expected.drill_error_type,), 0) != expected.drill_requests:
        problems.append(
            f"calls to {expected.primary_model} during the drill by error type {calls}: expected "
            f"{expected.drill_requests} failed as {expected.drill_error_type} by the drill"
        )

    # 3. the exit: the primary flaps, then serves; recovery within the hysteresis
    held_until = watch.held[RECOVERED]  # the host held, nothing served meanwhile (unless it failed)
    degraded_now = m.SAMPLING_REQUESTS + config.selector(matchers(**{m.MODE: names.MODE_DEGRADED}))
    primary_now = m.SAMPLING_REQUESTS + config.selector(matchers(**{m.MODE: names.MODE_PRIMARY}))
    degraded = reader.one(f"sum({degraded_now})", last_on, held_until)
    primary = reader.one(f"sum({primary_now})", last_on, held_until)
    flaps = (degraded[-1][1] - degraded[0][1]) if degraded else 0.0
    # back on the primary: the first instant from which neither count changes again before the checkpoint
    # (the flaps served degraded, the steady steps on the primary, all scraped)
    last_degraded = next((t for t, v in degraded if v == degraded[-1][1]), off) if degraded else off
    back = None
    if primary and primary[-1][1] > primary[0][1]:  # the primary served after the stop
        back = next((t for t, v in primary if t >= last_degraded and v == primary[-1][1]), None)
    window_requests = reader.one(f"sum({counted(degraded_now, config.drill_recovery_window)})", off, held_until)
    cleared = next((t for t, v in window_requests if t > last_degraded and v == 0), None)
    served_as = _changes(degraded, names.MODE_DEGRADED) + _changes(primary, names.MODE_PRIMARY)
    sequence = ", ".join(_runs(sorted(served_as), off)) or "nothing"
    out.append(
        f"  exit, as Prometheus saw it after the stop: {sequence}; {flaps:.0f} requests served degraded "
        f"(the primary flapping); mode back to primary "
        + (f"+{back - off:.1f}s" if back else "never")
        + f" after the stop (time to recover; scrape resolution {STEP_S:.0f}s); degraded requests in the last "
        f"{config.drill_recovery_window} back to 0 " + (f"at +{cleared - off:.1f}s" if cleared else "never")
    )
    if flaps != expected.flaps:
        problems.append(
            f"{flaps:.0f} requests served degraded after the drill; the scenario drove {expected.flaps} "
            "(the primary flapping)"
        )
    if back is None:
        problems.append("after the drill Prometheus never saw the primary serve again")

    # the drill alerts, and why
    for alert in DRILL_ALERTS:
        times = alerts.get(alert, AlertTimes())
        state = "FIRED" if times.firing else ("pending only" if times.pending else "quiet")
        why = {
            PREFIX + "DrillWithoutAlert": "degraded-mode alerts firing during the drill: "
            + (", ".join(noticed) or "none"),
            PREFIX + "DrillFallbackFailed": f"pending {_span(times.pending, first_on)}, for "
            f"{config.drill_fallback_for}; "
            + (
                "the fallback served the drill's requests" if fallback_done else "no request completed in degraded mode"
            ),
            PREFIX + "DrillRecoveryMissing": f"pending {_span(times.pending, off)} after the stop, for "
            f"{config.drill_recovery_for} (the hysteresis)",
        }[alert]
        out.append(f"  {alert}: {state} (firing {_span(times.firing, first_on)}); {why}")
        if times.firing:
            problems.append(f"{alert} fired on the demo's drill")
    # Pending at the start of a drill is no failure: until the first fallback completion is recorded the
    # fallback has not served yet (its `for` absorbs that); still pending as the drill ends is one.
    if last_on in alerts.get(PREFIX + "DrillFallbackFailed", AlertTimes()).pending:
        problems.append(f"{PREFIX}DrillFallbackFailed was still pending as the drill ended: its condition held")

    # 4. the drills counter
    # read while the host was still held (once it exits its series go stale)
    counts = reader.by(
        f'sum by ({DRILL_OUTCOME_LABEL}) ({DRILLS}{{{DRILL_NAME_LABEL}="{expected.drill_name}"}})',
        watch.held[RECOVERED],
        DRILL_OUTCOME_LABEL,
    )
    out.append(f"  {DRILLS} by outcome: {', '.join(f'{k} {v:.0f}' for k, v in sorted(counts.items())) or 'none'}")
    if counts != {names.DRILL_OUTCOME_STOPPED: 1.0}:
        problems.append(f"{DRILLS} for {expected.drill_name!r} is {counts}, expected stopped 1 (the host stopped it)")
    return out, problems


def _changes(values: list[tuple[float, float]], what: str) -> list[tuple[float, str]]:
    """(instant, what) for each sample at which the count rose."""
    return [(t, what) for (_, before), (t, v) in itertools.pairwise(values) if v > before]


def _runs(changes: list[tuple[float, str]], origin: float) -> list[str]:
    """``mode +t`` for each change, consecutive changes of one mode as ``mode +t1..+t2 (n scrapes)``."""
    groups: list[list[tuple[float, str]]] = []
    for change in changes:
        if groups and groups[-1][-1][1] == change[1]:
            groups[-1].append(change)
        else:
            groups.append([change])
    return [
        f"{g[0][1]} +{g[0][0] - origin:.1f}s"
        + (f"..+{g[-1][0] - origin:.1f}s ({len(g)} scrapes)" if len(g) > 1 else "")
        for g in groups
    ]


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"
