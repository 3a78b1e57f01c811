"""The outcome of the MCP ``tools/call`` requests the host sends, by the mode of the run that sent
them (``otel_sampling.host.tool_calls``), over real mcp 2.x sessions with an in-process server.

Expected outcomes are the MCP specification's (server/tools, "Error Handling"): a tool that fails
answers a result with ``isError: true``; an unknown tool or invalid arguments a JSON-RPC error
(``-32602``); the mcp SDK raises the error frame it received as ``MCPError``.
"""

from __future__ import annotations

import anyio
from mcp import Client, types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

import otel_sampling
from otel_sampling import names


def tool_server() -> Server:
    """A low-level server: ``fine`` answers, ``broken`` answers ``isError``, any other tool name or a
    missing ``city`` gets the -32602 error frame (the specification's answer to an unknown tool)."""

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[])

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in ("fine", "broken") or "city" not in (params.arguments or {}):
            raise MCPError(-32602, f"unknown tool {params.name}")
        text = types.TextContent(type="text", text="done")
        return types.CallToolResult(content=[text], is_error=params.name == "broken")

    return Server("tools-server", on_list_tools=list_tools, on_call_tool=call_tool)


async def call_tools(calls: list[tuple[str, dict]]) -> list[object]:
    outcomes: list[object] = []
    async with Client(tool_server(), mode="legacy") as client:
        for tool, args in calls:
            try:
                outcomes.append((await client.call_tool(tool, args)).is_error)
            except MCPError as exc:
                outcomes.append(exc.code)
    return outcomes


CALLS = [("fine", {"city": "Paris"}), ("broken", {"city": "Paris"}), ("delete_everything", {"city": "Paris"})]


def test_each_tool_call_is_counted_by_its_outcome(mcp_instrumented):
    seen = anyio.run(call_tools, CALLS)
    assert seen == [False, True, -32602]  # what the host got, as the specification says
    assert mcp_instrumented.counts(names.METRIC_HOST_TOOL_CALLS, names.TOOL_CALL_OUTCOME, names.DEGRADATION_MODE) == {
        (names.TOOL_CALL_OUTCOME_OK, names.MODE_PRIMARY): 1,
        (names.TOOL_CALL_OUTCOME_IS_ERROR, names.MODE_PRIMARY): 1,
        (names.TOOL_CALL_OUTCOME_ERROR_FRAME, names.MODE_PRIMARY): 1,
    }


def test_a_tool_call_sent_in_a_degraded_run_counts_as_degraded(mcp_instrumented):
    async def main() -> list[object]:
        with otel_sampling.canary():
            return await call_tools(CALLS[:2])

    anyio.run(main)
    assert mcp_instrumented.counts(names.METRIC_HOST_TOOL_CALLS, names.TOOL_CALL_OUTCOME, names.DEGRADATION_MODE) == {
        (names.TOOL_CALL_OUTCOME_OK, names.MODE_DEGRADED): 1,
        (names.TOOL_CALL_OUTCOME_IS_ERROR, names.MODE_DEGRADED): 1,
    }


def test_invalid_arguments_answered_with_an_error_frame_are_error_frames(mcp_instrumented):
    assert anyio.run(call_tools, [("fine", {})]) == [-32602]
    assert mcp_instrumented.counts(names.METRIC_HOST_TOOL_CALLS, names.TOOL_CALL_OUTCOME) == {
        (names.TOOL_CALL_OUTCOME_ERROR_FRAME,): 1
    }


def test_nothing_is_counted_with_instrumentation_suppressed(mcp_instrumented):
    from opentelemetry.instrumentation.utils import suppress_instrumentation

    async def main() -> list[object]:
        with suppress_instrumentation():
            return await call_tools(CALLS[:1])

    anyio.run(main)
    assert mcp_instrumented.points(names.METRIC_HOST_TOOL_CALLS) == []


def test_mcp_1x_shapes_read_the_same() -> None:
    """mcp 1.x names the flag ``isError`` and raises ``McpError`` (its ``error.code``)."""
    from types import SimpleNamespace

    from otel_sampling.instrumentation._mcp_tool_outcomes import is_error_frame, outcome_of_result

    class McpError(Exception):
        error = SimpleNamespace(code=-32602)

    assert outcome_of_result(SimpleNamespace(isError=True, content=[])) == names.TOOL_CALL_OUTCOME_IS_ERROR
    assert outcome_of_result(SimpleNamespace(isError=False, content=[])) == names.TOOL_CALL_OUTCOME_OK
    assert is_error_frame(McpError())
    assert not is_error_frame(TimeoutError())
