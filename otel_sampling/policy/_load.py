"""Reading a policy file: TOML text in, a validated :class:`~otel_sampling.policy.Policy` out.

The values are checked by :mod:`otel_sampling.policy._schema`; this module walks the document,
checks what spans several keys (a ``primary_model`` among ``permitted_models``, a permitted region
some endpoint is in, a rule with a condition) and turns every problem into a
:class:`~otel_sampling.policy.PolicyError` naming the file, the dotted key and its line.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

from otel_sampling.names import DRILL_FAILURE_OVERLOADED
from otel_sampling.policy import _schema as schema
from otel_sampling.policy._location import KeyPath, format_key, key_line
from otel_sampling.policy._types import (
    DEFAULT_STALL_THRESHOLD_SECONDS,
    DrillSchedule,
    EndingRule,
    Endpoint,
    Policy,
    PolicyError,
    Price,
    ServerPolicy,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

_TOP_LEVEL_KEYS: Final = (
    "servers",
    "prices",
    "endpoints",
    "stall_threshold_seconds",
    "ending_rules",
    "drills",
    "runs",
    "default",
)
# The keys of every scope table: [servers."<name>"], [servers."<name>".tools."<tool>"],
# [runs."<name>"], [default].
_SCOPE_KEYS: Final = (
    "primary_model",
    "permitted_models",
    "permitted_providers",
    "permitted_regions",
    "primary_effort",
    "side_effect_tools",
)
_SERVER_KEYS: Final = (*_SCOPE_KEYS, "context_ceiling", "tools")
_ENDPOINT_KEYS: Final = ("region",)
# The key's name before semantic-conventions-genai #440 renamed cache creation to cache write; still read.
_OLD_CACHE_WRITE_KEY: Final = "cache_creation_usd_per_mtok"
_PRICE_KEYS: Final = (
    "input_usd_per_mtok",
    "output_usd_per_mtok",
    "cache_read_usd_per_mtok",
    "cache_write_usd_per_mtok",
    _OLD_CACHE_WRITE_KEY,
    "as_of",
)
_ENDING_RULE_KEYS: Final = ("code", "message_contains", "ending")
_DRILL_KEYS: Final = ("name", "target_model", "start", "duration", "every", "failure")
_TOML_POSITION: Final = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")

_T = TypeVar("_T")


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Read and validate the policy file at *path*.

    Returns a :class:`Policy` whose ``source`` is *path*. An empty file gives a policy with no
    servers and no prices.

    Raises:
        PolicyError: the file does not exist ("policy file not found"), cannot be read, is not
            UTF-8, is not valid TOML, has an unknown top-level table or an unknown key in a scope
            table (``[servers."<name>"]``, its ``tools."<tool>"``, ``[runs."<name>"]``, ``[default]``;
            ``context_ceiling`` and ``tools`` belong to a server table only) or a price table, an
            empty run or tool name, has a value of the wrong type (a boolean is not a number; an integer
            is accepted where a float is expected), a negative or non-finite price, a missing
            required price, an empty model or server name, a ``context_ceiling`` outside
            :data:`ALLOWED_CONTEXT_CEILINGS`, an ``as_of`` that is not a date, a
            ``primary_model`` missing from that scope's ``permitted_models``, an empty provider,
            region or endpoint name, a ``permitted_regions`` entry no ``[endpoints]`` table names,
            a ``stall_threshold_seconds`` that is not a finite number above 0, or an
            ``[[ending_rules]]`` entry with an ending outside ``names.ENDINGS`` (or
            ``completed``), a ``code`` that is not an integer, an empty ``message_contains``, or
            neither condition. Values that break the parser itself (arrays nested too deep,
            integers too long to read) are reported as "cannot be checked".
    """
    source = os.fsdecode(path)
    text = _read_text(source)
    try:
        document = tomllib.loads(text)
        return _parse_document(_File(source, text), document)
    except tomllib.TOMLDecodeError as exc:
        raise _syntax_error(source, exc) from None
    except (RecursionError, OverflowError, ValueError) as exc:
        if isinstance(exc, PolicyError):
            raise
        # Values no policy needs (arrays nested hundreds deep, integers of hundreds of digits)
        # break the parser or the checks themselves: still a malformed file, never a traceback.
        problem = f"cannot be checked: {type(exc).__name__}: {schema.short_repr(str(exc))}"
        raise PolicyError(source, problem) from None


# ---------------------------------------------------------------- reading


