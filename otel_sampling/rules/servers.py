"""What the host knows of a server: the violations its requests show, and whether its name tells
it apart. Pure rules.

Repeat-request violations are read from what the host did the last time it saw a request.

A sampling request is "the same question" as an earlier one when their fingerprints are equal
(:func:`otel_sampling.records.ledger.fingerprint`). Given what was remembered of the earlier one
(:class:`Seen`) and the request at hand, these functions say which violations it shows
(``names.SAMPLING_VIOLATION_KINDS``, ``docs/telemetry.md`` "Violations"):

* ``rerouted_after_denial``: denied for one server, then sent by another;
* ``scope_widened``: a wider ``includeContext`` requested or granted than the last time;
* ``decision_flipped``: allowed then denied (or the reverse) for the same server, except a budget
  running out, or an exhausted budget allowed after a grant;
* ``boundary_crossed``: served by a provider or from a region outside the server's policy
  (:func:`crossed_boundary`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import NamedTuple
from urllib.parse import urlsplit, urlunsplit

from otel_sampling import names

ALLOW, DENY = "allow", "deny"
# Endings that are a decision about the request (not about the model or the transport).
_DECISIONS = {
    names.ENDING_COMPLETED: ALLOW,
    names.ENDING_REFUSED: ALLOW,  # the host let it through; the model declined
    names.ENDING_POLICY_DENIED: DENY,
    names.ENDING_USER_DENIED: DENY,
    # A budget exhaustion is a denial too: a request re-evaluated into a completion because the
    # window rolled or a limiter refilled is a flip. Only a grant (record_grant) in between makes
    # the new answer legitimate: a budget is a quantity a user may decide to spend more of.
    names.ENDING_BUDGET_EXHAUSTED: DENY,
}
DENIALS = frozenset(names.DECISION_ENDINGS)
DECISION_SERVERS = 8  # servers whose last decision each fingerprint remembers
_SCOPE_RANK = {scope: rank for rank, scope in enumerate(names.INCLUDE_CONTEXT_VALUES)}


def wider(scope: str | None, than: str | None) -> bool:
    """True when ``includeContext`` ``scope`` is wider than ``than`` (unknown values never are)."""
    return scope in _SCOPE_RANK and than in _SCOPE_RANK and _SCOPE_RANK[scope] > _SCOPE_RANK[than]


def decision(ending: str) -> str | None:
    """``"allow"``, ``"deny"`` or None (the ending says nothing about the host's decision)."""
    return _DECISIONS.get(ending)


class Decision(NamedTuple):
    """The host's last decision on a request for one server: :data:`ALLOW` / :data:`DENY`, whether
    it was a budget exhaustion, and when it was taken (the ledger's clock, seconds)."""

    server: str | None
    decision: str
    budget_denied: bool
    decided_at: float


class Seen(NamedTuple):
    """What the host did the last times it saw a fingerprint (immutable; a NamedTuple because one
    is built per sampling request, and a frozen dataclass costs a ``object.__setattr__`` per field).

    Attributes:
        server: the server that sent it last (:func:`~otel_sampling.records.ledger.server_key`
            of ``serverInfo.name``; None when unknown); every server below is kept the same way.
        decisions: the last decision per server, oldest first, at most
            ``DECISION_SERVERS`` servers (a decision for server A stays visible after the request
            was decided for server B, so a flip for A is still seen).
        denied_server: the last server the request was denied for (``DENIALS``), if any.
        requested: the last ``includeContext`` requested.
        granted: the last scope granted (``grant_context``), None when the host never reported one.
        trace_id, span_id: the span of that last request (for links and event attributes).
    """

    server: str | None
    decisions: tuple[Decision, ...]
    denied_server: str | None
    requested: str
    granted: str | None
    trace_id: int
    span_id: int

    def decision_for(self, server: str | None) -> Decision | None:
        """The last decision taken on this request for ``server``, if any."""
        return next((d for d in reversed(self.decisions) if d.server == server), None)

    @staticmethod
    def after(
        *,
        server: str | None,
        ending: str,
        requested: str,
        granted: str | None,
        trace_id: int,
        span_id: int,
        earlier: Seen | None = None,
        now: float = 0.0,
    ) -> Seen:
        """The entry for a request that just ended, carrying over what ``earlier`` knew."""
        taken = decision(ending)
        decisions = earlier.decisions if earlier else ()
        if taken:
            kept = tuple(d for d in decisions if d.server != server)[-(DECISION_SERVERS - 1) :]
            decisions = (*kept, Decision(server, taken, ending == names.ENDING_BUDGET_EXHAUSTED, now))
        return Seen(  # positional, in field order (one built per request: no keyword binding)
            server,
            decisions,
            server if ending in DENIALS else (earlier.denied_server if earlier else None),  # denied_server
            requested,
            granted if granted is not None else (earlier.granted if earlier else None),  # granted
            trace_id,
            span_id,
        )


def violations_at_start(earlier: Seen, server: str | None, requested: str) -> list[str]:
    """Violations visible when a repeated request arrives: a reroute after a denial (sent by
    another server than the one it was denied for; a retry by the server it was rerouted to, which
    already sent it last, is a repeat there, not another reroute), a wider requested scope."""
    found = []
    if (
        earlier.denied_server is not None
        and server is not None
        and server != earlier.denied_server
        and server != earlier.server
    ):
        found.append(names.VIOLATION_REROUTED_AFTER_DENIAL)
    if wider(requested, earlier.requested):
        found.append(names.VIOLATION_SCOPE_WIDENED)
    return found


def violations_at_end(
    earlier: Seen, server: str | None, ending: str, granted: str | None, granted_budget_since: bool = False
) -> list[str]:
    """Violations visible when a repeated request ends: a flipped decision for the same server, a
    wider granted scope. A budget is a quantity: an allowed request exhausting it when repeated is
    not a flip (it ran out), nor is an exhausted one allowed after a grant for that server."""
    found = []
    taken = decision(ending)
    before = earlier.decision_for(server)
    ran_out = ending == names.ENDING_BUDGET_EXHAUSTED
    if (
        taken
        and before is not None
        and taken != before.decision
        and not ran_out
        and not (before.budget_denied and taken == ALLOW and granted_budget_since)
    ):
        found.append(names.VIOLATION_DECISION_FLIPPED)
    if granted is not None and wider(granted, earlier.granted):
        found.append(names.VIOLATION_SCOPE_WIDENED)
    return found


def crossed_boundary(
    served: Iterable[tuple[str, str | None]],
    permitted_providers: Collection[str] | None,
    permitted_regions: Collection[str] | None,
    region_of: Callable[[str | None], str | None],
) -> bool:
    """True when a call that served the request ran outside the compliance boundary.

    Args:
        served: ``(gen_ai.provider.name, server.address or None)`` of each provider call that served it.
        permitted_providers: the server policy's ``permitted_providers`` (None: any provider).
        permitted_regions: its ``permitted_regions`` (None: any region).
        region_of: the region of an endpoint host (policy ``[endpoints]``), None when unknown; an
            endpoint with no known region cannot be shown to be inside, so it crosses.
    """
    for provider, address in served:
        if permitted_providers is not None and provider not in permitted_providers:
            return True
        if permitted_regions is not None and region_of(address) not in permitted_regions:
            return True
    return False


# -------------------------------------------------------------------------------- a server's names
# Does a server's self-reported name tell it apart? Pure rules over ``serverInfo.name`` and the
# endpoint the host reached it at.
#
# A server names itself in ``serverInfo.name``. Two kinds of name are no identity (placeholders):
#
# * **generated**: made afresh by each process, so the same server reports another name after every
#   restart. fastmcp (2.x to 4.x) names a server built without a name
#   ``f"{cls.__name__}-{secrets.token_hex(2)}"`` (``FastMCP.generate_name``): the class name, a dash
#   and 4 lowercase hex digits, ``FastMCP-3a7f`` (``FastMCPProxy-09be`` for a proxy, ``MyServer-c2d1``
#   for a subclass). Recognised by :data:`GENERATED_NAME`: an identifier starting with a capital
#   letter (a class name), ``-``, exactly 4 lowercase hex digits. Its stable form is the
#   generator's prefix, ``FastMCP-*``.
# * **SDK defaults** (:data:`DEFAULT_NAMES`): what an SDK reports for every server whose author set no
#   name: mcp 2.x's ``MCPServer`` ``mcp-server``, mcp 1.x's ``FastMCP`` ``FastMCP``. Different
#   servers report the same name. Its stable form is the name itself.
#
# A server with a placeholder name is known by the endpoint the host reached it at, when the host
# knows one (:func:`stdio_endpoint`, :func:`url_endpoint`), then by the stable form of its name
# (:func:`known_as`). A server with any other name is known by that name.

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


def names_of(name: str | None, endpoint: str | None) -> tuple[tuple[str, ...], str | None]:
    """What the host knows a server by, in one call: :func:`known_as` and :func:`stable_name`."""
    return known_as(name, endpoint), stable_name(name)


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
