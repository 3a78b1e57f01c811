"""Bounded metric label values and capped span attribute strings.

Label values that come from outside (server names, model names, hints) are attacker-controlled
from the host's point of view: a hostile MCP server can send a new model hint per request. Each
such label gets a :class:`BoundedLabel` that admits the first ``limit`` distinct values and maps
every later one to ``_OTHER`` (``names.OVERFLOW_LABEL``), so metric cardinality has a fixed ceiling.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from otel_sampling import locks
from otel_sampling.names import OVERFLOW_LABEL, UNKNOWN_LABEL

# Longest label value kept; longer ones are cut (a 1 MB server name must not reach a metric).
LABEL_MAX_LENGTH = 128
_INT64 = range(-(2**63), 2**63)  # OTLP AnyValue.int_value


def otlp_int(value: object) -> int | None:
    """``value`` when an OTLP exporter can carry it as an int attribute, else None (also for a
    bool or a non-int). JSON has no integer bound, but one attribute beyond int64 fails every OTLP
    export of the span it is on."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value in _INT64 else None


def finite(number: float) -> bool:
    """``math.isfinite`` for a number already checked to be an int or a float: False, not
    ``OverflowError``, for an int beyond float range (host APIs raise ValueError for it)."""
    try:
        return math.isfinite(number)
    except OverflowError:
        return False


def clean(value: object, max_length: int) -> str:
    """Return ``value`` as a printable string of at most ``max_length`` characters.

    Every character Python does not consider printable is dropped: C0 and C1 controls, format
    characters such as bidirectional overrides, line and paragraph separators, and lone
    surrogates (invalid UTF-8 on the wire). Nothing else is changed, so the value exports cleanly.
    """
    text = value if isinstance(value, str) else str(value)
    if len(text) > max_length:
        text = text[:max_length]
    if not text.isprintable():  # the common case is printable: one C-level scan, no copy
        text = "".join(ch for ch in text if ch.isprintable())
    return text


def clean_texts(values: Mapping[str, object], max_length: int) -> dict[str, str | list[str]]:
    """Every value from outside of one span update, each made fit for the span in one pass.

    A list or tuple becomes a list of :func:`clean` strings; any other value becomes one
    :func:`clean` string. ``None``, ``""`` and an empty list or tuple are left out, so a caller
    passes every optional value as it is.
    """
    cleaned: dict[str, str | list[str]] = {}
    for key, value in values.items():
        if value is None or value == "":
            continue
        if isinstance(value, (list, tuple)):
            if value:
                cleaned[key] = [clean(item, max_length) for item in value]
        else:
            cleaned[key] = clean(value, max_length)
    return cleaned


def bound(values: Iterable[tuple[str, BoundedLabel, object]]) -> dict[str, str]:
    """The metric attributes ``{key: label.value(raw)}`` of one point, every label bounded in one call."""
    return {key: label.value(raw) for key, label, raw in values}


def host_text(what: str, value: object) -> str:
    """A string the host passes to name something stamped on every span (a degradation's
    component, a drill's name): :func:`clean` at ``LABEL_MAX_LENGTH``.

    Raises:
        TypeError: ``value`` is not a string (the message names ``what``).
        ValueError: nothing printable but blanks is left of it.
    """
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, got {type(value).__name__}")
    text = clean(value, LABEL_MAX_LENGTH)
    if not text.strip():
        raise ValueError(f"{what} must not be empty")
    return text


class BoundedLabel:
    """The set of values one metric label may take: the first ``limit`` seen, then ``_OTHER``.

    Args:
        limit: how many distinct values are admitted (>= 1); default from
            ``OTEL_SAMPLING_LABEL_VALUE_LIMIT`` via :class:`otel_sampling.settings.Settings`.
        always: a fixed vocabulary that always passes and takes no slot (host-named values
            mixed with ours must not push ours into ``_OTHER``).

    ``value(None)``, ``value("")`` and a value with nothing printable give ``_unknown``.
    Thread-safe; memory is bounded by ``limit`` values of at most ``LABEL_MAX_LENGTH`` characters.
    """

    __slots__ = ("_limit", "_seen", "_lock", "_always")

    def __init__(self, limit: int, always: Iterable[str] = ()) -> None:
        self._limit = max(1, limit)
        self._seen: set[str] = set()
        self._lock = locks.new()
        self._always = frozenset(always)

    def value(self, raw: object) -> str:
        if raw is None or raw == "":
            return UNKNOWN_LABEL
        if isinstance(raw, str) and (raw in self._seen or raw in self._always):  # hot path: already clean
            return raw
        text = clean(raw, LABEL_MAX_LENGTH)
        if not text:  # nothing printable (controls, lone surrogates): an empty label is no label
            return UNKNOWN_LABEL
        if text in self._seen:
            return text
        with self._lock:
            if len(self._seen) < self._limit:
                self._seen.add(text)
                return text
        return OVERFLOW_LABEL
