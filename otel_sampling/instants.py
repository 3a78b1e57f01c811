"""ISO 8601 instants the public API accepts (``expires_at`` of a degradation or a grant): one rule for both."""

from __future__ import annotations

import datetime as dt
from typing import Any

from otel_sampling.metrics import clean


def parse(value: Any, what: str) -> dt.datetime:
    """``value`` as an aware UTC :class:`datetime.datetime`.

    Args:
        value: an aware ``datetime``, or an ISO 8601 date-time string with a UTC offset
            (``"2026-12-01T00:00:00Z"``, ``"2026-12-01T01:00:00+01:00"``; a trailing ``Z`` is
            read on Python 3.10 too).
        what: the argument's name, for the error message (``"degradation expires_at"``).

    Raises:
        TypeError: neither a ``datetime`` nor a string.
        ValueError: not ISO 8601, no UTC offset, or out of range once in UTC.
    """
    if isinstance(value, str):
        text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
        try:
            value = dt.datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"{what} is not ISO 8601: {clean(value, 64)!r}") from None
    if not isinstance(value, dt.datetime):
        raise TypeError(f"{what} must be a datetime or an ISO 8601 string, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            f"{what} must be timezone-aware: an ISO 8601 date-time with a UTC offset (e.g. 2026-12-01T00:00:00Z)"
        )
    try:
        return value.astimezone(dt.timezone.utc)
    except OverflowError:  # 9999-12-31T23:59:59-01:00 is past datetime.max in UTC
        raise ValueError(f"{what} is out of range: {value.isoformat()}") from None


def iso(instant: dt.datetime) -> str:
    """``instant`` (UTC) as ISO 8601 with a ``Z``: ``2026-12-01T00:00:00Z``."""
    return instant.isoformat().replace("+00:00", "Z")
