"""What a host's session is connected through, on mcp 2.x, whichever task opened the transport.

mcp-use's connection managers (and hosts like them) enter the transport in a task of their own and
hand its streams to the task that makes the ``ClientSession``; mcp's own ``Client`` opens both in
one task. Either way the sampling span carries ``network.transport`` (and on HTTP ``mcp.session.id``),
and the server is known by its endpoint when its name is a placeholder. A host that imports the
transport functions after ``instrument()`` (``opentelemetry-instrument``) gets the wrapped ones: they
are read through their module here for that reason. (mcp 1.x: tests/test_mcp_v1.py.)
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import mcp
import pytest
from mcp import Client, StdioServerParameters
from mcp.client import stdio as mcp_stdio
from mcp.client import streamable_http as mcp_streamable_http
from mcp.client.session import ClientSession

from drivers import (
    ARGS,
    SERVED,
    callback_returning,
    in_a_task_of_its_own,
    only_sampling_span,
    result,
    serve_streamable_http,
)
from otel_sampling import names
from sampling_server import SERVER_NAME, build_server

STDIO = StdioServerParameters(command=sys.executable, args=[str(Path(__file__).with_name("sampling_server.py"))])


async def sample_on(streams) -> str:
    async with ClientSession(streams[0], streams[1], sampling_callback=callback_returning(result())) as session:
        await session.initialize()
        return (await session.call_tool("sample", ARGS)).content[0].text


@pytest.mark.subprocess
def test_a_stdio_transport_opened_in_a_task_of_its_own(mcp_instrumented):
    assert anyio.run(in_a_task_of_its_own, lambda: mcp_stdio.stdio_client(STDIO), sample_on) == f"{SERVED}|endTurn"
    attrs = only_sampling_span(mcp_instrumented).attributes
    assert attrs[names.NETWORK_TRANSPORT] == names.TRANSPORT_PIPE
    assert attrs[names.MCP_SERVER_NAME] == SERVER_NAME
    assert attrs[names.SAMPLING_TOOL_NAME] == "sample"


@pytest.mark.subprocess
def test_a_stdio_transport_opened_in_the_sessions_task(mcp_instrumented):
    async def same_task():
        async with mcp_stdio.stdio_client(STDIO) as streams:
            return await sample_on(streams)

    assert anyio.run(same_task) == f"{SERVED}|endTurn"
    assert only_sampling_span(mcp_instrumented).attributes[names.NETWORK_TRANSPORT] == names.TRANSPORT_PIPE


def test_a_streamable_http_transport_opened_in_a_task_of_its_own(mcp_instrumented):
    async def body(url):
        return await in_a_task_of_its_own(lambda: mcp_streamable_http.streamable_http_client(url), sample_on)

    assert anyio.run(serve_streamable_http, build_server(), body) == f"{SERVED}|endTurn"
    attrs = only_sampling_span(mcp_instrumented).attributes
    assert attrs[names.NETWORK_TRANSPORT] == names.TRANSPORT_TCP
    assert len(attrs[names.MCP_SESSION_ID]) >= 16  # the legacy handshake's mcp-session-id


# ---------------------------------------------------------------- every form of mcp's own Client
# Client(server) takes a StdioServerParameters or a URL (it opens the transport itself) or a transport
# the host opened for it (its context manager): then Client makes ClientSession(dispatcher=...), no
# read stream (mcp/client/client.py, Client.__post_init__ and _build_session). Each form, on both
# protocol paths: "legacy" (JSON-RPC sampling/createMessage) and "auto" (2026-07-28 with this server).
STDIO_FORMS = {
    "parameters": lambda: STDIO,
    "stdio_client": lambda: mcp_stdio.stdio_client(STDIO),
    "mcp.stdio_client": lambda: mcp.stdio_client(STDIO),
}
HTTP_FORMS = {
    "url": lambda url: url,
    "streamable_http_client": lambda url: mcp_streamable_http.streamable_http_client(url),
}
MODES = ("legacy", "auto")


async def sample_with_client(server, mode) -> str:
    async with Client(server, mode=mode, sampling_callback=callback_returning(result())) as client:
        return (await client.call_tool("sample", ARGS)).content[0].text


@pytest.mark.subprocess
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("form", list(STDIO_FORMS))
def test_every_form_of_client_over_stdio_names_the_transport(mcp_instrumented, form, mode):
    assert anyio.run(sample_with_client, STDIO_FORMS[form](), mode) == f"{SERVED}|endTurn"
    attrs = only_sampling_span(mcp_instrumented).attributes
    assert attrs[names.NETWORK_TRANSPORT] == names.TRANSPORT_PIPE
    assert attrs[names.SAMPLING_TOOL_NAME] == "sample"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("form", list(HTTP_FORMS))
def test_every_form_of_client_over_streamable_http_names_the_transport(mcp_instrumented, form, mode):
    async def body(url):
        return await sample_with_client(HTTP_FORMS[form](url), mode)

    assert anyio.run(serve_streamable_http, build_server(), body) == f"{SERVED}|endTurn"
    attrs = only_sampling_span(mcp_instrumented).attributes
    assert attrs[names.NETWORK_TRANSPORT] == names.TRANSPORT_TCP
    if mode == "legacy":  # the initialize handshake's mcp-session-id; a 2026-07-28 connection has none
        assert len(attrs[names.MCP_SESSION_ID]) >= 16
