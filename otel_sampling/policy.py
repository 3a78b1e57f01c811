"""The host operator's policy file (TOML), loaded into frozen dataclasses.

The file is named by ``OTEL_SAMPLING_POLICY`` and has two optional top-level tables::

    [servers."ticket-server"]            # keyed by the MCP server's serverInfo.name
    primary_model = "claude-sonnet-5-5"
    permitted_models = ["claude-sonnet-5-5", "claude-haiku-5-5"]
    context_ceiling = "thisServer"       # "none" | "thisServer" | "allServers"
    permitted_providers = ["anthropic"]  # gen_ai.provider.name values it may fail over to
    permitted_regions = ["eu"]           # regions (from [endpoints]) it may be served from

    [endpoints."api.eu.example.com"]     # a provider endpoint host (server.address)
    region = "eu"

    [prices."claude-sonnet-5-5"]         # USD per million tokens
    input_usd_per_mtok = 3.0
    output_usd_per_mtok = 15.0
    cache_read_usd_per_mtok = 0.3
    cache_creation_usd_per_mtok = 3.75
    as_of = 2026-11-01

:func:`load_policy` validates everything up front and raises :class:`PolicyError` naming the file,
the dotted key and its line, so that a typo fails at start-up instead of silently disabling a
rule. ``docs/configuration.md`` documents every key.

Keys in error messages are written ``servers."<server name>".<key>`` and
``prices."<model>".<key>`` (and ``endpoints."<host>".<key>``): names chosen by the operator are
always double-quoted, schema keys never are; array items add ``[index]``.
"""

from __future__ import annotations

import dataclasses
import datetime
import difflib
import json
import math
import os
import re
import sys
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from otel_sampling.names import ENDING_COMPLETED, ENDINGS, INCLUDE_CONTEXT_VALUES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "ALLOWED_CONTEXT_CEILINGS",
    "DEFAULT_STALL_THRESHOLD_SECONDS",
    "EMPTY_POLICY",
    "EndingRule",
    "Policy",
    "PolicyError",
    "Endpoint",
    "Price",
    "ServerPolicy",
    "load_policy",
]

#: The MCP ``includeContext`` values, narrowest first; a ``context_ceiling`` must be one of them.
ALLOWED_CONTEXT_CEILINGS: Final = INCLUDE_CONTEXT_VALUES

_SERVER_KEYS: Final = ("primary_model", "permitted_models", "context_ceiling", "permitted_providers",
                       "permitted_regions")
_ENDPOINT_KEYS: Final = ("region",)
_PRICE_KEYS: Final = (
    "input_usd_per_mtok",
    "output_usd_per_mtok",
    "cache_read_usd_per_mtok",
    "cache_creation_usd_per_mtok",
    "as_of",
)
_TOP_LEVEL_KEYS: Final = ("servers", "prices", "endpoints", "stall_threshold_seconds", "ending_rules")
_ENDING_RULE_KEYS: Final = ("code", "message_contains", "ending")
#: Seconds a sampling request may stay pending before it is reported as a stall.
DEFAULT_STALL_THRESHOLD_SECONDS: Final = 30.0
_REPR_LIMIT: Final = 60

KeyPath = tuple[Any, ...]  # str parts, plus int parts for array indexes
_T = TypeVar("_T")
_Convert = Callable[["_File", KeyPath, Any], _T]


# ---------------------------------------------------------------- public types


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


@dataclass(frozen=True, slots=True)
class ServerPolicy:
    """Policy for one MCP server, from ``[servers."<serverInfo.name>"]``.

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
    """

    primary_model: str | None = None
    permitted_models: tuple[str, ...] | None = None
    context_ceiling: str | None = None
    permitted_providers: tuple[str, ...] | None = None
    permitted_regions: tuple[str, ...] | None = None


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
        cache_creation_usd_per_mtok: input tokens written to the prompt cache; ``None`` if not
            given.
        as_of: the date the prices were taken from the provider's price list; ``None`` if not
            given.
    """

    input_usd_per_mtok: float
    output_usd_per_mtok: float
    cache_read_usd_per_mtok: float | None = None
    cache_creation_usd_per_mtok: float | None = None
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

    Plain dicts passed to the constructor are copied into read-only mappings.
    """

    servers: Mapping[str, ServerPolicy]
    prices: Mapping[str, Price]
    source: str | None = None
    endpoints: Mapping[str, Endpoint] = dataclasses.field(default_factory=dict)
    stall_threshold_seconds: float = DEFAULT_STALL_THRESHOLD_SECONDS
    ending_rules: tuple[EndingRule, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "servers", types.MappingProxyType(dict(self.servers)))
        object.__setattr__(self, "prices", types.MappingProxyType(dict(self.prices)))
        object.__setattr__(self, "endpoints", types.MappingProxyType(dict(self.endpoints)))

    def server(self, name: str) -> ServerPolicy | None:
        """The policy for the server whose ``serverInfo.name`` is *name*, or ``None``."""
        return self.servers.get(name)


