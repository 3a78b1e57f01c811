"""The outcome of the MCP ``tools/call`` requests a host sends (``otel_sampling.host.tool_calls``).

Counted once per ``ClientSession.call_tool`` that ends with a tool result or an error answer, by
``otel_sampling.tool_call.outcome`` and the ``degradation.mode`` of the run that sent it
(:func:`otel_sampling.records.run.current_mode`, as the call ends: the run's mode so far and the
named degradations active then):

* ``ok``: a ``CallToolResult`` without ``isError`` (mcp 2.x ``is_error``);
* ``is_error``: a ``CallToolResult`` with ``isError: true`` (the tool ran and failed, or the server
  refused its arguments as a tool error);
* ``error_frame``: a JSON-RPC error answer (mcp's ``MCPError`` / 1.x ``McpError``, carrying
  ``ErrorData.code``: ``-32602`` invalid params, an unknown tool...).

Not counted: a 2026-07-28 ``InputRequiredResult`` (a round of the call, not its end: the call is
counted when its last round ends), and a call that failed without an answer (a closed connection, a
timeout, a cancellation): there the tool's outcome is unknown.
"""

from __future__ import annotations

from typing import Any

from otel_sampling import names
from otel_sampling.metrics import Instruments
from otel_sampling.records import run as run_records

_INPUT_REQUIRED = "InputRequiredResult"  # mcp 2.x: a round of a 2026-07-28 loop, not the call's end


def outcome_of_result(result: Any) -> str | None:
    """``ok`` / ``is_error`` for a tool result; None for anything else (not the call's end)."""
    if type(result).__name__ == _INPUT_REQUIRED:
        return None
    flag = getattr(result, "is_error", None)
    if flag is None:
        flag = getattr(result, "isError", None)
    if flag is None and getattr(result, "content", None) is None:
        return None  # not a tool result
    return names.TOOL_CALL_OUTCOME_IS_ERROR if flag is True else names.TOOL_CALL_OUTCOME_OK


_ERROR_FRAME_CLASSES = frozenset({"MCPError", "McpError"})  # mcp 2.x, mcp 1.x


def is_error_frame(exc: BaseException) -> bool:
    """mcp raised the JSON-RPC error the server answered with: its ``MCPError`` (2.x, ``code``) or
    ``McpError`` (1.x, ``error.code``), or a subclass of either."""
    return any(cls.__name__ in _ERROR_FRAME_CLASSES for cls in type(exc).__mro__)


def count(instruments: Instruments, outcome: str | None) -> None:
    if outcome is not None:
        instruments.signals.host_tool_calls.add(
            1, {names.DEGRADATION_MODE: run_records.current_mode(), names.TOOL_CALL_OUTCOME: outcome}
        )


def count_result(instruments: Instruments, result: Any) -> None:
    count(instruments, outcome_of_result(result))


def count_failure(instruments: Instruments, exc: BaseException) -> None:
    count(instruments, names.TOOL_CALL_OUTCOME_ERROR_FRAME if is_error_frame(exc) else None)
