"""Memory stays bounded: distinct requests, a third never answered, leave the stall watch and the
server's pending 2026-07-28 requests at their configured bounds (1,000 real server records against a
bound of 100 for the pending requests).

The stores are driven directly (100k real sessions would take minutes); the records are the
real ones, with the real OTel SDK, and the sizes are measured with ``len`` (the identity store:
tests/records/test_ledger.py).
"""

from __future__ import annotations

import pytest

pytest.importorskip("mcp_types", reason="mcp 2.x: the server's 2026-07-28 pending requests")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

from otel_sampling import names
from otel_sampling.instrumentation.mcp_server import _Pending
from otel_sampling.metrics import Instruments
from otel_sampling.records.ledger import PendingWatch
from otel_sampling.settings import Settings

REQUESTS = 100_000
BOUND = 1_000


def test_stall_watch_stays_at_its_bound():
    stalled = []
    watch = PendingWatch(BOUND, threshold_seconds=30, on_stall=lambda item, s: stalled.append(item), timer=lambda: 0.0)
    for i in range(REQUESTS):
        watch.add(i)
        if i % 3:  # two thirds end; a third never do
            watch.remove(i)
    assert len(watch) == BOUND
    assert watch.sweep(now=31.0) == BOUND and len(watch) == 0
    print(f"stall watch: at most {BOUND} of {REQUESTS // 3 + 1} unanswered requests watched")


# Real records, each with its span and metrics: a bound of 100 and 1,000 requests (334 never
# answered) overflow it 234 times, which proves the bound as 100,000 requests would.
PENDING_BOUND = 100
PENDING_REQUESTS = 1_000


def test_server_pending_requests_stay_at_their_bound_and_end_unanswered():
    instruments = Instruments(Settings(max_pending=PENDING_BOUND), TracerProvider(), MeterProvider())
    from otel_sampling.records.server_sampling import ServerSamplingRecord

    ended = []

    class Counted(ServerSamplingRecord):
        __slots__ = ()

        def _end(self, ending, served, stop_reason):
            ended.append(ending.ending)
            super()._end(ending, served, stop_reason)

    pending = _Pending(PENDING_BOUND, ttl_seconds=300)
    for i in range(PENDING_REQUESTS):
        record = Counted(
            instruments,
            path=names.PATH_MRTR,
            params=None,
            protocol_version="2026-07-28",
            server_name="s",
            session_id=None,
            tool_name="t",
        )
        pending.add(f"state-{i}", {"k": record})
        if i % 3:  # two thirds answered by their retry
            for answered in pending.take(f"state-{i}").values():
                answered.end_with_result("m", "endTurn")
    assert len(pending) == PENDING_BOUND
    unanswered = ended.count(names.ENDING_UNANSWERED)
    assert unanswered == (PENDING_REQUESTS + 2) // 3 - PENDING_BOUND  # the overflow ended as it left
    print(f"server pending: {len(pending)} held, {unanswered} ended unanswered on overflow")


def test_server_pending_requests_sharing_a_state_are_never_lost():
    """A low-level server may send no requestState: entries merge; a re-asked key ends unanswered."""
    instruments = Instruments(Settings(), TracerProvider(), MeterProvider())
    from otel_sampling.records.server_sampling import ServerSamplingRecord

    def record():
        return ServerSamplingRecord(
            instruments,
            path=names.PATH_MRTR,
            params=None,
            protocol_version=None,
            server_name=None,
            session_id=None,
            tool_name=None,
        )

    pending = _Pending(10, ttl_seconds=300)
    first, second, again = record(), record(), record()
    pending.add(None, {"a": first})
    pending.add(None, {"b": second})
    pending.add(None, {"a": again})
    assert first._ended and not second._ended and not again._ended
    assert set(pending.take(None)) == {"a", "b"}
