"""Sampling requests mcp rejects before the host's callback runs: counted on
``otel_sampling.sampling.rejected`` by server and reason, with no span and no ending (the host never
saw them). On the legacy path mcp answers them -32602 (invalid params); on the 2026-07-28 path the
tool call that carried one fails. Sent by a raw stdio server (tests/malformed_server.py) that writes
JSON-RPC itself, as no SDK server would send them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from drivers import callback_returning, result
from malformed_server import MALFORMED, NAME
from otel_sampling import names

pytestmark = pytest.mark.subprocess
SERVER = StdioServerParameters(command=sys.executable, args=[str(Path(__file__).with_name("malformed_server.py"))])
INVALID_PARAMS = -32602  # JSON-RPC 2.0 "Invalid params"


def ask(kinds: list[str], mode: str = "legacy") -> list[dict]:
    """Call ``ask(kind)`` once per kind on one session; what the server got back, each (the
    2026-07-28 path: ``{"host": <exception class>}`` when the host's call failed instead)."""

    async def one(client, kind: str) -> dict:
        try:
            return json.loads((await client.call_tool("ask", {"kind": kind})).content[0].text)
        except Exception as exc:  # noqa: BLE001 - the test reads what the host got
            return {"host": type(exc).__name__}

    async def main() -> list[dict]:
        async with Client(SERVER, mode=mode, sampling_callback=callback_returning(result())) as client:
            return [await one(client, k) for k in kinds]

    return anyio.run(main)


def test_each_rejected_request_is_counted_by_server_and_reason(mcp_instrumented):
    kinds = [k for k in MALFORMED if k != "valid"]
    answers = ask([*kinds, "valid", kinds[0]])
    # mcp's answer reaches the server unchanged; the valid request reached the callback.
    assert [a.get("error", {}).get("code") for a in answers] == [INVALID_PARAMS] * len(kinds) + [None, INVALID_PARAMS]
    assert answers[len(kinds)]["model"] == result().model
    rejected = mcp_instrumented.counts(
        names.METRIC_SAMPLING_REJECTED, names.MCP_SERVER_NAME, names.SAMPLING_REJECTION_REASON
    )
    expected = {(NAME, MALFORMED[k][1]): 1 for k in kinds}
    expected[(NAME, MALFORMED[kinds[0]][1])] += 1
    assert rejected == expected
    # Only the valid request has a span and an ending.
    assert len(mcp_instrumented.spans(names.SPAN_SAMPLING)) == 1
    assert sum(mcp_instrumented.counts(names.METRIC_SAMPLING_REQUESTS).values()) == 1


def test_on_the_2026_07_28_path_each_rejected_request_is_counted(mcp_instrumented):
    """mcp validates the requests an ``InputRequiredResult`` embeds with the result: a malformed
    one fails the host's tool call (pydantic's ``ValidationError``) and is never answered."""
    kinds = [k for k in MALFORMED if k != "valid"]
    answers = ask([*kinds, "valid"], mode="auto")
    assert answers[:-1] == [{"host": "ValidationError"}] * len(kinds)
    assert answers[-1]["model"] == result().model
    by = (names.MCP_SERVER_NAME, names.SAMPLING_REJECTION_REASON)
    rejected = mcp_instrumented.counts(names.METRIC_SAMPLING_REJECTED, *by)
    assert rejected == {(NAME, MALFORMED[k][1]): 1 for k in kinds}
    assert [s.attributes[names.SAMPLING_PATH] for s in mcp_instrumented.spans(names.SPAN_SAMPLING)] == [names.PATH_MRTR]


def test_nothing_is_counted_while_uninstrumented(telemetry):
    ask(["no_max_tokens"])
    assert telemetry.points(names.METRIC_SAMPLING_REJECTED) == []
