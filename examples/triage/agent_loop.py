"""The host's tool-using agent loop: what the fallback breaks quietly, primary vs degraded.

After the scripted sampling scenario, the host runs a few tasks of another kind: a tool-using loop
on its own LLM (anthropic SDK -> the fake provider), whose tool calls it executes on the ticket
server with MCP ``tools/call``. Each task is one run, ``otel_sampling.run(RUN_NAME)``.

* Primary tasks: the primary model calls ``open_incident`` with right arguments, the host executes
  it once, and the model answers a structured summary (``output_config.format`` json_schema) that
  fits its schema: two steps.
* Degraded tasks: the primary is overloaded (529), the host fails over to the fallback for the rest
  of the run, and the fallback gets the tool arguments wrong (``{"city": 42}``: the server answers
  ``isError``), calls the tool again once it gets them right and then again with the same arguments
  (a repeated side effect: ``open_incident`` is in the policy's ``side_effect_tools``), truncates
  one answer (``max_tokens``) and answers a summary that does not fit its schema: six steps, the
  first of them a failed one. The host tells the person it answered on the fallback
  (``otel_sampling.disclose``).

The fake provider plays each step from ``TASKS`` (its ``x-fake-scenario`` header); the loop itself
is a plain host loop, written as a host writes one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anthropic
from mcp import Client

import otel_sampling as osm
from scenario import FALLBACK_MODEL, PRIMARY_MODEL

RUN_NAME = "incident-agent"
TOOL_NAME = "open_incident"  # the ticket server's tool with a side effect
MAX_TURNS = 8
SCENARIO_HEADER = "x-fake-scenario"
TOOLS = [
    {
        "name": TOOL_NAME,
        "description": "Open an incident for the site in a city (one per outage: it pages the on-call).",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]
SUMMARY_FORMAT = {
    "format": {
        "type": "json_schema",
        "schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
}
CALL = f"tool,tool_name={TOOL_NAME}"
WRONG_ARGUMENTS = f"{CALL},tool_args=wrong_type"
SUMMARY_OK, SUMMARY_MISMATCH = "json=valid", "json=mismatch"
TRUNCATED = "length"
OVERLOADED = "status=529"


@dataclass(frozen=True)
class Task:
    """One task: the fake provider's scenario for each step, in order (the first step on the
    primary model; a step that fails moves the run to the fallback)."""

    name: str
    steps: tuple[str, ...]
    expected_mode: str
    expected_steps: int


TASKS = (
    Task("primary-1", (CALL, SUMMARY_OK), "primary", 2),
    Task("primary-2", (CALL, SUMMARY_OK), "primary", 2),
    Task("degraded-1", (OVERLOADED, WRONG_ARGUMENTS, CALL, CALL, TRUNCATED, SUMMARY_MISMATCH), "degraded", 6),
    Task("degraded-2", (OVERLOADED, WRONG_ARGUMENTS, CALL, CALL, TRUNCATED, SUMMARY_MISMATCH), "degraded", 6),
)


def _text(message: anthropic.types.Message) -> str:
    return "".join(block.text for block in message.content if block.type == "text")


async def run_task(llm: anthropic.AsyncAnthropic, client: Client, task: Task) -> dict[str, Any]:
    """One task as one run: ask, execute the tool calls on the server, ask again, until the model
    answers without a tool call or a truncation (the summary turn asks for structured output)."""
    ask = f"Site down in Paris ({task.name}): open an incident."
    messages: list[dict[str, Any]] = [{"role": "user", "content": ask}]
    model, steps, tool_results = PRIMARY_MODEL, 0, []
    async with osm.run(RUN_NAME):
        for scenario in task.steps[:MAX_TURNS]:
            steps += 1
            # the last turn asks for the structured summary (a step that calls a tool never does)
            summary = {} if "tool" in scenario else {"extra_body": {"output_config": SUMMARY_FORMAT}}
            try:
                answer = await llm.messages.create(
                    model=model,
                    max_tokens=200,
                    messages=messages,
                    tools=TOOLS,
                    extra_headers={SCENARIO_HEADER: scenario},
                    **summary,
                )
            except anthropic.OverloadedError:
                model = FALLBACK_MODEL  # the rest of the run on the fallback
                continue
            if answer.stop_reason == "max_tokens":
                continue  # truncated: the host asks again
            calls = [block for block in answer.content if block.type == "tool_use"]
            if not calls:
                break
            messages.append({"role": "assistant", "content": [block.model_dump() for block in answer.content]})
            results = []
            for call in calls:
                result = await client.call_tool(call.name, call.input if isinstance(call.input, dict) else {})
                tool_results.append(bool(result.is_error))
                results.append(
                    {"type": "tool_result", "tool_use_id": call.id, "content": "failed" if result.is_error else "ok"}
                )
            messages.append({"role": "user", "content": results})
        if model != PRIMARY_MODEL:
            osm.disclose("Answered on the fallback model: check the incident before acting on it.")
    return {"task": task.name, "steps": steps, "tool_errors": sum(tool_results), "model": model}


async def run_tasks(llm: anthropic.AsyncAnthropic, client: Client) -> list[dict[str, Any]]:
    return [await run_task(llm, client, task) for task in TASKS]
