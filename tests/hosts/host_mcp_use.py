"""An mcp-use host (mcp 1.x): ``MCPClient`` over stdio with a sampling callback the user writes, here
with langchain's ``ChatAnthropic`` (mcp-use's own LLM layer; anthropic SDK, pointed at the fake
provider) and its ``with_fallbacks`` for the fallback model. The tool is called directly on the
session, as mcp-use's docs show for calls without an agent; the host traces that call (a span around
it, the session opened before), so the sampling request has a trace to join.

The callback reports the model the response names (langchain's ``response_metadata["model_name"]``)
and ``endTurn``. Declining returns the MCP spec's frame (``-1``, "User rejected sampling request");
no sampling is an ``MCPClient`` without a callback (mcp's default answer).

    python host_mcp_use.py --host mcp-use --provider-url URL --scenario HEADER --sampling model

It prints the tool result (or what the client raised) as its last line (host_scenarios.run_host).
"""

from host_langchain_sampling import answering_with, decline
from host_scenarios import SCENARIO_HEADER, TICKET, TOOL, run_host, sampling_callback_for
from langchain_anthropic import ChatAnthropic
from mcp_use import MCPClient
from opentelemetry import trace


def chat_model(args):
    def chat(model: str) -> ChatAnthropic:
        return ChatAnthropic(
            model=model,
            base_url=args.provider_url,
            api_key="sk-fake",
            max_tokens=64,
            default_headers={SCENARIO_HEADER: args.scenario},
        )

    return chat(args.family.primary).with_fallbacks([chat(args.family.fallback)])


async def main(args) -> str:
    callback = sampling_callback_for(args, lambda: answering_with(chat_model(args)), decline)
    config = {"mcpServers": {"tickets": {"command": args.server_command, "args": args.server_args}}}
    client = MCPClient(config=config, sampling_callback=callback)
    try:
        session = await client.create_session("tickets")
        with trace.get_tracer("host").start_as_current_span(f"execute_tool {TOOL}"):
            result = await session.call_tool(TOOL, {"ticket": TICKET})
    finally:
        await client.close_all_sessions()
    text = " ".join(getattr(block, "text", repr(block)) for block in result.content)
    return f"{'error' if result.isError else 'ok'}: {text}"


if __name__ == "__main__":
    run_host(main)
