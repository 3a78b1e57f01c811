"""A process forked after ``instrument()`` (gunicorn ``--preload``, uWSGI, Celery prefork,
``multiprocessing`` with the "fork" start method) is instrumented on its own.

Only the forking thread survives a fork (POSIX ``fork(2)``; Python's ``os.fork``), so in the child:
the stall watchdog runs again, every lock of ours is free (one some other parent thread held at
fork time would otherwise stay held), and the parent's pending requests are the parent's: the
child neither counts them in flight nor reports them stalled or unanswered.
"""

from __future__ import annotations

import multiprocessing
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otel_sampling
from conftest import TRACER_PROVIDER, Telemetry, with_policy
from harness.limits import HANG_S
from otel_sampling import names, state
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor
from otel_sampling.records import run as run_records
from sampling_server import build_server

pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.filterwarnings(
        # Python 3.12+ warns on every fork of a threaded process; forking one is what this module tests.
        "ignore:This process .* is multi-threaded:DeprecationWarning"
    ),
]

FORK = multiprocessing.get_context("fork")
STALL_SECONDS = 3  # the policy's stall threshold, and how long a server-side request may wait for its retry
PARENT_SERVER = "parent-server"
TIMEOUT = HANG_S  # a hang bound: how long anything here may take on a loaded machine


def result() -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(text="ok"),
        model="claude-sonnet-5-5-20261001",
        stop_reason="endTurn",
    )


async def call(server_name: str, mode: str, callback: Callable[..., Any]) -> str:
    async with Client(build_server(server_name), mode=mode, sampling_callback=callback) as client:
        out = await client.call_tool("sample", {"hint": "claude-sonnet"})
        return out.content[0].text


@pytest.fixture
def instrumented(telemetry: Telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Telemetry]:
    """Host and server sides instrumented, stall threshold and unanswered timeout STALL_SECONDS."""
    monkeypatch.setenv(names.ENV_UNANSWERED_AFTER_SECONDS, str(STALL_SECONDS))
    yield from with_policy(
        telemetry,
        tmp_path,
        monkeypatch,
        f"stall_threshold_seconds = {STALL_SECONDS}\n",
        MCPSamplingInstrumentor,
        MCPServerSamplingInstrumentor,
    )


# ---------------------------------------------------------------------- the pool's workers
# Set in each worker by _child_start (module globals: a pool runs module-level functions).
_telemetry: Telemetry | None = None
_child_spans: InMemorySpanExporter | None = None


def _sum(metric: str, key: str) -> dict[Any, int]:
    assert _telemetry is not None
    return {k: v for (k,), v in _telemetry.counts(metric, key).items()}


def _child_start(telemetry: Telemetry) -> None:
    """Pool initializer: the child's own span exporter; the meter provider's in-memory reader is the
    child's copy (a reader cannot join a provider later), so the tasks read differences."""
    global _telemetry, _child_spans
    _telemetry = telemetry
    _child_spans = InMemorySpanExporter()
    TRACER_PROVIDER.add_span_processor(SimpleSpanProcessor(_child_spans))


