"""instrument() / uninstrument(): every function the SDKs expose for us is replaced, then restored.

The functions are listed here from the SDKs' own structure (not read from our target tables), so a
target that is dropped or mistyped in a table fails this test.
"""

from __future__ import annotations

import threading

import anthropic._base_client
import anthropic._response
import mcp.client.stdio as mcp_stdio
import openai._base_client
import openai._response
import pytest
import wrapt
from mcp.client.client import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import StreamableHTTPTransport
from mcp.server.runner import ServerRunner
from mcp.server.session import ServerSession
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from openai._legacy_response import LegacyAPIResponse
from openai.lib.streaming.chat import AsyncChatCompletionStream, ChatCompletionStream
from openai.lib.streaming.responses import AsyncResponseStream, ResponseStream

from harness.limits import HANG_S
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor

WRAPPED = {
    MCPSamplingInstrumentor: [
        (ClientSession, "dispatch_input_request"),
        (JSONRPCDispatcher, "_dispatch_notification"),
        (mcp_stdio, "_create_platform_compatible_process"),
        (StreamableHTTPTransport, "__init__"),
        (ClientSession, "__init__"),
        (ClientSession, "call_tool"),
        (Client, "call_tool"),
    ],
    MCPServerSamplingInstrumentor: [(ServerSession, "send_request"), (ServerRunner, "_on_request")],
    # Every anthropic Messages call shape goes through the client's request (see anthropic.py).
    AnthropicInstrumentor: [
        (anthropic._base_client.SyncAPIClient, "request"),
        (anthropic._base_client.AsyncAPIClient, "request"),
        (anthropic._response.BaseAPIResponse, "_parse"),
        (anthropic._response.APIResponse, "close"),
        (anthropic._response.AsyncAPIResponse, "close"),
    ],
    # Every openai Chat Completions and Responses call shape goes through the client's request (see openai.py).
    OpenAIInstrumentor: [
        (openai._base_client.SyncAPIClient, "request"),
        (openai._base_client.AsyncAPIClient, "request"),
        (LegacyAPIResponse, "_parse"),
        (openai._response.BaseAPIResponse, "_parse"),
        (openai._response.APIResponse, "close"),
        (openai._response.AsyncAPIResponse, "close"),
        (ChatCompletionStream, "close"),
        (AsyncChatCompletionStream, "close"),
        (ResponseStream, "close"),
        (AsyncResponseStream, "close"),
    ],
}


@pytest.mark.parametrize("cls", list(WRAPPED))
def test_instrument_wraps_once_and_uninstrument_restores_identity(cls, telemetry):
    original = [vars(owner)[name] for owner, name in WRAPPED[cls]]
    instrumentor = cls()
    instrumentor.instrument(meter_provider=telemetry.meter_provider)
    instrumentor.instrument(meter_provider=telemetry.meter_provider)  # a second call changes nothing
    try:
        for (owner, name), before in zip(WRAPPED[cls], original, strict=True):
            now = vars(owner)[name]
            assert isinstance(now, wrapt.FunctionWrapper) and now.__wrapped__ is before
        assert bool(_watchdog_threads()) == (cls in (MCPSamplingInstrumentor, MCPServerSamplingInstrumentor))
    finally:
        instrumentor.uninstrument()
    for thread in _watchdog_threads():  # the shared thread stops with the last instrumentor
        thread.join(timeout=HANG_S)
    assert not _watchdog_threads()
    assert all(now is before for now, before in zip([vars(o)[n] for o, n in WRAPPED[cls]], original, strict=True))


def _watchdog_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "otel-sampling-watchdog" and t.is_alive()]
