"""Checks for the values of a policy file, one per kind of value.

Each check takes a value as ``tomllib`` parsed it and returns it in the shape the policy types
hold (``str``, ``tuple[str, ...]``, ``float``, ``int``, ``datetime.date``, ``dict``), or raises
:class:`Invalid` with the problem in words. Checks know nothing of files or keys: the loader adds
the file, the dotted key and its line.

TOML integers are accepted where a float is expected; booleans are never numbers. Values shown in
a problem are their Python ``repr``, cut to 60 characters.
"""

from __future__ import annotations

import datetime
import difflib
import math
import re
from collections.abc import Callable
from typing import Any, Final, TypeVar

from otel_sampling.names import DRILL_FAILURES, EFFORT_LEVELS, ENDING_COMPLETED, ENDINGS
from otel_sampling.policy._types import ALLOWED_CONTEXT_CEILINGS

_T = TypeVar("_T")

_REPR_LIMIT: Final = 60
_ISO_DATE: Final = re.compile(r"\d{4}-\d{2}-\d{2}")
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


class Invalid(Exception):
    """A value breaks the schema.

    Attributes:
        problem: what is wrong, e.g. ``"expected a string, got integer: 4"``.
        at: where below the checked value: ``(1,)`` for its second array item, ``("zone",)`` for
            a key of a table; ``()`` for the value itself.
    """

    def __init__(self, problem: str, at: tuple[str | int, ...] = ()) -> None:
        super().__init__(problem)
        self.problem = problem
        self.at = at


# ---------------------------------------------------------------- tables


def table(value: Any) -> dict[str, Any]:
    """A TOML table."""
    if not isinstance(value, dict):
        raise Invalid(wrong_type("a table", value))
    return value


def known_keys(table: dict[str, Any], keys: tuple[str, ...], *, top_level: bool = False) -> dict[str, Any]:
    """*table*, when its every key is among *keys*; the first unknown key is named, with the
    closest allowed key as a hint."""
    for name in table:
        if name not in keys:
            hint = difflib.get_close_matches(name, keys, n=1)
            suggestion = f"did you mean {hint[0]!r}? " if hint else ""
            where = "top-level key" if top_level else "key"
            raise Invalid(f"unknown {where}; {suggestion}allowed: {', '.join(keys)}", at=(name,))
    return table


def array_of_tables(value: Any, name: str) -> list[Any]:
    """The entries of ``[[<name>]]``: a TOML array (each entry is checked as a table by the caller)."""
    if not isinstance(value, list):
        raise Invalid(wrong_type(f"an array of tables ([[{name}]])", value))
    return value


# ---------------------------------------------------------------- names


def server_name(value: Any) -> str:
    """A ``[servers."<name>"]`` name: not empty or blank."""
    return _non_empty_string(value, "server name")


def tool_name(value: Any) -> str:
    """A ``[servers."<server>".tools."<tool>"]`` name: not empty or blank."""
    return _non_empty_string(value, "tool name")


def run_name(value: Any) -> str:
    """A ``[runs."<name>"]`` name: not empty or blank."""
    return _non_empty_string(value, "run name")


def model_name(value: Any) -> str:
    """A model name (``primary_model``, a ``permitted_models`` item, a ``[prices]`` name)."""
    return _non_empty_string(value, "model name")


def endpoint_host(value: Any) -> str:
    """An ``[endpoints."<host>"]`` host: not empty or blank."""
    return _non_empty_string(value, "endpoint host")


def region(value: Any) -> str:
    """A region name, as the operator writes it (``"eu"``): not empty or blank."""
    return _non_empty_string(value, "region")


def message_substring(value: Any) -> str:
    """A ``message_contains`` substring: not empty or blank (it would match every message)."""
    return _non_empty_string(value, "message substring")


def model_names(value: Any) -> tuple[str, ...]:
    """An array of :func:`model_name`."""
    return _strings(value, model_name)


def provider_names(value: Any) -> tuple[str, ...]:
    """An array of ``gen_ai.provider.name`` values, each not empty or blank."""
    return _strings(value, lambda item: _non_empty_string(item, "provider name"))


def regions(value: Any) -> tuple[str, ...]:
    """An array of :func:`region`."""
    return _strings(value, region)


def tool_names(value: Any) -> tuple[str, ...]:
    """An array of MCP tool names (``side_effect_tools``), each not empty or blank."""
    return _strings(value, lambda item: _non_empty_string(item, "tool name"))


def effort(value: Any) -> str | int:
    """A ``primary_effort``: a level of :data:`otel_sampling.names.EFFORT_LEVELS` (case-sensitive,
    as the providers' APIs take them), or a thinking budget in tokens, an integer above 0."""
    if isinstance(value, str):
        if value not in EFFORT_LEVELS:
            raise Invalid(
                f"must be one of {_listed(EFFORT_LEVELS)} or a thinking budget in tokens; got {short_repr(value)}"
            )
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        if value <= 0:
            raise Invalid(f"a thinking budget must be above 0 tokens; got {short_repr(value)}")
        return value
    raise Invalid(wrong_type("an effort level (a string) or a thinking budget in tokens (an integer)", value))


