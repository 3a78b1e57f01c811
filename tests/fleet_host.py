"""One host process of a fleet (tests/test_fleet.py): run under ``opentelemetry-instrument`` with the
Prometheus exporter, it answers the sampling requests of the test server (``sampling_server``,
in memory, mcp 2.x legacy mode) with the anthropic SDK against the fake provider.

In this order:

1. enters and leaves the named degradation ``search`` ``--flaps`` times (no request inside);
2. runs ``--requests`` tasks, each an ``otel_sampling.run`` calling the ``sample`` tool once, then
   scored (1.0 on the primary model, 0.5 on the fallback); its callback asks the primary model
   (claude-sonnet-5-5) with prompt-cache usage; with ``--fail-over`` the provider answers that
   call 529 (overloaded) and the callback takes the fallback (claude-haiku-5-5); nothing is disclosed;
   with ``--drill``, the drill ``DRILL_NAME`` on the primary model runs from before the tasks until
   the host is released (the primary's calls fail before they leave the process, and the callback
   takes the fallback the same way);
3. records ``--grants`` budget grants of 1 USD for the server;
4. with ``--hold-degradation``, enters ``search`` again and stays in it.

Then it prints ``{"event": "ready"}`` on stdout and waits for a line on stdin before it leaves the
degradation and exits 0. Needs ``ANTHROPIC_BASE_URL`` (the fake provider).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from pathlib import Path

import anthropic
import anyio
import mcp_types as types
from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parent))
import otel_sampling as osm
from otel_sampling.testing.fake_provider import SCENARIO_HEADER
from sampling_server import SERVER_NAME, build_server

PRIMARY_MODEL = "claude-sonnet-5-5"
FALLBACK_MODEL = "claude-haiku-5-5"
RUN_NAME = "fleet-triage"
EVALUATION_NAME = "fleet-summary-quality"
SCORES = {PRIMARY_MODEL: 1.0, FALLBACK_MODEL: 0.5}  # binary fractions: every mean is exact
COMPONENT = "search"
DRILL_NAME = "fleet-drill"
REASON = "sources unavailable"


def tomorrow() -> str:
    return (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def degradation() -> osm.Degradation:
    return osm.degraded(COMPONENT, reason=REASON, owner="oncall-search", expires_at=tomorrow())


def sampling_callback(llm: anthropic.AsyncAnthropic, fail_over: bool):
    primary_scenario = "status=529,no_retry,cache" if fail_over else "cache"

    async def callback(ctx, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        messages = [{"role": "user", "content": "Summarise the ticket"}]
        try:
            message = await llm.messages.create(
                model=PRIMARY_MODEL,
                max_tokens=params.max_tokens,
                messages=messages,
                extra_headers={SCENARIO_HEADER: primary_scenario},
            )
        except anthropic.OverloadedError:
            message = await llm.messages.create(
                model=FALLBACK_MODEL,
                max_tokens=params.max_tokens,
                messages=messages,
                extra_headers={SCENARIO_HEADER: "cache"},
            )
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(text=message.content[0].text),
            model=message.model,
            stop_reason="endTurn",
        )

    return callback


async def work(args: argparse.Namespace) -> None:
    for _ in range(args.flaps):
        with degradation():
            pass
    llm = anthropic.AsyncAnthropic(base_url=os.environ["ANTHROPIC_BASE_URL"], api_key="sk-fake", max_retries=0)
    try:
        async with Client(
            build_server(), mode="legacy", sampling_callback=sampling_callback(llm, args.fail_over)
        ) as client:
            for _ in range(args.requests):
                with osm.run(RUN_NAME) as run:
                    result = await client.call_tool("sample", {"hint": "claude-sonnet"})
                served = result.content[0].text.split("|", 1)[0]
                osm.record_evaluation(EVALUATION_NAME, SCORES[served], run=run)
    finally:
        await llm.close()
    for _ in range(args.grants):
        osm.record_grant(SERVER_NAME, 1.0, tomorrow(), granted_by="approver")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--requests", type=int, default=10, help="tasks to run, one sampling request each")
    parser.add_argument(
        "--fail-over",
        action="store_true",
        help="the primary model is overloaded: every request is served by the fallback",
    )
    parser.add_argument(
        "--drill", action="store_true", help="a drill on the primary model from before the tasks until released"
    )
    parser.add_argument("--grants", type=int, default=0, help="budget grants to record")
    parser.add_argument("--flaps", type=int, default=0, help="times to enter and leave the degradation first")
    parser.add_argument("--hold-degradation", action="store_true", help="stay in the degradation while held")
    args = parser.parse_args()
    drill = osm.drill(DRILL_NAME, target_model=PRIMARY_MODEL, duration=3600).start() if args.drill else None
    anyio.run(work, args)
    held = degradation().enter() if args.hold_degradation else None
    print(json.dumps({"event": "ready"}), flush=True)
    sys.stdin.readline()
    if held is not None:
        held.exit()
    if drill is not None:
        drill.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
