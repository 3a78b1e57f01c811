"""A repeated tool call in a run (``otel_sampling.rules.repeats``): counted whatever the tool, and a
``repeated_side_effect`` violation when a policy table names the tool in ``side_effect_tools``: the
table of the server the call goes to, or the scope of the run that sends it; either is enough."""

from __future__ import annotations

import pytest

from otel_sampling import names
from otel_sampling.rules.repeats import judge_repeat

SIDE_EFFECT = (True, names.VIOLATION_REPEATED_SIDE_EFFECT)
NO_SIDE_EFFECT = (False, None)


def test_a_repeat_of_a_tool_the_servers_table_names_is_a_violation():
    assert judge_repeat("create_ticket", ("create_ticket", "send_email"), None) == SIDE_EFFECT


def test_a_repeat_of_a_tool_the_runs_scope_names_is_a_violation():
    assert judge_repeat("create_ticket", None, ("create_ticket",)) == SIDE_EFFECT


@pytest.mark.parametrize(
    ("server", "scope"),
    [
        (("create_ticket",), ("send_email",)),  # the server names it, the run's scope names another
        (("search",), ("create_ticket",)),  # the run's scope names it, the server another
        (("create_ticket",), ("create_ticket",)),  # both
        (("create_ticket",), ()),  # a scope naming none cannot un-name it
    ],
)
def test_either_table_naming_the_tool_is_enough(server, scope):
    assert judge_repeat("create_ticket", server, scope) == SIDE_EFFECT


def test_a_repeat_of_a_tool_neither_table_names_is_counted_without_a_violation():
    assert judge_repeat("search", ("create_ticket",), ("send_email",)) == NO_SIDE_EFFECT


def test_without_side_effect_tools_no_repeat_is_a_violation():
    assert judge_repeat("create_ticket", None, None) == NO_SIDE_EFFECT


def test_names_are_matched_exactly_as_the_server_lists_them():
    assert judge_repeat("Create_Ticket", ("create_ticket",), ("create_ticket",)) == NO_SIDE_EFFECT
