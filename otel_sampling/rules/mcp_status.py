"""Whether an MCP span is an error, by the JSON-RPC code the answer carried (MCP semantic conventions,
``model/mcp/common.yaml``, read at semantic-conventions-genai ``0e5e6a8``).

The receiver of a request (our host's SERVER ``sampling/createMessage`` span: the host receives the
server's request) follows ``mcp.server.status.attributes``: the codes of
:data:`RECEIVER_NOT_ERRORS` "indicate that the caller sent a request the receiver could not serve and
SHOULD NOT be considered errors"; any other code, or a failure without a code (a callback that
raised, a timeout), is an error. The sender (the MCP server's CLIENT span) follows
``mcp.client.status.attributes``: "All JSON-RPC error codes SHOULD be considered errors".
``error.type`` is set either way (the ending's own type, ``host.unsupported`` for ``-32600``
"Sampling not supported"); only the span status differs.
"""

from __future__ import annotations

from typing import Final

#: Parse error, Invalid Request, Method not found, Invalid params, Resource not found: as
#: ``rpc.response.status_code`` spells them (the code as a string).
RECEIVER_NOT_ERRORS: Final = frozenset({"-32700", "-32600", "-32601", "-32602", "-32002"})


def receiver_failed(error_type: str | None, status_code: str | None) -> bool:
    """Whether the receiver's span is an error: it failed (``error_type``) and its answer's JSON-RPC
    code (``status_code``, ``rpc.response.status_code``; None: no error frame was answered) is not
    one of :data:`RECEIVER_NOT_ERRORS`."""
    return error_type is not None and status_code not in RECEIVER_NOT_ERRORS


def sender_failed(error_type: str | None, status_code: str | None) -> bool:
    """Whether the sender's span is an error: it failed, or the answer carried any JSON-RPC error code."""
    return error_type is not None or status_code is not None
