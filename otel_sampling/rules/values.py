"""The value types every layer passes: an ending, provider calls seen, token usage, a provider response, a failure.

Plain immutable tuples: the rules in this package decide over them, records fill them from what
an SDK reported. One check belongs to the values themselves: what a token count is
(:func:`token_count`, :func:`clean_usage`), so that no layer sees a count that is none.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, NamedTuple

#: A token count is an int in ``[0, MAX_TOKEN_COUNT]``: OTLP carries int attributes as int64.
MAX_TOKEN_COUNT = 2**63 - 1


class Ending(NamedTuple):
    """One classified ending: ``ending`` from ``names.ENDINGS``; ``error_type`` for ``error.type``
    (None when the request succeeded); ``resets_at`` from ``data.resetsAt`` when sent."""

    ending: str
    error_type: str | None = None
    resets_at: str | None = None


class ProviderCalls(NamedTuple):
    """What the provider calls inside one sampling callback ended with, each as an :class:`Ending`
    (a failed call's ``error_type`` is set; ``refused`` and ``completed`` calls have none).

    Attributes:
        ended: how many ended.
        last: the last call's ending.
        last_failed: the last failed call's.
        produced: the last call that did not fail, the one whose answer a result carries.
    """

    ended: int = 0
    last: Ending | None = None
    last_failed: Ending | None = None
    produced: Ending | None = None

    def after(self, ending: Ending) -> ProviderCalls:
        """These calls and one more that ended with ``ending`` (failed when its ``error_type`` is set)."""
        failed = ending.error_type is not None
        return ProviderCalls(
            self.ended + 1, ending, ending if failed else self.last_failed, self.produced if failed else ending
        )


class Usage(NamedTuple):
    """Token counts in semantic-convention terms: ``input_tokens`` includes cache reads and writes,
    ``output_tokens`` includes reasoning (``gen_ai.usage.reasoning.output_tokens``).

    Each is a count (:func:`token_count`) or None (not reported).
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    reasoning_output_tokens: int | None = None  # part of output_tokens


def token_count(value: object) -> int | None:
    """``value`` when it is a token count: an int (not a bool) from 0 to :data:`MAX_TOKEN_COUNT`.
    Anything else a provider sends there (negative, beyond int64, a float such as ``NaN`` or
    ``1.5``, a bool, a string) is None: left off, as if not reported."""
    if type(value) is int:  # the common case: a plain int (a bool's type is bool)
        return value if 0 <= value <= MAX_TOKEN_COUNT else None
    if value is None or isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_TOKEN_COUNT else None  # an int subclass


def token_counts(fields: dict[str, object]) -> dict[str, int]:
    """The ``fields`` whose value is a :func:`token_count`, in one call; the others left off."""
    if _all_counts(fields.values()):  # the common case: only the ones not reported to leave off
        return {key: value for key, value in fields.items() if value is not None}  # type: ignore[misc]  # ints
    counts: dict[str, int] = {}
    for key, value in fields.items():
        count = token_count(value)
        if count is not None:
            counts[key] = count
    return counts


def clean_usage(usage: Usage) -> Usage:
    """``usage`` with every field that is not a :func:`token_count` left off (None)."""
    if _all_counts(usage):  # the common case: nothing to leave off, no copy
        return usage
    return Usage(*map(token_count, usage))


_COUNT_TYPES = frozenset({int, type(None)})  # a plain int (a bool's type is bool), or not reported
_in_count_range = range(MAX_TOKEN_COUNT + 1).__contains__  # an int's membership: two comparisons, in C


def _all_counts(values: Collection[Any]) -> bool:
    """Whether every one of ``values`` is None or a plain int within :func:`token_count`'s range,
    checked by built-ins without a Python loop (False: some value needs :func:`token_count`)."""
    # Only plain ints reach the range (None and 0 are filtered out: None would make range scan itself).
    return _COUNT_TYPES.issuperset(map(type, values)) and all(map(_in_count_range, filter(None, values)))


class Response(NamedTuple):
    """What a finished call reported: served model, response id, finish reasons, usage.

    ``provider_fallback``: the provider served the request with another model server-side
    (anthropic's ``fallback`` content block / ``fallback_message`` iteration). ``output``: the
    output messages in the GenAI semconv shape, only filled when content capture is on.
    ``error_type``: the answer itself reports a failure, without an exception (an error body
    sent with HTTP 200, openai's Responses ``status="failed"``, or its ``error`` /
    ``response.failed`` stream events; named by
    :func:`otel_sampling.rules.endings.reported_error_type`): the call ends with that
    ``error.type``. ``answered``: the answer holds what the API answers with (a choice, a
    ``content`` list, an ``output`` list; False: it holds none). ``refusal``: the model's
    refusal came in a field of its own (Chat Completions ``message.refusal`` / ``delta.refusal``,
    a Responses ``refusal`` content part).
    """

    model: str | None
    response_id: str | None
    finish_reasons: tuple[str, ...]
    usage: Usage
    provider_fallback: bool = False
    output: list[Any] | None = None
    error_type: str | None = None
    answered: bool = True
    refusal: bool = False


class Failure(NamedTuple):
    """A failed call: low-cardinality ``error.type`` and its ending (``names.ENDINGS``)."""

    error_type: str
    ending: str
