"""Process-wide mutable state that several layers share, below the records that use it.

It imports no record: the context variables are typed by what their readers call (the protocols
below), not by the records that set them. State that one concept owns sits with that concept:
the open runs and the explicit run in :mod:`otel_sampling.records.run`, the MCP connections and
tool calls in flight in :mod:`otel_sampling.instrumentation._mcp_connections`, the server's pending table in
:mod:`otel_sampling.instrumentation.mcp_server`, the digests of provenance in
:mod:`otel_sampling.provenance`. What is here:

* the named degradations active now, and every ``(component, reason)`` pair entered so far (the
  gauges report 0 for those that exited): :func:`activate`, :func:`deactivate`,
  :func:`active_degradations`, :func:`active_reasons`, :func:`degradation_counts`;
* the drills running now, the scheduled windows already started and the clock they read
  (:data:`drills`, written by :mod:`otel_sampling.drills`);
* the context variables: the sampling request whose callback runs here (:data:`current_request`),
  the provider call being sent (:data:`current_call`), the canary flag (:data:`canary`);
* the API instruments bound by the most recent ``instrument()`` (:func:`bind_api`,
  :func:`api_instruments`);
* the watchdog thread that sweeps pending requests for stalls (:data:`watchdog`), the host-side
  ledger the API's grants go to (:func:`bind_host_ledger`), the ``otel_sampling.sampling.in_flight`` counts
  per meter provider (:func:`in_flight_store`);
* how many instrumentors are instrumented (:func:`hooks_enabled`: the span processor and log
  fields run while one is), the span processor of each tracer provider and the log record factory;
* the request fingerprint's key of this process (:func:`fingerprint_key`), used when
  ``OTEL_SAMPLING_FINGERPRINT_KEY`` names no shared one;
* whether the host has called ``otel_sampling.disclose()`` in this process
  (:func:`note_disclosure_call`, :func:`disclosure_called`): a host that never does is not paged
  for silent incidents.

Not here: the sets that keep a log message from repeating (``settings``, ``content``, unpriced
models in :mod:`otel_sampling.records.provider_call`, the stdio trap's warnings in
:mod:`otel_sampling.instrumentation._stdio_trap`); they change no telemetry. Nor the price
source's look-up cache (:mod:`otel_sampling.price_source`): a bounded memo of genai-prices' fixed
data, the same answer with or without it.

Locks: the degradation registry has one; readers of the active tuple
need none (it is replaced whole). Every lock comes from :func:`otel_sampling.locks.new`.

After ``fork()`` (gunicorn ``--preload``, uWSGI, Celery prefork, ``multiprocessing`` with the
"fork" start method) only the forking thread goes on in the child. One handler, registered here
with ``os.register_at_fork``, runs in the child before ``fork()`` returns there, in this order:

1. every lock of the package is unlocked (each is made by :func:`otel_sampling.locks.new`): one
   that another parent thread held at fork time would otherwise never be released;
2. every store registered with :func:`forget_after_fork` forgets what it holds of the parent's
   pending requests: the stall watch, the server's 2026-07-28 table, the in-flight counts. Those
   requests end in the parent (their spans, metric points and retries are the parent's), so the
   child neither reports them stalled or ``unanswered`` nor counts them in flight;
3. the watchdog thread is started again when it has sweeps (the parent's is not running in the
   child).

A running drill is not inherited: :data:`drills` forgets it (and its named degradation).
What outlives a request stays as the parent left it: the degradations, the open runs, the bound
instruments, request identities, failover memory and whether ``disclose()`` was called (the child
runs the same host code). A child that goes on running the parent's
event loop (not a prefork server: they fork before serving) ends the parent's requests there
too, without their stall reports and with ``otel_sampling.sampling.in_flight`` below 0 until they all end.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import threading
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, NamedTuple, Protocol

from opentelemetry import metrics, trace
from opentelemetry._logs import LoggerProvider

from otel_sampling import locks, names
from otel_sampling.metrics import SAMPLING_IN_FLIGHT, ApiInstruments, InFlight, Instruments, create
from otel_sampling.rules.verdict import CallSummary, CallVerdict, named_reasons
from otel_sampling.settings import Settings

logger = logging.getLogger(__name__)


class RequestScope(Protocol):
    """What a sampling request in progress offers the calls and the API inside its callback
    (:class:`otel_sampling.records.sampling.SamplingRecord`)."""

    def on_call(self, call: CallSummary) -> CallVerdict: ...
    def note_canary(self) -> None: ...
    def grant_context(self, scope: str) -> None: ...


class CallInFlight(Protocol):
    """A provider call whose SDK request is being sent (:class:`otel_sampling.records.provider_call.ProviderCall`).

    ``handles_upstream``: its adapter puts the trace context on the request a client library
    sends upstream through another SDK, and reads the served model from its answer (LiteLLM)."""

    handles_upstream: bool

    def note_served_model(self, model: str) -> None: ...


class NamedDegradation(Protocol):
    """An active named degradation as the registry reads it (:class:`otel_sampling.degradation.Degradation`)."""

    @property
    def component(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def owner(self) -> str: ...
    @property
    def expires_at(self) -> dt.datetime: ...
    def expired(self, now: dt.datetime) -> bool: ...


class HostLedger(Protocol):
    """The host-side ledger the API's grants go to (:class:`otel_sampling.records.ledger.Ledger`)."""

    @property
    def instruments(self) -> Instruments: ...
    def note_grant(self, server: str) -> None: ...
    def last_ending(self, server: str) -> str | None: ...