def _non_empty_string(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise Invalid(wrong_type("a string", value))
    if not value.strip():
        raise Invalid(f"empty {what}")
    return value


def _strings(value: Any, item: Callable[[Any], _T]) -> tuple[_T, ...]:
    if not isinstance(value, list):
        raise Invalid(wrong_type("an array of strings", value))
    return tuple(_item(index, item, element) for index, element in enumerate(value))


def _item(index: int, check: Callable[[Any], _T], value: Any) -> _T:
    try:
        return check(value)
    except Invalid as exc:
        raise Invalid(exc.problem, at=(index, *exc.at)) from None


# ---------------------------------------------------------------- enumerations


def context_ceiling(value: Any) -> str:
    """One of :data:`ALLOWED_CONTEXT_CEILINGS` (case-sensitive)."""
    if not isinstance(value, str):
        raise Invalid(wrong_type("a string", value))
    if value not in ALLOWED_CONTEXT_CEILINGS:
        raise Invalid(f"must be one of {_listed(ALLOWED_CONTEXT_CEILINGS)}; got {short_repr(value)}")
    return value


def error_ending(value: Any) -> str:
    """An ending an error frame may map to: one of ``names.ENDINGS`` except ``completed``."""
    if value == ENDING_COMPLETED:
        raise Invalid("an error frame is never a completion; use another ending")
    if not isinstance(value, str) or value not in ENDINGS:
        allowed = _listed(tuple(v for v in ENDINGS if v != ENDING_COMPLETED))
        raise Invalid(f"must be one of {allowed}; got {short_repr(value)}")
    return value


def _listed(values: tuple[str, ...]) -> str:
    return ", ".join(f'"{v}"' for v in values)


# ---------------------------------------------------------------- numbers and dates


def usd(value: Any) -> float:
    """A price in USD per million tokens: a finite number, not negative."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Invalid(wrong_type("a number (USD per million tokens)", value))
    if not math.isfinite(value):
        raise Invalid(f"must be a finite number; got {short_repr(value)}")
    if value < 0:
        raise Invalid(f"must not be negative; got {short_repr(value)}")
    return float(value)


def seconds(value: Any) -> float:
    """A duration in seconds: a finite number above 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Invalid(wrong_type("a number of seconds", value))
    if not math.isfinite(value) or value <= 0:
        raise Invalid(f"must be a finite number of seconds above 0; got {short_repr(value)}")
    return float(value)


def drill_name(value: Any) -> str:
    """A drill's name: not empty or blank, at most 128 characters (a metric label)."""
    text = _non_empty_string(value, "drill name")
    if len(text) > 128:
        raise Invalid(f"a drill name is at most 128 characters; got {len(text)}")
    return text


def drill_failure(value: Any) -> str:
    """How a drill fails calls: one of ``names.DRILL_FAILURES``."""
    if not isinstance(value, str):
        raise Invalid(wrong_type("a string", value))
    if value not in DRILL_FAILURES:
        raise Invalid(f"unknown drill failure {short_repr(value)}; allowed: {_listed(DRILL_FAILURES)}")
    return value


def instant(value: Any) -> datetime.datetime:
    """An aware instant: a TOML offset date-time (``2026-12-01T03:00:00Z``) or the same as an
    ISO 8601 string; a local date-time (no offset) is ambiguous, so refused."""
    if isinstance(value, str):
        try:
            value = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise Invalid(f"not an ISO 8601 date-time: {short_repr(value)}") from None
    if not isinstance(value, datetime.datetime):
        raise Invalid(wrong_type("a date-time with an offset (2026-12-01T03:00:00Z)", value))
    if value.tzinfo is None or value.utcoffset() is None:
        raise Invalid(f"a date-time needs a UTC offset (2026-12-01T03:00:00Z); got {short_repr(value)}")
    return value


def json_rpc_code(value: Any) -> int:
    """A JSON-RPC error code: a TOML integer."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise Invalid(wrong_type("an integer (JSON-RPC error code)", value))
    code: int = value
    return code


def date(value: Any) -> datetime.date:
    """A TOML local date (``2026-11-01``) or a string ``"YYYY-MM-DD"``; a date-time is not a date."""
    # datetime.datetime is a subclass of datetime.date.
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return value
    if isinstance(value, str) and _ISO_DATE.fullmatch(value):
        try:
            return datetime.date.fromisoformat(value)
        except ValueError:
            raise Invalid(f"not a valid date: {short_repr(value)}") from None
    raise Invalid(wrong_type('a date (2026-11-01 or "2026-11-01")', value))


# ---------------------------------------------------------------- problem wording


def wrong_type(expected: str, value: Any) -> str:
    """``"expected <expected>, got <TOML type>: <value>"``."""
    got = _TOML_TYPE_NAMES.get(type(value), type(value).__name__)
    return f"expected {expected}, got {got}: {short_repr(value)}"


def short_repr(value: Any) -> str:
    """``repr(value)``, cut to 60 characters (ending ``...`` when cut)."""
    text = repr(value)
    return text if len(text) <= _REPR_LIMIT else text[: _REPR_LIMIT - 3] + "..."
