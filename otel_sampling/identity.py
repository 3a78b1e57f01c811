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
from dataclasses import dataclass
from typing import Any

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
_SCOPE_RANK = {scope: rank for rank, scope in enumerate(names.INCLUDE_CONTEXT_VALUES)}


def fingerprint(params: Any) -> str:
    """The identity of a ``CreateMessageRequestParams``: 32 hex characters.

    Raises whatever pydantic raises for a params object it cannot dump (callers guard).
    """
    if hasattr(params, "model_dump"):
        body = params.model_dump(mode="json", include=_FINGERPRINT_FIELDS, exclude_none=True)
    else:
        body = {k: v for k, v in dict(params).items() if k in _FINGERPRINT_FIELDS}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def wider(scope: str | None, than: str | None) -> bool:
    """True when ``includeContext`` ``scope`` is wider than ``than`` (unknown values never are)."""
    return scope in _SCOPE_RANK and than in _SCOPE_RANK and _SCOPE_RANK[scope] > _SCOPE_RANK[than]


def decision(ending: str) -> str | None:
    """``"allow"``, ``"deny"`` or None (the ending says nothing about the host's decision)."""
    return _DECISIONS.get(ending)


@dataclass(frozen=True, slots=True)
class Seen:
    """What the host did the last time it saw a fingerprint.

    Attributes:
        server: the server that sent it last (``serverInfo.name``; None when unknown).
        decision: the last decision (:data:`ALLOW` / :data:`DENY`), None when none was taken yet.
        decision_server: the server that decision was for.
        denied_server: the last server the request was denied for (``DENIALS``), if any.
        requested: the last ``includeContext`` requested.
        granted: the last scope granted (``grant_context``), None when the host never reported one.
        trace_id, span_id: the span of that last request (for links and event attributes).
        budget_denied: the last decision was a budget exhaustion.
        decided_at: when the last decision was taken (the ledger's clock, seconds).
    """

    server: str | None
    decision: str | None
    decision_server: str | None
    denied_server: str | None
    requested: str
    granted: str | None
    trace_id: int
    span_id: int
    budget_denied: bool = False
    decided_at: float = 0.0

    @staticmethod
    def first(*, server: str | None, ending: str, requested: str, granted: str | None,
              trace_id: int, span_id: int, earlier: Seen | None = None, now: float = 0.0) -> Seen:
        """The entry for a request that just ended, carrying over what ``earlier`` knew."""
        taken = decision(ending)
        return Seen(
            server=server,
            decision=taken if taken else (earlier.decision if earlier else None),
            decision_server=server if taken else (earlier.decision_server if earlier else None),
            denied_server=server if ending in DENIALS else (earlier.denied_server if earlier else None),
            requested=requested,
            granted=granted if granted is not None else (earlier.granted if earlier else None),
            trace_id=trace_id,
            span_id=span_id,
            budget_denied=ending == names.ENDING_BUDGET_EXHAUSTED if taken else bool(earlier and earlier.budget_denied),
            decided_at=now if taken else (earlier.decided_at if earlier else now),
        )


def violations_at_start(earlier: Seen, server: str | None, requested: str) -> list[str]:
    """Violations visible when a repeated request arrives: a reroute after a denial, a wider
    requested scope."""
    found = []
    if earlier.denied_server is not None and server is not None and server != earlier.denied_server:
        found.append(names.VIOLATION_REROUTED_AFTER_DENIAL)
    if wider(requested, earlier.requested):
        found.append(names.VIOLATION_SCOPE_WIDENED)
    return found


def violations_at_end(earlier: Seen, server: str | None, ending: str, granted: str | None,
                      granted_budget_since: bool = False) -> list[str]:
    """Violations visible when a repeated request ends: a flipped decision for the same server
    (a budget exhaustion followed by a grant for that server, then a completion, is not one), a
    wider granted scope."""
    found = []
    taken = decision(ending)
    if taken and earlier.decision and taken != earlier.decision and earlier.decision_server == server \
            and not (earlier.budget_denied and taken == ALLOW and granted_budget_since):
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