# ---------------------------------------------------------------------- context variables
#: The sampling request whose host callback is running in this context (set by the record).
current_request: ContextVar[RequestScope | None] = ContextVar("otel_sampling_current_request", default=None)
#: The provider call whose SDK request is being sent in this context (set by the call while the SDK
#: sends it and parses its response).
current_call: ContextVar[CallInFlight | None] = ContextVar("otel_sampling_current_call", default=None)
#: True inside ``otel_sampling.canary()``.
canary: ContextVar[bool] = ContextVar("otel_sampling_canary", default=False)

# ---------------------------------------------------------------------- named degradations
#: (component, reason) pairs remembered for the gauges; bounded like a label set.
MAX_KNOWN = 1000
#: Reasons, and degradations, named on each span and log record: a host that leaks thousands of
#: active degradations must not put thousands of strings on every span.
MAX_STAMPED = 16

_degradations_lock = locks.new()
_active: tuple[NamedDegradation, ...] = ()  # replaced whole under the lock: readers need no lock
#: True while no named degradation is active (``not _active``): the span processor reads it on every
#: span start and asks for :func:`active_reasons` only when something is active or a canary runs.
calm = True
_known: dict[tuple[str, str], None] = {}


def activate(degradation: NamedDegradation) -> bool:
    """Add ``degradation`` to the active ones; False when it already was."""
    global _active, calm
    with _degradations_lock:
        if degradation in _active:
            return False
        _active = (*_active, degradation)
        calm = False
        if len(_known) < MAX_KNOWN:
            _known.setdefault((degradation.component, degradation.reason), None)
    return True


def deactivate(degradation: NamedDegradation) -> bool:
    """Remove ``degradation`` from the active ones; False when it was not active."""
    global _active, calm
    with _degradations_lock:
        if degradation not in _active:
            return False
        _active = tuple(d for d in _active if d is not degradation)
        calm = not _active
    return True


def active_degradations() -> tuple[NamedDegradation, ...]:
    """The named degradations active now, in the order they were entered."""
    return _active


def active_reasons() -> tuple[str, ...]:
    """``degradation.reason`` values of the state around the caller: every active degradation's
    reason (the first ``MAX_STAMPED`` distinct ones), plus ``canary`` inside a canary block;
    empty when nothing is degraded. Read on every span start and log record."""
    active = _active
    if not active and not canary.get():  # the common case
        return ()
    return named_reasons((d.reason for d in active), canary.get(), MAX_STAMPED)


