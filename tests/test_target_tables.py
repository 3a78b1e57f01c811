"""Target tables: a target the installed SDK lacks is reported once at WARNING, and the others are
still wrapped; the mcp instrumentor picks the table of the installed mcp major. The supported
range: an installed SDK outside it is reported once at WARNING (version and range), an SDK that
is not installed at DEBUG, and nothing is wrapped. Targets in a library the host may not use
(``HostTargets``) are wrapped only where it is installed within its range, once the host imports it."""

from __future__ import annotations

import importlib
import logging
import sys
import textwrap
import uuid
from importlib.metadata import version
from pathlib import Path

import pytest
import wrapt
from packaging.requirements import Requirement

from otel_sampling.instrumentation._targets import HostTargets, Target, TargetTableInstrumentor
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.google_genai import GoogleGenAIInstrumentor
from otel_sampling.instrumentation.litellm import LiteLLMInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib


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


class _Optional(TargetTableInstrumentor):
    """A table with a name only some supported versions have."""

    targets = (Target("textwrap", "TextWrapper.added_in_a_later_release", _passthrough, optional=True),)
    state_class = staticmethod(lambda instruments: None)


def test_a_missing_optional_target_is_not_reported(caplog, telemetry):
    caplog.set_level(logging.WARNING, logger="otel_sampling.instrumentation._targets")
    instrumentor = _Optional()
    instrumentor.instrument(meter_provider=telemetry.meter_provider)
    instrumentor.uninstrument()
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == []


def test_mcp_instrumentor_picks_the_table_of_the_installed_major(caplog, telemetry):
    """One entry point for mcp 1.x and 2.x: only the installed major's targets are wrapped, silently."""
    from mcp.client.session import ClientSession

    from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor

    major = int(version("mcp").split(".")[0])
    # The sampling entry point of each major (mcp 1.x: _received_request, mcp 2.x: dispatch_input_request).
    ours, other = (
        ("_received_request", "dispatch_input_request")
        if major == 1
        else ("dispatch_input_request", "_received_request")
    )
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


def _installed_outside_the_range(name):
    """An anthropic instrumentor whose range leaves out the installed anthropic (a host pinned below
    it). Its own ``_instance``: BaseInstrumentor is a singleton per class, and a subclass would
    otherwise inherit the real instrumentor's instance."""
    return type(name, (AnthropicInstrumentor,), {"dependencies": ("anthropic < 1",), "_instance": None})


def _our_records(caplog, level):
    return [r for r in caplog.records if r.levelno >= level and r.name.startswith(("otel_sampling", "opentelemetry"))]


def test_an_installed_version_outside_the_range_warns_once_naming_version_and_range(caplog, telemetry):
    from anthropic._base_client import SyncAPIClient

    caplog.set_level(logging.DEBUG)
    for auto in (True, False):  # under opentelemetry-instrument (skip_dep_check) and called by hand
        caplog.clear()
        instrumentor = _installed_outside_the_range(f"PinnedBelow{auto}")()
        for _ in range(2):  # instrument, uninstrument, instrument again: still one line
            instrumentor.instrument(
                meter_provider=telemetry.meter_provider, **({"skip_dep_check": True} if auto else {})
            )
            assert not isinstance(vars(SyncAPIClient)["request"], wrapt.FunctionWrapper)  # nothing wrapped
            instrumentor.uninstrument()
        records = _our_records(caplog, logging.WARNING)
        assert [r.levelno for r in records] == [logging.WARNING], [r.getMessage() for r in records]
        message = records[0].getMessage()
        assert f"anthropic {version('anthropic')}" in message and "anthropic < 1" in message, message


def test_a_library_that_is_not_installed_is_skipped_quietly(caplog, telemetry):
    """A host that does not use an SDK: opentelemetry-instrument loads its instrumentor anyway."""
    instrumentor = type(
        "NotInstalled",
        (TargetTableInstrumentor,),
        {
            "targets": (Target("textwrap", "TextWrapper.wrap", _passthrough),),
            "dependencies": ("no-such-sdk-distribution >= 1",),
            "state_class": staticmethod(lambda instruments: None),
            "_instance": None,
        },
    )()
    caplog.set_level(logging.DEBUG)
    instrumentor.instrument(meter_provider=telemetry.meter_provider, skip_dep_check=True)
    try:
        assert not isinstance(vars(textwrap.TextWrapper)["wrap"], wrapt.FunctionWrapper)
        assert _our_records(caplog, logging.WARNING) == []
        assert any("no-such-sdk-distribution" in r.getMessage() for r in _our_records(caplog, logging.DEBUG))
    finally:
        instrumentor.uninstrument()


