"""desk-server: an MCP server (mcp 2.x) that calls its own model, as servers do once sampling is gone.

MCP deprecated sampling in the 2026-07-28 specification (SEP-2577); its guidance to server authors
is to call an LLM from the server. This server does, through the anthropic SDK (``ANTHROPIC_BASE_URL``:
the demo's fake provider), with a fallback chain of its own: claude-sonnet-5-5, then
claude-haiku-5-5 when the primary fails.

Tools:

* ``draft_reply(ticket, provider_scenario="")``: a reply drafted by the server's own model.
  ``provider_scenario`` stands in for the state of the provider: the fake provider reads it from a
  header on the primary's call (``status=529`` is an outage of the primary).
* ``summarize(ticket)``: asks the client to sample first (``ServerSession.create_message``), and
  answers from its own fallback model when the request gets no answer: refused, a client that
  declares no sampling, a 2026-07-28 connection (no back-channel), or a failure. The user's model is
  then replaced by the server's.

Under ``opentelemetry-instrument`` the server instrumentor makes each tool call a run named
``desk-server/<tool>``, with the provider calls inside it. Run as a stdio server: ``python desk_server.py``.
"""

from __future__ import annotations

import os
import sys
import warnings

import anthropic
from mcp import types
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning

warnings.filterwarnings("ignore", category=MCPDeprecationWarning)  # summarize samples on purpose

SERVER_NAME = "desk-server"
PRIMARY_MODEL = "claude-sonnet-5-5"
FALLBACK_MODEL = "claude-haiku-5-5"
MAX_TOKENS = 200

server = MCPServer(SERVER_NAME, version="1.0.0")


def log(message: str) -> None:
    print(f"[{SERVER_NAME}] {message}", file=sys.stderr, flush=True)


async def _complete(llm: anthropic.AsyncAnthropic, model: str, prompt: str, scenario: str = "") -> str:
    message = await llm.messages.create(
        model=model,
        max_tokens=MAX_TOKENS,
        messages=[{"role": "user", "content": prompt}],
        extra_headers={"x-fake-scenario": scenario} if scenario else None,
    )
    return message.model


async def _own_model(prompt: str, primary_scenario: str | None) -> str:
    """The server's fallback chain (``primary_scenario`` None: the fallback only)."""
    async with anthropic.AsyncAnthropic(
        base_url=os.environ["ANTHROPIC_BASE_URL"], api_key="sk-fake", max_retries=0
    ) as llm:
        if primary_scenario is not None:
            try:
                return await _complete(llm, PRIMARY_MODEL, prompt, primary_scenario)
            except (anthropic.APIStatusError, anthropic.APIConnectionError) as e:
                log(f"{PRIMARY_MODEL} failed ({type(e).__name__}); falling back to {FALLBACK_MODEL}")
        return await _complete(llm, FALLBACK_MODEL, prompt)


@server.tool()
async def draft_reply(ticket: str, provider_scenario: str = "") -> str:
    model = await _own_model(f"Draft a reply to this support ticket:\n\n{ticket}", provider_scenario)
    return f"reply by {model}"


@server.tool()
async def summarize(ticket: str, ctx: Context) -> str:
    prompt = f"Summarize this support ticket:\n\n{ticket}"
    try:
        result = await ctx.session.create_message(
            messages=[types.SamplingMessage(role="user", content=types.TextContent(text=prompt))],
            max_tokens=MAX_TOKENS,
        )
    except Exception as e:  # noqa: BLE001 - refused, unsupported, no back-channel, failed: our own model answers
        log(f"sampling got no answer ({type(e).__name__}); answering from {FALLBACK_MODEL}")
        return f"summary by {await _own_model(prompt, None)} (server model)"
    return f"summary by {result.model}"


if __name__ == "__main__":
    server.run()
