"""Which GenAI inference metric names we emit, and the recording of one inference call into them.

semantic-conventions-genai renamed the inference metrics after v1.41 (the last release that
carried them): #521 moved ``gen_ai.client.operation.duration`` (for inference) and
``gen_ai.client.operation.time_to_first_chunk`` to ``gen_ai.client.inference.duration`` and
``gen_ai.client.inference.time_to_first_chunk`` and added ``…time_per_output_chunk``; #374
removed ``gen_ai.client.token.usage`` and ``gen_ai.token.type`` for the counters
``gen_ai.client.inference.usage.{input_tokens,output_tokens,cache_read.input_tokens,
cache_write.input_tokens,reasoning.output_tokens}`` (attribute ``gen_ai.token.modality``,
required) and the histograms ``gen_ai.client.inference.operation.{input,output}_tokens``
(``docs/telemetry.md``, "Semantic-conventions version", says what was read at which commit).

The choice follows OpenTelemetry's transition switch, ``OTEL_SEMCONV_STABILITY_OPT_IN`` (a
comma-separated list, as opentelemetry-instrumentation's ``_semconv`` reads it):

=================================  ================================================
value in the list                  names emitted
=================================  ================================================
``gen_ai/dup``                     both (v1.41's and the newest); wins over the next
``gen_ai_latest_experimental``     the newest only
neither (the default)              :data:`otel_sampling.semconv_mode.DEFAULT`
=================================  ================================================

Never emitted in any mode: ``gen_ai.token.type`` values other than ``input`` / ``output`` (cache
parts are inside ``input`` and have their own counters in the newest names).

Where the newest names are not emitted (v1.41's only), v1.41 has no metric of cache parts: the
prompt-cache read share then reads ours, ``otel_sampling.client.usage.input_tokens`` and
``otel_sampling.client.usage.cache_read.input_tokens``, recorded as the newest two are (without
``gen_ai.token.modality``). A process emits one pair or the other, never both, so a sum over hosts
in different modes counts every token once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from opentelemetry.context import Context

from otel_sampling import names
from otel_sampling.rules.values import Usage

if TYPE_CHECKING:
    from otel_sampling.metrics import InferenceInstruments


MAX_CHUNK_GAPS: Final = 4096  # inter-chunk gaps kept per stream (time_per_output_chunk); later ones are dropped


def record_inference(
    instruments: InferenceInstruments,
    attributes: Mapping[str, Any],
    *,
    ending: str,
    duration: float,
    first_chunk: float | None,
    chunk_gaps: Sequence[float],
    usage: Usage,
    context: Context,
) -> None:
    """Record one inference call (``attributes``: the metric attributes of every point, ``error.type``
    included when it failed).

    Args:
        ending: ``otel_sampling.ending``, added to the duration's attributes.
        duration: seconds from the request to the call's end.
        first_chunk: seconds from the request to a stream's first chunk; None: not a stream, or no chunk.
        chunk_gaps: seconds between consecutive chunks after the first (``time_per_output_chunk``).
        usage: the cleaned counts (:func:`~otel_sampling.rules.values.clean_usage`); None parts were not reported.
        context: the context to record in (:func:`otel_sampling.metrics.recorded_in`).

    v1.41 names: ``gen_ai.client.token.usage`` gets ``input`` and ``output`` when reported. Newest
    names (token-metrics.yaml: "SHOULD record this metric for each inference operation, including
    failed ones … or ``0`` if the response was not received or did not contain token usage"):
    input and output on every call (0 when not reported); a cache or reasoning part when the
    answer reported it (0 included), and as 0 when the call brought no usage at all; modality
    ``unknown`` everywhere (the text's value for no usage; otherwise our providers report totals,
    not a count per modality). A part the answer left out while reporting other usage is not
    recorded, so a (mode, model) whose provider never reported a cache part has no cache-read
    series to read a 0 % share from. Without the newest names, ours of the share
    (``otel_sampling.client.usage.input_tokens`` and ``….cache_read.input_tokens``) get the input
    and cache-read counts as the newest two would, without modality.
    """
    with_ending = {**attributes, names.ENDING: ending}
    if instruments.operation_duration is not None:
        instruments.operation_duration.record(duration, with_ending, context=context)
    if instruments.inference_duration is not None:
        instruments.inference_duration.record(duration, with_ending, context=context)
    if first_chunk is not None:
        if instruments.time_to_first_chunk is not None:
            instruments.time_to_first_chunk.record(first_chunk, attributes, context=context)
        if instruments.inference_time_to_first_chunk is not None:
            instruments.inference_time_to_first_chunk.record(first_chunk, attributes, context=context)
    for per_chunk in (instruments.operation_time_per_output_chunk, instruments.time_per_output_chunk):
        if per_chunk is not None:
            for gap in chunk_gaps:
                per_chunk.record(gap, attributes, context=context)
    if instruments.token_usage is not None:
        for count, token_type in (
            (usage.input_tokens, names.TOKEN_TYPE_INPUT),
            (usage.output_tokens, names.TOKEN_TYPE_OUTPUT),
        ):
            if count is not None:
                instruments.token_usage.record(
                    count, {**attributes, names.GEN_AI_TOKEN_TYPE: token_type}, context=context
                )
    if instruments.emission.new:
        _record_usage(instruments, attributes, usage, context)
    else:
        no_usage = usage.input_tokens is None and usage.output_tokens is None
        _add_counts(
            (
                (instruments.share_input, usage.input_tokens, True),
                (instruments.share_cache_read, usage.cache_read_input_tokens, no_usage),
            ),
            attributes,
            context,
        )


def _record_usage(
    instruments: InferenceInstruments,
    attributes: Mapping[str, Any],
    usage: Usage,
    context: Context,
) -> None:
    no_usage = usage.input_tokens is None and usage.output_tokens is None
    _add_counts(
        (
            (instruments.usage_input, usage.input_tokens, True),
            (instruments.usage_output, usage.output_tokens, True),
            (instruments.usage_cache_read, usage.cache_read_input_tokens, no_usage),
            (instruments.usage_cache_write, usage.cache_creation_input_tokens, no_usage),
            (instruments.usage_reasoning, usage.reasoning_output_tokens, no_usage),
        ),
        {**attributes, names.GEN_AI_TOKEN_MODALITY: names.TOKEN_MODALITY_UNKNOWN},
        context,
    )
    # The per-operation histograms carry the error attributes but no modality (token-metrics.yaml).
    for histogram, count in (
        (instruments.operation_input_tokens, usage.input_tokens),
        (instruments.operation_output_tokens, usage.output_tokens),
    ):
        if histogram is not None:
            histogram.record(count or 0, attributes, context=context)


def _add_counts(
    counters: Sequence[tuple[Any, int | None, bool]], attributes: Mapping[str, Any], context: Context
) -> None:
    """Add each ``(counter, count, zero_when_absent)``: the count when reported (0 included), 0 when
    absent and ``zero_when_absent``. A part the answer left out while reporting other usage is not a
    0 it reported: skipped, so that a cache-read share of 0 means "reported 0", never "not reported"."""
    for counter, count, zero_when_absent in counters:
        if counter is not None and (count is not None or zero_when_absent):
            counter.add(count or 0, attributes, context=context)
