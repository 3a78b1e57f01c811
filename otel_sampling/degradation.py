"""Named degradations: a degraded state with a component, a reason, an owner and an expiry.

Seed essay "Graceful Degradation & Fallback": degraded mode is a named state with an exit, or it
becomes permanent. A host declares one around the code that runs degraded::

    with otel_sampling.degraded("search", reason="sources unavailable", owner="oncall-search",
                                expires_at="2026-12-01T00:00:00Z"):
        ...

or, for a state that outlives one block, enters and exits it explicitly::

    outage = otel_sampling.degraded("search", reason="index down", owner="oncall-search",
                                    expires_at=deadline).enter()
    ...
    outage.exit()

A degradation is process-wide while active: every span started anywhere in the process (through
the span processor the instrumentors install) and every log record carries
``degradation.mode=degraded`` and its reason, and every run open meanwhile is degraded. The
registry is guarded by a lock, so enter and exit are safe from any thread or asyncio task.

Metrics: ``degradation.active`` and ``degradation.expired`` (observable gauges: how many are
active, and how many are active past ``expires_at``, by component and reason) and
``degradation.transitions`` (enter and exit, by component: a flapping state shows as a rate).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from otel_sampling import api_instruments, names
from otel_sampling.labels import LABEL_MAX_LENGTH, clean

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_active: tuple[Degradation, ...] = ()  # replaced whole under the lock: readers need no lock
_enter_listeners: list[Callable[[Degradation], None]] = []  # runs.py marks the runs open at entry
_canary: ContextVar[bool] = ContextVar("otel_sampling_canary", default=False)
# (component, reason) of every degradation entered so far: the gauges read 0 for those that have
# exited, also when one entered and exited between two collections. Bounded like a label set.
MAX_KNOWN = 1000
# Reasons, and degradations, named on each span and log record: a host that leaks thousands of
# active degradations must not put thousands of strings on every span.
MAX_STAMPED = 16
_known: dict[tuple[str, str], None] = {}


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
    :func:`otel_sampling.labels.clean` leaves them: printable characters only, at most
    ``labels.LABEL_MAX_LENGTH`` (128).

    Raises:
        TypeError: a value of the wrong type.
        ValueError: an empty string, or an ``expires_at`` without a UTC offset or not ISO 8601.
    """

    __slots__ = ("component", "reason", "owner", "expires_at")

    def __init__(self, component: str, reason: str, owner: str, expires_at: dt.datetime | str) -> None:
        self.component = _text("component", component)
        self.reason = _text("reason", reason)
        self.owner = _text("owner", owner)
        self.expires_at = _instant(expires_at)

    @property
    def active(self) -> bool:
        return self in _active

    def expired(self, now: dt.datetime | None = None) -> bool:
        """True when ``now`` (default: the current UTC time) is past ``expires_at``."""
        return (now or _utcnow()) > self.expires_at

    def enter(self) -> Degradation:
        """Make this degradation active (again entering an active one does nothing); returns self.

        Not counted: the first :meth:`exit` ends it, also when several ``with`` blocks (or tasks)
        share this object; give each block its own ``degraded(...)`` when they may overlap.
        """
        global _active
        with _lock:
            if self in _active:
                return self
            _active = (*_active, self)
            if len(_known) < MAX_KNOWN:
                _known.setdefault((self.component, self.reason), None)
        _count_transition(self, names.DIRECTION_ENTER)
        for listener in tuple(_enter_listeners):
            try:
                listener(self)
            except Exception:
                logger.debug("otel-sampling: degradation listener failed", exc_info=True)
        return self

    def exit(self) -> None:
        """End this degradation (exiting one that is not active does nothing)."""
        global _active
        with _lock:
            if self not in _active:
                return
            _active = tuple(d for d in _active if d is not self)
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
        return (f"Degradation(component={self.component!r}, reason={self.reason!r}, owner={self.owner!r}, "
                f"expires_at={self.expires_at.isoformat()!r})")


def degraded(component: str, reason: str, owner: str, expires_at: dt.datetime | str) -> Degradation:
    """A named degradation: use it as ``with`` / ``async with`` block, or call ``.enter()`` / ``.exit()``.

    See :class:`Degradation` for the arguments and the errors raised.
    """
    return Degradation(component, reason, owner, expires_at)


def active_degradations() -> tuple[Degradation, ...]:
    """The degradations active now, in the order they were entered."""
    return _active


