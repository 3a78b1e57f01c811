"""Repeated tool calls in a run: what a repeat is, and when it is a violation. Pure rules.

A tool call repeats when, within one run, the host sends a tool call with the same tool name and
the same arguments fingerprint (:func:`otel_sampling.records.ledger.tool_call_fingerprint`) as an
earlier one (``docs/telemetry.md`` "Repeated tool calls"). Degradation multiplies retries, and
retries multiply side effects: a repeat is counted whatever the tool
(``agent.run.repeated_tool_calls``), and a repeat of a tool the policy names in
``side_effect_tools`` is also a ``repeated_side_effect`` violation (the same write done twice).
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


def judge_repeat(tool: str, side_effect_tools: Collection[str] | None) -> Repeat:
    """A repeat of ``tool`` in a run, given the ``side_effect_tools`` of the policy scope it was
    sent in (None: the policy names none): a ``repeated_side_effect`` violation when the tool is
    named there (exact name, as the server lists it)."""
    side_effect = side_effect_tools is not None and tool in side_effect_tools
    return Repeat(side_effect, names.VIOLATION_REPEATED_SIDE_EFFECT if side_effect else None)
