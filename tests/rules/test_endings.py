"""Ending rules. Expected endings come from the MCP spec (-1 = user rejection), the mcp SDK
(-32001 REQUEST_TIMEOUT, cancel reason "timed out after {t}s"), and the rule table in DESIGN/docs."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import MCPError

from otel_sampling import names
from otel_sampling.rules import endings


@pytest.mark.parametrize(("code", "data", "ending"), [
    (-1, None, "user.denied"),
    (-1, {"reason": "policy:pii"}, "user.denied"),  # not a vocabulary reason: the code decides
    (-32003, None, "policy.denied"),
    (-32003, {"reason": "policy.budget_exhausted"}, "policy.budget_exhausted"),
    (-32003, {"reason": "something-else"}, "policy.denied"),
    (-32001, None, "timeout"),
    (-32603, {"reason": "model.unavailable"}, "model.unavailable"),  # a vocabulary reason wins
    (0, None, "error"),
    (-32600, None, "error"),
    (-32003, "not a mapping", "policy.denied"),
])
def test_error_frames(code, data, ending):
    got = endings.from_error_frame(code, data)
    assert got.ending == ending
    assert got.error_type == str(code)


def test_resets_at_is_read_from_data():
    got = endings.from_error_frame(-32003, {"reason": "policy.budget_exhausted", "resetsAt": "2026-12-01T00:00:00Z"})
    assert got.resets_at == "2026-12-01T00:00:00Z"
    assert endings.from_error_frame(-32003, {"resetsAt": 12}).resets_at is None


@pytest.mark.parametrize(("reason", "ending"), [
    ("timed out after 0.5s", "timeout"),  # mcp SDK: jsonrpc_dispatcher "timed out after {t}s"
    ("caller cancelled", "cancelled"),
    (None, "cancelled"),
    ("Request timeout", "timeout"),
])
def test_cancellation(reason, ending):
    assert endings.from_cancellation(reason).ending == ending


@pytest.mark.parametrize(("stop_reason", "ending"), [
    ("endTurn", "completed"), ("maxTokens", "completed"), ("toolUse", "completed"), (None, "completed"),
    ("refusal", "refused"), ("content_filter", "refused"),
])
def test_results(stop_reason, ending):
    assert endings.from_result(stop_reason).ending == ending


def test_exceptions():
    assert endings.from_exception(RuntimeError("x")) == ("error", "RuntimeError", None)
    assert endings.from_exception(asyncio.TimeoutError()).error_type == "TimeoutError"
    got = endings.from_exception(MCPError(-1, "User rejected sampling request"))
    assert (got.ending, got.error_type) == ("user.denied", "-1")
    assert endings.qualified_name(MCPError) == "mcp.shared.exceptions.MCPError"


@given(code=st.one_of(st.integers(), st.none(), st.text(), st.floats()),
       data=st.one_of(st.none(), st.text(), st.dictionaries(st.text(), st.one_of(st.text(), st.integers(), st.none()))))
def test_classification_is_total(code, data):
    """Every error frame, however malformed, gets exactly one ending from the vocabulary."""
    assert endings.from_error_frame(code, data).ending in names.ENDINGS