def active_reasons() -> tuple[str, ...]:
    """``degradation.reason`` values of the current state: every active degradation's reason
    (the first ``MAX_STAMPED`` distinct ones), plus ``canary`` inside :func:`canary`; empty when
    nothing is degraded."""
    active = _active
    if not active:  # the common case, on every span start and log record
        return (names.REASON_CANARY,) if _canary.get() else ()
    reasons = tuple(dict.fromkeys(d.reason for d in active))[:MAX_STAMPED]
    return (*reasons, names.REASON_CANARY) if _canary.get() else reasons


@contextmanager
def canary() -> Iterator[None]:
    """Mark the calls made in this block as deliberate canary traffic through the fallback.

    ``with otel_sampling.canary():`` (a plain ``with``, also inside ``async def``; not
    ``async with``) takes no arguments and raises nothing.

    Seed essay: an untested fallback does not exist, so a small share of real traffic goes
    through it on purpose. Inside the block, provider calls, and the sampling request whose
    callback is running, are degraded with ``degradation.reason=canary``, which keeps the
    fallback's quality and cost visible next to the primary's. Context-local (a
    :class:`contextvars.ContextVar`): other tasks and threads are not affected.
    """
    from otel_sampling import automatic  # the sampling request current in this context

    token = _canary.set(True)
    try:
        automatic.note_canary()
        yield
    finally:
        _canary.reset(token)


def in_canary() -> bool:
    """True inside a :func:`canary` block."""
    return _canary.get()


def on_enter(listener: Callable[[Degradation], None]) -> None:
    """Call ``listener(degradation)`` whenever a degradation is entered (errors are logged at debug)."""
    _enter_listeners.append(listener)


def observe(now: dt.datetime | None = None) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """(component, reason) -> how many are active, and how many of those are expired, for the
    gauges; every pair ever entered is present (0 once it has exited)."""
    now = now or _utcnow()
    with _lock:  # enter() may add to _known from another thread
        known, current = tuple(_known), _active
    active: dict[tuple[str, str], int] = dict.fromkeys(known, 0)
    expired: dict[tuple[str, str], int] = dict.fromkeys(known, 0)
    for degradation in current:
        key = (degradation.component, degradation.reason)
        active[key] = active.get(key, 0) + 1
        if degradation.expired(now):
            expired[key] = expired.get(key, 0) + 1
    return active, expired


def _count_transition(degradation: Degradation, direction: str) -> None:
    try:
        telemetry = api_instruments.current()
        telemetry.degradation_transitions.add(1, {
            names.DEGRADATION_COMPONENT: telemetry.component_label.value(degradation.component),
            names.DEGRADATION_DIRECTION: direction,
        })
    except Exception:
        logger.debug("otel-sampling: could not count a degradation transition", exc_info=True)


def _text(what: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"degradation {what} must be a string, got {type(value).__name__}")
    text = clean(value, LABEL_MAX_LENGTH)  # a host string on every span: bounded and printable
    if not text.strip():
        raise ValueError(f"degradation {what} must not be empty")
    return text


def _instant(value: Any) -> dt.datetime:
    if isinstance(value, str):
        try:
            # Python 3.10 reads no trailing "Z"; 3.11 does.
            value = dt.datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value)
        except ValueError:
            raise ValueError(f"degradation expires_at is not ISO 8601: {clean(value, 64)!r}") from None
    if not isinstance(value, dt.datetime):
        raise TypeError(f"degradation expires_at must be a datetime or an ISO 8601 string, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("degradation expires_at needs a UTC offset (e.g. 2026-12-01T00:00:00Z)")
    try:
        return value.astimezone(dt.timezone.utc)
    except OverflowError:  # 9999-12-31T23:59:59-01:00 is past datetime.max in UTC
        raise ValueError(f"degradation expires_at is out of range: {value.isoformat()}") from None


def reasons_of(value: Any) -> tuple[str, ...]:
    """A ``degradation.reason`` attribute value as a tuple of strings, whatever another
    instrumentation put there (a string, a sequence, a number, a bool; None: ())."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)):
        return tuple(v if isinstance(v, str) else str(v) for v in value)
    return (str(value),)


def iso(instant: dt.datetime) -> str:
    """``instant`` (UTC) as ISO 8601 with a ``Z``, as ``degradation.expires_at`` carries it."""
    return instant.isoformat().replace("+00:00", "Z")


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)
