"""The MCP server (mcp 1.x) the real hosts on mcp 1.x drive over stdio: one tool that samples.

``summarise(ticket)`` asks the client for a completion with ``ctx.session.create_message`` and the
model hint given on the command line, and returns ``"<model>|<stopReason>|<text>"`` as the host
answered. A client error frame becomes the tool's error result (FastMCP turns the ``McpError`` into
``isError``).

    python server_v1.py --name tickets-anthropic --hint claude-sonnet
"""

import argparse

from host_scenarios import SERVER_VERSION
from mcp import types
from mcp.server.fastmcp import Context, FastMCP

SYSTEM_PROMPT = "You summarise tickets in one sentence."


def build_server(name: str, hint: str) -> FastMCP:
    server = FastMCP(name)
    server._mcp_server.version = SERVER_VERSION  # FastMCP 1.x takes no version; its low-level server does

    @server.tool()
    async def summarise(ticket: str, ctx: Context) -> str:
        result = await ctx.session.create_message(
            messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text=ticket))],
            max_tokens=64,
            system_prompt=SYSTEM_PROMPT,
            model_preferences=types.ModelPreferences(hints=[types.ModelHint(name=hint)]),
        )
        text = result.content.text if isinstance(result.content, types.TextContent) else ""
        return f"{result.model}|{result.stopReason}|{text}"

    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", required=True)
    parser.add_argument("--hint", required=True)
    args = parser.parse_args()
    build_server(args.name, args.hint).run()
