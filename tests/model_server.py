"""An MCP server whose tools answer from a model of their own (mcp 2.x), against the fake provider:
what a server author writes once sampling is gone.

Tools:
* ``triage(text)``: calls claude-sonnet-5-5 through the anthropic SDK, and claude-haiku-5-5 when
  the primary fails (a fallback chain of two).
* ``summarise(text)``: asks the client to sample first (``ServerSession.create_message``, both
  protocol eras: a 2026-07-28 connection has no back-channel for it), and answers from its own
  model (claude-haiku-5-5) when the request gets no answer.
* ``broken()``: raises.
"""

import anthropic
import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer

SERVER_NAME = "model-server"
PRIMARY = "claude-sonnet-5-5"
FALLBACK = "claude-haiku-5-5"


def build_model_server(provider_url: str, primary_scenario: str = "") -> MCPServer:
    # No `from __future__ import annotations` here: MCPServer evaluates the tool annotations.
    server = MCPServer(SERVER_NAME, version="1.0.0")

    async def ask(model: str, text: str, scenario: str = "") -> str:
        client = anthropic.AsyncAnthropic(base_url=provider_url, api_key="sk-fake", max_retries=0)
        try:
            message = await client.messages.create(
                model=model,
                max_tokens=64,
                messages=[{"role": "user", "content": text}],
                extra_headers={"x-fake-scenario": scenario},
            )
        finally:
            await client.close()
        return message.model

    @server.tool()
    async def triage(text: str = "Printer on fire") -> str:
        try:
            return await ask(PRIMARY, text, primary_scenario)
        except anthropic.APIStatusError:
            return await ask(FALLBACK, text)

    @server.tool()
    async def summarise(ctx: Context, text: str = "Printer on fire") -> str:
        try:
            result = await ctx.session.create_message(
                messages=[types.SamplingMessage(role="user", content=types.TextContent(text=text))], max_tokens=64
            )
        except Exception:  # noqa: BLE001 - refused, unsupported, no back-channel, failed: the server's own model
            return await ask(FALLBACK, text)
        return result.model

    @server.tool()
    async def broken() -> str:
        raise ValueError("the tool failed")

    return server
