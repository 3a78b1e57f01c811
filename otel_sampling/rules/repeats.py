"""Repeated tool calls in a run: what a repeat is, and when it is a violation. Pure rules.

A tool call repeats when, within one run, the host sends a tool call with the same tool name and
the same arguments fingerprint (:func:`otel_sampling.records.ledger.tool_call_fingerprint`) as an
earlier one (``docs/telemetry.md`` "Repeated tool calls"). Degradation multiplies retries, and
retries multiply side effects: a repeat is counted whatever the tool
(``agent.run.repeated_tool_calls``), and a repeat of a side-effect tool is also a
``repeated_side_effect`` violation (the same write done twice).

A tool is a side-effect tool when either of two policy tables names it in ``side_effect_tools``
(exact name, as the server lists it):

* the table of the MCP server the call goes to (``[servers."<server>"]``): the server's owner
  knows which of its tools write;
* the scope of the run that sends the call (:func:`otel_sampling.rules.scopes.scope_of`:
  ``[runs."<name>"]``, a server tool run's tables, else ``[default]``): the agent's owner knows
  which tools write in what the agent does, whichever server serves them.

Either naming it is enough: a table cannot un-name a tool another table names.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

from otel_sampling import names


class Repeat(NamedTuple):
    """The verdict of a repeated tool call: whether the policy names the tool as having side
    effects, and the violation kind it is (None: none)."""

    side_effect: bool
    violation: str | None


def judge_repeat(
    tool: str, server_side_effects: Collection[str] | None, scope_side_effects: Collection[str] | None
) -> Repeat:
    """A repeat of ``tool`` in a run, given the ``side_effect_tools`` of the table of the server the
    call goes to and of the policy scope of the run that sends it (None: that table names none, or
    there is no such table): a ``repeated_side_effect`` violation when either names the tool."""
    side_effect = (server_side_effects is not None and tool in server_side_effects) or (
        scope_side_effects is not None and tool in scope_side_effects
    )
    return Repeat(side_effect, names.VIOLATION_REPEATED_SIDE_EFFECT if side_effect else None)
