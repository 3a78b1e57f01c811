"""Host-side state shared by the sampling requests of one instrumentor: bounded, thread-safe.

* the request identity store (:class:`IdentityStore`: decision flips, widened scopes,
  reroutes after a denial) and the key its fingerprints are made with (:attr:`Ledger.fingerprint_key`);
* the stall watch (:class:`PendingWatch`), swept by the shared watchdog thread;
* the last ending and the last grant per server (is a grant answering a budget exhaustion? did
  one come between an exhaustion and a completion of the same request?);
* :func:`record_violation`: a span event and ``otel_sampling.sampling.violations{kind, server}``.

Request identity
----------------

A fingerprint per sampling request and what the host decided for it before.
A fingerprint is a keyed hash (HMAC-SHA-256, first 128 bits, hex) over what makes two
``sampling/createMessage`` requests "the same question": ``messages``, ``systemPrompt``,
``maxTokens``, ``temperature``, ``stopSequences``, ``metadata``, ``tools`` and ``toolChoice``. It
leaves out the requesting server (so a request re-sent by another server has the same
fingerprint), ``includeContext`` (so a retry with another scope does too), ``modelPreferences``
and ``_meta`` (trace context). The hash is taken over the wire form (``by_alias``: ``systemPrompt``,
``mimeType``, ...), so a request has the same fingerprint whichever mcp major parsed it. No content
is kept: only the hash. The key (the process's own, or ``OTEL_SAMPLING_FINGERPRINT_KEY``) is what
keeps a reader of the trace backend from hashing guesses of low-entropy content (a PIN in a known
prompt template) and comparing (docs/security.md).

:class:`IdentityStore` remembers, per fingerprint, the last decision and scopes (bounded: LRU of
``OTEL_SAMPLING_IDENTITY_MAX_ENTRIES`` entries, each forgotten ``OTEL_SAMPLING_IDENTITY_TTL_SECONDS``
after it was last written). The violation rules (pure functions over an earlier entry and the
request at hand) live in :mod:`otel_sampling.rules.servers`.

Stall detection
---------------

A bounded watch list of pending requests, swept by the shared watchdog thread.

No task or thread per request: every instrumentor registers one sweep function with the
process-wide watchdog (:data:`otel_sampling.state.watchdog`), whose single daemon thread calls each
sweep every ``state.SWEEP_INTERVAL_SECONDS``. A :class:`PendingWatch` keeps pending requests in arrival order, so a
sweep walks only the requests that have passed the threshold (each is reported once and leaves
the watch) and stops at the first one that has not. A forked child forgets the parent's pending
requests (:func:`otel_sampling.state.forget_after_fork`): they are the parent's to report.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from cachetools import LRUCache
from opentelemetry import trace

try:  # mcp's models are pydantic's: wherever there is a request to fingerprint, pydantic is there
    from pydantic_core import to_jsonable_python as _jsonable
except ImportError:  # pragma: no cover - a core install without mcp fingerprints nothing
    _jsonable = repr  # type: ignore[assignment]

from otel_sampling import locks, names, state
from otel_sampling.metrics import Instruments, recorded_in
from otel_sampling.rules.servers import Seen

# ---------------------------------------------------------------------- request identity
# Field names (mcp 2.x's; pydantic's include= takes field names, the dump then uses the aliases).
_FINGERPRINT_FIELDS = {
    "messages",
    "system_prompt",
    "max_tokens",
    "temperature",
    "stop_sequences",
    "metadata",
    "tools",
    "tool_choice",
}


def fingerprint(params: Any, key: bytes) -> str:
    """The identity of a ``CreateMessageRequestParams`` under ``key``: 32 hex characters, the first
    128 bits of HMAC-SHA-256 (RFC 2104) keyed with ``key`` over the canonical form: the fields above
    as JSON, null ones left out, keys sorted, separators ``","`` and ``":"``, non-ASCII characters
    as they are, UTF-8.

    ``params`` is an mcp 2.x model, or any object whose ``model_dump(mode=, include=, exclude_none=,
    by_alias=)`` takes mcp 2.x's field names in ``include`` (the mcp 1.x table's view of its
    camelCase model does). The dump is taken in Python mode and made JSON here: values JSON
    carries as pydantic's JSON mode would (URLs, dates and enums as pydantic writes them), and
    content JSON cannot carry (a host can build a request in-process with bytes or sets in
    ``metadata``) in a stable form: bytes as hex, sets sorted (pydantic's JSON mode would list a
    set in iteration order, which depends on the process's hash seed), other objects by ``repr``.
    Raises whatever pydantic or ``json`` raise for a params object they cannot dump at all, e.g.
    mixed-type dict keys (callers guard).
    """
    body = params.model_dump(mode="python", include=_FINGERPRINT_FIELDS, exclude_none=True, by_alias=True)
    canonical = _CANONICAL.encode(body)
    return hmac.digest(key, canonical.encode("utf-8", "surrogatepass"), "sha256").hex()[:32]


def tool_call_fingerprint(name: str, arguments: Any, key: bytes) -> str:
    """The identity of a ``tools/call`` under ``key``, made as :func:`fingerprint`'s: 32 hex
    characters of HMAC-SHA-256 over the canonical JSON of ``{"arguments": ..., "name": ...}``
    (``arguments`` None is ``{}``: the MCP spec makes them optional). Raises what ``json`` raises
    for arguments it cannot encode (nested past the recursion limit; callers guard)."""
    canonical = _CANONICAL.encode({"arguments": {} if arguments is None else arguments, "name": name})
    return hmac.digest(key, canonical.encode("utf-8", "surrogatepass"), "sha256").hex()[:32]


SERVER_KEY_MAX_LENGTH = 256


def server_key(name: str | None) -> str | None:
    """How the identity store and the ledger remember a server: the name it is kept by (its
    ``serverInfo.name``, or for a placeholder name its endpoint: ``rules.servers.known_as``),
    or for a name longer than ``SERVER_KEY_MAX_LENGTH`` characters a SHA-256 of it
    (``"sha256:<hex>"``), so that a
    hostile 1 MB ``serverInfo.name``, copied afresh by each session, is not kept per request.
    Equal names give equal keys; idempotent. The host tables compute it once per session
    (``ServerFacts.key``): hashing a long name per request costs as much as the request."""
    if name is None or len(name) <= SERVER_KEY_MAX_LENGTH:
        return name
    return "sha256:" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()


def _json_fallback(value: Any) -> Any:
    """A value the JSON encoder does not know, in a stable form: bytes as hex, sets sorted, what
    pydantic's JSON mode can write (a URL, a date, an enum) as it writes it, anything else its repr."""
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": value.hex()}
    if isinstance(value, (set, frozenset)):
        return sorted(json.dumps(v, sort_keys=True, default=_json_fallback) for v in value)
    try:
        return _jsonable(value)
    except (TypeError, ValueError):  # pydantic_core.PydanticSerializationError is a ValueError
        return repr(value)


# The fingerprint's canonical JSON; built once (``json.dumps`` with options builds an encoder per call).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_json_fallback)


class ExpiringLRU(LRUCache[Any, Any]):
    """A ``cachetools.LRUCache`` (at most ``maxsize`` entries; when full, the least recently used
    leaves first) whose entries are forgotten ``ttl_seconds`` after they were last written.

    Expiry is read lazily: :meth:`fresh` drops an expired entry it finds, :meth:`expire` drops them
    all, and a write of a new key into a full cache drops them first (as ``TTLCache`` does: an
    expired entry never pushes out a fresh one); else an expired entry nobody reads stays (it never
    holds more than ``maxsize`` entries). The timer must not go back. Cheaper per access than
    ``cachetools.TTLCache``, which walks its expiry list and enters its timer on every access.
    Write with :meth:`write` (it stamps the expiry). Not thread-safe: its owners lock.

    Args:
        maxsize: most entries (>= 1).
        ttl_seconds: seconds an entry is remembered after it was last written.
        timer: the clock, seconds (default ``time.monotonic``).
    """

    def __init__(self, maxsize: int, ttl_seconds: float, timer: Callable[[], float] = time.monotonic) -> None:
        super().__init__(maxsize)
        self._ttl = ttl_seconds
        self._timer = timer
        # key -> when it expires (the timer's seconds), soonest first; the cache's keys
        self._expires: dict[Any, float] = {}

    def fresh(self, key: Any) -> Any:
        """The value written for ``key`` less than ``ttl_seconds`` ago (a use: it becomes the most
        recently used), else None."""
        expires = self._expires.get(key)
        if expires is None:
            return None
        if self._timer() < expires:
            return self[key]
        del self[key]
        return None

    def write(self, key: Any, value: Any) -> None:
        """Remember ``value`` for ``key`` for ``ttl_seconds`` from now (a write restarts the TTL)."""
        now, expires = self._timer(), self._expires
        if key in expires:
            del expires[key]  # re-inserted last: the expiry times stay in order
        elif len(expires) >= self.maxsize:
            self._expire_first(now)  # expired entries leave before the least recently used fresh one
        self[key] = value
        expires[key] = now + self._ttl

    def expire(self) -> None:
        """Drop every expired entry."""
        self._expire_first(self._timer())

    def _expire_first(self, now: float) -> None:
        """Drop the entries expired at ``now``: the first ones of ``_expires`` (written in order)."""
        expired = []
        for key, expires in self._expires.items():
            if now < expires:
                break
            expired.append(key)
        for key in expired:
            del self[key]

    def __delitem__(self, key: Any) -> None:  # every removal (del, pop, eviction by popitem) goes here
        super().__delitem__(key)
        del self._expires[key]


class IdentityStore:
    """Fingerprint -> :class:`Seen`, bounded (:class:`ExpiringLRU`: LRU + TTL), thread-safe.

    Args:
        max_entries: most fingerprints remembered (>= 1).
        ttl_seconds: seconds an entry is remembered after it was last written.
        timer: the clock, seconds (default ``time.monotonic``).
    """

    def __init__(self, max_entries: int, ttl_seconds: float, timer: Callable[[], float] = time.monotonic) -> None:
        self._entries = ExpiringLRU(max_entries, ttl_seconds, timer)
        self._lock = locks.new()

    def get(self, key: str) -> Seen | None:
        with self._lock:
            seen: Seen | None = self._entries.fresh(key)
            return seen

    def put(self, key: str, seen: Seen) -> None:
        with self._lock:
            self._entries.write(key, seen)

    def __len__(self) -> int:
        with self._lock:
            self._entries.expire()
            return len(self._entries)


# ---------------------------------------------------------------------- stall watch
logger = logging.getLogger(__name__)


class PendingWatch:
    """Pending requests, oldest first, each reported once when pending longer than a threshold.

    Args:
        max_entries: most requests watched (``OTEL_SAMPLING_MAX_PENDING``); past it the oldest
            leaves the watch unreported (it still ends, and counts in ``otel_sampling.sampling.in_flight``).
        threshold_seconds: the stall threshold (policy ``stall_threshold_seconds``, default 30).
        on_stall: ``on_stall(item, pending_seconds)``, called from :meth:`sweep` under the watch's
            lock, so an item being removed waits until its report is done.
        timer: the clock, seconds (default ``time.monotonic``).
    """

    def __init__(
        self,
        max_entries: int,
        threshold_seconds: float,
        on_stall: Callable[[Any, float], None],
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self._max = max(1, max_entries)
        self._threshold = threshold_seconds
        self._on_stall = on_stall
        self._timer = timer
        self._started: OrderedDict[Any, float] = OrderedDict()
        self._lock = locks.new()
        state.forget_after_fork(self)

    def add(self, item: Any) -> None:
        with self._lock:
            self._started[item] = self._timer()
            while len(self._started) > self._max:
                self._started.popitem(last=False)

    def remove(self, item: Any) -> None:
        with self._lock:
            self._started.pop(item, None)

    def forget(self) -> None:
        """Drop every watched request unreported (a forked child: they are the parent's)."""
        with self._lock:
            self._started.clear()

    def sweep(self, now: float | None = None) -> int:
        """Report every request pending for at least the threshold; returns how many."""
        now = self._timer() if now is None else now
        reported = 0
        with self._lock:
            while self._started:
                item, started = next(iter(self._started.items()))
                if now - started < self._threshold:
                    break
                del self._started[item]
                reported += 1
                try:
                    self._on_stall(item, now - started)
                except Exception:
                    logger.debug("otel-sampling: could not report a stall", exc_info=True)
        return reported

    def __len__(self) -> int:
        with self._lock:
            return len(self._started)


# ---------------------------------------------------------------------- the ledger
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
        self._last_endings = ExpiringLRU(settings.max_pending, settings.identity_ttl_seconds)
        self._last_grants = ExpiringLRU(settings.max_pending, settings.identity_ttl_seconds)
        #: A grant was noted (ever; until then :meth:`granted_since` is False for every server).
        self.grants_noted = False
        self._lock = locks.new()

    @staticmethod
    def now() -> float:
        """The ledger's clock (monotonic seconds), for ordering decisions and grants."""
        return time.monotonic()

    def start(self) -> None:
        state.watchdog.register(self.pending.sweep)

    def stop(self) -> None:
        state.watchdog.unregister(self.pending.sweep)

    def recall(self, params: Any) -> tuple[str | None, Seen | None]:
        """A request starts: its :func:`fingerprint` (None when its params cannot be hashed) and
        what was decided for that fingerprint before (None when nothing is remembered)."""
        try:
            key = fingerprint(params, self.fingerprint_key)
        except Exception:  # params the SDK accepted but we cannot hash: no identity for this request
            logger.debug("otel-sampling: could not fingerprint a sampling request", exc_info=True)
            return None, None
        return key, self.identity.get(key)

    def remember(
        self,
        key: str | None,
        *,
        server: str | None,
        ending: str,
        requested: str,
        granted: str | None,
        span_context: trace.SpanContext,
        earlier: Seen | None,
    ) -> None:
        """A request ended: its server's last ending, and, when it has a fingerprint ``key``, what
        was decided for it (:meth:`Seen.after <otel_sampling.rules.servers.Seen.after>`)."""
        self.note_ending(server, ending)
        if key:
            seen = Seen.after(
                server=server,
                ending=ending,
                requested=requested,
                granted=granted,
                trace_id=span_context.trace_id,
                span_id=span_context.span_id,
                earlier=earlier,
                now=self.now(),
            )
            self.identity.put(key, seen)

    # Servers are kept by server_key (a hostile 1 MB name is not kept per entry).
    def note_ending(self, server: str | None, ending: str) -> None:
        if server is not None:
            with self._lock:
                self._last_endings.write(server_key(server), ending)

    def last_ending(self, server: str) -> str | None:
        with self._lock:
            ending: str | None = self._last_endings.fresh(server_key(server))
            return ending

    def note_grant(self, server: str) -> None:
        with self._lock:
            self._last_grants.write(server_key(server), self.now())
            self.grants_noted = True

    def granted_since(self, server: str | None, since: float) -> bool:
        """True when a grant for ``server`` was recorded at or after ``since``."""
        with self._lock:
            last = self._last_grants.fresh(server_key(server)) if server is not None else None
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
