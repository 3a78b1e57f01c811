"""The MCP server (mcp 2.x) the real hosts on mcp 2.x drive over stdio: one tool that samples.

``summarise(ticket)`` asks the client for a completion with the model hint given on the command
line (``Sample`` through a resolver: the SDK picks the protocol path, a legacy server-to-client
request or a 2026-07-28 input request) and returns ``"<model>|<stopReason>|<text>"`` as the host
answered. A client error frame ends the tool call with the SDK's error result.

    python server_v2.py --name tickets-openai --hint gpt-4.1
"""

import argparse
from typing import Annotated

import mcp_types as types
from host_scenarios import SERVER_VERSION
from mcp.server.mcpserver import MCPServer, Resolve, Sample

SYSTEM_PROMPT = "You summarise tickets in one sentence."


def _text(content: object) -> str:
    blocks = content if isinstance(content, list) else [content]
    return " ".join(block.text for block in blocks if isinstance(block, types.TextContent))


def build_server(name: str, hint: str) -> MCPServer:
    # No `from __future__ import annotations` here: MCPServer evaluates the tool annotations.
    server = MCPServer(name, version=SERVER_VERSION)

    def ask(ticket: str) -> Sample:
        return Sample(
            [types.SamplingMessage(role="user", content=types.TextContent(text=ticket))],
            max_tokens=64,
            system_prompt=SYSTEM_PROMPT,
            model_preferences=types.ModelPreferences(hints=[types.ModelHint(name=hint)]),
        )

    @server.tool()
    async def summarise(result: Annotated[types.CreateMessageResult, Resolve(ask)], ticket: str) -> str:
        return f"{result.model}|{result.stop_reason}|{_text(result.content)}"

    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", required=True)
    parser.add_argument("--hint", required=True)
    args = parser.parse_args()
    build_server(args.name, args.hint).run()
