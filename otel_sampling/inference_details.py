"""The ``gen_ai.client.inference.operation.details`` event of one provider call (a log record).

semantic-conventions-genai #579 made the event Recommended, no longer opt-in, and #520 has it
recorded at ``DEBUG`` severity: every inference call emits it, with the inference span's GenAI
attributes (``gen_ai.*``, ``server.*``, ``error.type``: the names the span carries, never our own)
and no content. Content (``gen_ai.input.messages``, ``gen_ai.output.messages``,
``gen_ai.system_instructions``) is added only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` puts it on the event (``EVENT_ONLY``,
``SPAN_AND_EVENT``). A log pipeline at INFO or above drops it; a span that is not recorded (sampled
out) has no attributes to give, and no event is emitted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from opentelemetry import trace
from opentelemetry._logs import Logger, SeverityNumber

from otel_sampling import names

# The conventions' namespaces the event repeats from the span (the span's own names; ours stay on the span).
_SPAN_NAMESPACES: Final = ("gen_ai.", "server.", "error.")
_CONTENT: Final = frozenset(
    {names.GEN_AI_INPUT_MESSAGES, names.GEN_AI_OUTPUT_MESSAGES, names.GEN_AI_SYSTEM_INSTRUCTIONS}
)


def emit(event_logger: Logger, span: trace.Span, content: Mapping[str, Any] | None) -> None:
    """Emit the event for ``span`` (ended or about to end), with ``content`` when given."""
    recorded = getattr(span, "attributes", None)
    if not span.is_recording() or not isinstance(recorded, Mapping):
        return
    attributes = {
        key: value for key, value in recorded.items() if key.startswith(_SPAN_NAMESPACES) and key not in _CONTENT
    }
    if content:
        attributes.update(content)
    event_logger.emit(
        event_name=names.EVENT_INFERENCE_DETAILS,
        attributes=attributes,
        severity_number=SeverityNumber.DEBUG,
        severity_text="DEBUG",
        context=trace.set_span_in_context(span),
    )
