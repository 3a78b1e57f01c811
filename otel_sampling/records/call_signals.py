"""What one provider call asked for and what its answer held, for the checks of what the fallback
breaks (:mod:`otel_sampling.rules.call_checks`; ``docs/telemetry.md``, "What the fallback breaks").

A call that offered tools or asked for structured output carries a :class:`CallChecks` from its
start (the SDK module reads the :class:`~otel_sampling.rules.call_checks.Asked` of the request;
a call that asked for neither carries none, and costs one check); its answer, once read, is handed
to it (:meth:`CallChecks.answered`), and a failure that says the context did not fit marks it
(:meth:`CallChecks.context_too_long`). As the call ends,
:func:`otel_sampling.rules.call_checks.judge` decides and the call's record
(:func:`otel_sampling.records.provider_call.record_signals`) emits the metric points and span
attributes.
"""

from __future__ import annotations

from typing import Any

from otel_sampling.rules.call_checks import NOTHING_ASKED, Answer, Asked


class CallChecks:
    """What one call asked for and what its answer held (filled by the wrappers, read once at the end)."""

    __slots__ = ("asked", "reader", "answer", "context_length")

    def __init__(self, asked: Asked = NOTHING_ASKED, reader: Any = None) -> None:
        self.asked = asked
        self.reader = reader  # how the wrapper reads this call's answer (opaque here)
        self.answer: Answer | None = None
        self.context_length = False

    def answered(self, answer: Answer) -> None:
        """The answer's tool calls and texts (the last answer read wins)."""
        self.answer = answer

    def context_too_long(self) -> None:
        """The provider failed the call because its input does not fit the model's context window."""
        self.context_length = True
