"""A fastmcp 4 host: ``fastmcp.Client`` over stdio, answering sampling with fastmcp's own
``OpenAISamplingHandler`` (openai SDK, pointed at the fake provider), as its docs show.

fastmcp has no fallback of its own: the host tries the primary handler and, on a provider error,
a second handler for the fallback model (hints dropped: the handler prefers a hinted openai model
to its default). Declining is a handler that raises, fastmcp's way to refuse a request.

    python host_fastmcp.py --host fastmcp --provider-url URL --scenario HEADER --sampling model

It prints the tool result (or what the client raised) as its last line (host_scenarios.run_host).
"""

import openai
from fastmcp import Client
from fastmcp.client.sampling.handlers.openai import OpenAISamplingHandler
from fastmcp.client.transports import StdioTransport
from host_scenarios import SAMPLING_DECLINE, SAMPLING_MODEL, SCENARIO_HEADER, TICKET, TOOL, run_host


class FallbackSamplingHandler:
    """The primary handler, then the fallback handler when the provider call fails."""

    def __init__(self, primary: OpenAISamplingHandler, fallback: OpenAISamplingHandler) -> None:
        self.primary, self.fallback = primary, fallback

    async def __call__(self, messages, params, context):
        try:
            return await self.primary(messages, params, context)
        except openai.APIError:
            return await self.fallback(messages, params.model_copy(update={"model_preferences": None}), context)


async def decline(messages, params, context):
    raise RuntimeError("User rejected sampling request")


def openai_handler(args) -> FallbackSamplingHandler:
    family = args.family
    client = openai.AsyncOpenAI(
        base_url=args.provider_url + "/v1", api_key="sk-fake", default_headers={SCENARIO_HEADER: args.scenario}
    )
    return FallbackSamplingHandler(
        OpenAISamplingHandler(family.primary, client), OpenAISamplingHandler(family.fallback, client)
    )


async def main(args, answering=openai_handler) -> str:
    """One tool call; ``answering(args)``: the sampling handler that answers with the host's models."""
    handler = None
    if args.sampling == SAMPLING_MODEL:
        handler = answering(args)
    elif args.sampling == SAMPLING_DECLINE:
        handler = decline
    transport = StdioTransport(command=args.server_command, args=args.server_args, keep_alive=False)
    async with Client(transport, sampling_handler=handler, timeout=60) as mcp:
        result = await mcp.call_tool(TOOL, {"ticket": TICKET}, raise_on_error=False)
    text = " ".join(getattr(block, "text", repr(block)) for block in result.content)
    return f"{'error' if result.is_error else 'ok'}: {text}"


if __name__ == "__main__":
    run_host(main)
