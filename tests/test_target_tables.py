"""Target tables: a target the installed SDK lacks is reported once at WARNING, and the others are
still wrapped; the mcp instrumentor picks the table of the installed mcp major."""

from __future__ import annotations

import logging
import textwrap
from importlib.metadata import version

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


def test_mcp_instrumentor_picks_the_table_of_the_installed_major(caplog, telemetry):
    """One entry point for mcp 1.x and 2.x: only the installed major's targets are wrapped, silently."""
    from mcp.client.session import ClientSession

    from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor

    major = int(version("mcp").split(".")[0])
    # The sampling entry point of each major (mcp 1.x: _received_request, mcp 2.x: dispatch_input_request).
    ours, other = ("_received_request", "dispatch_input_request") if major == 1 else (
        "dispatch_input_request", "_received_request")
    caplog.set_level(logging.DEBUG, logger="otel_sampling")
    instrumentor = MCPSamplingInstrumentor()
    instrumentor.instrument(meter_provider=telemetry.meter_provider)
    try:
        assert isinstance(vars(ClientSession)[ours], wrapt.FunctionWrapper)
        assert not isinstance(vars(ClientSession).get(other), wrapt.FunctionWrapper)
        # initialize is wrapped only on 1.x, where it is the one place serverInfo can be read.
        assert isinstance(vars(ClientSession).get("initialize"), wrapt.FunctionWrapper) is (major == 1)
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    finally:
        instrumentor.uninstrument()
    assert not isinstance(vars(ClientSession)[ours], wrapt.FunctionWrapper)
