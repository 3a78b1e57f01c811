"""Tool calls the host sends again within one run: ``agent.run.repeated_tool_calls`` and the
``repeated_side_effect`` violation.

The host-side ``tools/call`` wrapper (``ClientSession.call_tool``, both mcp majors) calls
:func:`note_host_tool_call` as the host sends a call. Inside a run (:func:`~otel_sampling.records.run.current_run`),
the call's fingerprint (:func:`~otel_sampling.records.ledger.tool_call_fingerprint`, keyed as the
sampling request fingerprint: no argument is kept, only the hash, and only in the run's memory)
is noted in the run; a fingerprint the run saw before is a repeat
(:func:`~otel_sampling.rules.repeats.judge_repeat`), counted by the mode the run is in so far
(:func:`~otel_sampling.records.run.current_mode`), the tool (bounded) and whether it is a
side-effect tool (:func:`~otel_sampling.rules.repeats.judge_repeat`: the server's policy table or
the run's scope names it in ``side_effect_tools``); a repeat of such a tool is also the violation
(``otel_sampling.sampling.violations`` and an event on the span current where the host sent it).
Outside every run nothing is done (no fingerprint is computed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry import trace

from otel_sampling import names
from otel_sampling.metrics import Instruments, recorded_in
from otel_sampling.records import run as run_records
from otel_sampling.records.ledger import record_violation, tool_call_fingerprint
from otel_sampling.rules.repeats import judge_repeat


def note_host_tool_call(
    instruments: Instruments,
    key: bytes,
    name: object,
    arguments: Any,
    policy_names: Sequence[str],
    server_label: str | None,
) -> None:
    """The host sends ``tools/call`` ``name`` with ``arguments`` to the server whose policy tables
    may be ``policy_names`` (first found wins) and whose ``mcp.server.name`` label is made of
    ``server_label``; ``key``: the fingerprint key (the ledger's)."""
    run = run_records.current_run()
    if run is None or not isinstance(name, str):
        return
    if not run.note_tool_call(tool_call_fingerprint(name, arguments, key)):
        return
    policy = instruments.settings.policy
    table = next((policy.servers[n] for n in policy_names if n in policy.servers), None)
    scope = run_records.policy_scope(policy, run)
    judged = judge_repeat(
        name,
        table.side_effect_tools if table is not None else None,
        scope.policy.side_effect_tools if scope is not None else None,
    )
    span = trace.get_current_span()
    instruments.repeated_tool_calls.add(
        1,
        {
            names.DEGRADATION_MODE: run_records.current_mode(),
            names.GEN_AI_TOOL_NAME: instruments.tool_label.value(name),
            names.TOOL_SIDE_EFFECT: "true" if judged.side_effect else "false",
        },
        context=recorded_in(span),
    )
    if judged.violation is not None:
        record_violation(instruments, span, judged.violation, instruments.server_label.value(server_label))