def _read_text(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise PolicyError(path, "policy file not found") from None
    except OSError as exc:
        raise PolicyError(path, f"cannot read policy file: {exc.strerror or exc}") from None
    try:
        # A byte-order mark is not TOML, but editors write one; it carries no meaning, so drop it.
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise PolicyError(path, f"policy file is not UTF-8 (byte offset {exc.start})", line=line) from None


def _syntax_error(path: str, exc: tomllib.TOMLDecodeError) -> PolicyError:
    message = str(exc)
    match = _TOML_POSITION.search(message)
    line = int(match.group(1)) if match else None
    column = int(match.group(2)) if match else None
    reason = message[: match.start()] if match else message
    return PolicyError(path, f"TOML syntax error: {reason}", line=line, column=column)


# ---------------------------------------------------------------- validation


class _File:
    """The file being validated: runs checks and builds errors that carry its path and the key's line."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self._text = text

    def error(self, key: KeyPath, problem: str) -> PolicyError:
        return PolicyError(self.path, problem, key=format_key(key), line=key_line(self._text, key))

    def check(self, key: KeyPath, check: Callable[[Any], _T], value: Any) -> _T:
        """``check(value)``, its :class:`~._schema.Invalid` raised as a :class:`PolicyError` at *key*."""
        try:
            return check(value)
        except schema.Invalid as exc:
            raise self.error((*key, *exc.at), exc.problem) from None

    def table(self, key: KeyPath, value: Any, keys: tuple[str, ...] | None = None) -> dict[str, Any]:
        """A table at *key*; with *keys*, one with no other keys."""
        table = self.check(key, schema.table, value)
        if keys is not None:
            self.check(key, lambda t: schema.known_keys(t, keys, top_level=not key), table)
        return table

    def optional(self, key: KeyPath, table: Mapping[str, Any], name: str, check: Callable[[Any], _T]) -> _T | None:
        return self.check((*key, name), check, table[name]) if name in table else None

    def required(self, key: KeyPath, table: Mapping[str, Any], name: str, check: Callable[[Any], _T]) -> _T:
        if name not in table:
            raise self.error((*key, name), "missing required key")
        return self.check((*key, name), check, table[name])


def _parse_document(file: _File, document: dict[str, Any]) -> Policy:
    file.table((), document, _TOP_LEVEL_KEYS)
    servers = file.table(("servers",), document.get("servers", {}))
    runs = file.table(("runs",), document.get("runs", {}))
    prices = file.table(("prices",), document.get("prices", {}))
    endpoints = file.table(("endpoints",), document.get("endpoints", {}))
    policy = Policy(
        servers={name: _parse_server(file, ("servers", name), raw) for name, raw in servers.items()},
        tools={
            (server, tool): scope
            for server, raw in servers.items()
            for tool, scope in _parse_tools(file, ("servers", server, "tools"), raw).items()
        },
        runs={name: _parse_run(file, ("runs", name), raw) for name, raw in runs.items()},
        default=_parse_scope(file, ("default",), document["default"]) if "default" in document else None,
        prices={model: _parse_price(file, ("prices", model), raw) for model, raw in prices.items()},
        source=file.path,
        endpoints={host: _parse_endpoint(file, ("endpoints", host), raw) for host, raw in endpoints.items()},
        stall_threshold_seconds=file.optional((), document, "stall_threshold_seconds", schema.seconds)
        or DEFAULT_STALL_THRESHOLD_SECONDS,
        ending_rules=_parse_ending_rules(file, document),
        drills=_parse_drills(file, document),
    )
    _check_regions(file, policy)
    return policy


def _parse_server(file: _File, key: KeyPath, raw: Any) -> ServerPolicy:
    file.check(key, schema.server_name, key[-1])
    table = file.table(key, raw, _SERVER_KEYS)
    return _parse_scope(file, key, table, ceiling=file.optional(key, table, "context_ceiling", schema.context_ceiling))


def _parse_tools(file: _File, key: KeyPath, raw: Any) -> dict[str, ServerPolicy]:
    """The ``tools`` tables of a server table (checked as a table by :func:`_parse_server` first)."""
    tools = file.table(key, raw.get("tools", {})) if isinstance(raw, dict) else {}
    scopes = {}
    for tool, table in tools.items():
        file.check((*key, tool), schema.tool_name, tool)
        scopes[tool] = _parse_scope(file, (*key, tool), table)
    return scopes


def _parse_run(file: _File, key: KeyPath, raw: Any) -> ServerPolicy:
    file.check(key, schema.run_name, key[-1])
    return _parse_scope(file, key, raw)


def _parse_scope(file: _File, key: KeyPath, raw: Any, ceiling: str | None = None) -> ServerPolicy:
    """A scope table's keys (a server table's ``context_ceiling`` and ``tools`` are read by the caller)."""
    table = file.table(key, raw, _SERVER_KEYS if _is_server(key) else _SCOPE_KEYS)
    primary = file.optional(key, table, "primary_model", schema.model_name)
    permitted = file.optional(key, table, "permitted_models", schema.model_names)
    providers = file.optional(key, table, "permitted_providers", schema.provider_names)
    regions = file.optional(key, table, "permitted_regions", schema.regions)
    effort = file.optional(key, table, "primary_effort", schema.effort)
    side_effects = file.optional(key, table, "side_effect_tools", schema.tool_names)
    if primary is not None and permitted is not None and primary not in permitted:
        raise file.error((*key, "primary_model"), f"{primary!r} is not in permitted_models {list(permitted)!r}")
    return ServerPolicy(
        primary_model=primary,
        permitted_models=permitted,
        context_ceiling=ceiling,
        permitted_providers=providers,
        permitted_regions=regions,
        primary_effort=effort,
        side_effect_tools=side_effects,
    )


def _is_server(key: KeyPath) -> bool:
    return len(key) == 2 and key[0] == "servers"


def _parse_price(file: _File, key: KeyPath, raw: Any) -> Price:
    file.check(key, schema.model_name, key[-1])
    table = file.table(key, raw, _PRICE_KEYS)
    return Price(
        input_usd_per_mtok=file.required(key, table, "input_usd_per_mtok", schema.usd),
        output_usd_per_mtok=file.required(key, table, "output_usd_per_mtok", schema.usd),
        cache_read_usd_per_mtok=file.optional(key, table, "cache_read_usd_per_mtok", schema.usd),
        cache_write_usd_per_mtok=_cache_write_price(file, key, table),
        as_of=file.optional(key, table, "as_of", schema.date),
    )


def _cache_write_price(file: _File, key: KeyPath, table: Mapping[str, Any]) -> float | None:
    """``cache_write_usd_per_mtok``, or the older ``cache_creation_usd_per_mtok``; not both."""
    if "cache_write_usd_per_mtok" in table and _OLD_CACHE_WRITE_KEY in table:
        raise file.error(
            (*key, _OLD_CACHE_WRITE_KEY), "give cache_write_usd_per_mtok only (the older name of the same price)"
        )
    name = _OLD_CACHE_WRITE_KEY if _OLD_CACHE_WRITE_KEY in table else "cache_write_usd_per_mtok"
    return file.optional(key, table, name, schema.usd)


def _parse_endpoint(file: _File, key: KeyPath, raw: Any) -> Endpoint:
    file.check(key, schema.endpoint_host, key[-1])
    table = file.table(key, raw, _ENDPOINT_KEYS)
    return Endpoint(region=file.required(key, table, "region", schema.region))


def _parse_ending_rules(file: _File, document: Mapping[str, Any]) -> tuple[EndingRule, ...]:
    entries = file.optional((), document, "ending_rules", lambda v: schema.array_of_tables(v, "ending_rules"))
    return tuple(_parse_ending_rule(file, ("ending_rules", index), raw) for index, raw in enumerate(entries or ()))


def _parse_ending_rule(file: _File, key: KeyPath, raw: Any) -> EndingRule:
    table = file.table(key, raw, _ENDING_RULE_KEYS)
    ending = file.required(key, table, "ending", schema.error_ending)
    code = file.optional(key, table, "code", schema.json_rpc_code)
    contains = file.optional(key, table, "message_contains", schema.message_substring)
    if code is None and contains is None:
        raise file.error(key, "a rule needs code, message_contains or both")
    return EndingRule(ending=ending, code=code, message_contains=contains)


def _parse_drills(file: _File, document: Mapping[str, Any]) -> tuple[DrillSchedule, ...]:
    entries = file.optional((), document, "drills", lambda v: schema.array_of_tables(v, "drills"))
    drills = tuple(_parse_drill(file, ("drills", index), raw) for index, raw in enumerate(entries or ()))
    seen: set[str] = set()
    for index, drill in enumerate(drills):
        if drill.name in seen:
            raise file.error(("drills", index, "name"), f"drill {drill.name!r} is named twice")
        seen.add(drill.name)
    return drills


def _parse_drill(file: _File, key: KeyPath, raw: Any) -> DrillSchedule:
    table = file.table(key, raw, _DRILL_KEYS)
    duration = file.required(key, table, "duration", schema.seconds)
    every = file.optional(key, table, "every", schema.seconds)
    if every is not None and every < duration:
        raise file.error(
            (*key, "every"), f"every ({every:g} s) is shorter than duration ({duration:g} s): the windows would overlap"
        )
    return DrillSchedule(
        name=file.required(key, table, "name", schema.drill_name),
        target_model=file.required(key, table, "target_model", schema.model_name),
        start=file.required(key, table, "start", schema.instant),
        duration=duration,
        every=every,
        failure=file.optional(key, table, "failure", schema.drill_failure) or DRILL_FAILURE_OVERLOADED,
    )


def _check_regions(file: _File, policy: Policy) -> None:
    """A permitted region no endpoint is in is a typo: no call could ever be served from it."""
    known = {endpoint.region for endpoint in policy.endpoints.values()}
    scopes: list[tuple[KeyPath, ServerPolicy]] = [(("servers", name), s) for name, s in policy.servers.items()]
    scopes += [(("servers", server, "tools", tool), s) for (server, tool), s in policy.tools.items()]
    scopes += [(("runs", name), s) for name, s in policy.runs.items()]
    if policy.default is not None:
        scopes.append((("default",), policy.default))
    for key, scope in scopes:
        for index, region in enumerate(scope.permitted_regions or ()):
            if region not in known:
                raise file.error(
                    (*key, "permitted_regions", index),
                    f"region {region!r} is not the region of any [endpoints] table"
                    f" (known: {', '.join(sorted(known)) or 'none'})",
                )
