"""The floors record exactly ours' telemetry (``tests/bench/floor.py``, ``tests/bench/mcp_floor.py``):
per call kind, the bench's calls export from ours and from its floor the same span attributes (keys
and values) and the same metric streams (names and label sets), and send the provider the same trace-context
headers. Otherwise the ratio to the floor in
``make bench-check`` measures a different contract.

Each configuration runs in its own process (``worker.py CONFIG --telemetry N``), as the bench runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from importlib.util import find_spec
from pathlib import Path

import pytest

WORKER = Path(__file__).parent / "bench" / "worker.py"
WORKER_TIMEOUT_S = 1800
CALLS = 3
PROVIDER_KINDS = (
    "anthropic-create",
    "anthropic-stream",
    "openai-create",
    "openai-stream",
    "anthropic-tools",
    "openai-tools",
    *(("gemini-create", "gemini-stream") if find_spec("google") and find_spec("google.genai") else ()),
    *(("litellm-create", "litellm-stream") if find_spec("litellm") else ()),
)
MCP_KINDS = ("mcp-legacy", "mcp-mrtr") if version("mcp").split(".")[0] != "1" else ()
# Values that differ from process to process by design: a duration, and the fingerprint (a keyed hash,
# the key random per process). Their keys are compared, not their values.
VOLATILE = {"gen_ai.response.time_to_first_chunk", "otel_sampling.sampling.request.fingerprint"}


def _exported(config: str, kinds: tuple[str, ...]) -> dict[str, dict[str, object]]:
    # As the bench runs them: no OTEL_ settings of the caller's. The bench's venv has no price source
    # (no genai-prices: the bench extra leaves out the prices extra), so ours prices nothing there; here too.
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    environment["OTEL_SAMPLING_PRICE_SOURCE"] = "none"
    proc = subprocess.run(
        [sys.executable, str(WORKER), config, "--kinds", ",".join(kinds), "--telemetry", str(CALLS)],
        capture_output=True,
        text=True,
        timeout=WORKER_TIMEOUT_S,
        env=environment,
        check=True,
    )
    out: dict[str, dict[str, object]] = json.loads(proc.stdout.strip().splitlines()[-1])["kinds"]
    return out


def _span(exported: dict[str, object]) -> dict[str, object]:
    spans = exported["spans"]
    assert isinstance(spans, dict) and len(spans) == 1, spans  # one span of its own per call
    (attributes,) = spans.values()
    return {key: "<varies>" if key in VOLATILE else value for key, value in attributes.items()}


def _streams(exported: dict[str, object]) -> dict[str, list[str]]:
    metrics = exported["metrics"]
    assert isinstance(metrics, dict)
    return {name: sorted(json.dumps(labels, sort_keys=True) for labels in sets) for name, sets in metrics.items()}


@pytest.fixture(scope="module")
def ours() -> dict[str, dict[str, object]]:
    return _exported("otel-sampling", PROVIDER_KINDS + MCP_KINDS)


@pytest.fixture(scope="module")
def floors() -> dict[str, dict[str, object]]:
    found = _exported("floor", PROVIDER_KINDS)
    if MCP_KINDS:
        found.update(_exported("mcp-floor", MCP_KINDS))
    return found


@pytest.mark.parametrize("kind", PROVIDER_KINDS + MCP_KINDS)
def test_the_floor_exports_what_ours_exports(kind, ours, floors):
    assert "error" not in ours[kind] and "error" not in floors[kind], (ours[kind], floors[kind])
    assert _span(ours[kind]) == _span(floors[kind])
    assert _streams(ours[kind]) == _streams(floors[kind])


@pytest.mark.parametrize("kind", PROVIDER_KINDS)
def test_the_floor_sends_the_trace_context_ours_sends(kind, ours, floors):
    """Propagation is part of the contract (``docs/telemetry.md``): a floor that sent none would
    measure a smaller one."""
    assert ours[kind]["trace_context"] == floors[kind]["trace_context"] == ["traceparent"]


@pytest.fixture(scope="module")
def sdk_limit() -> dict[str, dict[str, object]]:
    return _exported("sdk-limit", PROVIDER_KINDS)


@pytest.mark.parametrize("kind", PROVIDER_KINDS)
def test_the_sdk_limit_exports_what_the_floor_exports(kind, floors, sdk_limit):
    """The SDK-limit configuration (``tests/bench/sdk_limit.py``) replays the floor's telemetry."""
    assert "error" not in sdk_limit[kind], sdk_limit[kind]
    assert _span(sdk_limit[kind]) == _span(floors[kind])
    assert _streams(sdk_limit[kind]) == _streams(floors[kind])
