"""Request identity: a fingerprint per sampling request and what the host decided for it before.

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
request at hand) live in :mod:`otel_sampling.rules.violations`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable
from typing import Any

from cachetools import TTLCache

try:  # mcp's models are pydantic's: wherever there is a request to fingerprint, pydantic is there
    from pydantic_core import to_jsonable_python as _jsonable
except ImportError:  # pragma: no cover - a core install without mcp fingerprints nothing
    _jsonable = repr  # type: ignore[assignment]

from otel_sampling import locks
from otel_sampling.rules.violations import Seen

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


SERVER_KEY_MAX_LENGTH = 256


def server_key(name: str | None) -> str | None:
    """How the identity store and the ledger remember a server: the name it is kept by (its
    ``serverInfo.name``, or for a placeholder name its endpoint: ``rules.server_names.known_as``),
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


class IdentityStore:
    """Fingerprint -> :class:`Seen`, bounded (LRU + TTL, ``cachetools.TTLCache``), thread-safe.

    Args:
        max_entries: most fingerprints remembered (>= 1).
        ttl_seconds: seconds an entry is remembered after it was last written.
        timer: the clock, seconds (default ``time.monotonic``).
    """

    def __init__(self, max_entries: int, ttl_seconds: float, timer: Callable[[], float] = time.monotonic) -> None:
        self._entries: TTLCache[Any, Any] = TTLCache(max_entries, ttl_seconds, timer)
        self._lock = locks.new()

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
