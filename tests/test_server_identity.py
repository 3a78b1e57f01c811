"""A server whose name is a placeholder is one server across restarts (host side, mcp 2.x).

fastmcp names a server built without a name afresh in each process (``FastMCP-<4 hex digits>``),
and the SDKs give every unnamed server the same default. Such a server is kept (identity store,
ledger) by the endpoint the host reached it at, else by the stable form of its name; it is labelled
``mcp.server.name`` by that stable form (``FastMCP-*``); a policy table keyed by either covers it
(``otel_sampling.rules.servers``, docs/telemetry.md "Server identity"). The span still says
what the server said.

Real sessions: in-memory (each session a new server, its name generated as fastmcp generates it)
and stdio subprocesses (each one a restart of ``sampling_server.py --generated-name``).
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from conftest import TRACER_PROVIDER
from drivers import ARGS, call, callback_returning, result
from otel_sampling import names
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.rules.servers import stdio_endpoint
from sampling_server import build_server, generated_name

RESTARTS = 200  # twice the default label budget (OTEL_SAMPLING_LABEL_VALUE_LIMIT=100)
DENIED = types.ErrorData(code=-1, message="User rejected sampling request")
SCRIPT = str(Path(__file__).with_name("sampling_server.py"))
UNHINTED = {"hint": "gpt-4o", "include_context": "none"}  # served by claude-haiku: judged by the policy alone


@contextlib.contextmanager
def instrumented_with_policy(telemetry, tmp_path, monkeypatch, policy: str):
    path = tmp_path / "policy.toml"
    path.write_text(policy, encoding="utf-8")
    monkeypatch.setenv("OTEL_SAMPLING_POLICY", str(path))
    instrumentor = MCPSamplingInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        yield telemetry
    finally:
        instrumentor.uninstrument()


def within_policy_toml(server: str) -> str:
    return f'[servers.{json.dumps(server)}]\npermitted_models = ["claude-haiku-5-5"]\n'


def stdio(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[SCRIPT, "--generated-name", *args])


async def call_stdio(mode: str, callback, server: StdioServerParameters, args: dict) -> None:
    async with Client(server, mode=mode, sampling_callback=callback) as client:
        with contextlib.suppress(Exception):  # a denial fails the tool call; the telemetry is what is read
            await client.call_tool("sample", args)


def test_200_restarts_of_a_server_with_a_generated_name_use_one_label_value_and_raise_no_violation(mcp_instrumented):
    """Each session a new server, named as fastmcp names it, sending the same request, which the
    host denies every time: one server, so no ``rerouted_after_denial`` (denied for one server,
    then sent by another) and no label value per restart."""
    reported: list[str] = []

    async def restarts() -> None:
        for _ in range(RESTARTS):
            reported.append(generated_name())
            await call("legacy", callback_returning(DENIED), server=build_server(reported[-1]))

    anyio.run(restarts)
    assert len(set(reported)) > 100  # more names than the label budget admits
    spans = mcp_instrumented.spans(names.SPAN_SAMPLING)
    assert [s.attributes[names.MCP_SERVER_NAME] for s in spans] == reported  # what each server said
    assert {s.attributes[names.SAMPLING_ENDING] for s in spans} == {names.ENDING_USER_DENIED}
    assert all(len(s.links) == 1 for s in spans[1:])  # each request was known as a repeat of the one before
    assert mcp_instrumented.counts(names.METRIC_SAMPLING_REQUESTS, names.MCP_SERVER_NAME) == {("FastMCP-*",): RESTARTS}
    assert mcp_instrumented.counts(names.METRIC_SAMPLING_VIOLATIONS, names.SAMPLING_VIOLATION_KIND) == {}
    assert not any(e.name == names.EVENT_SAMPLING_VIOLATION for s in spans for e in s.events)


def test_an_sdk_default_name_keeps_its_label(mcp_instrumented):
    """mcp 2.x names an unnamed MCPServer ``mcp-server``: stable already, so it is its own label."""
    anyio.run(call, "legacy", callback_returning(result()), "sample", None, build_server("mcp-server"))
    assert mcp_instrumented.counts(names.METRIC_SAMPLING_REQUESTS, names.MCP_SERVER_NAME) == {("mcp-server",): 1}


def test_a_policy_keyed_by_the_generator_covers_an_in_process_server(telemetry, tmp_path, monkeypatch):
    """In-process the host knows no endpoint: ``[servers."FastMCP-*"]`` covers every unnamed fastmcp server."""
    with instrumented_with_policy(telemetry, tmp_path, monkeypatch, within_policy_toml("FastMCP-*")):
        for _ in range(2):
            anyio.run(
                call,
                "legacy",
                callback_returning(result(model="claude-haiku-5-5")),
                "sample",
                UNHINTED,
                build_server(generated_name()),
            )
    spans = telemetry.spans(names.SPAN_SAMPLING)
    assert [s.attributes[names.SAMPLING_SUBSTITUTION] for s in spans] == ["within_policy", "within_policy"]


@pytest.mark.subprocess
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_policy_keyed_by_the_command_covers_every_restart_of_a_stdio_server(telemetry, tmp_path, monkeypatch, mode):
    """``[servers."stdio:<command line>"]``: the command the host starts, whatever name each process
    reports; the label is the generator's."""
    endpoint = stdio_endpoint(sys.executable, [SCRIPT, "--generated-name"])
    with instrumented_with_policy(telemetry, tmp_path, monkeypatch, within_policy_toml(endpoint)):
        for _ in range(2):
            anyio.run(call_stdio, mode, callback_returning(result(model="claude-haiku-5-5")), stdio(), UNHINTED)
    spans = telemetry.spans(names.SPAN_SAMPLING)
    assert len(spans) == 2
    assert len({s.attributes[names.MCP_SERVER_NAME] for s in spans}) == 2  # a new name per process
    assert {s.attributes[names.NETWORK_TRANSPORT] for s in spans} == {names.TRANSPORT_PIPE}
    assert [s.attributes[names.SAMPLING_SUBSTITUTION] for s in spans] == ["within_policy"] * 2
    assert telemetry.counts(names.METRIC_SAMPLING_REQUESTS, names.MCP_SERVER_NAME) == {("FastMCP-*",): 2}


@pytest.mark.subprocess
def test_two_commands_reporting_placeholder_names_are_two_servers(mcp_instrumented):
    """Denied for one command, then sent by another: ``rerouted_after_denial``, though both name
    themselves alike (the endpoint tells them apart)."""
    anyio.run(call_stdio, "legacy", callback_returning(DENIED), stdio(), ARGS)
    anyio.run(call_stdio, "legacy", callback_returning(result()), stdio("--another"), ARGS)
    counts = mcp_instrumented.counts(names.METRIC_SAMPLING_VIOLATIONS, names.SAMPLING_VIOLATION_KIND)
    assert counts == {(names.VIOLATION_REROUTED_AFTER_DENIAL,): 1}


def test_fastmcp_names_an_unnamed_server_the_way_the_rule_recognises():
    """The generator itself, where fastmcp is installed: every unnamed server is ``FastMCP-*``."""
    fastmcp = pytest.importorskip("fastmcp")
    from otel_sampling.rules.servers import stable_name

    assert {stable_name(fastmcp.FastMCP().name) for _ in range(20)} == {"FastMCP-*"}