def _wait_for(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _one_watchdog_round() -> None:
    """Return once every sweep has run after the caller's point: a marker sweep, registered last,
    called twice (the first call may end a round that began before it was registered)."""
    calls = threading.Semaphore(0)
    state.watchdog.register(calls.release)
    try:
        for _ in range(2):
            calls.acquire(timeout=TIMEOUT)
    finally:
        state.watchdog.unregister(calls.release)


def _answer_in_child(kind: str) -> dict[str, Any]:
    """Pool task: one sampling request over a real in-memory session; ``"stall"`` answers only once
    the child reported it stalled (or TIMEOUT passed). Returns what this child exported meanwhile."""
    assert _telemetry is not None and _child_spans is not None
    _child_spans.clear()
    server = f"child-{kind}"
    in_flight = _sum(names.METRIC_SAMPLING_IN_FLIGHT, names.MCP_SERVER_NAME)
    stalls_before = _sum(names.METRIC_SAMPLING_STALLS, names.MCP_SERVER_NAME)
    server_before = _sum(names.METRIC_SAMPLING_SERVER_REQUESTS, names.SAMPLING_PATH)

    def stalled() -> bool:
        return _sum(names.METRIC_SAMPLING_STALLS, names.MCP_SERVER_NAME).get(server, 0) > stalls_before.get(server, 0)

    async def callback(ctx: Any, params: Any) -> types.CreateMessageResult:
        if kind == "stall":
            await anyio.to_thread.run_sync(_wait_for, stalled)
        return result()

    out = anyio.run(call, server, "legacy", callback)
    if stalled():
        _one_watchdog_round()  # the round that reported this stall has swept everything else too
    stalls = _sum(names.METRIC_SAMPLING_STALLS, names.MCP_SERVER_NAME)
    server_after = _sum(names.METRIC_SAMPLING_SERVER_REQUESTS, names.SAMPLING_PATH)
    spans = [s for s in _child_spans.get_finished_spans() if s.name == names.SPAN_SAMPLING and s.kind.name == "SERVER"]
    return {
        "out": out,
        "parent_in_flight": in_flight.get(PARENT_SERVER, 0),
        "stalls": {k: v - stalls_before.get(k, 0) for k, v in stalls.items() if v != stalls_before.get(k, 0)},
        "server_requests": {
            k: v - server_before.get(k, 0) for k, v in server_after.items() if v != server_before.get(k, 0)
        },
        "stall_events": [dict(e.attributes) for s in spans for e in s.events if e.name == names.EVENT_SAMPLING_STALL],
        "request_spans": [s.attributes[names.MCP_SERVER_NAME] for s in spans],
    }


def test_prefork_pool_workers_report_their_own_stalls_and_not_the_parents_requests(instrumented):
    """A fork-context pool created while the parent has a request pending on both sides (the
    2026-07-28 path: the server waits for the retry, the host for its callback)."""
    release = threading.Event()
    callback_running = threading.Event()

    async def parent_callback(ctx: Any, params: Any) -> types.CreateMessageResult:
        callback_running.set()
        await anyio.to_thread.run_sync(release.wait, TIMEOUT)
        return result()

    parent = threading.Thread(target=anyio.run, args=(call, PARENT_SERVER, "auto", parent_callback), daemon=True)
    parent.start()
    try:
        assert callback_running.wait(TIMEOUT)
        parent_in_flight = instrumented.counts(names.METRIC_SAMPLING_IN_FLIGHT, names.MCP_SERVER_NAME)
        assert parent_in_flight[(PARENT_SERVER,)] == 1
        with FORK.Pool(2, initializer=_child_start, initargs=(instrumented,)) as pool:
            stalled, answered = pool.map(_answer_in_child, ["stall", "answer"], chunksize=1)
    finally:
        release.set()
        parent.join(TIMEOUT)

    # Each child: its own request answered and counted; the parent's neither in flight, nor stalled,
    # nor ended "unanswered" there (the parent's 2026-07-28 request would count on PATH_MRTR).
    own = {"out": "claude-sonnet-5-5-20261001|endTurn", "parent_in_flight": 0, "server_requests": {names.PATH_RPC: 1}}
    assert {key: stalled[key] for key in (*own, "stalls", "request_spans")} == {
        **own,
        "stalls": {"child-stall": 1},
        "request_spans": ["child-stall"],
    }
    assert {key: answered[key] for key in (*own, "stalls", "stall_events")} == {**own, "stalls": {}, "stall_events": []}
    (event,) = stalled["stall_events"]
    assert event[names.MCP_SERVER_NAME] == "child-stall"
    assert event[names.SAMPLING_PENDING_SECONDS] >= STALL_SECONDS


# ---------------------------------------------------------------------- locks held at fork time
def _degradation() -> None:
    outage = otel_sampling.degraded("search", reason="index down", owner="oncall", expires_at="2099-01-01T00:00:00Z")
    outage.enter().exit()


def _run() -> None:
    with otel_sampling.run("forked-task"):
        pass


def _watchdog_sweeps() -> None:
    swept = threading.Event()
    state.watchdog.register(swept.set)
    try:
        assert swept.wait(TIMEOUT)
    finally:
        state.watchdog.unregister(swept.set)


def _pending_watch() -> None:
    ledger = state.host_ledger()
    assert ledger is not None
    ledger.pending.sweep()


def _in_flight_store() -> None:
    provider = MeterProvider()
    state.in_flight_store(provider, provider.get_meter("forked"))


def _host_ledger_lock() -> Any:
    ledger = state.host_ledger()
    assert ledger is not None
    return ledger.pending._lock


LOCKS = {
    # what the child does: (the lock it takes, held by a parent thread at fork time; the call)
    "degradations": (lambda: state._degradations_lock, _degradation),
    "open runs": (lambda: run_records.runs.lock, _run),
    "watchdog": (lambda: state.watchdog._lock, _watchdog_sweeps),
    "stall watch": (_host_ledger_lock, _pending_watch),
    "in-flight stores": (lambda: state._in_flight_lock, _in_flight_store),
}


def _in_child(work: Callable[[], None], conn: Any) -> None:
    outcome: list[str] = []

    def attempt() -> None:
        try:
            work()
            outcome.append("done")
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            outcome.append(repr(exc))

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(TIMEOUT)
    conn.send(outcome[0] if outcome else "still waiting for the lock")


@pytest.mark.parametrize("case", LOCKS)
def test_a_lock_held_at_fork_time_is_free_in_the_child(instrumented, case):
    get_lock, work = LOCKS[case]
    lock = get_lock()
    holding, done = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            holding.set()
            done.wait(TIMEOUT)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert holding.wait(TIMEOUT)
    receive, send = FORK.Pipe(duplex=False)
    try:
        child = FORK.Process(target=_in_child, args=(work, send))
        child.start()
    finally:
        done.set()
        holder.join(TIMEOUT)
    try:
        assert receive.poll(TIMEOUT + 10), "the child sent nothing"
        assert receive.recv() == "done"
    finally:
        child.join(TIMEOUT)
        if child.is_alive():
            child.kill()


def test_every_lock_of_the_package_is_reinitialised_after_fork():
    """The at-fork handler unlocks the locks made by ``otel_sampling.locks.new()``: a lock made any
    other way would stay held in a child."""
    package = Path(otel_sampling.__file__).parent
    made_elsewhere = [
        f"{path.relative_to(package)}:{number}"
        for path in sorted(package.rglob("*.py"))
        if path.name != "locks.py" and "testing" not in path.parts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\b(threading\.)?(R?Lock|Condition|Semaphore|BoundedSemaphore)\(", line)
    ]
    assert made_elsewhere == []
