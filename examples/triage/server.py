"""ticket-server: an MCP server (mcp 2.x) that asks its client's LLM to summarize support tickets.

The server has no model of its own. Its tools ask the *host* for a completion with MCP sampling
(``sampling/createMessage``); the host decides whether to allow it, which model to use, and calls
its provider.

Tools:

* ``summarize_ticket(ticket, hint="claude-sonnet", include_context="thisServer")``: asks through a
  ``Sample`` resolver, so it works on both protocol eras: a server-to-client JSON-RPC request on
  handshake-era connections (protocol <= 2025-11-25), an ``InputRequiredResult`` round trip on
  2026-07-28 connections.
* ``summarize_with_deadline(ticket, deadline_s=0.5, hint="claude-sonnet")``: sends the request
  itself with a server-side deadline. Handshake era only (2026-07-28 has no back-channel).

Both tools turn a failed sampling request into a normal text result naming the JSON-RPC error
(code, message, data), so the calling model learns why there is no summary. On 2026-07-28 a client
denial never reaches the server: the client's ``call_tool`` raises instead.

Run as a stdio server: ``python server.py``; over streamable HTTP: ``python server.py --http PORT``.
It logs to stderr only (stdout is the MCP channel).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import warnings
from typing import Annotated, Any

from mcp import MCPError, types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer, Resolve, Sample
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.message import ServerMessageMetadata

# Sampling (and includeContext other than "none") is deprecated in protocol 2026-07-28; this
# server uses it on purpose.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

SYSTEM_PROMPT = (
    "You are a support engineer triaging tickets. Summarize the ticket in one sentence and name "
    "the team that should own it."
)
MAX_TOKENS = 200
RESOLVED_TOOLS = ("summarize_ticket",)  # tools whose sampling runs in a resolver, before the body


def log(message: str) -> None:
    print(f"[ticket-server] {message}", file=sys.stderr, flush=True)


def _prompt(ticket: str) -> list[types.SamplingMessage]:
    text = f"Summarize this support ticket for the on-call engineer:\n\n{ticket}"
    return [types.SamplingMessage(role="user", content=types.TextContent(text=text))]


def _preferences(hint: str) -> types.ModelPreferences:
    return types.ModelPreferences(
        hints=[types.ModelHint(name=hint)], intelligence_priority=0.7, speed_priority=0.5, cost_priority=0.3
    )


def _describe(result: types.CreateMessageResult) -> str:
    content = result.content
    text = content.text if isinstance(content, types.TextContent) else f"<{content.type}>"
    return f"summary by {result.model} (stop: {result.stop_reason}): {text}"


def _describe_error(error: MCPError) -> str:
    data = json.dumps(error.data, sort_keys=True) if error.data is not None else "null"
    return f"no summary: sampling failed: code={error.code} message={error.message!r} data={data}"


class SamplingErrorsAsText:
    """Middleware: a sampling failure inside a resolved tool becomes that tool's text result.

    A ``Sample`` resolver runs before the tool body, so the ``MCPError`` a denied (or failed)
    request raises on handshake-era connections never reaches the body; the SDK would send it
    back as the JSON-RPC error of the whole ``tools/call``. This server prefers a normal result
    that says what happened, like ``summarize_with_deadline`` returns.
    """

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call" or (ctx.params or {}).get("name") not in RESOLVED_TOOLS:
            return await call_next(ctx)
        try:
            return await call_next(ctx)
        except MCPError as e:
            log(f"{ctx.params['name']} (protocol {ctx.protocol_version}): sampling failed: {e.code} {e.message}")
            return types.CallToolResult(content=[types.TextContent(text=_describe_error(e))])


# TRIAGE_SERVER_NAME lets the host run a second copy under another name (the reroute step).
server = MCPServer(
    os.environ.get("TRIAGE_SERVER_NAME", "ticket-server"), version="1.0.0", middleware=[SamplingErrorsAsText()]
)


def ask_for_summary(ticket: str, hint: str, include_context: str) -> Sample:
    """Resolver: takes the tool arguments it needs by name and asks the client's LLM."""
    return Sample(
        _prompt(ticket),
        max_tokens=MAX_TOKENS,
        system_prompt=SYSTEM_PROMPT,
        include_context=include_context,  # type: ignore[arg-type]  # validated by the tool's Literal
        temperature=0.2,
        metadata={"ticket_chars": len(ticket)},
        model_preferences=_preferences(hint),
    )


@server.tool(structured_output=False)  # plain text, also when the middleware answers
async def summarize_ticket(
    ticket: str,
    summary: Annotated[types.CreateMessageResult, Resolve(ask_for_summary)],
    ctx: Context,
    hint: str = "claude-sonnet",
    include_context: types.IncludeContext = "thisServer",
) -> str:
    """Summarize a support ticket with the client's LLM (model hint and context scope optional)."""
    log(f"summarize_ticket (protocol {ctx.protocol_version}): {_describe(summary)}")
    return _describe(summary)


@server.tool(structured_output=False)
async def summarize_with_deadline(
    ticket: str, ctx: Context, deadline_s: float = 0.5, hint: str = "claude-sonnet"
) -> str:
    """Summarize a ticket, giving the client's LLM at most ``deadline_s`` seconds."""
    params = types.CreateMessageRequestParams(
        messages=_prompt(ticket),
        max_tokens=MAX_TOKENS,
        system_prompt=SYSTEM_PROMPT,
        include_context="thisServer",
        model_preferences=_preferences(hint),
    )
    try:
        result = await ctx.session.send_request(
            types.CreateMessageRequest(params=params),
            types.CreateMessageResult,
            request_read_timeout_seconds=deadline_s,
            metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
        )
    except MCPError as e:  # -32001 on timeout (the SDK also sends notifications/cancelled)
        log(f"summarize_with_deadline (protocol {ctx.protocol_version}): sampling failed: {e.code} {e.message}")
        return _describe_error(e)
    log(f"summarize_with_deadline (protocol {ctx.protocol_version}): {_describe(result)}")
    return _describe(result)


@server.tool(structured_output=False)
async def open_incident(city: str) -> str:
    """Open an incident for the site in ``city`` (a side effect: it pages the on-call)."""
    log(f"open_incident: {city}")
    return f"incident opened for {city}"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":  # streamable HTTP on 127.0.0.1:PORT, path /mcp
        # stopped with SIGINT: uvicorn re-raises it after a graceful shutdown, and exit hooks run
        with contextlib.suppress(KeyboardInterrupt):
            server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
