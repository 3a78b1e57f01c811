"""The span processor that puts degraded mode on every span, and feeds runs.

Installed by every otel-sampling instrumentor's ``instrument()`` on the SDK ``TracerProvider`` it
uses (one with ``add_span_processor``), once per provider however many instrumentors ask; the last
``uninstrument()`` turns it off (the SDK has no way to remove a processor, so it stays registered
and does nothing). It sees spans from every instrumentation on that provider, not only ours.

* ``on_start``: while a named degradation is active (or inside ``otel_sampling.canary()``), the
  span gets ``degradation.mode=degraded`` and ``degradation.reason`` (a reason the span was
  started with, then every active reason), and, per active named degradation in entry order,
  ``degradation.component``, ``degradation.owner`` and ``degradation.expires_at``; while a drill
  runs, ``otel_sampling.drill.name`` (every running drill's name). With nothing
  active it adds nothing and removes nothing.
* Runs: ``on_start`` attributes the span to a run (an agent span that no run owns starts one,
  :mod:`otel_sampling.records.run`), ``on_end`` folds its mode and substitution into the run and
  ends an agent span's run with that span.
* Foreign spans (opt-in, ``OTEL_SAMPLING_GUARD_FOREIGN_SPANS``): ``on_start`` puts the spans of
  the mcp SDK, fastmcp and anthropic's native tracing under :func:`otel_sampling.foreign_spans.guard`.
* Inside ``opentelemetry.instrumentation.utils.suppress_instrumentation()``, ``on_start`` does
  nothing: a span that a library starts there anyway (mcp's own spans do) is neither stamped nor
  a run, so suppressed work records no ``agent.run*`` points.

The same install also adds the degradation fields to log records (:mod:`otel_sampling.log_fields`).
"""

from __future__ import annotations

import logging
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_sampling import foreign_spans, instants, log_fields, names, state
from otel_sampling.records import run as run_records
from otel_sampling.rules.degraded_mode import reasons_of

logger = logging.getLogger(__name__)


class DegradationSpanProcessor(SpanProcessor):
    """Stamps degraded mode on starting spans and tells :mod:`otel_sampling.records.run` about every span.

    ``foreign_max_length``: the string cap of the foreign-span guard, None while it is off.
    """

    foreign_max_length: int | None = None

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        try:
            now = state.around()
            if not now.hooked:
                return
            if self.foreign_max_length is not None and foreign_spans.is_foreign(span):  # suppressed or not
                try:
                    foreign_spans.guard(span, self.foreign_max_length)
                except Exception:
                    logger.debug("otel-sampling: foreign span guard failed", exc_info=True)
            if not is_instrumentation_enabled():
                return
            if now.reasons:
                _stamp(span, now.reasons)
            run_records.span_started(span)
        except Exception:
            logger.debug("otel-sampling: span processor on_start failed", exc_info=True)

    def on_end(self, span: ReadableSpan) -> None:
        if not state.hooks_enabled():
            return
        try:
            run_records.span_ended(span)
        except Exception:
            logger.debug("otel-sampling: span processor on_end failed", exc_info=True)


def _stamp(span: Span, reasons: tuple[str, ...]) -> None:
    own = reasons_of((span.attributes or {}).get(names.DEGRADATION_REASON))  # stays first
    attributes: dict[str, Any] = {
        names.DEGRADATION_MODE: names.MODE_DEGRADED,
        names.DEGRADATION_REASON: list(dict.fromkeys(own + reasons))[: state.MAX_STAMPED],
    }
    active = state.active_degradations()[: state.MAX_STAMPED]
    if active:  # who answers for each active degradation, and until when (one entry each, entry order)
        attributes[names.DEGRADATION_COMPONENT] = [d.component for d in active]
        attributes[names.DEGRADATION_OWNER] = [d.owner for d in active]
        attributes[names.DEGRADATION_EXPIRES_AT] = [instants.iso(d.expires_at) for d in active]
    drilling = state.drills.running
    if drilling:  # each drill is one of the active degradations too (at most state.MAX_DRILLS)
        attributes[names.DRILL_NAME] = list(dict.fromkeys(d.name for d in drilling))
    span.set_attributes(attributes)


def install(tracer_provider: Any, foreign_max_length: int | None = None) -> None:
    """Called by ``instrument()``: add the processor to ``tracer_provider`` once, turn it on; the
    foreign-span guard on with ``foreign_max_length`` (the string cap), off with None (the latest
    ``instrument()`` decides)."""
    state.add_user(log_fields.install)
    add = getattr(tracer_provider, "add_span_processor", None)
    if add is None:
        return  # a no-op or proxy provider: no SDK spans to stamp
    with state.processors_lock:
        processor = state.span_processors.get(tracer_provider)
        if processor is None:
            processor = DegradationSpanProcessor()
            add(processor)
            state.span_processors[tracer_provider] = processor
        processor.foreign_max_length = foreign_max_length


def uninstall() -> None:
    """Called by ``uninstrument()``: the last one turns the processors and log fields off."""
    state.remove_user(log_fields.uninstall)
