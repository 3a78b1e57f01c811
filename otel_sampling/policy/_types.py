"""The policy as the rest of the package sees it: frozen dataclasses, and the error a bad file raises.

:class:`Policy` holds read-only mappings of :class:`ServerPolicy` (one per scope: an MCP server, a
server's tool, a run, the default), :class:`Price` (per model) and :class:`Endpoint` (per provider
host), plus the stall threshold and the host's :class:`EndingRule` list. :class:`PolicyError`
carries where a file is wrong.
"""

from __future__ import annotations

import dataclasses
import datetime
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from otel_sampling.names import DRILL_FAILURE_OVERLOADED, INCLUDE_CONTEXT_VALUES

#: The MCP ``includeContext`` values, narrowest first; a ``context_ceiling`` must be one of them.
ALLOWED_CONTEXT_CEILINGS: Final = INCLUDE_CONTEXT_VALUES

#: Seconds a sampling request may stay pending before it is reported as a stall.
DEFAULT_STALL_THRESHOLD_SECONDS: Final = 30.0


class PolicyError(ValueError):
    """The policy file is missing, unreadable, not valid TOML, or breaks the schema.

    ``str(error)`` is ``"<path>:<line>: <key>: <problem>"``; parts that are unknown are left
    out (``<path>: <problem>`` for a missing file, ``<path>:<line>:<column>: <problem>`` for a TOML
    syntax error).

    Attributes:
        path: the policy file path, as given to :func:`load_policy`.
        key: the dotted key at fault, e.g. ``servers."wiki".context_ceiling``; ``None`` when the
            error is not about one key (missing file, undecodable bytes, TOML syntax).
        line: 1-based line of the key in the file (or of its table header when the key itself
            is absent); ``None`` when not known.
        column: 1-based column, for TOML syntax errors only; otherwise ``None``.
        problem: the message without the location prefix.
    """

    def __init__(
        self,
        path: str,
        problem: str,
        key: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.path = path
        self.problem = problem
        self.key = key
        self.line = line
        self.column = column
        super().__init__(_format_error(path, problem, key, line, column))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.problem, self.key, self.line, self.column))


def _format_error(path: str, problem: str, key: str | None, line: int | None, column: int | None) -> str:
    location = path
    if line is not None:
        location += f":{line}"
        if column is not None:
            location += f":{column}"
    return f"{location}: {key}: {problem}" if key else f"{location}: {problem}"


