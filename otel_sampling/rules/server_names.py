"""Does a server's self-reported name tell it apart? Pure rules over ``serverInfo.name`` and the
endpoint the host reached it at.

A server names itself in ``serverInfo.name``. Two kinds of name are no identity (placeholders):

* **generated**: made afresh by each process, so the same server reports another name after every
  restart. fastmcp (2.x to 4.x) names a server built without a name
  ``f"{cls.__name__}-{secrets.token_hex(2)}"`` (``FastMCP.generate_name``): the class name, a dash
  and 4 lowercase hex digits, ``FastMCP-3a7f`` (``FastMCPProxy-09be`` for a proxy, ``MyServer-c2d1``
  for a subclass). Recognised by :data:`GENERATED_NAME`: an identifier starting with a capital
  letter (a class name), ``-``, exactly 4 lowercase hex digits. Its stable form is the
  generator's prefix, ``FastMCP-*``.
* **SDK defaults** (:data:`DEFAULT_NAMES`): what an SDK reports for every server whose author set no
  name: mcp 2.x's ``MCPServer`` ``mcp-server``, mcp 1.x's ``FastMCP`` ``FastMCP``. Different
  servers report the same name. Its stable form is the name itself.

A server with a placeholder name is known by the endpoint the host reached it at, when the host
knows one (:func:`stdio_endpoint`, :func:`url_endpoint`), then by the stable form of its name
(:func:`known_as`). A server with any other name is known by that name.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

# fastmcp's FastMCP.generate_name(): f"{cls.__name__}-{secrets.token_hex(2)}".
GENERATED_NAME = re.compile(r"(?P<prefix>[A-Z][A-Za-z0-9_]*)-[0-9a-f]{4}")
GENERATED_NAME_MAX_LENGTH = 128  # longer names are never generated ones (and are not matched)
# mcp 2.x MCPServer(name=None) and mcp 1.x FastMCP(name=None).
DEFAULT_NAMES = frozenset({"mcp-server", "FastMCP"})
STDIO_PREFIX = "stdio:"


def stable_name(name: str | None) -> str | None:
    """The form of ``name`` that survives a restart: ``"<prefix>-*"`` for a generated name
    (``FastMCP-3a7f`` -> ``FastMCP-*``), else ``name`` itself (None stays None)."""
    if name is None or len(name) > GENERATED_NAME_MAX_LENGTH:
        return name
    generated = GENERATED_NAME.fullmatch(name)
    return f"{generated.group('prefix')}-*" if generated else name


def is_placeholder(name: str | None) -> bool:
    """True when ``name`` does not tell servers apart: generated per process, or an SDK default."""
    return name is not None and (name in DEFAULT_NAMES or stable_name(name) != name)


def stdio_endpoint(command: str, args: Sequence[str]) -> str:
    """A stdio server's endpoint: ``"stdio:"`` and the command line as the host starts it
    (``shlex.join``: ``stdio:python tickets.py --port 0``)."""
    return STDIO_PREFIX + shlex.join([command, *args])


def url_endpoint(url: str) -> str | None:
    """An HTTP server's endpoint: ``url`` without user info, query or fragment, scheme and host in
    lower case (``https://Key@API.example.com/mcp?token=x`` -> ``https://api.example.com/mcp``);
    None when ``url`` has no scheme or host."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:  # a malformed port or IPv6 literal
        return None
    if not parts.scheme or not host:
        return None
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    return urlunsplit((parts.scheme.lower(), netloc, parts.path, "", ""))


def known_as(name: str | None, endpoint: str | None) -> tuple[str, ...]:
    """The names a server is known by (identity, policy tables, grants), the one it is kept by
    first: ``(name,)`` for a name that tells it apart; for a placeholder, the endpoint (when
    known) and the stable form of the name; ``()`` when the server names itself nothing."""
    if name is None:
        return (endpoint,) if endpoint else ()
    if not is_placeholder(name):
        return (name,)
    stable = stable_name(name) or name
    return (endpoint, stable) if endpoint else (stable,)
