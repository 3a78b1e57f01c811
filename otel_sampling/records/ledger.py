"""Host-side state shared by the sampling requests of one instrumentor: bounded, thread-safe.

* the request identity store (``identity.IdentityStore``: decision flips, widened scopes,
  reroutes after a denial) and the key its fingerprints are made with (:attr:`Ledger.fingerprint_key`);
* the stall watch (``stalls.PendingWatch``), swept by the shared watchdog thread;
* the last ending and the last grant per server (is a grant answering a budget exhaustion? did
  one come between an exhaustion and a completion of the same request?);
* :func:`record_violation`: a span event and ``otel_sampling.sampling.violations{kind, server}``.
"""

from __future__ import annotations

import time
from typing import Any

from cachetools import TTLCache
from opentelemetry import trace

from otel_sampling import locks, names, state
from otel_sampling.metrics import Instruments, recorded_in
from otel_sampling.records.identity import IdentityStore, server_key
from otel_sampling.records.stalls import PendingWatch
from otel_sampling.rules.violations import Seen


class Ledger:
    """Bookkeeping for one host-side instrumentor; :meth:`start` / :meth:`stop` with it."""

    def __init__(self, instruments: Instruments) -> None:
        settings = instruments.settings
        self.instruments = instruments
        self.identity = IdentityStore(settings.identity_max_entries, settings.identity_ttl_seconds)
        #: The HMAC key of request fingerprints: the shared one configured, else the process's own.
        self.fingerprint_key = settings.fingerprint_key or state.fingerprint_key()
        self.pending = PendingWatch(
            settings.max_pending,
            settings.policy.stall_threshold_seconds,
            lambda record, seconds: record.mark_stalled(seconds),
        )
        self._last_endings: TTLCache[Any, Any] = TTLCache(settings.max_pending, settings.identity_ttl_seconds)
        self._last_grants: TTLCache[Any, Any] = TTLCache(settings.max_pending, settings.identity_ttl_seconds)
        self._lock = locks.new()

    @staticmethod
    def now() -> float:
        """The ledger's clock (monotonic seconds), for ordering decisions and grants."""
        return time.monotonic()

    def start(self) -> None:
        state.watchdog.register(self.pending.sweep)

    def stop(self) -> None:
        state.watchdog.unregister(self.pending.sweep)

    # Servers are kept by identity.server_key (a hostile 1 MB name is not kept per entry).
    def note_ending(self, server: str | None, ending: str) -> None:
        if server is not None:
            with self._lock:
                self._last_endings[server_key(server)] = ending

    def last_ending(self, server: str) -> str | None:
        with self._lock:
            return self._last_endings.get(server_key(server))

    def note_grant(self, server: str) -> None:
        with self._lock:
            self._last_grants[server_key(server)] = self.now()

    def granted_since(self, server: str | None, since: float) -> bool:
        """True when a grant for ``server`` was recorded at or after ``since``."""
        with self._lock:
            last = self._last_grants.get(server_key(server)) if server is not None else None
        return last is not None and last >= since


def record_violation(
    instruments: Instruments, span: trace.Span, kind: str, server_label: str, earlier: Seen | None = None
) -> None:
    """Record one violation: the violations counter (its exemplar names ``span``), and an event on
    ``span`` (with the earlier request's ids when it has one). Needs no ledger: a record built
    without one still counts."""
    instruments.sampling_violations.add(
        1, {names.MCP_SERVER_NAME: server_label, names.SAMPLING_VIOLATION_KIND: kind}, context=recorded_in(span)
    )
    if span.is_recording():
        attributes: dict[str, Any] = {names.SAMPLING_VIOLATION_KIND: kind, names.MCP_SERVER_NAME: server_label}
        if earlier is not None:
            attributes[names.SAMPLING_EARLIER_TRACE_ID] = trace.format_trace_id(earlier.trace_id)
            attributes[names.SAMPLING_EARLIER_SPAN_ID] = trace.format_span_id(earlier.span_id)
        span.add_event(names.EVENT_SAMPLING_VIOLATION, attributes)
