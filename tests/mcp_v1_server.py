"""The mcp 1.x MCP server the mcp 1.x tests talk to (in-process, or over stdio when run as a script;
with ``--generated-name`` it names itself as fastmcp names a server built without a name,
``FastMCP-<4 hex digits>``, afresh in each process).

Tools:
* ``sample(hint, include_context, text)`` asks the client for a completion with
  ``ctx.session.create_message`` and returns ``"<model>|<stopReason>"``; a client error frame
  becomes the tool's error result (FastMCP turns the ``McpError`` into ``isError``).
* ``sample_traced(traceparent)`` sends the request itself with ``params._meta.traceparent`` set, as
  a server with OpenTelemetry would (mcp 1.x injects nothing on its own).
"""

import secrets
import sys

from mcp import types
from mcp.server.fastmcp import Context, FastMCP

SERVER_NAME = "sampling-test-server"
SERVER_VERSION = "1.0.0"  # sent as serverInfo.version in the initialize result


def build_server(name: str = SERVER_NAME) -> FastMCP:
    server = FastMCP(name)
    server._mcp_server.version = SERVER_VERSION  # FastMCP 1.x takes no version; its low-level server does

    @server.tool()
    async def sample(
        ctx: Context, hint: str = "claude-sonnet", include_context: str = "thisServer", text: str = "Printer on fire"
    ) -> str:
        hints = [types.ModelHint(name=h) for h in hint.split(",") if h]
        result = await ctx.session.create_message(
            messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text=text))],
            max_tokens=64,
            system_prompt="You summarise tickets.",
            include_context=include_context or None,
            model_preferences=types.ModelPreferences(hints=hints) if hints else None,
        )
        return f"{result.model}|{result.stopReason}"

    @server.tool()
    async def sample_traced(ctx: Context, traceparent: str) -> str:
        params = types.CreateMessageRequestParams(
            messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text="hi"))],
            maxTokens=8,
            _meta=types.RequestParams.Meta(traceparent=traceparent),
        )
        result = await ctx.session.send_request(
            types.ServerRequest(types.CreateMessageRequest(method="sampling/createMessage", params=params)),
            types.CreateMessageResult,
        )
        return result.model

    return server


if __name__ == "__main__":
    build_server(f"FastMCP-{secrets.token_hex(2)}" if "--generated-name" in sys.argv[1:] else SERVER_NAME).run()
