"""A google-adk host: an ``Agent`` with an ``McpToolset`` over stdio whose ``sampling_callback``
answers the server's sampling requests with ADK's own model classes, as ADK's MCP docs show.

The callback asks a ``FallbackModel`` of two ADK model classes through its
``generate_content_async``: the primary, then the fallback on a failure with a retriable status
(ADK's defaults plus anthropic's 529 overloaded, which ADK's default set leaves out). The
``google-adk`` host's are ``AnthropicLlm`` (ADK's Anthropic API model class: the anthropic SDK's
``AsyncAnthropic``, pointed at the fake provider); the ``google-adk-gemini`` host's are ``Gemini``
(ADK's default model class: google-genai on the Gemini API, its ``base_url`` the fake provider,
one attempt a call). It reports the model the response names (``LlmResponse.model_version``: the
Messages API's ``model``, Gemini's ``modelVersion``) and ``endTurn``. The agent's own model is a
local ``BaseLlm`` that calls the tool once and answers with its result, so the only provider calls
are the sampling ones. ADK has no decline of its own:
declining returns the MCP spec's frame (``-1``, "User rejected sampling request"); no sampling is
an ``McpToolset`` without a callback (mcp's default answer).

    python host_google_adk.py --host google-adk --provider-url URL --scenario HEADER --sampling model

It prints the agent's output (or what the run raised) as its last line (host_scenarios.run_host).
"""

import os
from collections.abc import AsyncGenerator

import mcp_types as types
from anthropic import AsyncAnthropic
from google.adk.agents import Agent
from google.adk.models import FallbackModel
from google.adk.models.anthropic_llm import AnthropicLlm
from google.adk.models.base_llm import BaseLlm
from google.adk.models.google_llm import Gemini
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.adk.tools.mcp_tool import McpToolset, StdioConnectionParams
from google.genai import types as genai
from host_scenarios import SCENARIO_HEADER, TICKET, TOOL, run_host, sampling_callback_for
from mcp import StdioServerParameters

OVERLOADED = 529  # anthropic's overloaded_error status


class CallTheToolOnce(BaseLlm):
    """The agent's model: call the tool, then answer with what it returned."""

    model: str = "call-the-tool-once"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1] if llm_request.contents else None
        for part in (last.parts or []) if last else []:
            if part.function_response is not None:
                result = part.function_response.response or {}
                if "error" in result:  # ADK's McpTool reports a failed call as {"error": text}
                    text = f"error: {result['error']}"
                else:
                    status = "error" if result.get("isError") else "ok"
                    text = f"{status}: " + " ".join(block.get("text", "") for block in result.get("content", ()))
                yield LlmResponse(content=genai.Content(role="model", parts=[genai.Part(text=text)]))
                return
        call = genai.FunctionCall(name=TOOL, args={"ticket": TICKET})
        yield LlmResponse(content=genai.Content(role="model", parts=[genai.Part(function_call=call)]))


def models(args) -> list[BaseLlm]:
    """The primary's and the fallback's model objects, of the family's API."""
    family = args.family
    if family.provider == "gemini":
        os.environ["GOOGLE_API_KEY"] = "k-fake"  # what the Gemini class's client reads
        once = genai.HttpRetryOptions(attempts=1)
        return [Gemini(model=m, base_url=args.provider_url, retry_options=once) for m in family.permitted]
    client = AsyncAnthropic(
        base_url=args.provider_url, api_key="sk-fake", default_headers={SCENARIO_HEADER: args.scenario}
    )
    return [AnthropicLlm(model=m, client=client) for m in family.permitted]


def model_callback(args):
    llm = FallbackModel(models=models(args), retriable_status_codes=FallbackModel.DEFAULT_STATUS_CODES | {OVERLOADED})
    # The Gemini class takes no client: the scenario header rides each request's options.
    options = genai.HttpOptions(headers={SCENARIO_HEADER: args.scenario}) if args.family.provider == "gemini" else None

    async def sampling_callback(context, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        contents = [
            genai.Content(role="user", parts=[genai.Part(text=m.content.text)])
            for m in params.messages
            if isinstance(m.content, types.TextContent)
        ]
        config = genai.GenerateContentConfig(
            system_instruction=params.system_prompt, max_output_tokens=params.max_tokens, http_options=options
        )
        responses = [r async for r in llm.generate_content_async(LlmRequest(contents=contents, config=config))]
        response = responses[-1] if responses else None
        parts = response.content.parts if response is not None and response.content else []
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="".join(p.text or "" for p in parts)),
            model=(response.model_version if response is not None else None) or "",
            stop_reason="endTurn",
        )

    return sampling_callback


async def decline(context, params):
    return types.ErrorData(code=-1, message="User rejected sampling request")


async def main(args) -> str:
    callback = sampling_callback_for(args, lambda: model_callback(args), decline)
    toolset = McpToolset(
        connection_params=StdioConnectionParams(
            server_params=StdioServerParameters(command=args.server_command, args=args.server_args), timeout=60
        ),
        sampling_callback=callback,
    )
    runner = InMemoryRunner(agent=Agent(name="host", model=CallTheToolOnce(), tools=[toolset]))
    try:
        session = await runner.session_service.create_session(app_name=runner.app_name, user_id="user")
        message = genai.Content(role="user", parts=[genai.Part(text="Summarise the ticket")])
        output = None
        async for event in runner.run_async(user_id="user", session_id=session.id, new_message=message):
            if event.is_final_response() and event.content and event.content.parts:
                output = "".join(p.text or "" for p in event.content.parts)
    finally:
        await toolset.close()
    return output if output is not None else "no final response"


if __name__ == "__main__":
    run_host(main)