#: No servers, no prices: what a host runs with when ``OTEL_SAMPLING_POLICY`` is unset.
EMPTY_POLICY: Final = Policy(servers={}, prices={}, source=None)


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Read and validate the policy file at *path*.

    Returns a :class:`Policy` whose ``source`` is *path*. An empty file gives a policy with no
    servers and no prices.

    Raises:
        PolicyError: the file does not exist ("policy file not found"), cannot be read, is not
            UTF-8, is not valid TOML, has an unknown top-level table or an unknown key in a server
            or price table, has a value of the wrong type (a boolean is not a number; an integer
            is accepted where a float is expected), a negative or non-finite price, a missing
            required price, an empty model or server name, a ``context_ceiling`` outside
            :data:`ALLOWED_CONTEXT_CEILINGS`, an ``as_of`` that is not a date, a
            ``primary_model`` missing from that server's ``permitted_models``, an empty provider,
            region or endpoint name, or a ``permitted_regions`` entry no ``[endpoints]`` table names.
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
        raise PolicyError(source, f"cannot be checked: {type(exc).__name__}: {_short_repr(str(exc))}") from None


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
        raise PolicyError(
            path, f"policy file is not UTF-8 (byte offset {exc.start})", line=line
        ) from None


_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def _syntax_error(path: str, exc: tomllib.TOMLDecodeError) -> PolicyError:
    message = str(exc)
    match = _TOML_POSITION.search(message)
    line = int(match.group(1)) if match else None
    column = int(match.group(2)) if match else None
    reason = message[: match.start()] if match else message
    return PolicyError(path, f"TOML syntax error: {reason}", line=line, column=column)


# ---------------------------------------------------------------- validation


