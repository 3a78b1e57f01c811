"""Request identity: a fingerprint per sampling request and what the host decided for it before.

A fingerprint is a hash (SHA-256, first 128 bits, hex) over what makes two
``sampling/createMessage`` requests "the same question": ``messages``, ``systemPrompt``,
``maxTokens``, ``temperature``, ``stopSequences``, ``metadata``, ``tools`` and ``toolChoice``. It
leaves out the requesting server (so a request re-sent by another server has the same
fingerprint), ``includeContext`` (so a retry with another scope does too), ``modelPreferences``
and ``_meta`` (trace context). No content is kept: only the hash.

:class:`IdentityStore` remembers, per fingerprint, the last decision and scopes (bounded: LRU of
``OTEL_SAMPLING_IDENTITY_MAX_ENTRIES`` entries, each forgotten ``OTEL_SAMPLING_IDENTITY_TTL_SECONDS``
after it was last written). The violation rules are pure functions over an earlier entry and the
request at hand (``docs/telemetry.md`` "Violations").
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from cachetools import TTLCache

from otel_sampling import names

_FINGERPRINT_FIELDS = {"messages", "system_prompt", "max_tokens", "temperature", "stop_sequences", "metadata",
                       "tools", "tool_choice"}
ALLOW, DENY = "allow", "deny"
# Endings that are a decision about the request (not about the model or the transport).
_DECISIONS = {
    names.ENDING_COMPLETED: ALLOW,
    names.ENDING_REFUSED: ALLOW,  # the host let it through; the model declined
    names.ENDING_POLICY_DENIED: DENY,
    names.ENDING_USER_DENIED: DENY,
    # A budget exhaustion is a denial too: a request re-evaluated into a completion because the
    # window rolled or a limiter refilled is a flip. Only a grant (record_grant) in between makes
    # the new answer legitimate: a budget is a quantity a user may decide to spend more of.
    names.ENDING_BUDGET_EXHAUSTED: DENY,
}
DENIALS = frozenset({names.ENDING_POLICY_DENIED, names.ENDING_USER_DENIED, names.ENDING_BUDGET_EXHAUSTED})
DECISION_SERVERS = 8  # servers whose last decision each fingerprint remembers
_SCOPE_RANK = {scope: rank for rank, scope in enumerate(names.INCLUDE_CONTEXT_VALUES)}


def fingerprint(params: Any) -> str:
    """The identity of a ``CreateMessageRequestParams``: 32 hex characters.

    Content JSON cannot carry (a host can build a request in-process with bytes or sets in
    ``metadata``) is hashed in a stable form: bytes as hex, sets sorted, other objects by ``repr``.
    Raises whatever pydantic or ``json`` raise for a params object they cannot dump at all, e.g.
    mixed-type dict keys (callers guard).
    """
    if hasattr(params, "model_dump"):
        try:
            body = params.model_dump(mode="json", include=_FINGERPRINT_FIELDS, exclude_none=True)
        except ValueError:  # pydantic's serialisation errors: content built in-process (bytes, sets...)
            body = params.model_dump(mode="python", include=_FINGERPRINT_FIELDS, exclude_none=True)
    else:
        body = {k: v for k, v in dict(params).items() if k in _FINGERPRINT_FIELDS}
    canonical = _CANONICAL.encode(body)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:32]


SERVER_KEY_MAX_LENGTH = 256


def server_key(name: str | None) -> str | None:
    """How the identity store and the ledger remember a server: its name, or for a name longer
    than ``SERVER_KEY_MAX_LENGTH`` characters a SHA-256 of it (``"sha256:<hex>"``), so that a
    hostile 1 MB ``serverInfo.name``, copied afresh by each session, is not kept per request.
    Equal names give equal keys; idempotent."""
    if name is None or len(name) <= SERVER_KEY_MAX_LENGTH:
        return name
    return "sha256:" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()


def _json_fallback(value: Any) -> Any:
    """What JSON cannot carry, in a stable form: bytes as hex, sets sorted, anything else its repr."""
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": value.hex()}
    if isinstance(value, (set, frozenset)):
        return sorted(json.dumps(v, sort_keys=True, default=_json_fallback) for v in value)
    return repr(value)


# The fingerprint's canonical JSON; built once (``json.dumps`` with options builds an encoder per call).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_json_fallback)


def wider(scope: str | None, than: str | None) -> bool:
    """True when ``includeContext`` ``scope`` is wider than ``than`` (unknown values never are)."""
    return scope in _SCOPE_RANK and than in _SCOPE_RANK and _SCOPE_RANK[scope] > _SCOPE_RANK[than]


def decision(ending: str) -> str | None:
    """``"allow"``, ``"deny"`` or None (the ending says nothing about the host's decision)."""
    return _DECISIONS.get(ending)


class Decision(NamedTuple):
    """The host's last decision on a request for one server: :data:`ALLOW` / :data:`DENY`, whether
    it was a budget exhaustion, and when it was taken (the ledger's clock, seconds)."""

    server: str | None
    decision: str
    budget_denied: bool
    decided_at: float


class Seen(NamedTuple):
    """What the host did the last times it saw a fingerprint (immutable; a NamedTuple because one
    is built per sampling request, and a frozen dataclass costs a ``object.__setattr__`` per field).

    Attributes:
        server: the server that sent it last (:func:`server_key` of ``serverInfo.name``; None
            when unknown); every server below is kept the same way.
        decisions: the last decision per server, oldest first, at most
            ``DECISION_SERVERS`` servers (a decision for server A stays visible after the request
            was decided for server B, so a flip for A is still seen).
        denied_server: the last server the request was denied for (``DENIALS``), if any.
        requested: the last ``includeContext`` requested.
        granted: the last scope granted (``grant_context``), None when the host never reported one.
        trace_id, span_id: the span of that last request (for links and event attributes).
    """

    server: str | None
    decisions: tuple[Decision, ...]
    denied_server: str | None
    requested: str
    granted: str | None
    trace_id: int
    span_id: int

    def decision_for(self, server: str | None) -> Decision | None:
        """The last decision taken on this request for ``server``, if any."""
        return next((d for d in reversed(self.decisions) if d.server == server), None)

    @staticmethod
    def first(*, server: str | None, ending: str, requested: str, granted: str | None,
              trace_id: int, span_id: int, earlier: Seen | None = None, now: float = 0.0) -> Seen:
        """The entry for a request that just ended, carrying over what ``earlier`` knew."""
        taken = decision(ending)
        decisions = earlier.decisions if earlier else ()
        if taken:
            kept = tuple(d for d in decisions if d.server != server)[-(DECISION_SERVERS - 1):]
            decisions = (*kept, Decision(server, taken, ending == names.ENDING_BUDGET_EXHAUSTED, now))
        return Seen(
            server=server,
            decisions=decisions,
            denied_server=server if ending in DENIALS else (earlier.denied_server if earlier else None),
            requested=requested,
            granted=granted if granted is not None else (earlier.granted if earlier else None),
            trace_id=trace_id,
            span_id=span_id,
        )


def violations_at_start(earlier: Seen, server: str | None, requested: str) -> list[str]:
    """Violations visible when a repeated request arrives: a reroute after a denial (sent by
    another server than the one it was denied for; a retry by the server it was rerouted to, which
    already sent it last, is a repeat there, not another reroute), a wider requested scope."""
    found = []
    if earlier.denied_server is not None and server is not None and server != earlier.denied_server \
            and server != earlier.server:
        found.append(names.VIOLATION_REROUTED_AFTER_DENIAL)
    if wider(requested, earlier.requested):
        found.append(names.VIOLATION_SCOPE_WIDENED)
    return found


def violations_at_end(earlier: Seen, server: str | None, ending: str, granted: str | None,
                      granted_budget_since: bool = False) -> list[str]:
    """Violations visible when a repeated request ends: a flipped decision for the same server, a
    wider granted scope. A budget is a quantity: an allowed request exhausting it when repeated is
    not a flip (it ran out), nor is an exhausted one allowed after a grant for that server."""
    found = []
    taken = decision(ending)
    before = earlier.decision_for(server)
    ran_out = ending == names.ENDING_BUDGET_EXHAUSTED
    if taken and before is not None and taken != before.decision and not ran_out \
            and not (before.budget_denied and taken == ALLOW and granted_budget_since):
        found.append(names.VIOLATION_DECISION_FLIPPED)
    if granted is not None and wider(granted, earlier.granted):
        found.append(names.VIOLATION_SCOPE_WIDENED)
    return found


class IdentityStore:
    """Fingerprint -> :class:`Seen`, bounded (LRU + TTL, ``cachetools.TTLCache``), thread-safe.

    Args:
        max_entries: most fingerprints remembered (>= 1).
        ttl_seconds: seconds an entry is remembered after it was last written.
        timer: the clock, seconds (default ``time.monotonic``).
    """

    def __init__(self, max_entries: int, ttl_seconds: float, timer: Callable[[], float] = time.monotonic) -> None:
        self._entries: TTLCache[Any, Any] = TTLCache(max_entries, ttl_seconds, timer)
        self._lock = threading.Lock()

    def get(self, key: str) -> Seen | None:
        with self._lock:
            return self._entries.get(key)

    def put(self, key: str, seen: Seen) -> None:
        with self._lock:
            self._entries[key] = seen

    def __len__(self) -> int:
        with self._lock:
            self._entries.expire()
            return len(self._entries)
