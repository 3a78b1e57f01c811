"""A server tool's provider calls judged against the policy scope of the tool (docs/telemetry.md
"Direct calls and policy scopes"): the real server instrumentor on real mcp 2.x sessions in memory
(both protocol eras), the tool calling the real anthropic SDK against the fake provider over HTTP.

The tool's run (``<server>/<tool>``) takes ``[servers."<server>".tools."<tool>"]``, else
``[servers."<server>"]``, else ``[default]``; its calls, served as asked, by a permitted fallback
or by a model outside the scope, show the verdicts of the docs' fallback-chain table on the chat
span, the run span and the metrics, with the scope that decided as ``otel_sampling.policy.scope``.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import anthropic
import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from conftest import Telemetry, instrumenting
from drivers import PATHS
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor
from otel_sampling.testing.fake_provider import SCENARIO_HEADER

SERVER, TOOL = "tickets", "summarise"
RUN = f"{SERVER}/{TOOL}"
PRIMARY, FALLBACK, OUTSIDE = "claude-sonnet-4-5", "claude-haiku-4-5", "claude-3-7-sonnet-20250219"
DOWN = f"status=529,fail_model={PRIMARY}"  # the primary is down; any other model answers
SCOPE_KEYS = f'primary_model = "{PRIMARY}"\npermitted_models = ["{PRIMARY}", "{FALLBACK}"]\n'

# The policy file, and the scope the rule gives the tool's calls under it.
POLICIES = {
    # The tool's table decides before its server's, which permits the primary only.
    "tool table": (
        f'[servers."{SERVER}"]\npermitted_models = ["{PRIMARY}"]\n[servers."{SERVER}".tools."{TOOL}"]\n{SCOPE_KEYS}',
        f"tool:{SERVER}/{TOOL}",
    ),
    "server table": (f'[servers."{SERVER}"]\n{SCOPE_KEYS}', f"server:{SERVER}"),
    "default only": (f"[default]\n{SCOPE_KEYS}", "default"),
}

# What the tool does: the models it asks in turn, the first that answers serving.
CHAINS = {
    "as asked": (PRIMARY,),
    "permitted fallback": (PRIMARY, FALLBACK),
    "outside policy": (PRIMARY, OUTSIDE),
}


class Expected(NamedTuple):
    substitution: str  # the serving call's otel_sampling.substitution
    mode: str  # its degradation.mode, and the run's
    reason: str | None  # its first degradation.reason
    violations: tuple[str, ...]  # its violation events and otel_sampling.client.violations
    incident: tuple[str, ...]  # the run's silent incident causes; () when none


# docs/telemetry.md "Direct calls and policy scopes", the table of a fallback chain (scoped).
TABLE = {
    "as asked": Expected("none", "primary", None, (), ()),
    "permitted fallback": Expected("none", "degraded", "failover", (), ("degraded",)),
    "outside policy": Expected(
        "outside_policy", "degraded", "failover", ("model_outside_policy",), ("degraded", "outside_policy")
    ),
}


def build_server(provider_url: str) -> MCPServer:
    server = MCPServer(SERVER, version="1.0.0")

    @server.tool(name=TOOL)
    async def summarise(models: list[str], scenario: str = "") -> str:
        async with anthropic.AsyncAnthropic(base_url=provider_url, api_key="sk-fake", max_retries=0) as client:
            for model in models:
                try:
                    message = await client.messages.create(
                        model=model,
                        max_tokens=8,
                        messages=[{"role": "user", "content": "Summarise: printer on fire"}],
                        extra_headers={SCENARIO_HEADER: scenario} if scenario else {},
                    )
                except anthropic.APIStatusError:
                    continue
                return message.model
        return "nothing answered"

    return server


@pytest.fixture
def server_side(telemetry: Telemetry, tmp_path, monkeypatch, policy: str):
    """What a server process loads: the server instrumentor and the provider SDK's, under ``policy``."""
    path = tmp_path / "policy.toml"
    path.write_text(POLICIES[policy][0])
    monkeypatch.setenv("OTEL_SAMPLING_POLICY", str(path))
    with instrumenting(telemetry, MCPServerSamplingInstrumentor, AnthropicInstrumentor):
        yield telemetry


async def call_tool(server: MCPServer, mode: str, models: tuple[str, ...], scenario: str) -> str:
    async with Client(server, mode=mode) as client:
        out = await client.call_tool(TOOL, {"models": list(models), "scenario": scenario})
    assert not out.is_error
    return out.content[0].text


@pytest.mark.parametrize("chain", list(CHAINS))
@pytest.mark.parametrize("policy", list(POLICIES))
@pytest.mark.parametrize("mode", list(PATHS))
def test_a_server_tools_calls_are_judged_against_the_tools_scope(server_side, fake_provider, mode, policy, chain):
    expected, scope, models = TABLE[chain], POLICIES[policy][1], CHAINS[chain]
    served_model = anyio.run(call_tool, build_server(fake_provider.url), mode, models, DOWN if len(models) > 1 else "")
    assert served_model == models[-1]

    *failed, served = sorted((s for s in server_side.spans() if s.name.startswith("chat ")), key=lambda s: s.end_time)
    (run_span,) = server_side.spans(f"invoke_agent {RUN}")
    assert served.context.trace_id == run_span.context.trace_id  # the calls are inside the tool's run
    a = served.attributes
    reasons = a.get(names.DEGRADATION_REASON)
    assert (expected.substitution, expected.mode, expected.reason, scope) == (
        a[names.SUBSTITUTION],
        a[names.DEGRADATION_MODE],
        reasons[0] if reasons else None,
        a[names.POLICY_SCOPE],
    )
    assert expected.violations == tuple(
        e.attributes[names.VIOLATION_KIND] for e in served.events if e.name == names.EVENT_VIOLATION
    )
    # The failed primary served nothing: no substitution, primary, judged in the same scope.
    assert [("none", "primary", scope)] * len(failed) == [
        (s.attributes[names.SUBSTITUTION], s.attributes[names.DEGRADATION_MODE], s.attributes[names.POLICY_SCOPE])
        for s in failed
    ]

    # The tool's run: its span, its metrics, its incident.
    assert (expected.mode, scope) == (
        run_span.attributes[names.DEGRADATION_MODE],
        run_span.attributes[names.POLICY_SCOPE],
    )
    runs = server_side.counts(
        names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME, names.DEGRADATION_MODE, names.AGENT_RUN_OUTCOME
    )
    assert {(RUN, expected.mode, "completed"): 1} == runs
    violations = server_side.counts(names.METRIC_CLIENT_VIOLATIONS, names.POLICY_SCOPE, names.VIOLATION_KIND)
    assert {(scope, kind): 1 for kind in expected.violations} == violations
    modes = server_side.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.DEGRADATION_MODE)
    assert Counter([("primary",)] * len(failed) + [(expected.mode,)]) == modes
    incidents = server_side.counts(names.METRIC_SILENT_INCIDENTS, names.AGENT_RUN_NAME)
    assert ({(RUN,): 1} if expected.incident else {}, expected.incident) == (incidents, server_side.incident_causes())