@dataclass(frozen=True, slots=True)
class ServerPolicy:
    """Policy for one scope: an MCP server, from ``[servers."<serverInfo.name>"]``; one tool of a
    server, from ``[servers."<server>".tools."<tool>"]``; a run, from ``[runs."<run name>"]``; every
    other provider call, from ``[default]`` (which scope judges a call:
    :mod:`otel_sampling.rules.scopes`). ``context_ceiling`` is a server table's only.

    Attributes:
        primary_model: the model to serve this server's sampling requests with; ``None`` (the
            default) leaves the choice to the host.
        permitted_models: the only models this server's requests may be served by; ``None``
            (the default) permits any model, an empty tuple permits none.
        context_ceiling: the widest ``includeContext`` honoured for this server, one of
            :data:`ALLOWED_CONTEXT_CEILINGS`; ``None`` (the default) sets no ceiling.
        permitted_providers: the compliance boundary by vendor: ``gen_ai.provider.name`` values
            (``anthropic``, ``openai``) that may serve this server's requests, failovers
            included; ``None`` (the default) sets no boundary.
        permitted_regions: the boundary by region: regions (named in ``[endpoints]``) whose
            endpoints may serve them; an endpoint with no region is outside. ``None``: no boundary.
        primary_effort: the reasoning effort its calls are meant to run at: a level of
            :data:`otel_sampling.names.EFFORT_LEVELS` (``"high"``) or a thinking budget in tokens
            (an int above 0); a call asking for less (same shape) is degraded, reason
            ``reduced_effort``. ``None`` (the default): effort is not judged.
        side_effect_tools: names of this server's tools that have side effects: the host calling
            one again with the same arguments in one run is a ``repeated_side_effect`` violation.
            ``None`` (the default): no tool is named.
    """

    primary_model: str | None = None
    permitted_models: tuple[str, ...] | None = None
    context_ceiling: str | None = None
    permitted_providers: tuple[str, ...] | None = None
    permitted_regions: tuple[str, ...] | None = None
    primary_effort: str | int | None = None
    side_effect_tools: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A provider endpoint, from ``[endpoints."<host>"]`` (the ``server.address`` calls go to).

    Attributes:
        region: the region the endpoint serves from (the operator's own names: ``"eu"``).
    """

    region: str


@dataclass(frozen=True, slots=True)
class Price:
    """Price of one model, from ``[prices."<model>"]``, in USD per million tokens.

    Attributes:
        input_usd_per_mtok: uncached input tokens (required).
        output_usd_per_mtok: output tokens (required).
        cache_read_usd_per_mtok: input tokens read from the prompt cache; ``None`` if not given.
        cache_write_usd_per_mtok: input tokens written to the prompt cache; ``None`` if not
            given.
        as_of: the date the prices were taken from the provider's price list; ``None`` if not
            given.
    """

    input_usd_per_mtok: float
    output_usd_per_mtok: float
    cache_read_usd_per_mtok: float | None = None
    cache_write_usd_per_mtok: float | None = None
    as_of: datetime.date | None = None


@dataclass(frozen=True, slots=True)
class EndingRule:
    """One ``[[ending_rules]]`` entry: an error frame the host's denials use, mapped to an ending.

    A rule matches an error frame when every condition it sets holds; at least one is set.

    Attributes:
        ending: the ending recorded on a match, one of ``names.ENDINGS`` except ``completed``.
        code: the JSON-RPC error code to match exactly; ``None`` matches any code.
        message_contains: a substring of the error message to match (case-insensitive);
            ``None`` matches any message.
    """

    ending: str
    code: int | None = None
    message_contains: str | None = None

    def matches(self, code: object, message: object) -> bool:
        """True when the frame ``(code, message)`` meets every condition of this rule."""
        if self.code is not None and code != self.code:
            return False
        if self.message_contains is not None:
            return isinstance(message, str) and self.message_contains.lower() in message.lower()
        return True


@dataclass(frozen=True, slots=True)
class DrillSchedule:
    """One ``[[drills]]`` entry: a drill the provider wrappers start in each of its windows.

    The windows are ``[start + k * every, start + k * every + duration)``, k = 0, 1, 2, ...
    (only the first without ``every``; :func:`otel_sampling.rules.drills.window_at`). A window's
    drill starts at the first provider call inside it and ends with it.

    Attributes:
        name: the drill's name (``otel_sampling.drill.name``), unique in the file.
        target_model: the ``gen_ai.request.model`` whose calls fail.
        start: the first window's beginning, an aware datetime.
        duration: seconds each window lasts.
        every: seconds between two windows' beginnings (at least ``duration``); ``None``: once.
        failure: how the calls fail, one of ``names.DRILL_FAILURES`` (default ``overloaded``).
    """

    name: str
    target_model: str
    start: datetime.datetime
    duration: float
    every: float | None = None
    failure: str = DRILL_FAILURE_OVERLOADED


@dataclass(frozen=True, slots=True)
class Policy:
    """A whole policy file.

    Attributes:
        servers: read-only mapping of server name (``serverInfo.name``) to :class:`ServerPolicy`.
        prices: read-only mapping of model name to :class:`Price`.
        endpoints: read-only mapping of endpoint host to :class:`Endpoint` (default: none).
        source: the file the policy was loaded from; ``None`` for :data:`EMPTY_POLICY` or a policy
            built in code.
        stall_threshold_seconds: seconds a sampling request may stay pending before it is
            reported as a stall (``stall_threshold_seconds``; default 30).
        ending_rules: the host's own error-frame rules (``[[ending_rules]]``), tried in file order
            after ``data.reason`` and before the built-in rules.
        drills: the drill schedule (``[[drills]]``, :class:`DrillSchedule`); none by default.
        runs: read-only mapping of run name (``otel_sampling.run(name)``, an agent span's
            ``gen_ai.agent.name``) to its scope (``[runs."<name>"]``); none by default.
        tools: read-only mapping of ``(server, tool)`` to the scope of that tool as the server
            sees it (``[servers."<server>".tools."<tool>"]``); none by default.
        default: the scope of every other provider call (``[default]``); None: no such table.
        scoped: derived: True when a table may cover a provider call outside a sampling request
            (any server, tool or run table, or ``[default]``).

    Plain dicts passed to the constructor are copied into read-only mappings.
    """

    servers: Mapping[str, ServerPolicy]
    prices: Mapping[str, Price]
    source: str | None = None
    endpoints: Mapping[str, Endpoint] = dataclasses.field(default_factory=dict)
    stall_threshold_seconds: float = DEFAULT_STALL_THRESHOLD_SECONDS
    ending_rules: tuple[EndingRule, ...] = ()
    drills: tuple[DrillSchedule, ...] = ()
    runs: Mapping[str, ServerPolicy] = dataclasses.field(default_factory=dict)
    tools: Mapping[tuple[str, str], ServerPolicy] = dataclasses.field(default_factory=dict)
    default: ServerPolicy | None = None
    #: True when a table may cover a provider call outside a sampling request (a run, tool or
    #: server table, or ``[default]``): a plain value the provider call reads before looking.
    scoped: bool = dataclasses.field(init=False, default=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "servers", types.MappingProxyType(dict(self.servers)))
        object.__setattr__(self, "prices", types.MappingProxyType(dict(self.prices)))
        object.__setattr__(self, "endpoints", types.MappingProxyType(dict(self.endpoints)))
        object.__setattr__(self, "runs", types.MappingProxyType(dict(self.runs)))
        object.__setattr__(self, "tools", types.MappingProxyType(dict(self.tools)))
        object.__setattr__(self, "scoped", bool(self.servers or self.runs or self.tools or self.default is not None))

    def server(self, name: str) -> ServerPolicy | None:
        """The policy for the server whose ``serverInfo.name`` is *name*, or ``None``."""
        return self.servers.get(name)

    def region_of(self, address: str | None) -> str | None:
        """The region ``[endpoints]`` gives an endpoint host, or ``None`` when unknown."""
        endpoint = self.endpoints.get(address) if address else None
        return endpoint.region if endpoint is not None else None


#: No servers, no prices: what a host runs with when ``OTEL_SAMPLING_POLICY`` is unset.
EMPTY_POLICY: Final = Policy(servers={}, prices={}, source=None)
