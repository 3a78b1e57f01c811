"""Opt-in capture of prompt and completion content on provider call spans and events.

Off by default (GenAI semantic conventions: instrumentations "SHOULD NOT capture them by default").
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (the OpenTelemetry GenAI utilities' variable,
read once at ``instrument()``) turns it on:

* ``NO_CONTENT`` (default; also any unknown value, reported once at WARNING): nothing;
* ``SPAN_ONLY``: ``gen_ai.system_instructions``, ``gen_ai.input.messages`` and
  ``gen_ai.output.messages`` on the inference span;
* ``EVENT_ONLY``: the same attributes on one ``gen_ai.client.inference.operation.details`` log
  record (event) per call, emitted in the span's context;
* ``SPAN_AND_EVENT``: both.

Values are case-insensitive. Each value is a JSON string in the GenAI semconv message shape
(``[{"role": ..., "parts": [{"type": "text", "content": ...}]}]``), cut to
``OTEL_SAMPLING_ATTRIBUTE_MAX_LENGTH`` characters (a cut value is no longer valid JSON: the
limit wins over the shape). Nothing is converted or serialised unless capture is on.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, NamedTuple

from otel_sampling import names
from otel_sampling.settings import report_once


class CaptureMode(NamedTuple):
    """Where content goes: ``span`` attributes, an ``event`` (log record), both or neither."""

    span: bool = False
    event: bool = False

    @property
    def enabled(self) -> bool:
        return self.span or self.event


NO_CAPTURE = CaptureMode()
_MODES = {
    names.CAPTURE_NO_CONTENT: NO_CAPTURE,
    names.CAPTURE_SPAN_ONLY: CaptureMode(span=True),
    names.CAPTURE_EVENT_ONLY: CaptureMode(event=True),
    names.CAPTURE_SPAN_AND_EVENT: CaptureMode(span=True, event=True),
}


def capture_mode(environ: Mapping[str, str]) -> CaptureMode:
    """The capture mode named by ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` in ``environ``."""
    raw = environ.get(names.ENV_CAPTURE_MESSAGE_CONTENT, "").strip()
    if not raw:
        return NO_CAPTURE
    mode = _MODES.get(raw.upper())
    if mode is None:
        report_once(
            logging.WARNING,
            "%s=%r is not one of %s; content is not captured",
            names.ENV_CAPTURE_MESSAGE_CONTENT,
            raw,
            ", ".join(names.CAPTURE_MODES),
        )
        return NO_CAPTURE
    return mode


class Content(NamedTuple):
    """Content of one call, already in the GenAI semconv message shape (plain JSON-able values)."""

    system_instructions: list[Any] | None = None
    input_messages: list[Any] | None = None
    output_messages: list[Any] | None = None

    def attributes(self, max_length: int) -> dict[str, str]:
        """The semconv content attributes, each a JSON string of at most ``max_length`` characters."""
        out = {}
        for key, value in (
            (names.GEN_AI_SYSTEM_INSTRUCTIONS, self.system_instructions),
            (names.GEN_AI_INPUT_MESSAGES, self.input_messages),
            (names.GEN_AI_OUTPUT_MESSAGES, self.output_messages),
        ):
            if value:
                out[key] = _printable_json(json.dumps(value, ensure_ascii=False, default=str))[:max_length]
        return out


def _printable_json(text: str) -> str:
    """``text`` (JSON) with each unprintable character as its JSON escape: the same JSON value, but
    no raw control, bidi override or line separator reaches a backend, and no lone surrogate makes
    the attribute unencodable (OTLP drops a string that is not UTF-8). Only strings in JSON can hold
    such characters, so the escapes land inside strings."""
    if text.isprintable():  # the common case: one C-level scan, no copy
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # outside the BMP: a UTF-16 surrogate pair, as JSON spells it
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def text_part(text: Any) -> dict[str, Any]:
    """A semconv ``TextPart``."""
    return {"type": "text", "content": text if isinstance(text, str) else str(text)}


def generic_part(kind: Any) -> dict[str, Any]:
    """A semconv ``GenericPart`` for a provider block no part type fits (an image, a document, a
    search result): ``{"type": "generic", "generic_type": <the provider's type>}``
    (semantic-conventions-genai #584; ``unknown`` when the block names no type). The block's own
    fields are left out: they carry the data itself (base64 images, documents)."""
    return {"type": "generic", "generic_type": kind if isinstance(kind, str) and kind else "unknown"}
