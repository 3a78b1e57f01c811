"""Drills (:func:`drill`): fail one model's provider calls on purpose, for a bounded window, so the
host's real fallback runs while the team watches.

An untested fallback does not exist. During a drill the provider wrappers (anthropic, openai)
make every call whose ``gen_ai.request.model`` is the drill's ``target_model`` fail before any
request leaves the process, with the exception the SDK itself raises for that failure
(``failure``: ``overloaded``, ``rate_limited`` or ``timeout``; ``docs/api.md`` "Drills" lists the
class per SDK). Calls to other models go out as usual, so the host's own fallback code is what
answers. Only when asked: an API call here, or a ``[[drills]]`` schedule in the policy file.

::

    with otel_sampling.drill("claude-outage", target_model="claude-sonnet-4-5", duration=600):
        ...                                   # the host's traffic, as usual

    exercise = otel_sampling.drill("claude-outage", target_model="claude-sonnet-4-5",
                                   duration=600, failure="rate_limited").start()
    ...
    exercise.stop()

While it runs, a drill is a named degradation (component: the drill's name, reason ``drill``,
owner ``owner``, expiring at the end of its window): every span started meanwhile carries
``degradation.mode=degraded``, ``degradation.reason=drill`` and ``otel_sampling.drill.name``,
the metric points of every sampling request and provider call that ends meanwhile
``degradation.mode=degraded`` and ``otel_sampling.drill.name`` (:func:`otel_sampling.state.drill_label`),
and ``degradation.active`` counts it.
``otel_sampling.drills`` counts each drill as it ends, by name and outcome (``completed``: its
window ran out; ``stopped``: stopped before; ``aborted``: ``uninstrument()`` or SIGTERM).

A drill never outlives its window: a call checks the clock before it is failed, and the
watchdog thread ends a drill whose window ran out with no call. It ends at once on any
instrumentor's ``uninstrument()``, and on SIGTERM: the first drill started from the main thread
installs a SIGTERM handler that ends every drill, then runs the handler that was there before
(the default one is re-raised, ``SIG_IGN`` stays ignored); a handler the host installs later
replaces ours, and the drill then ends with the process. Drills run process-wide (every thread
and task), are not inherited by a forked child (:mod:`otel_sampling.state`), and at most
``state.MAX_DRILLS`` (16) run at once.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import signal
import threading
from collections.abc import Sequence
from typing import Any

from otel_sampling import names, state
from otel_sampling.degradation import Degradation
from otel_sampling.metrics import host_text
from otel_sampling.rules.drills import window_at

logger = logging.getLogger(__name__)

#: The owner stamped on a drill's named degradation when none is given.
DEFAULT_OWNER = "otel-sampling drill"


class Drill:
    """One drill; not running until :meth:`start` (or the ``with`` block) starts it.

    Args:
        name: the drill's name (``"claude-outage"``), a non-empty string; a metric label
            (``otel_sampling.drill.name``), kept as :func:`otel_sampling.metrics.clean` leaves it
            (printable, at most 128 characters).
        target_model: the ``gen_ai.request.model`` whose calls fail, a non-empty string, matched
            exactly (``"claude-sonnet-4-5"`` does not match ``"claude-sonnet-4-5-20250929"``).
        duration: how long it runs once started: seconds (> 0, finite) or a
            :class:`datetime.timedelta`.
        failure: how the calls fail, one of ``names.DRILL_FAILURES``: ``"overloaded"`` (default),
            ``"rate_limited"``, ``"timeout"``.
        owner: who runs it, a non-empty string (default ``DEFAULT_OWNER``): ``degradation.owner``.

    Raises:
        TypeError: a value of the wrong type.
        ValueError: an empty string, a duration not above 0 or not finite, an unknown failure.
    """

    __slots__ = ("name", "target_model", "duration", "failure", "owner", "degradation")

    def __init__(
        self,
        name: str,
        *,
        target_model: str,
        duration: float | dt.timedelta,
        failure: str = names.DRILL_FAILURE_OVERLOADED,
        owner: str = DEFAULT_OWNER,
    ) -> None:
        self.name = host_text("drill name", name)
        self.target_model = host_text("drill target_model", target_model)
        self.duration = _seconds(duration)
        if not isinstance(failure, str):
            raise TypeError(f"drill failure must be a string, got {type(failure).__name__}")
        if failure not in names.DRILL_FAILURES:
            raise ValueError(f"drill failure must be one of {', '.join(names.DRILL_FAILURES)}, got {failure[:60]!r}")
        self.failure = failure
        self.owner = host_text("drill owner", owner)
        self.degradation: Degradation | None = None  # the named degradation of its last start

    @property
    def ends_at(self) -> dt.datetime | None:
        """When its window ends (its named degradation's ``expires_at``); None before its first start."""
        return self.degradation.expires_at if self.degradation is not None else None

    def _over(self, now: dt.datetime) -> bool:
        """True when its window has run out at ``now``."""
        return self.degradation is not None and now >= self.degradation.expires_at

    @property
    def running(self) -> bool:
        """True between :meth:`start` and its end (stop, window over, uninstrument, SIGTERM)."""
        return self in state.drills.running

    def start(self) -> Drill:
        """Start it now, for ``duration`` seconds; returns self. Starting a running drill does nothing.

        Raises:
            RuntimeError: ``state.MAX_DRILLS`` drills are running already.
        """
        registry = state.drills
        with registry.lock:
            if self in registry.running:
                return self
            if len(registry.running) >= state.MAX_DRILLS:
                raise RuntimeError(f"{state.MAX_DRILLS} drills are running already")
            ends_at = registry.clock() + dt.timedelta(seconds=self.duration)
            self.degradation = Degradation(self.name, names.REASON_DRILL, self.owner, ends_at)
            first = not registry.running
            registry.running = (*registry.running, self)
        self.degradation.enter()
        _install_sigterm_handler()
        if first:  # one sweep while any drill runs: the last one to end unregisters it
            state.watchdog.register(_sweep)
        return self

    def stop(self) -> None:
        """End it now (``stopped``; ``completed`` when its window had run out). Stopping a drill
        that is not running does nothing."""
        _end(self, names.DRILL_OUTCOME_COMPLETED if self._over(state.drills.clock()) else names.DRILL_OUTCOME_STOPPED)

    def __enter__(self) -> Drill:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def __aenter__(self) -> Drill:
        return self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return (
            f"Drill({self.name!r}, target_model={self.target_model!r}, duration={self.duration!r}, "
            f"failure={self.failure!r})"
        )


def drill(
    name: str,
    *,
    target_model: str,
    duration: float | dt.timedelta,
    failure: str = names.DRILL_FAILURE_OVERLOADED,
    owner: str = DEFAULT_OWNER,
) -> Drill:
    """A drill: use it as a ``with`` / ``async with`` block, or call ``.start()`` / ``.stop()``.

    See :class:`Drill` for the arguments and the errors raised.
    """
    return Drill(name, target_model=target_model, duration=duration, failure=failure, owner=owner)


def failure_for(model: Any) -> Drill | None:
    """The running drill that fails calls to ``model`` now (the first started), or None.

    A drill whose window ran out is ended here (``completed``) and fails nothing. Read by the
    provider wrappers on every call: without a running drill it is one tuple read.
    """
    running = state.drills.running
    if not running or not isinstance(model, str):
        return None
    now = state.drills.clock()
    found = None
    for candidate in running:
        if candidate._over(now):
            _end(candidate, names.DRILL_OUTCOME_COMPLETED)
        elif found is None and candidate.target_model == model:
            found = candidate
    return found


def follow_schedule(schedules: Sequence[Any]) -> None:
    """Start the scheduled drill whose window holds now, once per window (``[[drills]]`` entries:
    :class:`otel_sampling.policy.DrillSchedule`). Called by the provider wrappers before each call;
    nothing to do without a schedule."""
    if not schedules:
        return
    registry = state.drills
    now = registry.clock()
    for schedule in schedules:
        window = window_at(schedule.start, schedule.duration, schedule.every, now)
        if window is None:
            continue
        key = (schedule.name, window[0])
        with registry.lock:
            if key in registry.started_windows:
                continue
            if len(registry.started_windows) >= state.MAX_DRILLS * 64:  # a long-lived process: old windows go
                registry.started_windows.clear()
            registry.started_windows[key] = None
        scheduled = Drill(
            schedule.name,
            target_model=schedule.target_model,
            duration=(window[1] - now).total_seconds(),
            failure=schedule.failure,
        )
        try:
            scheduled.start()
        except RuntimeError:
            logger.debug("otel-sampling: too many drills running to start %r", schedule.name)


def stop_all(outcome: str = names.DRILL_OUTCOME_ABORTED) -> None:
    """End every running drill with ``outcome`` (``uninstrument()`` and SIGTERM call it)."""
    for running in state.drills.running:
        _end(running, outcome)


def _end(ended: Drill, outcome: str) -> None:
    registry = state.drills
    with registry.lock:
        if ended not in registry.running:
            return
        registry.running = tuple(d for d in registry.running if d is not ended)
        left = bool(registry.running)
    if ended.degradation is not None:
        ended.degradation.exit()
    if not left:
        state.watchdog.unregister(_sweep)
    try:
        telemetry = state.api_instruments()
        telemetry.drills.add(
            1, {names.DRILL_NAME: telemetry.drill_name_label.value(ended.name), names.DRILL_OUTCOME: outcome}
        )
    except Exception:
        logger.debug("otel-sampling: could not count a drill", exc_info=True)


def _sweep() -> None:
    """Watchdog sweep: end the drills whose window ran out without a call to check them."""
    now = state.drills.clock()
    for running in state.drills.running:
        if running._over(now):
            _end(running, names.DRILL_OUTCOME_COMPLETED)


def _install_sigterm_handler() -> None:
    """Once per process, from the main thread only (``signal.signal`` works nowhere else; so
    only one thread ever gets past the first check, and no lock is needed)."""
    if state.drills.sigterm_handler_installed or threading.current_thread() is not threading.main_thread():
        return
    try:
        previous = signal.getsignal(signal.SIGTERM)
        signal.signal(signal.SIGTERM, _sigterm_handler(previous))
        state.drills.sigterm_handler_installed = True
    except (ValueError, OSError, AttributeError):  # no SIGTERM here, or not the main interpreter
        logger.debug("otel-sampling: could not install the drills' SIGTERM handler", exc_info=True)


def _sigterm_handler(previous: Any) -> Any:
    def handler(signum: int, frame: Any) -> None:
        try:
            stop_all(names.DRILL_OUTCOME_ABORTED)
        except Exception:
            logger.debug("otel-sampling: could not end the drills on SIGTERM", exc_info=True)
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL or previous is None:  # None: set from outside Python; default it
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.raise_signal(signal.SIGTERM)
        # SIG_IGN: the host ignores SIGTERM, and so do we

    return handler


def _seconds(value: Any) -> float:
    if isinstance(value, dt.timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"drill duration must be seconds (a number) or a timedelta, got {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"drill duration must be above 0 seconds and finite, got {value!r}")
    return float(value)
