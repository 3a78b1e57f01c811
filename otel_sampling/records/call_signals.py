"""What the fallback breaks, for one provider call: its tool calls, structured output, truncation and
context utilization, as metric points and span attributes (``docs/telemetry.md``, "What the
fallback breaks").

A call that offered tools or asked for structured output carries a :class:`CallChecks` from its
start (the SDK module reads the :class:`~otel_sampling.rules.call_checks.Asked` of the request;
a call that asked for neither carries none, and costs one check); its answer, once read, is handed
to it (:meth:`CallChecks.answered`), and a failure that says the context did not fit marks it
(:meth:`CallChecks.context_too_long`). As the call ends,
:func:`otel_sampling.rules.call_checks.judge` decides and :func:`record` emits the metric points
and the span attributes: counts and closed values only, never arguments or text.

Metric points (each with the call's ``gen_ai.provider.name``, ``gen_ai.response.model`` (bounded),
``degradation.mode`` and drill labels):

* ``otel_sampling.client.tool_calls``: the answer's tool calls (a request that offered tools);
* ``otel_sampling.client.tool_call.errors``: by ``otel_sampling.tool_call.error``;
* ``otel_sampling.client.structured_output.requests`` / ``.failures`` (by
  ``otel_sampling.structured_output.failure``): a call that asked for structured output and whose
  answer was judged;
* ``otel_sampling.client.truncations``: by ``otel_sampling.truncation.kind``, every call;
* ``otel_sampling.client.context.utilization``: input tokens over the served model's context
  window, every call whose input tokens and window (the price source's) are known.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.context import Context

from otel_sampling import names
from otel_sampling.metrics import SignalInstruments
from otel_sampling.rules.call_checks import NOTHING_ASKED, Answer, Asked, Signals


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


def span_attributes(signals: Signals, attributes: dict[str, Any]) -> None:
    """Add the chat span's attributes of ``signals`` to ``attributes``: the tool-call counts where
    tools were offered, whether structured output was asked for and how it failed, the truncation
    kind, the utilization."""
    checked = signals.checked
    if signals.asked.tools:
        attributes[names.TOOL_CALL_COUNT] = checked.tool_calls
        attributes[names.TOOL_CALL_NOT_OFFERED_COUNT] = checked.not_offered
        attributes[names.TOOL_CALL_INVALID_ARGUMENTS_COUNT] = checked.invalid_arguments
    if checked.structured:
        attributes[names.STRUCTURED_OUTPUT_REQUESTED] = True
        if checked.structured_failure is not None:
            attributes[names.STRUCTURED_OUTPUT_FAILURE] = checked.structured_failure
    if signals.truncation is not None:
        attributes[names.TRUNCATION_KIND] = signals.truncation
    if signals.utilization is not None:
        attributes[names.CONTEXT_UTILIZATION] = signals.utilization


def record(
    instruments: SignalInstruments,
    signals: Signals,
    labels: dict[str, Any],
    context: Context,
    span_attributes_into: dict[str, Any],
) -> None:
    """Put the span attributes of ``signals`` in ``span_attributes_into``, then add the call's points
    (the module docstring); ``labels``: the call's metric labels. One call for both: each call into
    another module is a step on the provider call's path."""
    span_attributes(signals, span_attributes_into)
    checked = signals.checked
    if checked.tool_calls:
        instruments.tool_calls.add(checked.tool_calls, labels, context=context)
        for count, error in (
            (checked.not_offered, names.TOOL_CALL_ERROR_NOT_OFFERED),
            (checked.invalid_arguments, names.TOOL_CALL_ERROR_INVALID_ARGUMENTS),
        ):
            if count:
                instruments.tool_call_errors.add(count, {**labels, names.TOOL_CALL_ERROR: error}, context=context)
    if checked.structured:
        instruments.structured_requests.add(1, labels, context=context)
        if checked.structured_failure is not None:
            instruments.structured_failures.add(
                1, {**labels, names.STRUCTURED_OUTPUT_FAILURE: checked.structured_failure}, context=context
            )
    if signals.truncation is not None:
        instruments.truncations.add(1, {**labels, names.TRUNCATION_KIND: signals.truncation}, context=context)
    if signals.utilization is not None:
        instruments.context_utilization.record(signals.utilization, labels, context=context)
