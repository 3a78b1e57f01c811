"""The ledger's bounded memories (otel_sampling.records.ledger): LRU + TTL, as cachetools.TTLCache keeps them."""

from __future__ import annotations

from cachetools import TTLCache

from otel_sampling.records.ledger import ExpiringLRU


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_a_full_memory_drops_an_expired_entry_before_a_fresh_one():
    """TTLCache drops expired entries before it evicts the least recently used one: an entry
    written within the TTL is not lost to one that expired, however recently that one was read."""
    clock = _Clock()
    memory, reference = ExpiringLRU(2, 10, clock), TTLCache(2, 10, clock)
    clock.now = 0
    memory.write("a", 1)
    reference["a"] = 1
    clock.now = 5
    memory.write("b", 2)
    reference["b"] = 2
    clock.now = 9
    assert memory.fresh("a") == reference.get("a") == 1  # "a" is now the most recently used
    clock.now = 11  # "a" expired, "b" has until 15
    memory.write("c", 3)
    reference["c"] = 3
    clock.now = 12
    assert reference.get("b") == 2
    assert memory.fresh("b") == 2
    assert len(memory) <= 2


def test_entries_expire_ttl_after_their_last_write_and_never_exceed_the_bound():
    clock = _Clock()
    memory = ExpiringLRU(3, 10, clock)
    for i in range(10):
        clock.now = i
        memory.write(i % 4, i)
        assert len(memory) <= 3
    clock.now = 9.5
    assert memory.fresh(9 % 4) == 9
    clock.now = 19
    assert memory.fresh(9 % 4) is None
    memory.expire()
    assert len(memory) == 0
