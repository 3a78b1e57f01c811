"""Tool calls the host sends again in one run (``otel_sampling.records.tool_repeats``): the same tool
with the same arguments as an earlier call of the run is counted on
``agent.run.repeated_tool_calls``, and for a tool the server's policy table or the sending run's
scope (``[runs."<name>"]``, else ``[default]``) names in ``side_effect_tools`` it is also the
violation ``repeated_side_effect``. No argument reaches any span, event or label.

Real mcp 2.x sessions (in-process, mcp's own ``Client``) with a server of two tools, one with a
side effect; the policy file is read as the host reads it (``OTEL_SAMPLING_POLICY``).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

import otel_sampling
from conftest import SPANS, with_policy
from otel_sampling import names
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.records import run as run_records

SERVER = "tickets"
SECRET = "customer-4417-card-ending-0042"  # an argument that must never be exported
POLICY = f'[servers."{SERVER}"]\nside_effect_tools = ["create_ticket"]\n'


def _server() -> MCPServer:
    server = MCPServer(SERVER, version="1.0.0")

    @server.tool()
    def create_ticket(title: str) -> str:
        return "T-1"

    @server.tool()
    def search(query: str) -> str:
        return "nothing"

    return server


@pytest.fixture
def host(telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    yield from with_policy(telemetry, tmp_path, monkeypatch, POLICY, MCPSamplingInstrumentor)


async def _calls(*calls: tuple[str, dict], run: str | None = "triage") -> None:
    async with Client(_server()) as client:
        if run is None:
            for name, arguments in calls:
                await client.call_tool(name, arguments)
            return
        async with otel_sampling.run(run):
            for name, arguments in calls:
                await client.call_tool(name, arguments)


def _repeats(telemetry) -> dict:
    return telemetry.counts(
        names.METRIC_AGENT_RUN_REPEATED_TOOL_CALLS,
        names.DEGRADATION_MODE,
        names.GEN_AI_TOOL_NAME,
        names.TOOL_SIDE_EFFECT,
    )


def _violations(telemetry) -> dict:
    return telemetry.counts(names.METRIC_SAMPLING_VIOLATIONS, names.MCP_SERVER_NAME, names.SAMPLING_VIOLATION_KIND)


def test_a_side_effect_tool_called_again_with_the_same_arguments_is_a_violation(host):
    ticket = ("create_ticket", {"title": SECRET})
    anyio.run(_calls, ticket, ("search", {"query": "printer"}), ticket, ticket)
    assert _repeats(host) == {("primary", "create_ticket", "true"): 2}
    assert _violations(host) == {(SERVER, names.VIOLATION_REPEATED_SIDE_EFFECT): 2}
    (run_span,) = host.spans("invoke_agent triage")
    events = [e for e in run_span.events if e.name == names.EVENT_SAMPLING_VIOLATION]
    assert [dict(e.attributes) for e in events] == [
        {names.SAMPLING_VIOLATION_KIND: names.VIOLATION_REPEATED_SIDE_EFFECT, names.MCP_SERVER_NAME: SERVER}
    ] * 2


def test_a_repeat_of_another_tool_is_counted_without_a_violation(host):
    anyio.run(_calls, ("search", {"query": "printer"}), ("search", {"query": "printer"}))
    assert _repeats(host) == {("primary", "search", "false"): 1}
    assert _violations(host) == {}


@pytest.mark.parametrize(
    "second",
    [
        {"title": "Printer on fire, again"},  # other arguments
        {"title": SECRET, "priority": 1},  # one more argument
    ],
)
def test_other_arguments_are_no_repeat(host, second):
    anyio.run(_calls, ("create_ticket", {"title": SECRET}), ("create_ticket", second))
    assert _repeats(host) == {}


def test_the_same_arguments_in_another_order_are_the_same_call(host):
    anyio.run(_calls, ("search", {"query": "a", "page": 1}), ("search", {"page": 1, "query": "a"}))
    assert _repeats(host) == {("primary", "search", "false"): 1}


def test_repeats_are_judged_per_run(host):
    ticket = ("create_ticket", {"title": SECRET})
    anyio.run(_calls, ticket)
    anyio.run(_calls, ticket)
    assert _repeats(host) == {}


def test_outside_a_run_nothing_is_fingerprinted(host):
    ticket = ("create_ticket", {"title": SECRET})
    anyio.run(lambda: _calls(ticket, ticket, run=None))
    assert _repeats(host) == {}
    assert _violations(host) == {}


def test_a_repeat_in_a_degraded_run_is_counted_degraded(host):
    async def degraded_run() -> None:
        async with Client(_server()) as client:
            async with otel_sampling.run("triage") as run:
                await client.call_tool("search", {"query": "q"})
                run.mark_degraded(("failover",))  # as a failed-over provider call in it would
                await client.call_tool("search", {"query": "q"})

    anyio.run(degraded_run)
    assert _repeats(host) == {("degraded", "search", "false"): 1}


def test_a_runs_memory_of_tool_calls_is_bounded(host):
    calls = [("search", {"query": str(i)}) for i in range(run_records.MAX_TOOL_CALLS + 5)]
    late, early = calls[-1], calls[0]
    anyio.run(_calls, *calls, late, early)  # past the cap a new call is not remembered
    assert _repeats(host) == {("primary", "search", "false"): 1}


def test_no_argument_reaches_a_span_an_event_or_a_label(host):
    ticket = ("create_ticket", {"title": SECRET})
    anyio.run(_calls, ticket, ticket)
    exported = [
        str(dict(s.attributes)) + str([(e.name, dict(e.attributes)) for e in s.events])
        for s in SPANS.get_finished_spans()
    ]
    assert exported and not any(SECRET in text for text in exported)
    data = host.reader.get_metrics_data()
    assert SECRET not in data.to_json()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_rounds_of_one_input_required_loop_are_one_call(host, mode):
    """On the 2026-07-28 path mcp's ``Client.call_tool`` sends ``tools/call`` again with the same name
    and arguments for each round of the loop: one call, no repeat; a second call is one."""
    from drivers import ARGS, callback_returning, result
    from sampling_server import build_server

    async def twice() -> None:
        async with Client(build_server(), mode=mode, sampling_callback=callback_returning(result())) as client:
            async with otel_sampling.run("triage"):
                await client.call_tool("sample", ARGS)
                assert _repeats(host) == {}
                await client.call_tool("sample", ARGS)

    anyio.run(twice)
    assert _repeats(host) == {("primary", "sample", "false"): 1}


RUN_SCOPED = '[runs."triage"]\nside_effect_tools = ["search"]\n\n[default]\nside_effect_tools = ["create_ticket"]\n'


@pytest.fixture
def run_scoped(telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    yield from with_policy(telemetry, tmp_path, monkeypatch, RUN_SCOPED, MCPSamplingInstrumentor)


def test_the_run_scope_names_side_effect_tools_the_server_table_does_not(run_scoped):
    search = ("search", {"query": "printer"})
    anyio.run(_calls, search, search)
    assert _repeats(run_scoped) == {("primary", "search", "true"): 1}
    assert _violations(run_scoped) == {(SERVER, names.VIOLATION_REPEATED_SIDE_EFFECT): 1}


def test_the_runs_own_table_decides_before_the_default(run_scoped):
    ticket = ("create_ticket", {"title": SECRET})
    anyio.run(_calls, ticket, ticket)
    assert _repeats(run_scoped) == {("primary", "create_ticket", "false"): 1}
    assert _violations(run_scoped) == {}


def test_a_run_with_no_table_of_its_own_reads_the_default(run_scoped):
    ticket = ("create_ticket", {"title": SECRET})
    anyio.run(lambda: _calls(ticket, ticket, run="nightly"))
    assert _repeats(run_scoped) == {("primary", "create_ticket", "true"): 1}
    assert _violations(run_scoped) == {(SERVER, names.VIOLATION_REPEATED_SIDE_EFFECT): 1}
