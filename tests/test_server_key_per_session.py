"""A long server name is hashed once per session, not once per request.

The identity store and the ledger keep a server by ``records.ledger.server_key``: its name, or
for a name over ``SERVER_KEY_MAX_LENGTH`` characters a SHA-256 of it. A hostile server's long
``serverInfo.name`` (a megabyte costs as much to hash per request as it costs to keep) is the same
for every request of its session, so the host hashes it when it first reads the session's server
facts. Counted here: calls to ``hashlib.sha256`` over at least the name's length, on real mcp
sessions, both protocol paths; and no store keeps the long name itself, once per session or at all.
"""

from __future__ import annotations

import contextlib
import hashlib

import anyio
import mcp_types as types
import pytest
from mcp import Client

import otel_sampling
from drivers import call, callback_returning, result
from otel_sampling import names
from otel_sampling.records.ledger import SERVER_KEY_MAX_LENGTH
from sampling_server import build_server

LONG_NAME = "hostile-" + "n" * (4 * SERVER_KEY_MAX_LENGTH)  # past the bound: hashed
SESSIONS = 2
REQUESTS = 4  # per session
PATHS = {"legacy": names.PATH_RPC, "auto": names.PATH_MRTR}


async def callback(ctx, params):
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(text="ok"),
        model="claude-sonnet-5-5-20261001",
        stop_reason="endTurn",
    )


async def sessions(mode: str) -> None:
    for _ in range(SESSIONS):
        async with Client(build_server(LONG_NAME), mode=mode, sampling_callback=callback) as client:
            for n in range(REQUESTS):
                await client.call_tool("sample", {"hint": "claude-sonnet", "include_context": "none", "text": f"q{n}"})


@pytest.mark.parametrize("mode", PATHS)
def test_a_long_server_name_is_hashed_once_per_session(mcp_instrumented, monkeypatch, mode):
    assert len(LONG_NAME) > SERVER_KEY_MAX_LENGTH
    hashed: list[int] = []
    sha256 = hashlib.sha256

    def counting(data=b"", **kwargs):
        if len(data) >= len(LONG_NAME):
            hashed.append(len(data))
        return sha256(data, **kwargs)

    monkeypatch.setattr(hashlib, "sha256", counting)
    anyio.run(sessions, mode)
    spans = mcp_instrumented.spans(names.SPAN_SAMPLING)
    assert [s.attributes[names.SAMPLING_PATH] for s in spans] == [PATHS[mode]] * (SESSIONS * REQUESTS)
    assert len(hashed) == SESSIONS


def test_the_requests_of_a_long_named_server_are_still_one_server(mcp_instrumented):
    """The key computed once per session is the one the ledger and identity store use: a repeat
    from the same long-named server in another session is judged against the first."""
    denied = types.ErrorData(code=-32003, message="Denied by policy", data={"reason": "policy.denied"})
    answers = [
        types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="ok"), model="m", stop_reason="endTurn"
        ),
        denied,
    ]

    async def flipping(ctx, params):
        return answers.pop(0)

    async def twice() -> None:
        for _ in range(2):
            async with Client(build_server(LONG_NAME), mode="legacy", sampling_callback=flipping) as client:
                with contextlib.suppress(Exception):  # the denial surfaces as MCPError; the telemetry is read
                    await client.call_tool("sample", {"hint": "claude-sonnet", "include_context": "none"})

    anyio.run(twice)
    counts = mcp_instrumented.counts(names.METRIC_SAMPLING_VIOLATIONS, names.SAMPLING_VIOLATION_KIND)
    assert counts == {(names.VIOLATION_DECISION_FLIPPED,): 1}


def test_a_huge_server_name_is_not_kept_once_per_session(mcp_both_instrumented):
    """A host that opens a session per tool call gets a fresh copy of the server's long name each
    time; the identity store and the per-server endings (kept an hour, 10k entries) must not hold
    one copy per request. Detection still works: the repeat at another server is a reroute."""
    huge = LONG_NAME
    denied = otel_sampling.sampling_error("policy.denied", "No")
    for i in range(5):
        anyio.run(
            call, "legacy", callback_returning(denied), "sample", {"text": f"ticket {i}"}, build_server(huge + "x")
        )
    anyio.run(call, "legacy", callback_returning(result()), "sample", {"text": "ticket 4"}, build_server(huge + "y"))
    ledger = otel_sampling.state.host_ledger()
    kept = [seen for _, seen in ledger.identity._entries.items()]
    assert len(kept) == 5
    servers = [s.server for s in kept] + [d.server for s in kept for d in s.decisions] + [s.denied_server for s in kept]
    servers += list(ledger._last_endings)
    assert max(len(s) for s in servers) <= 256
    counts = mcp_both_instrumented.counts(names.METRIC_SAMPLING_VIOLATIONS, names.SAMPLING_VIOLATION_KIND)
    assert counts == {(names.VIOLATION_REROUTED_AFTER_DENIAL,): 1}
