"""The value types every layer passes: an ending, token usage, a provider response, a failure.

Plain immutable tuples, no behaviour: the rules in this package decide over them, records fill
them from what an SDK reported.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Ending(NamedTuple):
    """One classified ending: ``ending`` from ``names.ENDINGS``; ``error_type`` for ``error.type``
    (None when the request succeeded); ``resets_at`` from ``data.resetsAt`` when sent."""

    ending: str
    error_type: str | None = None
    resets_at: str | None = None


class Usage(NamedTuple):
    """Token counts in semantic-convention terms: ``input_tokens`` includes cache reads and writes."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


class Response(NamedTuple):
    """What a finished call reported: served model, response id, finish reasons, usage.

    ``provider_fallback``: the provider served the request with another model server-side
    (anthropic's ``fallback`` content block / ``fallback_message`` iteration). ``output``: the
    output messages in the GenAI semconv shape, only filled when content capture is on.
    ``error_type``: the answer itself reports a failure, without an exception (openai's Responses
    ``status="failed"``, or its ``error`` / ``response.failed`` stream events): the call ends with
    that ``error.type``.
    """

    model: str | None
    response_id: str | None
    finish_reasons: tuple[str, ...]
    usage: Usage
    provider_fallback: bool = False
    output: list[Any] | None = None
    error_type: str | None = None


class Failure(NamedTuple):
    """A failed call: low-cardinality ``error.type`` and its ending (``names.ENDINGS``)."""

    error_type: str
    ending: str