def degradation_counts(now: dt.datetime | None = None) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """(component, reason) -> how many are active, and how many of those are past ``expires_at``
    at ``now`` (default: the current UTC time); every pair ever entered is present (0 once exited)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    with _degradations_lock:
        known, current = tuple(_known), _active
    active: dict[tuple[str, str], int] = dict.fromkeys(known, 0)
    expired: dict[tuple[str, str], int] = dict.fromkeys(known, 0)
    for degradation in current:
        key = (degradation.component, degradation.reason)
        active[key] = active.get(key, 0) + 1
        if degradation.expired(now):
            expired[key] = expired.get(key, 0) + 1
    return active, expired


# ---------------------------------------------------------------------- drills
#: Drills running at once (each one is a named degradation too, so a leak must stay small).
MAX_DRILLS = 16


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class DrillRegistry:
    """The drills running now (:mod:`otel_sampling.drills`), the scheduled windows already
    started (a window runs its drill once, also when stopped early), and the clock drills read.

    ``running`` is replaced whole under :attr:`lock`: the provider wrappers read it without one
    on every call. After ``fork()`` the child forgets both (:meth:`forget`): a drill is an
    exercise of the process that started it, watched for its window; a prefork worker does not
    carry its master's drill, and a ``[[drills]]`` schedule starts its window again in the
    child (the schedule is configuration every process reads).
    """

    __slots__ = ("lock", "running", "started_windows", "clock", "sigterm_handler_installed", "__weakref__")

    def __init__(self) -> None:
        self.lock = locks.new()
        self.running: tuple[Any, ...] = ()
        self.started_windows: dict[tuple[str, dt.datetime], None] = {}
        #: ``() -> aware datetime``: when now is for every drill (tests inject their own).
        self.clock: Callable[[], dt.datetime] = _utc_now
        #: The drills' SIGTERM handler is in place (once per process; a forked child keeps the
        #: handler, so :meth:`forget` keeps this too).
        self.sigterm_handler_installed = False

    def forget(self) -> None:
        """In a forked child: no drill is running, no window started (nothing is counted)."""
        global _active, calm
        running, self.running = self.running, ()
        self.started_windows.clear()
        degradations = {id(drill.degradation) for drill in running}
        _active = tuple(d for d in _active if id(d) not in degradations)
        calm = not _active


drills = DrillRegistry()


def drill_label() -> dict[str, str]:
    """``{"otel_sampling.drill.name": name}`` while a drill runs (the first one started; the name
    bounded like every label), else ``{}``: what every metric point made during a drill carries,
    so a rule can count what happened inside it."""
    running = drills.running
    if not running:
        return {}
    return {names.DRILL_NAME: api_instruments().drill_name_label.value(running[0].name)}


class Around(NamedTuple):
    """The process state around a record at one instant, read in one call (:func:`around`)."""

    hooked: bool  #: :func:`hooks_enabled`
    reasons: tuple[str, ...]  #: :func:`active_reasons`
    canary: bool  #: inside ``otel_sampling.canary()``
    drill: dict[str, str]  #: :func:`drill_label`


def around() -> Around:
    """What a record reads of the process at its start or its end, in one call."""
    in_canary = bool(canary.get())
    if calm and not in_canary and not drills.running:  # the common case: nothing degraded around it
        return Around(hooked, (), False, {})
    return Around(hooked, active_reasons(), in_canary, drill_label())


# ---------------------------------------------------------------------- API instruments
_api_lock = locks.new()
_api: ApiInstruments | None = None


def bind_api(
    settings: Settings,
    tracer_provider: trace.TracerProvider | None = None,
    meter_provider: metrics.MeterProvider | None = None,
    logger_provider: LoggerProvider | None = None,
) -> ApiInstruments:
    """Make the public API record through these providers (every ``instrument()`` calls it).
    Binding again to the same providers keeps the existing set, so the observable gauges are
    registered once per meter provider."""
    global _api
    with _api_lock:
        bound = _api
        if (
            bound is None
            or bound.tracer_provider is not tracer_provider
            or bound.meter_provider is not meter_provider
            or bound.logger_provider is not logger_provider
        ):
            _api = bound = ApiInstruments(
                settings, degradation_counts, tracer_provider, meter_provider, logger_provider
            )
        return bound


def api_instruments() -> ApiInstruments:
    """The bound API instruments; before any ``instrument()``, a set on the global providers."""
    bound = _api
    return bound if bound is not None else bind_api(Settings())


# ---------------------------------------------------------------------- instrumentors
_users_lock = locks.new()
_users = 0  # instrumentors currently instrumented
#: True while at least one instrumentor is instrumented (``_users > 0``): read on every span start
#: and end, so a plain value rather than a call.
hooked = False
processors_lock = locks.new()
#: tracer provider -> the span processor installed on it (once per provider however many instrumentors ask)
span_processors: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


class LogFields:
    """The log record factory the log fields installed, and the one it wraps."""

    __slots__ = ("previous", "factory", "enabled")

    def __init__(self) -> None:
        self.previous: Any = None
        self.factory: Any = None
        self.enabled = False


log_fields = LogFields()


def log_record_factory(previous: Callable[..., logging.LogRecord]) -> Callable[..., logging.LogRecord]:
    """A log record factory wrapping ``previous`` that puts ``degradation.mode`` and
    ``degradation.reason`` (the active reasons, comma-separated) on every record made while degraded
    and :data:`log_fields` is enabled (:mod:`otel_sampling.log_fields` installs it)."""

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if log_fields.enabled:
            try:
                reasons = active_reasons()
                if reasons:
                    record.__dict__[names.DEGRADATION_MODE] = names.MODE_DEGRADED
                    record.__dict__[names.DEGRADATION_REASON] = ",".join(reasons)
            # never lose a log record to our own failure; logging that failure would re-enter this factory
            except Exception:  # noqa: S110, BLE001
                pass
        return record

    return factory


def hooks_enabled() -> bool:
    """True while at least one instrumentor is instrumented (the span processor and log fields work)."""
    return hooked


def add_user(install_hooks: Callable[[], None]) -> None:
    """One more instrumentor is instrumented; the first one calls ``install_hooks``."""
    global _users, hooked
    with _users_lock:
        _users += 1
        hooked = True
        if _users == 1:
            install_hooks()


def remove_user(uninstall_hooks: Callable[[], None]) -> None:
    """One instrumentor was uninstrumented; the last one calls ``uninstall_hooks``."""
    global _users, hooked
    with _users_lock:
        if _users == 0:
            return
        _users -= 1
        hooked = _users > 0
        if _users == 0:
            uninstall_hooks()


# ---------------------------------------------------------------------- the fingerprint key
#: Bytes of the key made for this process (the SHA-256 output size: RFC 2104 section 3).
FINGERPRINT_KEY_BYTES = 32
# Made at import: a secret never written anywhere, so fingerprints made with it cannot be matched
# against guesses by whoever reads the trace backend, nor compared with another process's.
_fingerprint_key = os.urandom(FINGERPRINT_KEY_BYTES)


def fingerprint_key() -> bytes:
    """The HMAC key of request fingerprints in this process when no shared key is configured:
    ``FINGERPRINT_KEY_BYTES`` bytes from ``os.urandom``, the same for the life of the process (a
    child forked from it inherits it with the rest of its memory)."""
    return _fingerprint_key


# ---------------------------------------------------------------------- disclosure adoption
# One bool, written once from False to True and never back: no lock, nothing to reset after fork.
_disclosure_called = False


def note_disclosure_call() -> None:
    """The host called ``otel_sampling.disclose()``: from now on this process tracks disclosure."""
    global _disclosure_called
    _disclosure_called = True


def disclosure_called() -> bool:
    """True once the host has called ``otel_sampling.disclose()`` in this process (or in the parent
    it was forked from, before the fork)."""
    return _disclosure_called


# ---------------------------------------------------------------------- the watchdog
SWEEP_INTERVAL_SECONDS = 0.5  # stall reports are at most this late


class Watchdog:
    """One daemon thread calling every registered ``sweep()`` each ``interval`` seconds.

    The thread starts with the first registration and stops when the last one is removed; a
    forked child starts its own (:meth:`restart_after_fork`).
    """

    def __init__(self, interval: float = SWEEP_INTERVAL_SECONDS) -> None:
        self._interval = interval
        self._sweeps: list[Callable[[], Any]] = []
        self._lock = locks.new()
        self._stop: threading.Event | None = None

    def register(self, sweep: Callable[[], Any]) -> None:
        with self._lock:
            self._sweeps.append(sweep)
            if self._stop is None:
                self._start()

    def unregister(self, sweep: Callable[[], Any]) -> None:
        with self._lock:
            if sweep in self._sweeps:
                self._sweeps.remove(sweep)
            if not self._sweeps and self._stop is not None:
                self._stop.set()
                self._stop = None

    def restart_after_fork(self) -> None:
        """In a forked child: the thread again, when there are sweeps (the parent's did not survive)."""
        with self._lock:
            self._stop = None
            if self._sweeps:
                self._start()

    def _start(self) -> None:  # called with the lock held
        self._stop = threading.Event()
        threading.Thread(target=self._run, args=(self._stop,), name="otel-sampling-watchdog", daemon=True).start()

    def _run(self, stop: threading.Event) -> None:
        while not stop.wait(self._interval):
            with self._lock:
                sweeps = list(self._sweeps)
            for sweep in sweeps:
                try:
                    sweep()
                except Exception:
                    logger.debug("otel-sampling: watchdog sweep failed", exc_info=True)


#: The process-wide watchdog every instrumentor shares.
watchdog = Watchdog()

# ---------------------------------------------------------------------- host ledger
_host_ledger: HostLedger | None = None


def bind_host_ledger(ledger: HostLedger | None) -> None:
    """The host-side MCP instrumentor's ledger, where grants are recorded (None: nowhere)."""
    global _host_ledger
    _host_ledger = ledger


def host_ledger() -> HostLedger | None:
    """The bound host-side ledger, or None without the host-side MCP instrumentor."""
    return _host_ledger


# ---------------------------------------------------------------------- in-flight counts
class _GlobalProvider:
    """Key of the store for instruments made through the global meter provider."""


# One store per meter provider: the SDK keeps the first callback of an instrument name registered
# twice on a meter (each instrumentor builds its own Instruments on the same meter), so they must
# share it. Instruments made through the global provider share one store whether it was set before
# or after them: before, each got a proxy meter of its own, and the proxies' instruments all land
# on the same meter once the provider is set.
_GLOBAL = _GlobalProvider()
_in_flight_lock = locks.new()
_in_flight_by_provider: weakref.WeakKeyDictionary[object, InFlight] = weakref.WeakKeyDictionary()


def in_flight_store(meter_provider: metrics.MeterProvider | None, meter: metrics.Meter) -> InFlight:
    """The ``otel_sampling.sampling.in_flight`` counts of ``meter_provider`` (None: the global one), its
    instrument registered on ``meter`` the first time."""
    key = meter_provider if meter_provider not in (None, metrics.get_meter_provider()) else _GLOBAL
    with _in_flight_lock:
        store = _in_flight_by_provider.get(key)
        if store is None:
            store = _in_flight_by_provider[key] = InFlight()
            forget_after_fork(store)
            create(meter, SAMPLING_IN_FLIGHT, [store.observe])
        return store


# ---------------------------------------------------------------------- after fork
class PerProcess(Protocol):
    """A store of this process's pending requests."""

    def forget(self) -> None:
        """Drop them all, reporting nothing (called in a forked child only)."""


_per_process: weakref.WeakSet[PerProcess] = weakref.WeakSet()


def forget_after_fork(store: PerProcess) -> None:
    """Have a forked child call ``store.forget()`` (``store`` is held weakly: registering costs
    nothing once it is gone)."""
    _per_process.add(store)


def _after_fork_in_child() -> None:
    """The at-fork handler (see the module docstring); never raises into the host's ``fork()``."""
    steps: tuple[Callable[[], Any], ...] = (
        locks.reinit_after_fork,
        *(store.forget for store in list(_per_process)),
        watchdog.restart_after_fork,
    )
    for step in steps:
        try:
            step()
        except Exception:
            logger.debug("otel-sampling: could not reset %r in a forked child", step, exc_info=True)


forget_after_fork(drills)

if hasattr(os, "register_at_fork"):  # POSIX; where there is no fork() there is nothing to do
    os.register_at_fork(after_in_child=_after_fork_in_child)
