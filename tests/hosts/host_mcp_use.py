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

from host_scenarios import SAMPLING_DECLINE, SAMPLING_MODEL, SCENARIO_HEADER, TICKET, TOOL, run_host
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import HumanMessage, SystemMessage
from mcp import types
from mcp_use import MCPClient
from opentelemetry import trace


def model_callback(args):
    def chat(model: str) -> ChatAnthropic:
        return ChatAnthropic(
            model=model,
            base_url=args.provider_url,
            api_key="sk-fake",
            max_tokens=64,
            default_headers={SCENARIO_HEADER: args.scenario},
        )

    llm = chat(args.family.primary).with_fallbacks([chat(args.family.fallback)])

    async def sampling_callback(context, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        messages = [SystemMessage(params.systemPrompt or "")]
        messages += [HumanMessage(m.content.text) for m in params.messages if isinstance(m.content, types.TextContent)]
        response = await llm.ainvoke(messages)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=response.text),
            model=response.response_metadata.get("model_name", ""),
            stopReason="endTurn",
        )

    return sampling_callback


async def decline(context, params):
    return types.ErrorData(code=-1, message="User rejected sampling request")


async def main(args) -> str:
    callback = None
    if args.sampling == SAMPLING_MODEL:
        callback = model_callback(args)
    elif args.sampling == SAMPLING_DECLINE:
        callback = decline
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
