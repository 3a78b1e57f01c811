"""The sampling API (``otel_sampling.sampling_api``): sampling_error, grant_context, record_grant,
their argument checks and the shapes they build."""

from __future__ import annotations

import datetime

import mcp_types as types
import pytest

import otel_sampling
from otel_sampling import names
from otel_sampling.rules import endings
from otel_sampling.rules.values import Ending


def test_sampling_error_policy_refusal_shape():
    error = otel_sampling.sampling_error(
        "policy.budget_exhausted",
        "Daily limit reached",
        resets_at=datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc),
    )
    assert isinstance(error, types.ErrorData)
    # the default policy refusal code, outside JSON-RPC's reserved range (MCP 2026-07-28 "Error Codes")
    assert (error.code, error.message) == (-31003, "Daily limit reached")
    assert error.data == {"reason": "policy.budget_exhausted", "resetsAt": "2026-12-01T00:00:00Z"}
    assert endings.from_error_frame(error.code, error.data) == Ending(
        "policy.budget_exhausted", "-31003", "2026-12-01T00:00:00Z"
    )


@pytest.mark.parametrize("reason", ["policy.denied", "policy.budget_exhausted", "model.unavailable"])
def test_sampling_error_sends_the_configured_policy_refusal_code(reason, monkeypatch):
    """Without the host instrumentor, ``OTEL_SAMPLING_POLICY_REFUSAL_CODE`` is read at the call."""
    monkeypatch.setenv("OTEL_SAMPLING_POLICY_REFUSAL_CODE", "4003")
    assert otel_sampling.sampling_error(reason, "Denied").code == 4003
    assert otel_sampling.sampling_error("user.denied", "No").code == -1  # the spec's code, never configured


def test_sampling_error_user_rejection_uses_the_spec_code():
    error = otel_sampling.sampling_error("user.denied", "User rejected sampling request")
    assert error.code == -1 and error.data == {"reason": "user.denied"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("completed", "x"), "reason must be one of"),
        (("policy.denied", " "), "message must be a non-empty string"),
        (("policy.denied", "x", datetime.datetime(2026, 12, 1)), "resets_at must be timezone-aware"),
        (("policy.denied", "x", "tomorrow"), "ISO 8601"),
        (("policy.denied", "x", "2026-12-01T00:00:00"), "ISO 8601"),
    ],
)
def test_sampling_error_rejects_bad_input(args, message):
    with pytest.raises(ValueError, match=message):
        otel_sampling.sampling_error(*args)


def test_grant_context_checks_the_scope_and_needs_a_request():
    with pytest.raises(ValueError, match="scope must be one of"):
        otel_sampling.grant_context("everything")
    assert otel_sampling.grant_context("thisServer") is False  # no sampling callback running


@pytest.mark.parametrize("reason", [["policy.denied"], {"policy.denied": 1}, None, 7])
def test_sampling_error_rejects_a_reason_of_the_wrong_type_with_value_error(reason):
    with pytest.raises(ValueError, match="reason must be one of"):
        otel_sampling.sampling_error(reason, "Denied")


@pytest.mark.parametrize("scope", [["none"], {"none": 1}, None, 0])
def test_grant_context_rejects_a_scope_of_the_wrong_type_with_value_error(scope):
    with pytest.raises(ValueError, match="scope must be one of"):
        otel_sampling.grant_context(scope)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"server": ""}, "server must be"),
        ({"add_usd": 0}, "add_usd must be"),
        ({"add_usd": float("nan")}, "add_usd must be"),
        ({"add_usd": True}, "add_usd must be"),
        ({"expires_at": "soon"}, "expires_at"),
        ({"granted_by": ""}, "granted_by must be"),
    ],
)
def test_record_grant_rejects_bad_input(kwargs, message):
    good = {"server": "s", "add_usd": 5, "expires_at": "2026-12-01T00:00:00Z", "granted_by": "u-1"}
    with pytest.raises(ValueError, match=message):
        otel_sampling.record_grant(**{**good, **kwargs})


def test_public_api_is_exported():
    assert {"grant_context", "sampling_error", "record_grant"} <= set(otel_sampling.__all__)
    assert names.ENDING_UNANSWERED not in names.ENDINGS  # server side only