# ---------------------------------------------------------------- targets in a library the host may not use
def _host_library(tmp_path, monkeypatch) -> str:
    """A module not imported yet, with a ``Client.call`` to wrap; its name."""
    name = f"host_library_{uuid.uuid4().hex}"
    (tmp_path / f"{name}.py").write_text("class Client:\n    def call(self, x):\n        return x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def _marking(state):
    def wrapper(wrapped, instance, args, kwargs):
        return ("wrapped", wrapped(*args, **kwargs))

    return wrapper


def _host_instrumentor(module: str, distribution: str, specifier: str) -> TargetTableInstrumentor:
    class WithHostTargets(TargetTableInstrumentor):
        host_targets = (HostTargets((distribution,), specifier, (Target(module, "Client.call", _marking),)),)
        state_class = staticmethod(lambda instruments: object())

    return WithHostTargets()


def test_a_host_library_is_wrapped_when_the_host_imports_it_never_before(tmp_path, monkeypatch, caplog, telemetry):
    module = _host_library(tmp_path, monkeypatch)
    instrumentor = _host_instrumentor(module, "pytest", ">= 1")  # installed, in range
    caplog.set_level(logging.DEBUG, logger="otel_sampling")
    instrumentor.instrument(meter_provider=telemetry.meter_provider)
    try:
        assert module not in sys.modules  # instrument() imports nothing for it
        library = importlib.import_module(module)
        assert library.Client().call(1) == ("wrapped", 1)
    finally:
        instrumentor.uninstrument()
    assert library.Client().call(1) == 1
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_hook_left_by_an_earlier_instrument_does_nothing(tmp_path, monkeypatch, telemetry):
    """Import hooks cannot be removed: one registered before an uninstrument() finds another state."""
    module = _host_library(tmp_path, monkeypatch)
    instrumentor = _host_instrumentor(module, "pytest", ">= 1")
    instrumentor.instrument(meter_provider=telemetry.meter_provider)
    instrumentor.uninstrument()
    instrumentor.instrument(meter_provider=telemetry.meter_provider)
    try:
        library = importlib.import_module(module)
        assert library.Client().call(1) == ("wrapped", 1)  # one layer, not two
        assert not isinstance(vars(library.Client)["call"].__wrapped__, wrapt.FunctionWrapper)
    finally:
        instrumentor.uninstrument()


@pytest.mark.parametrize(
    ("extra", "instrumentor"),
    [
        ("anthropic", AnthropicInstrumentor),
        ("openai", OpenAIInstrumentor),
        ("google-genai", GoogleGenAIInstrumentor),
        ("litellm", LiteLLMInstrumentor),
    ],
)
def test_the_provider_instrumentors_check_the_range_their_extra_installs(extra, instrumentor):
    """The range an instrumentor accepts is the one ``pip install otel-sampling[<sdk>]`` installs."""
    pyproject = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text(encoding="utf-8"))
    declared = [Requirement(r) for r in pyproject["project"]["optional-dependencies"][extra]]
    checked = [Requirement(r) for r in instrumentor().instrumentation_dependencies()]
    assert [(r.name, r.specifier) for r in checked] == [(r.name, r.specifier) for r in declared]


def test_a_host_library_not_installed_is_left_alone_silently(tmp_path, monkeypatch, caplog, telemetry):
    module = _host_library(tmp_path, monkeypatch)
    instrumentor = _host_instrumentor(module, "no-such-distribution-otel-sampling", ">= 1")
    caplog.set_level(logging.DEBUG, logger="otel_sampling")
    instrumentor.instrument(meter_provider=telemetry.meter_provider)
    try:
        assert importlib.import_module(module).Client().call(1) == 1
    finally:
        instrumentor.uninstrument()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_host_library_outside_its_range_warns_once_naming_version_and_range(tmp_path, monkeypatch, caplog, telemetry):
    module = _host_library(tmp_path, monkeypatch)
    instrumentor = _host_instrumentor(module, "pytest", "< 1")
    caplog.set_level(logging.WARNING, logger="otel_sampling.instrumentation._targets")
    for _ in range(2):
        instrumentor.instrument(meter_provider=telemetry.meter_provider)
        assert importlib.import_module(module).Client().call(1) == 1
        instrumentor.uninstrument()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert f"pytest {version('pytest')} is outside the supported range < 1" in warnings[0]
