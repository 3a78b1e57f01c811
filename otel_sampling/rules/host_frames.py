"""Known hosts' decline frames: the error frames hosts answer a sampling request they decline
with, in their own words, and the ending each means. Data, read by
:func:`otel_sampling.rules.endings.from_error_frame` (``docs/telemetry.md`` "Ending rules", 1c).

A host that declines in its own words sends a generic JSON-RPC code (``-32600`` Invalid Request,
``-32603`` Internal error) that otherwise reads as ``error``: only its message says it declined.
Each row matches one exact message (case and all, as the source writes it), with one code or any
code, and names the source it was read from. A host missing here is added by the operator with
``[[ending_rules]]`` in the policy file (``docs/configuration.md``), which is tried before this
table.
"""

from __future__ import annotations

from typing import NamedTuple

from otel_sampling import names

INVALID_REQUEST_CODE = -32600  # JSON-RPC 2.0 Invalid Request (mcp_types.INVALID_REQUEST)


class DeclineFrame(NamedTuple):
    """One host's decline frame.

    Attributes:
        host: who sends it (the spec, an SDK, a framework), for the reader.
        message: the frame's message, exactly.
        ending: the ending it means, one of ``names.ENDINGS`` other than ``completed`` and ``error``.
        source: where the message and the code were read.
        code: the frame's code; None: any code (a host that sends the text with several codes).
    """

    host: str
    message: str
    ending: str
    source: str
    code: int | None = None


#: The MCP spec's text for a user's rejection (2025-11-25, client/sampling, Error Handling).
USER_REJECTED_MESSAGE = "User rejected sampling request"
#: The mcp SDK's answer when no sampling callback is set (mcp 1.x and 2.x ``_default_sampling_callback``).
UNSUPPORTED_MESSAGE = "Sampling not supported"

KNOWN_DECLINES: tuple[DeclineFrame, ...] = (
    DeclineFrame(
        "MCP spec (any host that declines with its text)",
        USER_REJECTED_MESSAGE,
        names.ENDING_USER_DENIED,
        "MCP spec 2025-11-25, client/sampling, Error Handling (with code -1); fastmcp 4 and pydantic-ai "
        "send a handler's exception as -32603 with its text (fastmcp client/sampling/__init__.py)",
    ),
    DeclineFrame(
        "mcp SDK 1.x and 2.x, no sampling callback set",
        UNSUPPORTED_MESSAGE,
        names.ENDING_HOST_UNSUPPORTED,
        "mcp client/session.py _default_sampling_callback (1.10 to 2.3)",
        INVALID_REQUEST_CODE,
    ),
    DeclineFrame(
        "Microsoft Agent Framework, no sampling_approval_callback set (its default)",
        "Sampling request denied. MCP sampling is disabled by default for untrusted servers; provide a "
        "'sampling_approval_callback' that approves the request to enable it.",
        names.ENDING_HOST_UNSUPPORTED,
        "agent-framework-core 1.23.0 and 1.26.0, agent_framework/_mcp.py sampling_callback",
        INVALID_REQUEST_CODE,
    ),
    DeclineFrame(
        "Microsoft Agent Framework, its sampling_approval_callback said no",
        "Sampling request denied by the 'sampling_approval_callback'.",
        names.ENDING_USER_DENIED,
        "agent-framework-core 1.23.0 and 1.26.0, agent_framework/_mcp.py sampling_callback",
        INVALID_REQUEST_CODE,
    ),
    DeclineFrame(
        "Microsoft Agent Framework, sampling_max_requests reached for the session",
        "Sampling rate limit exceeded for this MCP session.",
        names.ENDING_BUDGET_EXHAUSTED,
        "agent-framework-core 1.23.0 and 1.26.0, agent_framework/_mcp.py sampling_callback",
        INVALID_REQUEST_CODE,
    ),
    DeclineFrame(
        "VS Code (Copilot), the user denied the request",
        "The user has denied permission to call this method.",
        names.ENDING_USER_DENIED,
        "the message as a server received it from VS Code, quoted in PrefectHQ/fastmcp#2162 (code not quoted)",
    ),
)


def decline_ending(code: object, message: object) -> str | None:
    """The ending of a known host's decline frame ``(code, message)``, or None when it is none
    (string equality looks at the lengths first: a huge hostile message costs no more)."""
    if not isinstance(message, str):
        return None
    for frame in KNOWN_DECLINES:
        if message == frame.message and (frame.code is None or code == frame.code):
            return frame.ending
    return None
