"""The MCP server the tests talk to (in-process, or over stdio when run as a script; with
``--generated-name`` it names itself as fastmcp names a server built without a name,
``FastMCP-<4 hex digits>``, afresh in each process).

Tools:
* ``sample(hint, include_context, text)``: sampling through a ``Sample`` resolver, so it works on both
  protocol paths; returns ``"<model>|<stopReason>"``. A client error frame propagates to the caller.
* ``sample_with_deadline(deadline_s)``: legacy path only; the server sets a read deadline.

:func:`build_asking_server` builds a server whose one tool ``ask`` samples with any request
fields a test gives it (a hostile server's huge ``maxTokens``, image content, sentinels...);
:func:`build_fault_server` one whose tool fails after its sampling request completed.
"""

import secrets
import sys
from typing import Annotated

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer, Resolve, Sample
from mcp.shared.message import ServerMessageMetadata

SERVER_NAME = "sampling-test-server"


def _params(hint: str, include_context: str | None) -> dict:
    hints = [types.ModelHint(name=h) for h in hint.split(",") if h]
    return {
        "max_tokens": 64,
        "system_prompt": "You summarise tickets.",
        "include_context": include_context or None,
        "model_preferences": types.ModelPreferences(hints=hints) if hints else None,
    }


def _messages(text: str = "Printer on fire") -> list:
    return [types.SamplingMessage(role="user", content=types.TextContent(text=text))]


def ask(hint: str, include_context: str, text: str) -> Sample:
    return Sample(_messages(text), **_params(hint, include_context))


def build_server(name: str = SERVER_NAME) -> MCPServer:
    # No `from __future__ import annotations` here: MCPServer evaluates the tool annotations.
    server = MCPServer(name, version="1.0.0")

    @server.tool()
    async def sample(
        result: Annotated[types.CreateMessageResult, Resolve(ask)],
        hint: str = "claude-sonnet",
        include_context: str = "thisServer",
        text: str = "Printer on fire",
    ) -> str:
        return f"{result.model}|{result.stop_reason}"

    @server.tool()
    async def sample_with_deadline(deadline_s: float, ctx: Context) -> str:
        request = types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(messages=_messages(), **_params("claude-sonnet", None))
        )
        result = await ctx.session.send_request(
            request,
            types.CreateMessageResult,
            request_read_timeout_seconds=deadline_s,
            metadata=ServerMessageMetadata(related_request_id=ctx.request_context.request_id),
        )
        return result.model

    return server


def build_asking_server(**fields) -> MCPServer:
    """A server whose tool ``ask`` samples with ``fields`` (``messages`` defaults to one text
    message, ``max_tokens`` to 64); returns ``"<model>|<stopReason>"``."""
    server = MCPServer("asking-server", version="1.0.0")
    messages = fields.pop("messages", None) or _messages("hi")
    fields.setdefault("max_tokens", 64)

    def sample() -> Sample:
        return Sample(messages, **fields)

    @server.tool()
    async def ask(answer: Annotated[types.CreateMessageResult, Resolve(sample)]) -> str:
        return f"{answer.model}|{answer.stop_reason}"

    return server


def build_fault_server() -> MCPServer:
    """A server ("fault-server") whose tools sample one short message: ``sample`` returns the served
    model; ``sample_then_fail`` raises once the answer came (a tool error after a completed request)."""
    server = MCPServer("fault-server", version="1.0.0")

    def ask_briefly() -> Sample:
        return Sample(_messages("hi"), max_tokens=8)

    @server.tool()
    async def sample(answer: Annotated[types.CreateMessageResult, Resolve(ask_briefly)]) -> str:
        return answer.model

    @server.tool()
    async def sample_then_fail(answer: Annotated[types.CreateMessageResult, Resolve(ask_briefly)]) -> str:
        raise ValueError(f"the tool failed after {answer.model} answered")

    return server


def generated_name() -> str:
    """A name as fastmcp's ``FastMCP.generate_name()`` makes one for an unnamed ``FastMCP`` server."""
    return f"FastMCP-{secrets.token_hex(2)}"


if __name__ == "__main__":
    build_server(generated_name() if "--generated-name" in sys.argv[1:] else SERVER_NAME).run()
