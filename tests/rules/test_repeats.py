"""A repeated tool call in a run (``otel_sampling.rules.repeats``): counted whatever the tool, and a
``repeated_side_effect`` violation when the policy names the tool in ``side_effect_tools``."""

from __future__ import annotations

from otel_sampling import names
from otel_sampling.rules.repeats import judge_repeat


def test_a_repeat_of_a_tool_the_policy_names_is_a_violation():
    assert judge_repeat("create_ticket", ("create_ticket", "send_email")) == (
        True,
        names.VIOLATION_REPEATED_SIDE_EFFECT,
    )


def test_a_repeat_of_another_tool_is_counted_without_a_violation():
    assert judge_repeat("search", ("create_ticket",)) == (False, None)


def test_without_side_effect_tools_no_repeat_is_a_violation():
    assert judge_repeat("create_ticket", None) == (False, None)


def test_names_are_matched_exactly_as_the_server_lists_them():
    assert judge_repeat("Create_Ticket", ("create_ticket",)) == (False, None)
