"""A langchain-mcp-adapters host (mcp 1.x): ``MultiServerMCPClient`` over stdio, its session given a
sampling callback through ``session_kwargs`` (what the adapters pass to mcp's ``ClientSession``; they
have no sampling option of their own), the server's tool loaded as a LangChain tool and invoked.

The callback asks langchain-openai's ``ChatOpenAI`` (openai SDK, pointed at the fake provider) with
``.with_fallbacks(...)`` for the fallback model, and reports the model the response names
(``response_metadata["model_name"]``) and ``endTurn``. The host traces its own tool call (a span
around ``ainvoke``, the session opened before it, as an agent loop does), so the sampling request
has a trace to join. Declining returns the MCP spec's frame (``-1``, "User rejected sampling
request"); no sampling is a session without a callback (mcp's default answer).

    python host_langchain.py --host langchain-mcp-adapters --provider-url URL --scenario HEADER --sampling model

It prints the tool result (or what the tool raised) as its last line (host_scenarios.run_host).
"""

from host_scenarios import SAMPLING_DECLINE, SAMPLING_MODEL, SCENARIO_HEADER, TICKET, TOOL, run_host
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import ToolException
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from langchain_openai import ChatOpenAI
from mcp import types
from opentelemetry import trace


def model_callback(args):
    def chat(model: str) -> ChatOpenAI:
        return ChatOpenAI(
            model=model,
            base_url=args.provider_url + "/v1",
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


def _text(content) -> str:
    if isinstance(content, str):
        return content
    return " ".join(block.get("text", repr(block)) if isinstance(block, dict) else str(block) for block in content)


async def main(args) -> str:
    session_kwargs = {}
    if args.sampling == SAMPLING_MODEL:
        session_kwargs["sampling_callback"] = model_callback(args)
    elif args.sampling == SAMPLING_DECLINE:
        session_kwargs["sampling_callback"] = decline
    client = MultiServerMCPClient(
        {
            "tickets": {
                "transport": "stdio",
                "command": args.server_command,
                "args": args.server_args,
                "session_kwargs": session_kwargs,
            }
        }
    )
    async with client.session("tickets") as session:
        tools = await load_mcp_tools(session, handle_tool_errors=False)
        tool = next(t for t in tools if t.name == TOOL)
        with trace.get_tracer("host").start_as_current_span(f"execute_tool {TOOL}"):
            try:
                return "ok: " + _text(await tool.ainvoke({"ticket": TICKET}))
            except ToolException as exc:
                return f"error: {exc}"


if __name__ == "__main__":
    run_host(main)
