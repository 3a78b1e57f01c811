"""The public API: sampling_error, grant_context, record_grant (argument checks and shapes), the
policy keys this issue adds, and exception-group classification."""

from __future__ import annotations

import datetime
import sys

import mcp_types as types
import pytest
from mcp import MCPError

import otel_sampling
from otel_sampling import names
from otel_sampling.policy import EndingRule, PolicyError, load_policy
from otel_sampling.rules import endings
from otel_sampling.rules.values import Ending

if sys.version_info < (3, 11):
    from exceptiongroup import ExceptionGroup


def test_sampling_error_policy_refusal_shape():
    error = otel_sampling.sampling_error("policy.budget_exhausted", "Daily limit reached",
                                         resets_at=datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc))
    assert isinstance(error, types.ErrorData)
    assert (error.code, error.message) == (-32003, "Daily limit reached")
    assert error.data == {"reason": "policy.budget_exhausted", "resetsAt": "2026-12-01T00:00:00Z"}
    assert endings.from_error_frame(error.code, error.data) == Ending(
        "policy.budget_exhausted", "-32003", "2026-12-01T00:00:00Z")


def test_sampling_error_user_rejection_uses_the_spec_code():
    error = otel_sampling.sampling_error("user.denied", "User rejected sampling request")
    assert error.code == -1 and error.data == {"reason": "user.denied"}


@pytest.mark.parametrize(("args", "message"), [
    (("completed", "x"), "reason must be one of"),
    (("policy.denied", " "), "message must be a non-empty string"),
    (("policy.denied", "x", datetime.datetime(2026, 12, 1)), "resets_at must be timezone-aware"),
    (("policy.denied", "x", "tomorrow"), "ISO 8601"),
    (("policy.denied", "x", "2026-12-01T00:00:00"), "ISO 8601"),
])
def test_sampling_error_rejects_bad_input(args, message):
    with pytest.raises(ValueError, match=message):
        otel_sampling.sampling_error(*args)


def test_grant_context_checks_the_scope_and_needs_a_request():
    with pytest.raises(ValueError, match="scope must be one of"):
        otel_sampling.grant_context("everything")
    assert otel_sampling.grant_context("thisServer") is False  # no sampling callback running


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"server": ""}, "server must be"),
    ({"add_usd": 0}, "add_usd must be"),
    ({"add_usd": float("nan")}, "add_usd must be"),
    ({"add_usd": True}, "add_usd must be"),
    ({"expires_at": "soon"}, "expires_at"),
    ({"granted_by": ""}, "granted_by must be"),
])
def test_record_grant_rejects_bad_input(kwargs, message):
    good = {"server": "s", "add_usd": 5, "expires_at": "2026-12-01T00:00:00Z", "granted_by": "u-1"}
    with pytest.raises(ValueError, match=message):
        otel_sampling.record_grant(**{**good, **kwargs})


def test_exception_group_of_one_mcp_error_is_classified_by_its_frame():
    group = ExceptionGroup("unhandled errors in a TaskGroup", [
        MCPError(-32003, "Daily limit", data={"reason": "policy.budget_exhausted", "resetsAt": "2026-12-01"})])
    assert endings.from_exception(group) == Ending("policy.budget_exhausted", "-32003", "2026-12-01")


RULES = (EndingRule(ending="policy.budget_exhausted", code=-32099),
         EndingRule(ending="policy.denied", message_contains="QUOTA"))


@pytest.mark.parametrize(("code", "data", "message", "ending"), [
    (-32099, None, "over budget", "policy.budget_exhausted"),  # host rule by code
    (-32000, None, "monthly quota hit", "policy.denied"),  # host rule by message, case-insensitive
    (-32099, {"reason": "user.denied"}, "x", "user.denied"),  # data.reason still wins
    (-1, None, "User rejected", "user.denied"),  # built-in rules after the host's
])
def test_host_ending_rules(code, data, message, ending):
    assert endings.from_error_frame(code, data, message, RULES).ending == ending


def test_policy_stall_threshold_and_ending_rules(tmp_path):
    path = tmp_path / "policy.toml"
    path.write_text('stall_threshold_seconds = 5\n[[ending_rules]]\ncode = -32099\nending = "policy.denied"\n')
    policy = load_policy(path)
    assert policy.stall_threshold_seconds == 5.0
    assert policy.ending_rules == (EndingRule(ending="policy.denied", code=-32099),)
    assert load_policy(tmp_path / "policy.toml").source == str(path)
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    assert load_policy(empty).stall_threshold_seconds == 30.0


@pytest.mark.parametrize(("text", "message"), [
    ("stall_threshold_seconds = 0\n", "stall_threshold_seconds: must be a finite number of seconds above 0"),
    ('stall_threshold_seconds = "30s"\n', "stall_threshold_seconds: expected a number of seconds"),
    ('[[ending_rules]]\ncode = -1\nending = "denied"\n', "ending_rules[0].ending: must be one of"),
    ('[[ending_rules]]\nending = "error"\n', "ending_rules[0]: a rule needs code, message_contains or both"),
    ('[[ending_rules]]\ncode = "x"\nending = "error"\n', "ending_rules[0].code: expected an integer"),
    ('[[ending_rules]]\ncode = 1\nending = "error"\nmatch = 2\n', "ending_rules[0].match: unknown key"),
])
def test_policy_rejects_bad_new_keys(tmp_path, text, message):
    path = tmp_path / "policy.toml"
    path.write_text(text)
    with pytest.raises(PolicyError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_policy(path)


def test_public_api_is_exported():
    assert {"grant_context", "sampling_error", "record_grant"} <= set(otel_sampling.__all__)
    assert names.ENDING_UNANSWERED not in names.ENDINGS  # server side only
