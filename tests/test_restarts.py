"""Host-side memory stays flat while an unnamed server restarts again and again in one host process.

Each restart is a new in-process server named as fastmcp names an unnamed one
(``FastMCP-<4 hex digits>``), a new session, one sampling request answered by the host: what a host
that restarts a crashing server sees. Over the restarts no kind of object grows with their count
(a census of the objects the garbage collector tracks, taken after a warm-up; the spans the test's
exporter keeps are cleared first), and the host's allocated memory blocks do not either: one object
kept per restart would grow by one each time. The default suite makes ``RESTARTS`` restarts;
``make soak`` makes ``SOAK_RESTARTS``.
"""

from __future__ import annotations

import collections
import gc
import sys

import anyio
import pytest

from conftest import SPANS
from drivers import call, callback_returning, result
from otel_sampling import names
from otel_sampling.records.sampling import SESSION_ATTRIBUTE_SETS
from sampling_server import build_server, generated_name

# First restarts: caches of mcp, pydantic and the OTel SDK fill, label sets admit their values, and the
# sessions' start attributes (one set per session, at most SESSION_ATTRIBUTE_SETS) reach their cap.
WARM_UP = SESSION_ATTRIBUTE_SETS
RESTARTS = 300
SOAK_RESTARTS = 10_000
# Growth allowed over a run: an object kept per restart grows by 1 each time. Whatever the number of
# restarts, each run of the event loop leaves a few weak references and their callbacks (47 of each
# measured, with 60 restarts over stdio as with 150 in process): SLACK covers those.
OBJECTS_PER_RESTART = 0.05
SLACK = 100
BLOCKS_PER_RESTART = 0.5  # allocated blocks; one object kept per restart holds at least one
BLOCKS_SLACK = 400  # the event loop's few objects, and the allocator's own bookkeeping


def restart(count: int) -> None:
    async def restarts() -> None:
        for _ in range(count):
            await call("legacy", callback_returning(result()), server=build_server(generated_name()))

    anyio.run(restarts)


def census() -> tuple[collections.Counter, int]:
    SPANS.clear()
    gc.collect()
    return collections.Counter(type(o).__qualname__ for o in gc.get_objects()), sys.getallocatedblocks()


def assert_flat(telemetry, count: int) -> None:
    """``count`` restarts in two halves: what the first half grew may be caches filling once; what
    grows with the restarts grows again in the second."""
    half = count // 2
    restart(WARM_UP + half)
    objects, blocks = census()
    restart(half)
    objects_after, blocks_after = census()
    bound = max(SLACK, half * OBJECTS_PER_RESTART)
    grown = {kind: n - objects[kind] for kind, n in objects_after.items() if n - objects[kind] > bound}
    print(f"{half} restarts after {WARM_UP + half}: {blocks_after - blocks:+d} allocated blocks, grown: {grown}")
    assert grown == {}
    assert blocks_after - blocks < BLOCKS_SLACK + half * BLOCKS_PER_RESTART
    # Not vacuous: every restart's request was recorded, under the one label of the unnamed server.
    requests = telemetry.counts(names.METRIC_SAMPLING_REQUESTS, names.MCP_SERVER_NAME)
    assert requests == {("FastMCP-*",): WARM_UP + 2 * half}


def test_restarts_of_an_unnamed_server_keep_host_memory_flat(mcp_instrumented):
    assert_flat(mcp_instrumented, RESTARTS)


@pytest.mark.soak
def test_ten_thousand_restarts_of_an_unnamed_server_keep_host_memory_flat(mcp_instrumented):
    assert_flat(mcp_instrumented, SOAK_RESTARTS)
