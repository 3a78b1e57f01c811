"""A LiteLLM Router as a host's sampling callback: ``fastmcp.Client`` over stdio whose sampling
handler asks a ``litellm.Router`` (LiteLLM's own fallback machinery, as its docs configure it).

The Router has two deployments on its openai route, pointed at the fake provider: ``primary`` (the
family's primary model) and ``fallback`` (its fallback model), with ``fallbacks`` (any failure of the
primary: an outage, a rate limit) and ``context_window_fallbacks`` (the request did not fit the
primary's context window) both falling back from ``primary`` to ``fallback``, and no retries. The
handler reports the model the answer names (``ModelResponse.model``, the provider's) and
``endTurn``; what the Router raised (every deployment failed) reaches fastmcp, which answers the
server with an error. The client, its tool call and its decline are the fastmcp host's
(host_fastmcp.py): only the handler differs.

    python host_litellm_router.py --host litellm-router --provider-url URL --scenario HEADER --sampling model

It prints the tool result (or what the client raised) as its last line (host_scenarios.run_host).
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # its model table from the package, not fetched

import litellm
import mcp_types as types
from host_fastmcp import main as fastmcp_host
from host_scenarios import SCENARIO_HEADER, run_host


def router(args) -> litellm.Router:
    family = args.family
    params = {
        "api_base": args.provider_url + "/v1",
        "api_key": "sk-fake",
        "extra_headers": {SCENARIO_HEADER: args.scenario},
    }
    return litellm.Router(
        model_list=[
            {"model_name": "primary", "litellm_params": {"model": f"openai/{family.primary}", **params}},
            {"model_name": "fallback", "litellm_params": {"model": f"openai/{family.fallback}", **params}},
        ],
        fallbacks=[{"primary": ["fallback"]}],
        context_window_fallbacks=[{"primary": ["fallback"]}],
        num_retries=0,
    )


def router_handler(args):
    models = router(args)

    async def handler(messages, params, context) -> types.CreateMessageResult:
        chat = [{"role": "system", "content": params.system_prompt}] if params.system_prompt else []
        chat += [
            {"role": m.role, "content": m.content.text} for m in messages if isinstance(m.content, types.TextContent)
        ]
        answer = await models.acompletion(model="primary", messages=chat, max_tokens=params.max_tokens)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=answer.choices[0].message.content or ""),
            model=answer.model or "",
            stop_reason="endTurn",
        )

    return handler


async def main(args) -> str:
    return await fastmcp_host(args, router_handler)


if __name__ == "__main__":
    run_host(main)
