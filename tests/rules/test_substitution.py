"""Substitution judgement: MCP spec (hints are substrings of model names) and the policy."""

from __future__ import annotations

import pytest

from otel_sampling.rules.substitution import judge, same_family, same_model

PERMITTED = ("claude-sonnet-5-5", "claude-haiku-5-5")


@pytest.mark.parametrize(("hints", "served", "permitted", "expected"), [
    (("claude-sonnet",), "claude-sonnet-5-5-20261001", PERMITTED, "none"),  # spec example: a family hint
    (("sonnet",), "claude-sonnet-5-5", None, "none"),
    (("Claude-Sonnet",), "claude-sonnet-5-5", None, "none"),
    ((), "claude-opus-5-5", PERMITTED, "none"),  # no hint: nothing else was asked for
    (("gpt-4o",), "claude-haiku-5-5", PERMITTED, "within_policy"),
    (("gpt-4o",), "claude-haiku-5-5-20261001", PERMITTED, "within_policy"),  # dated snapshot of a permitted model
    (("gpt-4o",), "claude-opus-5-5", PERMITTED, "outside_policy"),
    (("gpt-4o",), "claude-haiku-5-5", None, "unjudged"),
    (("gpt-4o",), None, PERMITTED, "unjudged"),
    (("gpt-4o", "claude"), "claude-opus-5-5", PERMITTED, "none"),  # any hint may match
    (("gpt-4o",), "claude-haiku-5-5", (), "outside_policy"),  # an empty list permits nothing
])
def test_judge(hints, served, permitted, expected):
    assert judge(hints, served, permitted) == expected


@pytest.mark.parametrize(("entry", "served", "same"), [
    ("claude-haiku-5-5", "claude-haiku-5-5", True),
    ("claude-haiku-5-5", "claude-haiku-5-5-20261001", True),
    ("gpt-4o", "gpt-4o-2024-08-06", True),
    # OpenAI's older snapshots carry MMDD (models page: gpt-4-0613, gpt-3.5-turbo-0125), Mistral's YYMM.
    ("gpt-4", "gpt-4-0613", True),
    ("gpt-3.5-turbo", "gpt-3.5-turbo-0125", True),
    ("mistral-large", "mistral-large-2407", True),
    ("gpt-4", "gpt-4-32k-0613", False),  # another model (32k context) in that snapshot
    ("claude-haiku-5-5", "claude-haiku-5-5-latest", True),
    ("claude-haiku-5", "claude-haiku-5-5", False),  # another model, not a snapshot
    ("claude-haiku-5-5", "claude-haiku-5-5-fast", False),
    ("gpt-4o", "gpt-4o-mini", False),
])
def test_same_model(entry, served, same):
    assert same_model(entry, served) is same


def test_a_recorded_openai_snapshot_is_the_model_asked_for():
    # The recorded openai stream cassette asks for gpt-4 and is served gpt-4-0613: one model.
    assert same_family("gpt-4", "gpt-4-0613")
    assert not same_family("gpt-4", "gpt-4o-2024-08-06")
