"""The host operator's policy file (TOML), loaded into frozen dataclasses.

The file is named by ``OTEL_SAMPLING_POLICY``; every table and key is optional::

    stall_threshold_seconds = 30         # pending this long (seconds) is reported as a stall

    [servers."ticket-server"]            # keyed by the MCP server's serverInfo.name
    primary_model = "claude-sonnet-5-5"
    permitted_models = ["claude-sonnet-5-5", "claude-haiku-5-5"]
    context_ceiling = "thisServer"       # "none" | "thisServer" | "allServers"
    permitted_providers = ["anthropic"]  # gen_ai.provider.name values it may fail over to
    permitted_regions = ["eu"]           # regions (from [endpoints]) it may be served from

    [servers."ticket-server".tools."summarise"]  # one tool, as the server process sees it
    primary_model = "claude-sonnet-5-5"
    permitted_models = ["claude-sonnet-5-5", "claude-haiku-5-5"]

    [runs."ticket-triage"]               # a run: otel_sampling.run(name), an agent's gen_ai.agent.name
    permitted_providers = ["anthropic"]

    [default]                            # every other provider call
    permitted_regions = ["eu"]

    [endpoints."api.eu.example.com"]     # a provider endpoint host (server.address)
    region = "eu"

    [prices."claude-sonnet-5-5"]         # USD per million tokens
    input_usd_per_mtok = 3.0
    output_usd_per_mtok = 15.0
    cache_read_usd_per_mtok = 0.3
    cache_write_usd_per_mtok = 3.75
    as_of = 2026-11-01

    [[ending_rules]]                     # the host's own denial frames, in file order
    code = -32050
    message_contains = "denied"
    ending = "policy.denied"

:func:`load_policy` validates everything up front and raises :class:`PolicyError` naming the file,
the dotted key and its line, so that a typo fails at start-up instead of silently disabling a
rule. ``docs/configuration.md`` documents every key. ``python -m otel_sampling.policy FILE...``
checks files before they are deployed.

Scope tables (server, tool, run, default) take ``primary_model``, ``permitted_models``,
``permitted_providers`` and ``permitted_regions``; which one judges a provider call is
:mod:`otel_sampling.rules.scopes`.

Keys in error messages are written ``servers."<server name>".<key>``,
``servers."<server>".tools."<tool>".<key>``, ``runs."<run name>".<key>``, ``default.<key>`` and
``prices."<model>".<key>`` (and ``endpoints."<host>".<key>``): names chosen by the operator are
always double-quoted, schema keys never are; array items add ``[index]``
(``ending_rules[2].ending``).
"""

from otel_sampling.policy._load import load_policy
from otel_sampling.policy._types import (
    ALLOWED_CONTEXT_CEILINGS,
    DEFAULT_STALL_THRESHOLD_SECONDS,
    EMPTY_POLICY,
    DrillSchedule,
    EndingRule,
    Endpoint,
    Policy,
    PolicyError,
    Price,
    ServerPolicy,
)

__all__ = [
    "ALLOWED_CONTEXT_CEILINGS",
    "DEFAULT_STALL_THRESHOLD_SECONDS",
    "EMPTY_POLICY",
    "DrillSchedule",
    "EndingRule",
    "Policy",
    "PolicyError",
    "Endpoint",
    "Price",
    "ServerPolicy",
    "load_policy",
]
