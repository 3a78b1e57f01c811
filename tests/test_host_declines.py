"""Hosts that decline in their own words, over real mcp 2.x sessions on both protocol paths: the
frame a known host sends (``otel_sampling/rules/host_frames.py``, each frame as its source sends
it) reads as that host's decline, not ``error``; a host otel-sampling does not know is taught with
``[[ending_rules]]`` in the policy file. (mcp 1.x: tests/test_mcp_v1.py.)
"""

from __future__ import annotations

import anyio
import mcp_types as types
import pytest
from mcp import MCPError

from conftest import with_policy
from drivers import PATHS, call, callback_returning, only_sampling_span
from otel_sampling import names
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor

# agent-framework-core 1.23.0 / 1.26.0, agent_framework/_mcp.py MCPTool.sampling_callback: the frames
# it answers with when it declines (types.INVALID_REQUEST), by default with no approval callback set.
AGENT_FRAMEWORK = [
    (
        types.ErrorData(
            code=types.INVALID_REQUEST,
            message="Sampling request denied. MCP sampling is disabled by default for untrusted servers; provide "
            "a 'sampling_approval_callback' that approves the request to enable it.",
        ),
        "host.unsupported",
    ),
    (
        types.ErrorData(
            code=types.INVALID_REQUEST, message="Sampling request denied by the 'sampling_approval_callback'."
        ),
        "user.denied",
    ),
    (
        types.ErrorData(code=types.INVALID_REQUEST, message="Sampling rate limit exceeded for this MCP session."),
        "policy.budget_exhausted",
    ),
    # VS Code's answer, as a server received it (PrefectHQ/fastmcp#2162).
    (
        types.ErrorData(code=types.INTERNAL_ERROR, message="The user has denied permission to call this method."),
        "user.denied",
    ),
]
# A host of our own making, unknown to the table: its decline is a generic -32603 with its words.
OWN_WORDS = types.ErrorData(code=types.INTERNAL_ERROR, message="Sampling declined: no consent callback configured")


@pytest.mark.parametrize("mode", PATHS)
@pytest.mark.parametrize(("frame", "ending"), AGENT_FRAMEWORK)
def test_a_known_hosts_decline_is_that_decline(mcp_instrumented, mode, frame, ending):
    out = anyio.run(call, mode, callback_returning(frame))
    assert isinstance(out, MCPError) and (out.code, out.message) == (frame.code, frame.message)
    attrs = only_sampling_span(mcp_instrumented).attributes
    assert attrs[names.SAMPLING_ENDING] == ending
    assert attrs[names.ERROR_TYPE] == str(frame.code)
    assert mcp_instrumented.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_ENDING) == {(ending,): 1}


@pytest.fixture
def consent_rule(telemetry, tmp_path, monkeypatch):
    rule = '[[ending_rules]]\ncode = -32603\nmessage_contains = "sampling declined"\nending = "user.denied"\n'
    yield from with_policy(telemetry, tmp_path, monkeypatch, rule, MCPSamplingInstrumentor)


@pytest.mark.parametrize("mode", PATHS)
def test_an_unknown_hosts_decline_is_an_error_until_a_rule_names_it(mcp_instrumented, mode):
    anyio.run(call, mode, callback_returning(OWN_WORDS))
    assert only_sampling_span(mcp_instrumented).attributes[names.SAMPLING_ENDING] == names.ENDING_ERROR


@pytest.mark.parametrize("mode", PATHS)
def test_an_ending_rule_teaches_a_hosts_decline(consent_rule, mode):
    anyio.run(call, mode, callback_returning(OWN_WORDS))
    attrs = only_sampling_span(consent_rule).attributes
    assert (attrs[names.SAMPLING_ENDING], attrs[names.ERROR_TYPE]) == ("user.denied", "-32603")
