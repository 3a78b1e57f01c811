"""A target the installed SDK lacks is reported once at WARNING, and the others are still wrapped."""

from __future__ import annotations

import logging
import textwrap

import wrapt

from otel_sampling.instrumentation._targets import Target, TargetTableInstrumentor


def _passthrough(state):
    def wrapper(wrapped, instance, args, kwargs):
        return wrapped(*args, **kwargs)
    return wrapper


class _Drifted(TargetTableInstrumentor):
    """A table written for another SDK version: one target moved, one module is gone."""

    targets = (
        Target("textwrap", "TextWrapper.wrap", _passthrough),
        Target("textwrap", "TextWrapper.renamed_in_a_later_release", _passthrough),
        Target("no_such_sdk_module", "Client.create", _passthrough),
    )
    state_class = staticmethod(lambda instruments: None)


def test_missing_targets_warn_once_and_the_rest_is_wrapped(caplog, telemetry):
    instrumentor = _Drifted()
    caplog.set_level(logging.WARNING, logger="otel_sampling.instrumentation._targets")
    original = vars(textwrap.TextWrapper)["wrap"]
    for _ in range(2):  # instrument, uninstrument, instrument again: the warnings are not repeated
        instrumentor.instrument(meter_provider=telemetry.meter_provider)
        assert isinstance(vars(textwrap.TextWrapper)["wrap"], wrapt.FunctionWrapper)
        assert textwrap.wrap("a b", width=1) == ["a", "b"]
        instrumentor.uninstrument()
        assert vars(textwrap.TextWrapper)["wrap"] is original
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings
    assert "textwrap.TextWrapper.renamed_in_a_later_release not found" in warnings[0]
    assert "no_such_sdk_module.Client.create not found" in warnings[1]
