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

from host_langchain_sampling import answering_with, decline
from host_scenarios import SCENARIO_HEADER, TICKET, TOOL, run_host, sampling_callback_for
from langchain_core.tools import ToolException
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from langchain_openai import ChatOpenAI
from opentelemetry import trace


def chat_model(args):
    def chat(model: str) -> ChatOpenAI:
        return ChatOpenAI(
            model=model,
            base_url=args.provider_url + "/v1",
            api_key="sk-fake",
            max_tokens=64,
            default_headers={SCENARIO_HEADER: args.scenario},
        )

    return chat(args.family.primary).with_fallbacks([chat(args.family.fallback)])


def _text(content) -> str:
    if isinstance(content, str):
        return content
    return " ".join(block.get("text", repr(block)) if isinstance(block, dict) else str(block) for block in content)


async def main(args) -> str:
    callback = sampling_callback_for(args, lambda: answering_with(chat_model(args)), decline)
    session_kwargs = {"sampling_callback": callback} if callback is not None else {}
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
