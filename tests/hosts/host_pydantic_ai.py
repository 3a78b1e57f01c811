"""A pydantic-ai host: an ``Agent`` with an ``MCPToolset`` over stdio whose ``sampling_model`` answers
the server's sampling requests, as pydantic-ai's MCP docs show.

The sampling model is a ``FallbackModel`` of two ``AnthropicModel`` instances (anthropic SDK, pointed
at the fake provider): the primary, then the fallback on a provider error. The agent's own model is a local
``FunctionModel`` that calls the tool once and answers with what the tool returned, so the only
provider calls are the sampling ones. Declining is a ``sampling_handler`` that raises (pydantic-ai
passes fastmcp-shaped handlers through); no sampling is an ``MCPToolset`` without either.

    python host_pydantic_ai.py --host pydantic-ai --provider-url URL --scenario HEADER --sampling model

It prints the agent's output (or what the run raised) as its last line (host_scenarios.run_host).
"""

from anthropic import AsyncAnthropic
from fastmcp.client.transports import StdioTransport
from host_scenarios import SAMPLING_DECLINE, SAMPLING_MODEL, SCENARIO_HEADER, TICKET, TOOL, run_host
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.fallback import FallbackModel
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.providers.anthropic import AnthropicProvider


def call_the_tool_once(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The agent's model: call the tool, then answer with its result (or its error)."""
    for part in messages[-1].parts:
        if isinstance(part, ToolReturnPart):
            return ModelResponse(parts=[TextPart(f"ok: {part.model_response_str()}")])
        if isinstance(part, RetryPromptPart):
            return ModelResponse(parts=[TextPart(f"error: {part.model_response()}")])
    return ModelResponse(parts=[ToolCallPart(TOOL, {"ticket": TICKET})])


async def decline(messages, params, context):
    raise RuntimeError("User rejected sampling request")


async def main(args) -> str:
    family = args.family
    transport = StdioTransport(command=args.server_command, args=args.server_args, keep_alive=False)
    if args.sampling == SAMPLING_MODEL:
        client = AsyncAnthropic(
            base_url=args.provider_url, api_key="sk-fake", default_headers={SCENARIO_HEADER: args.scenario}
        )
        provider = AnthropicProvider(anthropic_client=client)
        model = FallbackModel(
            AnthropicModel(family.primary, provider=provider), AnthropicModel(family.fallback, provider=provider)
        )
        toolset = MCPToolset(transport, sampling_model=model, max_retries=1)
    elif args.sampling == SAMPLING_DECLINE:
        toolset = MCPToolset(transport, sampling_handler=decline, max_retries=1)
    else:
        toolset = MCPToolset(transport, max_retries=1)
    agent = Agent(FunctionModel(call_the_tool_once), toolsets=[toolset])
    async with agent:
        result = await agent.run("Summarise the ticket")
    return result.output


if __name__ == "__main__":
    run_host(main)
