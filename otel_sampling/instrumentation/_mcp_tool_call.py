"""The tool call a 2026-07-28 input-required loop runs for (host side, mcp 2.x).

On the 2026-07-28 path a server's sampling request comes back in the result of ``tools/call``
(``InputRequiredResult.input_requests``); the client's driver dispatches it to the sampling callback
and retries the call with the answer. The driver runs in the task of the call, and the callbacks
in tasks it starts, so a context variable set around the call reaches them. It holds a
:class:`ToolCall`: the tool's name, and the trace context of the round whose result asked, so that
the sampling span is a child of the tool call it belongs to. By the time the callback runs, the
SDK's ``MCP send tools/call`` span of that round has ended and is no longer current, so the
context is caught while the SDK sends the round: ``mcp.shared.jsonrpc_dispatcher`` calls
``inject_trace_context`` inside that span (connections with no JSON-RPC dispatcher, such as an
in-process server, make no such span: the sampling span then has the ambient parent).

One trace per tool call: with a span of the host's current around the call, every round and
every sampling span is in its trace already. Without one, the SDK would start a trace per round;
the rounds after the first are sent in the context of the first round's span
(:func:`continue_trace`, called by the ``ClientSession.call_tool`` wrapper), so the retries, the
server's spans for them and the sampling spans all join the first round's trace.

Who runs the driver, and so where the mark is set:

* mcp's own ``Client.call_tool`` (:data:`MCP_TARGETS`);
* fastmcp's ``Client.call_tool_mcp``, which fastmcp's ``call_tool`` and hosts built on it
  (pydantic-ai) call, and which drives the loop itself (:data:`FASTMCP_TARGETS`, a
  :class:`~otel_sampling.instrumentation._targets.HostTargets`: wrapped only where fastmcp is
  installed within its range, once the host imports it).

A host driving ``ClientSession.call_tool(..., allow_input_required=True)`` itself sets no mark:
its requests get no tool name and the ambient parent.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_sampling.instrumentation._guard import guarded
from otel_sampling.instrumentation._targets import HostTargets, Target


class ToolCall:
    """One tool call whose input-required loop is running: ``name`` (None when not a string),
    ``round_context``, the context of its last round's ``MCP send tools/call`` span, and
    ``first_context``, its first round's (each None until the SDK made one)."""

    __slots__ = ("name", "round_context", "first_context")

    def __init__(self, name: object) -> None:
        self.name = name if isinstance(name, str) else None
        self.round_context: otel_context.Context | None = None
        self.first_context: otel_context.Context | None = None


_tool_call: ContextVar[ToolCall | None] = ContextVar("otel_sampling_tool_call", default=None)


def current() -> ToolCall | None:
    """The tool call whose loop dispatches the request at hand, or None (not inside one)."""
    return _tool_call.get()


class OutsideToolCall:
    """Hide the tool call from what the sampling callback does: a request the callback itself
    sends is not a round of the call. (A class, not a ``contextmanager``: entered on every
    sampling request, where a generator-based one costs several times as much.)"""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _tool_call.set(None)

    def __exit__(self, *exc_info: object) -> None:
        _tool_call.reset(self._token)


def continue_trace() -> Token[otel_context.Context] | None:
    """Inside a tool call's loop with no span current, make its first round's span current for the
    next round (detach the token after the round); None when there is nothing to continue."""
    call = _tool_call.get()
    if call is None or call.first_context is None or trace.get_current_span().get_span_context().is_valid:
        return None
    return otel_context.attach(call.first_context)


def _tool_call_wrapper(state: Any) -> Callable[..., Any]:
    """A client's tool call (``name`` first, or as a keyword): its loop's callbacks see the mark."""

    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        token = _tool_call.set(ToolCall(args[0] if args else kwargs.get("name")))
        try:
            return await wrapped(*args, **kwargs)
        finally:
            _tool_call.reset(token)

    return wrapper


def _note_round() -> None:
    call = _tool_call.get()
    if call is None:
        return
    context = otel_context.get_current()
    if trace.get_current_span(context).get_span_context().is_valid:
        call.round_context = context
        if call.first_context is None:
            call.first_context = context


def _inject_wrapper(state: Any) -> Callable[..., Any]:
    """The SDK injects the trace context of a request it sends, inside that request's span."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if is_instrumentation_enabled():
            guarded("note a tool call's round", _note_round)
        return wrapped(*args, **kwargs)

    return wrapper


# mcp 2.x: its own driver, and where its dispatcher injects the trace context of what it sends.
MCP_TARGETS = (
    Target("mcp.client.client", "Client.call_tool", _tool_call_wrapper),
    Target("mcp.shared.jsonrpc_dispatcher", "inject_trace_context", _inject_wrapper),
)

# fastmcp's client drives the loop in call_tool_mcp (what its call_tool calls). The code is in the
# fastmcp-slim distribution since the split; "fastmcp" alone before. Range: the versions the
# real-host suite runs.
FASTMCP_TARGETS = HostTargets(
    ("fastmcp-slim", "fastmcp"),
    ">= 4.2, < 5",
    (Target("fastmcp.client.mixins.tools", "ClientToolsMixin.call_tool_mcp", _tool_call_wrapper),),
)
