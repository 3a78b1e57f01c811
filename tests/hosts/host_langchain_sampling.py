"""The sampling callback of the hosts on mcp 1.x that answer with a LangChain chat model (mcp-use,
langchain-mcp-adapters), and the MCP spec's decline frame. Imported by those host scripts only
(their venvs have langchain-core and mcp 1.x).

The callback asks the chat model (with its ``.with_fallbacks(...)``) for the request's messages
and reports the model the response names (langchain's ``response_metadata["model_name"]``) and
``endTurn``.
"""

from langchain_core.messages import HumanMessage, SystemMessage
from mcp import types


def answering_with(llm):
    """The sampling callback that answers with ``llm``, a LangChain chat model (runnable)."""

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
    """The MCP spec's frame for a user's rejection (2025-11-25, client/sampling, Error Handling)."""
    return types.ErrorData(code=-1, message="User rejected sampling request")
