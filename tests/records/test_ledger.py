"""Request identity (``otel_sampling.records.ledger``): a fingerprint per sampling request and
the bounded store of what the host decided for it before.

Expected behaviour from docs/telemetry.md "Request identity and violations": the fingerprint is
SHA-256 (first 128 bits, hex) over ``messages``, ``systemPrompt``, ``maxTokens``,
``temperature``, ``stopSequences``, ``metadata``, ``tools`` and ``toolChoice``, not the server,
``includeContext``, ``modelPreferences`` or ``_meta``; the store is an LRU of
``OTEL_SAMPLING_IDENTITY_MAX_ENTRIES`` fingerprints, each forgotten
``OTEL_SAMPLING_IDENTITY_TTL_SECONDS`` after it was last written.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tracemalloc

import pytest
from cachetools import TTLCache

pytest.importorskip("mcp_types", reason="mcp 2.x's CreateMessageRequestParams")

import mcp_types as types

from otel_sampling.records.ledger import SERVER_KEY_MAX_LENGTH, ExpiringLRU, IdentityStore, fingerprint, server_key
from otel_sampling.rules.servers import Seen

BOUND = 100
REQUESTS = 10 * BOUND  # the smallest count that shows the bound holds: ten times over, a third never remembered

KEY = b"k" * 32  # any key: these rules are about which requests are the same question


def _params(i: int = 0, **fields) -> types.CreateMessageRequestParams:
    return types.CreateMessageRequestParams(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(text=f"ticket {i}"))],
        max_tokens=64,
        **fields,
    )


def _seen(i: int = 1) -> Seen:
    return Seen.after(server="s", ending="completed", requested="none", granted=None, trace_id=i, span_id=i)


class TestFingerprint:
    """``fingerprint``: what makes two ``sampling/createMessage`` requests the same question."""

    def test_a_hash_of_128_bits_in_hex(self):
        """32 hex characters; no content is kept."""
        assert re.fullmatch(r"[0-9a-f]{32}", fingerprint(_params(), KEY))

    @pytest.mark.parametrize(
        "fields",
        [
            {"include_context": "allServers"},  # a retry with another scope is the same question
            {"model_preferences": types.ModelPreferences(hints=[types.ModelHint(name="claude-sonnet")])},
            {"meta": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}},
        ],
    )
    def test_scope_preferences_and_meta_are_left_out(self, fields):
        """The same request with another ``includeContext``, ``modelPreferences`` or ``_meta``."""
        assert fingerprint(_params(), KEY) == fingerprint(_params(**fields), KEY)

    @pytest.mark.parametrize(
        "fields",
        [
            {"system_prompt": "You triage tickets."},
            {"temperature": 0.2},
            {"stop_sequences": ["END"]},
            {"metadata": {"ticket": 7}},
        ],
    )
    def test_the_question_itself_counts(self, fields):
        """Another system prompt, temperature, stop sequences or metadata is another question."""
        assert fingerprint(_params(), KEY) != fingerprint(_params(**fields), KEY)

    def test_messages_and_max_tokens_count(self):
        """Another message, or another ``maxTokens``, is another question."""
        assert fingerprint(_params(0), KEY) != fingerprint(_params(1), KEY)
        assert fingerprint(_params(), KEY) != fingerprint(
            types.CreateMessageRequestParams(messages=_params().messages, max_tokens=65), KEY
        )

    def test_content_json_cannot_carry_is_hashed_stably(self):
        """A request built in-process with bytes or a set in ``metadata`` still has one fingerprint."""
        first = fingerprint(_params(metadata={"raw": b"\x00\x01", "tags": {"b", "a"}}), KEY)

        assert first == fingerprint(_params(metadata={"raw": b"\x00\x01", "tags": {"a", "b"}}), KEY)
        assert first != fingerprint(_params(metadata={"raw": b"\x00\x02", "tags": {"a", "b"}}), KEY)

    @pytest.mark.subprocess
    def test_a_set_has_one_fingerprint_whatever_the_hash_seed(self):
        """A set iterates in an order that depends on ``PYTHONHASHSEED``: processes with other seeds
        (another host replica, a restart) still give the same request one fingerprint."""
        script = (
            "import mcp_types as t; from otel_sampling.records.ledger import fingerprint; "
            "print(fingerprint(t.CreateMessageRequestParams(messages=[], max_tokens=1, "
            f"metadata={{'tags': {{'alpha', 'beta', 'gamma', 'delta', 'epsilon'}}}}), {KEY!r}))"
        )
        prints = {
            subprocess.run(
                [sys.executable, "-c", script],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "PYTHONHASHSEED": str(seed)},
            ).stdout.strip()
            for seed in range(8)
        }

        assert len(prints) == 1, prints
        assert re.fullmatch(r"[0-9a-f]{32}", prints.pop())


class TestServerKey:
    """``server_key``: how the store remembers a server without keeping a hostile 1 MB name per request."""

    def test_a_name_up_to_the_limit_is_itself(self):
        """Names of at most ``SERVER_KEY_MAX_LENGTH`` characters, and None, are kept as they are."""
        name = "s" * SERVER_KEY_MAX_LENGTH

        assert name == server_key(name)
        assert None is server_key(None)

    def test_a_longer_name_is_its_hash(self):
        """``sha256:<hex>``; equal names give equal keys, and a key is its own key."""
        key = server_key("s" * 1_000_000)

        assert re.fullmatch(r"sha256:[0-9a-f]{64}", key)
        assert key == server_key("s" * 1_000_000)
        assert key == server_key(key)


class TestIdentityStore:
    """``IdentityStore``: fingerprint -> what the host did the last time, bounded (LRU + TTL)."""

    def test_identity_store_stays_at_its_bound(self):
        """Ten times more distinct requests than the bound: the store holds the bound, and the
        memory it holds does not grow past what it held when it was first full."""
        store = IdentityStore(BOUND, ttl_seconds=3600)
        tracemalloc.start()
        try:
            full = None
            for i in range(REQUESTS):
                key = fingerprint(_params(i), KEY)
                if i % 3:  # a third never end, so are never remembered
                    store.put(key, _seen(i + 1))
                if full is None and len(store) == BOUND:
                    full, _peak = tracemalloc.get_traced_memory()
            size, _peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()

        assert BOUND == len(store)
        assert full is not None and size < 1.5 * full  # unbounded, the ~670 entries would hold ~3x more

    def test_identity_entries_expire(self):
        """An entry is forgotten ``ttl_seconds`` after it was written."""
        now = [0.0]
        store = IdentityStore(BOUND, ttl_seconds=10, timer=lambda: now[0])
        store.put("a", _seen())
        now[0] = 11.0

        assert store.get("a") is None and len(store) == 0

    def test_a_rewrite_restarts_the_ttl(self):
        """Forgotten ``ttl_seconds`` after it was last written, not first."""
        now = [0.0]
        store = IdentityStore(BOUND, ttl_seconds=10, timer=lambda: now[0])
        store.put("a", _seen(1))
        now[0] = 8.0
        store.put("a", _seen(2))
        now[0] = 16.0

        assert _seen(2) == store.get("a")

    def test_the_least_recently_used_entry_leaves_first(self):
        """A full store forgets the entry used longest ago."""
        store = IdentityStore(2, ttl_seconds=3600)
        store.put("a", _seen(1))
        store.put("b", _seen(2))
        store.get("a")  # used again
        store.put("c", _seen(3))

        assert (_seen(1), None, _seen(3)) == (store.get("a"), store.get("b"), store.get("c"))


class TestExpiringLRU:
    """``ExpiringLRU``, the store under the identity store and the per-server endings and grants:
    ``cachetools.LRUCache`` semantics (at most ``maxsize``, least recently used leaves first), each
    entry forgotten ``ttl_seconds`` after it was last written (live while now < written + ttl, as
    ``cachetools.TTLCache`` reads it), expiry read lazily."""

    def test_an_entry_is_live_until_its_ttl_has_passed(self):
        now = [0.0]
        store = ExpiringLRU(BOUND, 10, timer=lambda: now[0])
        store.write("a", 1)
        now[0] = 9.999

        assert store.fresh("a") == 1
        now[0] = 10.0
        assert store.fresh("a") is None

    def test_an_expired_entry_read_leaves_the_store(self):
        now = [0.0]
        store = ExpiringLRU(BOUND, 10, timer=lambda: now[0])
        store.write("a", 1)
        store.write("b", 2)
        now[0] = 11.0

        assert store.fresh("a") is None
        assert list(store) == ["b"]  # read lazily: only the entry read has left
        store.expire()
        assert len(store) == 0

    def test_a_full_store_evicts_the_least_recently_used_with_its_expiry(self):
        """A flood of distinct keys (10 kB each, made afresh) holds no more memory than the store
        held when it was first full: an evicted entry leaves no expiry behind."""
        store = ExpiringLRU(BOUND, 3600)
        tracemalloc.start()
        try:
            full = None
            for i in range(REQUESTS):
                store.write(f"{i:08d}" + "k" * 10_000, i)
                if full is None and len(store) == BOUND:
                    full, _peak = tracemalloc.get_traced_memory()
            size, _peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()

        assert len(store) == BOUND
        assert full is not None and size < 1.5 * full  # a leaked expiry would keep each ~10 kB key
        assert store.fresh(f"{REQUESTS - 1:08d}" + "k" * 10_000) == REQUESTS - 1
        assert store.fresh(f"{0:08d}" + "k" * 10_000) is None

    def test_a_full_memory_drops_an_expired_entry_before_a_fresh_one(self):
        """TTLCache drops expired entries before it evicts the least recently used one: an entry
        written within the TTL is not lost to one that expired, however recently that one was read."""
        now = [0.0]

        def clock():
            return now[0]

        memory, reference = ExpiringLRU(2, 10, clock), TTLCache(2, 10, clock)
        now[0] = 0
        memory.write("a", 1)
        reference["a"] = 1
        now[0] = 5
        memory.write("b", 2)
        reference["b"] = 2
        now[0] = 9
        assert memory.fresh("a") == reference.get("a") == 1  # "a" is now the most recently used
        now[0] = 11  # "a" expired, "b" has until 15
        memory.write("c", 3)
        reference["c"] = 3
        now[0] = 12
        assert reference.get("b") == 2
        assert memory.fresh("b") == 2
        assert len(memory) <= 2

    def test_entries_expire_ttl_after_their_last_write_and_never_exceed_the_bound(self):
        now = [0.0]

        def clock():
            return now[0]

        memory = ExpiringLRU(3, 10, clock)
        for i in range(10):
            now[0] = i
            memory.write(i % 4, i)
            assert len(memory) <= 3
        now[0] = 9.5
        assert memory.fresh(9 % 4) == 9
        now[0] = 19
        assert memory.fresh(9 % 4) is None
        memory.expire()
        assert len(memory) == 0
