"""Degraded mode on log records: ``degradation.mode`` and ``degradation.reason`` while degraded.

``mode=degraded`` on the run, on every span and on every log line. A log record
factory (:func:`logging.setLogRecordFactory`) wraps the current one, so every record from every
logger gets the fields, whatever handler formats or exports it: the OpenTelemetry
``LoggingHandler`` turns them into log record attributes, and a formatter can print
``%(degradation.mode)s``. The fields are the span processor's: set while a named degradation is
active or inside ``otel_sampling.canary()`` (reasons comma-separated); otherwise nothing is added,
so a formatter that prints them needs :data:`FORMATTER_DEFAULTS` (``logging.Formatter(fmt,
defaults=FORMATTER_DEFAULTS)``), or every record outside a degradation is a logging error.

The factory runs before ``Logger.makeRecord`` applies ``extra``, so while degraded a call that
passes ``degradation.mode`` or ``degradation.reason`` in ``extra`` gets the ``KeyError`` logging
raises for an overwritten field: those two keys are ours.
"""

from __future__ import annotations

import logging

from otel_sampling import names, state

# For ``logging.Formatter(..., defaults=FORMATTER_DEFAULTS)``: what a record outside a degradation prints.
FORMATTER_DEFAULTS: dict[str, str] = {names.DEGRADATION_MODE: names.MODE_PRIMARY, names.DEGRADATION_REASON: ""}

_fields = state.log_fields  # the installed factory and the one it wraps (process-wide)


def install() -> None:
    """Wrap the current log record factory (once) and turn the fields on."""
    _fields.enabled = True
    if _fields.factory is not None:
        return
    previous = logging.getLogRecordFactory()
    factory = state.log_record_factory(previous)
    _fields.previous, _fields.factory = previous, factory
    logging.setLogRecordFactory(factory)


def uninstall() -> None:
    """Turn the fields off; put the previous factory back unless someone wrapped ours since."""
    _fields.enabled = False
    if _fields.factory is not None and logging.getLogRecordFactory() is _fields.factory:
        logging.setLogRecordFactory(_fields.previous)
        _fields.previous, _fields.factory = None, None
