"""Named degradations (:func:`degraded`) and canary traffic (:func:`canary`): the public API of degraded mode.

A named degradation is a degraded state with a component, a reason, an owner and an expiry.

Degraded mode is a named state with an exit, or it becomes permanent. A host declares one around
the code that runs degraded::

    with otel_sampling.degraded("search", reason="sources unavailable", owner="oncall-search",
                                expires_at="2026-12-01T00:00:00Z"):
        ...

or, for a state that outlives one block, enters and exits it explicitly::

    outage = otel_sampling.degraded("search", reason="index down", owner="oncall-search",
                                    expires_at=deadline).enter()
    ...
    outage.exit()

A degradation is process-wide while active: every span started on a tracer provider the
instrumentors use (through the span processor they install) and every log record carries
``degradation.mode=degraded`` and its reason, and every run open meanwhile is degraded. The
registry (:mod:`otel_sampling.state`) is guarded by a lock, so enter and exit are safe from any
thread or asyncio task.

Metrics: ``degradation.active`` and ``degradation.expired`` (observable gauges: how many are
active, and how many are active past ``expires_at``, by component and reason) and
``degradation.transitions`` (enter and exit, by component: a flapping state shows as a rate).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from otel_sampling import instants, names, state
from otel_sampling.metrics import host_text
from otel_sampling.records import run as run_records

logger = logging.getLogger(__name__)


class Degradation:
    """One named degradation; not active until :meth:`enter` (or the ``with`` block) starts it.

    Args:
        component: what runs degraded (``"search"``), a non-empty string; a metric label.
        reason: why (``"sources unavailable"``), a non-empty string; a metric label and the
            ``degradation.reason`` of every span started while it is active.
        owner: who answers for it (a team or person), a non-empty string; never a metric label,
            stamped on spans started while it is active (``degradation.owner``, as
            ``expires_at`` is as ``degradation.expires_at``).
        expires_at: when it should be over: an aware :class:`datetime.datetime` or an ISO 8601
            string with an offset (``"2026-12-01T00:00:00Z"``). Past it, the degradation counts
            in ``degradation.expired`` until it exits.

    The three strings go on every span and log record while it is active, so they are kept as
    :func:`otel_sampling.metrics.clean` leaves them: printable characters only, at most
    ``labels.LABEL_MAX_LENGTH`` (128).

    Raises:
        TypeError: a value of the wrong type.
        ValueError: an empty string, or an ``expires_at`` without a UTC offset or not ISO 8601.
    """

    __slots__ = ("component", "reason", "owner", "expires_at")

    def __init__(self, component: str, reason: str, owner: str, expires_at: dt.datetime | str) -> None:
        self.component = host_text("degradation component", component)
        self.reason = host_text("degradation reason", reason)
        self.owner = host_text("degradation owner", owner)
        self.expires_at = instants.parse(expires_at, "degradation expires_at")

    def expired(self, now: dt.datetime | None = None) -> bool:
        """True when ``now`` (default: the current UTC time) is past ``expires_at``."""
        return (now or dt.datetime.now(dt.timezone.utc)) > self.expires_at

    def enter(self) -> Degradation:
        """Make this degradation active (again entering an active one does nothing); returns self.

        Not counted: the first :meth:`exit` ends it, also when several ``with`` blocks (or tasks)
        share this object; give each block its own ``degraded(...)`` when they may overlap.
        """
        if not state.activate(self):
            return self
        _count_transition(self, names.DIRECTION_ENTER)
        try:
            run_records.mark_open_runs_degraded(self.reason)
        except Exception:
            logger.debug("otel-sampling: could not mark the open runs degraded", exc_info=True)
        return self

    def exit(self) -> None:
        """End this degradation (exiting one that is not active does nothing)."""
        if not state.deactivate(self):
            return
        _count_transition(self, names.DIRECTION_EXIT)

    def __enter__(self) -> Degradation:
        return self.enter()

    def __exit__(self, *exc_info: object) -> None:
        self.exit()

    async def __aenter__(self) -> Degradation:
        return self.enter()

    async def __aexit__(self, *exc_info: object) -> None:
        self.exit()

    def __repr__(self) -> str:
        return (
            f"Degradation(component={self.component!r}, reason={self.reason!r}, owner={self.owner!r}, "
            f"expires_at={self.expires_at.isoformat()!r})"
        )


def degraded(component: str, reason: str, owner: str, expires_at: dt.datetime | str) -> Degradation:
    """A named degradation: use it as ``with`` / ``async with`` block, or call ``.enter()`` / ``.exit()``.

    See :class:`Degradation` for the arguments and the errors raised.
    """
    return Degradation(component, reason, owner, expires_at)


@contextmanager
def canary() -> Iterator[None]:
    """Mark the calls made in this block as deliberate canary traffic through the fallback.

    ``with otel_sampling.canary():`` (a plain ``with``, also inside ``async def``; not
    ``async with``) takes no arguments and raises nothing.

    An untested fallback does not exist, so a small share of real traffic goes through it on
    purpose. Inside the block, provider calls, and the sampling request whose
    callback is running, are degraded with ``degradation.reason=canary``, which keeps the
    fallback's quality and cost visible next to the primary's. Context-local (a
    :class:`contextvars.ContextVar`): other tasks and threads are not affected.
    """
    token = state.canary.set(True)
    try:
        request = state.current_request.get()
        if request is not None:
            request.note_canary()
        yield
    finally:
        state.canary.reset(token)


def _count_transition(degradation: Degradation, direction: str) -> None:
    try:
        telemetry = state.api_instruments()
        telemetry.degradation_transitions.add(
            1,
            {
                names.DEGRADATION_COMPONENT: telemetry.component_label.value(degradation.component),
                names.DEGRADATION_DIRECTION: direction,
            },
        )
    except Exception:
        logger.debug("otel-sampling: could not count a degradation transition", exc_info=True)
