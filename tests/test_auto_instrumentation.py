"""Loading through `opentelemetry-instrument` and the `opentelemetry_instrumentor` entry points."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from harness.limits import HANG_S

INSTRUMENT = str(Path(sys.executable).parent / "opentelemetry-instrument")
HERE = Path(__file__).parent

# A host script: one legacy in-memory sampling round trip, then a report of what is wrapped.
HOST = f"""
import json, sys, anyio, wrapt
sys.path.insert(0, {str(HERE)!r})
import mcp_types as types
from mcp import Client
from mcp.client.session import ClientSession
import anthropic._base_client
import openai._base_client
from sampling_server import build_server

async def ok(ctx, params):
    return types.CreateMessageResult(role="assistant", content=types.TextContent(text="x"), model="m")

async def main():
    async with Client(build_server(), mode="legacy", sampling_callback=ok) as c:
        await c.call_tool("sample", {{"hint": "m", "include_context": "none"}})

anyio.run(main)
print(json.dumps({{
    "mcp": isinstance(ClientSession.__dict__["dispatch_input_request"], wrapt.FunctionWrapper),
    "anthropic": isinstance(anthropic._base_client.SyncAPIClient.__dict__["request"], wrapt.FunctionWrapper),
    "openai": isinstance(openai._base_client.SyncAPIClient.__dict__["request"], wrapt.FunctionWrapper),
}}), file=sys.stderr)
"""


def run_host(**env: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    environment.update(
        {
            "OTEL_TRACES_EXPORTER": "console",
            "OTEL_METRICS_EXPORTER": "none",
            "OTEL_LOGS_EXPORTER": "none",
            "OTEL_SERVICE_NAME": "auto-test",
            **env,
        }
    )
    return subprocess.run(
        [INSTRUMENT, sys.executable, "-c", HOST], env=environment, capture_output=True, text=True, timeout=HANG_S
    )


def wrapped(proc: subprocess.CompletedProcess) -> dict:
    return json.loads(proc.stderr.strip().splitlines()[-1])


def test_entry_points_are_ours_and_distinct_from_peers():
    ours = {
        ep.name: ep.value
        for ep in entry_points(group="opentelemetry_instrumentor")
        if ep.name.startswith("otel_sampling")
    }
    assert ours == {
        "otel_sampling_mcp": "otel_sampling.instrumentation.mcp:MCPSamplingInstrumentor",
        "otel_sampling_mcp_server": "otel_sampling.instrumentation.mcp_server:MCPServerSamplingInstrumentor",
        "otel_sampling_anthropic": "otel_sampling.instrumentation.anthropic:AnthropicInstrumentor",
        "otel_sampling_openai": "otel_sampling.instrumentation.openai:OpenAIInstrumentor",
        "otel_sampling_google_genai": "otel_sampling.instrumentation.google_genai:GoogleGenAIInstrumentor",
        "otel_sampling_litellm": "otel_sampling.instrumentation.litellm:LiteLLMInstrumentor",
    }


@pytest.mark.subprocess
def test_opentelemetry_instrument_loads_both_and_exports_the_sampling_span():
    proc = run_host()
    assert proc.returncode == 0, proc.stderr
    assert wrapped(proc) == {"mcp": True, "anthropic": True, "openai": True}
    assert '"name": "sampling/createMessage"' in proc.stdout  # ConsoleSpanExporter output
    assert '"otel_sampling.sampling.ending": "completed"' in proc.stdout


@pytest.mark.subprocess
def test_disabled_instrumentations_names_ours():
    proc = run_host(OTEL_PYTHON_DISABLED_INSTRUMENTATIONS="otel_sampling_anthropic")
    assert proc.returncode == 0, proc.stderr
    assert wrapped(proc) == {"mcp": True, "anthropic": False, "openai": True}


@pytest.mark.subprocess
def test_malformed_policy_is_reported_once_and_nothing_is_lost(tmp_path):
    """A bad policy must not abort opentelemetry-instrument's loading of other instrumentations."""
    policy = tmp_path / "policy.toml"
    policy.write_text('[servers."ticket-server"]\npermitted_models = ["a"]\ncontext_ceiling = "conversation"\n')
    proc = run_host(OTEL_SAMPLING_POLICY=str(policy))
    assert proc.returncode == 0, proc.stderr
    assert wrapped(proc) == {"mcp": True, "anthropic": True, "openai": True}
    message = f'{policy}:3: servers."ticket-server".context_ceiling'
    assert proc.stderr.count(message) == 1, proc.stderr
    assert "'conversation'" in proc.stderr
    assert "Failed to auto initialize" not in proc.stderr
    assert '"otel_sampling.sampling.ending": "completed"' in proc.stdout


def test_instrument_with_a_bad_policy_logs_and_instruments(tmp_path, monkeypatch, caplog, telemetry):
    from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor

    policy = tmp_path / "policy.toml"
    policy.write_text('[servers."s"]\nprimary_model = 42\n')
    monkeypatch.setenv("OTEL_SAMPLING_POLICY", str(policy))
    instrumentor = MCPSamplingInstrumentor()
    instrumentor.instrument(meter_provider=telemetry.meter_provider)
    try:
        assert instrumentor.is_instrumented_by_opentelemetry
        errors = [r for r in caplog.records if r.levelname == "ERROR"]
        assert len(errors) == 1 and f'{policy}:2: servers."s".primary_model' in errors[0].getMessage()
    finally:
        instrumentor.uninstrument()


@pytest.mark.subprocess
def test_policy_checker_command(tmp_path):
    good, bad = tmp_path / "good.toml", tmp_path / "bad.toml"
    good.write_text('[servers."s"]\nprimary_model = "m"\n')
    bad.write_text('[servers."s"]\nprimary_model = 42\n')
    ok = subprocess.run([sys.executable, "-m", "otel_sampling.policy", str(good)], capture_output=True, text=True)
    assert (ok.returncode, ok.stdout.strip()) == (0, f"{good}: ok (1 server, 0 prices)")
    fail = subprocess.run(
        [sys.executable, "-m", "otel_sampling.policy", str(good), str(bad)], capture_output=True, text=True
    )
    assert fail.returncode == 1
    assert fail.stderr.startswith(f'{bad}:2: servers."s".primary_model: ')