class _File:
    """The file being validated: builds errors that carry its path and the key's line."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self._text = text

    def error(self, key: KeyPath, problem: str) -> PolicyError:
        line = _find_line(_key_lines(self._text), tuple(key))
        return PolicyError(self.path, problem, key=_format_key(key), line=line)


def _parse_document(file: _File, document: dict[str, Any]) -> Policy:
    _check_keys(file, (), document, _TOP_LEVEL_KEYS)
    servers = _table(file, ("servers",), document.get("servers", {}))
    prices = _table(file, ("prices",), document.get("prices", {}))
    endpoints = _table(file, ("endpoints",), document.get("endpoints", {}))
    policy = Policy(
        servers={
            name: _parse_server(file, ("servers", name), raw) for name, raw in servers.items()
        },
        prices={model: _parse_price(file, ("prices", model), raw) for model, raw in prices.items()},
        source=file.path,
        endpoints={host: _parse_endpoint(file, ("endpoints", host), raw) for host, raw in endpoints.items()},
        stall_threshold_seconds=_optional(file, (), document, "stall_threshold_seconds", _seconds)
        or DEFAULT_STALL_THRESHOLD_SECONDS,
        ending_rules=_optional(file, (), document, "ending_rules", _ending_rules) or (),
    )
    _check_regions(file, policy)
    return policy


def _parse_endpoint(file: _File, key: KeyPath, raw: Any) -> Endpoint:
    _name(file, key, key[-1], what="endpoint host")
    table = _table(file, key, raw)
    _check_keys(file, key, table, _ENDPOINT_KEYS)
    return Endpoint(region=_required(file, key, table, "region", _region_name))


def _check_regions(file: _File, policy: Policy) -> None:
    """A permitted region no endpoint is in is a typo: no call could ever be served from it."""
    known = {endpoint.region for endpoint in policy.endpoints.values()}
    for name, server in policy.servers.items():
        for index, region in enumerate(server.permitted_regions or ()):
            if region not in known:
                raise file.error(("servers", name, "permitted_regions", index),
                                 f"region {region!r} is not the region of any [endpoints] table"
                                 f" (known: {', '.join(sorted(known)) or 'none'})")


def _ending_rules(file: _File, key: KeyPath, value: Any) -> tuple[EndingRule, ...]:
    if not isinstance(value, list):
        raise file.error(key, _wrong_type("an array of tables ([[ending_rules]])", value))
    return tuple(_ending_rule(file, (*key, index), item) for index, item in enumerate(value))


def _ending_rule(file: _File, key: KeyPath, raw: Any) -> EndingRule:
    table = _table(file, key, raw)
    _check_keys(file, key, table, _ENDING_RULE_KEYS)
    ending = _required(file, key, table, "ending", _ending)
    code = _optional(file, key, table, "code", _code)
    contains = _optional(file, key, table, "message_contains", _substring)
    if code is None and contains is None:
        raise file.error(key, "a rule needs code, message_contains or both")
    return EndingRule(ending=ending, code=code, message_contains=contains)


def _ending(file: _File, key: KeyPath, value: Any) -> str:
    if value == ENDING_COMPLETED:
        raise file.error(key, "an error frame is never a completion; use another ending")
    if not isinstance(value, str) or value not in ENDINGS:
        allowed = ", ".join(f'"{v}"' for v in ENDINGS if v != ENDING_COMPLETED)
        raise file.error(key, f"must be one of {allowed}; got {_short_repr(value)}")
    return value


def _code(file: _File, key: KeyPath, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise file.error(key, _wrong_type("an integer (JSON-RPC error code)", value))
    code: int = value
    return code


def _substring(file: _File, key: KeyPath, value: Any) -> str:
    if not isinstance(value, str):
        raise file.error(key, _wrong_type("a string", value))
    return _name(file, key, value, what="message substring")


def _seconds(file: _File, key: KeyPath, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise file.error(key, _wrong_type("a number of seconds", value))
    if not math.isfinite(value) or value <= 0:
        raise file.error(key, f"must be a finite number of seconds above 0; got {_short_repr(value)}")
    return float(value)


def _parse_server(file: _File, key: KeyPath, raw: Any) -> ServerPolicy:
    _name(file, key, key[-1], what="server name")
    table = _table(file, key, raw)
    _check_keys(file, key, table, _SERVER_KEYS)
    primary = _optional(file, key, table, "primary_model", _model_name)
    permitted = _optional(file, key, table, "permitted_models", _model_list)
    ceiling = _optional(file, key, table, "context_ceiling", _context_ceiling)
    providers = _optional(file, key, table, "permitted_providers", _provider_list)
    regions = _optional(file, key, table, "permitted_regions", _region_list)
    if primary is not None and permitted is not None and primary not in permitted:
        raise file.error(
            (*key, "primary_model"),
            f"{primary!r} is not in permitted_models {list(permitted)!r}",
        )
    return ServerPolicy(primary_model=primary, permitted_models=permitted, context_ceiling=ceiling,
                        permitted_providers=providers, permitted_regions=regions)


def _parse_price(file: _File, key: KeyPath, raw: Any) -> Price:
    _name(file, key, key[-1], what="model name")
    table = _table(file, key, raw)
    _check_keys(file, key, table, _PRICE_KEYS)
    return Price(
        input_usd_per_mtok=_required(file, key, table, "input_usd_per_mtok", _usd),
        output_usd_per_mtok=_required(file, key, table, "output_usd_per_mtok", _usd),
        cache_read_usd_per_mtok=_optional(file, key, table, "cache_read_usd_per_mtok", _usd),
        cache_creation_usd_per_mtok=_optional(
            file, key, table, "cache_creation_usd_per_mtok", _usd
        ),
        as_of=_optional(file, key, table, "as_of", _date),
    )


def _check_keys(
    file: _File, key: KeyPath, table: Mapping[str, Any], allowed: tuple[str, ...]
) -> None:
    for name in table:
        if name not in allowed:
            where = "top-level key" if not key else "key"
            hint = difflib.get_close_matches(name, allowed, n=1)
            suggestion = f"did you mean {hint[0]!r}? " if hint else ""
            raise file.error(
                (*key, name),
                f"unknown {where}; {suggestion}allowed: {', '.join(allowed)}",
            )


def _optional(
    file: _File, key: KeyPath, table: Mapping[str, Any], name: str, convert: _Convert[_T]
) -> _T | None:
    if name not in table:
        return None
    return convert(file, (*key, name), table[name])


def _required(
    file: _File, key: KeyPath, table: Mapping[str, Any], name: str, convert: _Convert[_T]
) -> _T:
    if name not in table:
        raise file.error((*key, name), "missing required key")
    return convert(file, (*key, name), table[name])


# ---------------------------------------------------------------- value checks, one per kind


def _table(file: _File, key: KeyPath, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise file.error(key, _wrong_type("a table", value))
    return value


def _name(file: _File, key: KeyPath, value: str, *, what: str) -> str:
    if not value.strip():
        raise file.error(key, f"empty {what}")
    return value


def _model_name(file: _File, key: KeyPath, value: Any) -> str:
    if not isinstance(value, str):
        raise file.error(key, _wrong_type("a string", value))
    return _name(file, key, value, what="model name")


def _model_list(file: _File, key: KeyPath, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise file.error(key, _wrong_type("an array of strings", value))
    return tuple(_model_name(file, (*key, index), item) for index, item in enumerate(value))


def _provider_list(file: _File, key: KeyPath, value: Any) -> tuple[str, ...]:
    return _string_list(file, key, value, "provider name")


def _region_list(file: _File, key: KeyPath, value: Any) -> tuple[str, ...]:
    return _string_list(file, key, value, "region")


def _region_name(file: _File, key: KeyPath, value: Any) -> str:
    if not isinstance(value, str):
        raise file.error(key, _wrong_type("a string", value))
    return _name(file, key, value, what="region")


def _string_list(file: _File, key: KeyPath, value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise file.error(key, _wrong_type("an array of strings", value))
    items = []
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise file.error((*key, index), _wrong_type("a string", item))
        items.append(_name(file, (*key, index), item, what=what))
    return tuple(items)


def _context_ceiling(file: _File, key: KeyPath, value: Any) -> str:
    if not isinstance(value, str):
        raise file.error(key, _wrong_type("a string", value))
    if value not in ALLOWED_CONTEXT_CEILINGS:
        allowed = ", ".join(f'"{v}"' for v in ALLOWED_CONTEXT_CEILINGS)
        raise file.error(key, f"must be one of {allowed}; got {_short_repr(value)}")
    return value


def _usd(file: _File, key: KeyPath, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise file.error(key, _wrong_type("a number (USD per million tokens)", value))
    if not math.isfinite(value):
        raise file.error(key, f"must be a finite number; got {_short_repr(value)}")
    if value < 0:
        raise file.error(key, f"must not be negative; got {_short_repr(value)}")
    return float(value)


_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _date(file: _File, key: KeyPath, value: Any) -> datetime.date:
    # datetime.datetime is a subclass of datetime.date: a TOML date-time is not a date.
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return value
    if isinstance(value, str) and _ISO_DATE.fullmatch(value):
        try:
            return datetime.date.fromisoformat(value)
        except ValueError:
            raise file.error(key, f"not a valid date: {_short_repr(value)}") from None
    raise file.error(key, _wrong_type('a date (2026-11-01 or "2026-11-01")', value))


# ---------------------------------------------------------------- message formatting

_TOML_TYPE_NAMES: Final = {
    bool: "boolean",
    int: "integer",
    float: "float",
    str: "string",
    list: "array",
    dict: "table",
    datetime.datetime: "datetime",
    datetime.date: "date",
    datetime.time: "time",
}


def _wrong_type(expected: str, value: Any) -> str:
    got = _TOML_TYPE_NAMES.get(type(value), type(value).__name__)
    return f"expected {expected}, got {got}: {_short_repr(value)}"


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _REPR_LIMIT else text[: _REPR_LIMIT - 3] + "..."


def _format_key(key: KeyPath) -> str:
    """``("servers", "wiki", "permitted_models", 0)`` -> ``servers."wiki".permitted_models[0]``.

    The second part (a server or model name chosen by the operator) is always quoted.
    """
    text = ""
    for position, part in enumerate(key):
        if isinstance(part, int):
            text += f"[{part}]"
        elif position == 1:
            text += "." + _quote(part)
        else:
            text += ("." if text else "") + part
    return text


def _quote(name: str) -> str:
    """A name as a JSON string, with anything still unprintable escaped: one readable line."""
    quoted = json.dumps(name, ensure_ascii=False)
    if quoted.isprintable():
        return quoted
    return "".join(ch if ch.isprintable() else json.dumps(ch)[1:-1] for ch in quoted)


def _format_error(
    path: str, problem: str, key: str | None, line: int | None, column: int | None
) -> str:
    location = path
    if line is not None:
        location += f":{line}"
        if column is not None:
            location += f":{column}"
    return f"{location}: {key}: {problem}" if key else f"{location}: {problem}"


# ---------------------------------------------------------------- finding a key's line
#
# tomllib does not report positions of parsed values, so the line of a key is found by scanning
# the text: every table header and every ``key =`` line is recorded with its full key path
# (header path + dotted key). This handles [a."b"] headers, quoted and dotted keys, and inline
# tables (reported at the line of the key that opens them). It does not track multi-line strings.

_KEY_PART = re.compile(
    r"[ \t]*"
    r"(?:(?P<bare>[A-Za-z0-9_-]+)"  # bare key
    r'|"(?P<basic>(?:[^"\\]|\\.)*)"'  # "basic string" key
    r"|'(?P<literal>[^']*)')"  # 'literal string' key
    r"[ \t]*"
)
_LINE_END = re.compile(r"[ \t]*(?:#.*)?\r?$")


def _parse_key(text: str, pos: int) -> tuple[tuple[str, ...], int] | None:
    """Parse a (dotted) TOML key at *pos*; return its parts and the position after it."""
    parts: list[str] = []
    while True:
        match = _KEY_PART.match(text, pos)
        if match is None:
            return None
        if match.group("bare") is not None:
            parts.append(match.group("bare"))
        elif match.group("basic") is not None:
            parts.append(_unescape(match.group("basic")))
        else:
            parts.append(match.group("literal"))
        pos = match.end()
        if not text.startswith(".", pos):
            return tuple(parts), pos
        pos += 1


def _unescape(body: str) -> str:
    try:
        text: str = tomllib.loads(f'k = "{body}"')["k"]
        return text
    except tomllib.TOMLDecodeError:
        return body


def _parse_header(line: str) -> tuple[str, ...] | None:
    """``[a."b"]`` or ``[[a.b]]`` (with optional comment) -> its key parts, else ``None``."""
    opener = "[[" if line.startswith("[[") else "["
    parsed = _parse_key(line, len(opener))
    if parsed is None:
        return None
    parts, pos = parsed
    closer = "]]" if opener == "[[" else "]"
    if not line.startswith(closer, pos) or not _LINE_END.match(line, pos + len(closer)):
        return None
    return parts


def _key_lines(text: str) -> list[tuple[tuple[str | int, ...], int]]:
    """Every header and ``key =`` line in *text*, as (full key path, 1-based line number); an
    ``[[array]]`` entry's path ends with its index, as the validation's key paths do."""
    found: list[tuple[tuple[str | int, ...], int]] = []
    table: tuple[str | int, ...] = ()
    entries: dict[tuple[str, ...], int] = {}  # [[array]] headers seen so far, per array
    for number, line in enumerate(text.split("\n"), start=1):  # TOML lines end at "\n" only
        stripped = line.lstrip(" \t")
        if stripped.startswith("["):
            parts = _parse_header(stripped)
            if parts is not None:
                header: tuple[str | int, ...] = parts
                if stripped.startswith("[["):  # each entry is a table of its own: path + index
                    entries[parts] = entries.get(parts, -1) + 1
                    header = (*parts, entries[parts])
                table = header
                found.append((header, number))
            continue
        parsed = _parse_key(stripped, 0)
        if parsed is not None and stripped.startswith("=", parsed[1]):
            found.append((table + parsed[0], number))
    return found


def _find_line(found: list[tuple[tuple[str | int, ...], int]], key: tuple[str | int, ...]) -> int | None:
    """The first line that defines *key* (or a table inside it); else the line of its nearest
    enclosing header or dotted key; else ``None``."""
    enclosing: int | None = None
    enclosing_depth = 0
    for path, number in found:
        if path[: len(key)] == key:
            return number
        if len(path) > enclosing_depth and key[: len(path)] == path:
            enclosing, enclosing_depth = number, len(path)
    return enclosing


# ---------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    """``python -m otel_sampling.policy FILE...``: check policy files before deploying them.

    Prints ``FILE: ok (N servers, M prices)`` per valid file and the :class:`PolicyError` message per
    invalid one, on stderr. Exit status: 0 when every file is valid, 1 otherwise, 2 without files.
    """
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print("usage: python -m otel_sampling.policy FILE...", file=sys.stderr)
        return 2
    status = 0
    for path in paths:
        try:
            policy = load_policy(path)
        except PolicyError as exc:
            print(exc, file=sys.stderr)
            status = 1
        else:
            servers, prices = len(policy.servers), len(policy.prices)
            print(f"{path}: ok ({servers} server{'s' * (servers != 1)}, {prices} price{'s' * (prices != 1)})")
    return status


if __name__ == "__main__":
    sys.exit(main())
