"""All process-wide state (``otel_sampling.state``): the named degradations active now, the
context variables, how many instrumentors are on, the API instruments.

Each test starts from empty state (the module's globals patched for its duration) and drives the
functions directly; what the state does on spans, log records and gauges is in
tests/test_degradation.py and tests/test_runs.py.
"""

from __future__ import annotations

import datetime as dt

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

from otel_sampling import state
from otel_sampling.degradation import Degradation
from otel_sampling.records import run as run_records
from otel_sampling.settings import Settings

LATER = "2099-01-01T00:00:00Z"


@pytest.fixture(autouse=True)
def empty_state(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "_active", ())
    monkeypatch.setattr(state, "calm", True)
    monkeypatch.setattr(state, "_known", {})
    monkeypatch.setattr(state, "_users", 0)
    monkeypatch.setattr(state, "hooked", False)
    monkeypatch.setattr(state, "_api", None)


def outage(component: str = "search", reason: str = "sources unavailable", expires_at: str = LATER) -> Degradation:
    return Degradation(component, reason, "oncall", expires_at)


class TestActiveDegradations:
    """``activate`` / ``deactivate`` / ``active_degradations``: the named degradations active now."""

    def test_in_the_order_entered(self):
        """Each one once, in the order it was entered."""
        search, verify = outage("search"), outage("verify", "verification off")

        assert state.activate(search)
        assert state.activate(verify)
        assert not state.activate(search)  # already active
        assert (search, verify) == state.active_degradations()

    def test_deactivate_removes_only_that_one(self):
        """Deactivating is once too; the others stay active."""
        search, verify = outage("search"), outage("verify", "verification off")
        state.activate(search)
        state.activate(verify)

        assert state.deactivate(search)
        assert not state.deactivate(search)
        assert (verify,) == state.active_degradations()

    def test_two_equal_degradations_are_two(self):
        """Two objects with the same fields are two degradations, each entered and exited on its own
        (``Degradation.enter``: give each overlapping block its own ``degraded(...)``)."""
        first, second = outage(), outage()
        state.activate(first)

        assert state.activate(second)
        assert 2 == len(state.active_degradations())


class TestActiveReasons:
    """``active_reasons``: the ``degradation.reason`` values of the state around the caller."""

    def test_empty_when_nothing_is_degraded(self):
        """Nothing active, no canary block: no reason."""
        assert () == state.active_reasons()

    def test_each_reason_once_in_order(self):
        """Two degradations with one reason name it once."""
        state.activate(outage("search"))
        state.activate(outage("index", "sources unavailable"))
        state.activate(outage("verify", "verification off"))

        assert ("sources unavailable", "verification off") == state.active_reasons()

    def test_canary_inside_a_canary_block(self):
        """``canary`` comes last, and alone when nothing else is degraded."""
        token = state.canary.set(True)
        try:
            assert ("canary",) == state.active_reasons()
            state.activate(outage())
            assert ("sources unavailable", "canary") == state.active_reasons()
        finally:
            state.canary.reset(token)

    def test_at_most_max_stamped_reasons(self):
        """A host leaking degradations does not put thousands of strings on every span."""
        for i in range(3 * state.MAX_STAMPED):
            state.activate(outage(f"c{i}", f"r{i}"))

        assert tuple(f"r{i}" for i in range(state.MAX_STAMPED)) == state.active_reasons()


class TestDegradationCounts:
    """``degradation_counts``: per ``(component, reason)``, how many are active and how many of those expired."""

    def test_active_and_expired_at_now(self):
        """An expiry before ``now`` counts as expired; one after it does not."""
        state.activate(outage("search", expires_at="2026-12-01T00:00:00Z"))
        state.activate(outage("verify", "verification off", expires_at=LATER))

        active, expired = state.degradation_counts(dt.datetime(2027, 1, 1, tzinfo=dt.timezone.utc))

        assert {("search", "sources unavailable"): 1, ("verify", "verification off"): 1} == active
        assert {("search", "sources unavailable"): 1, ("verify", "verification off"): 0} == expired

    def test_a_pair_once_entered_reads_zero_after_it_exited(self):
        """The gauges report 0 for a degradation that exited, not nothing."""
        search = outage()
        state.activate(search)
        state.deactivate(search)

        assert (
            {("search", "sources unavailable"): 0},
            {("search", "sources unavailable"): 0},
        ) == state.degradation_counts()

    def test_the_pairs_remembered_are_bounded(self):
        """At most ``MAX_KNOWN`` pairs are remembered for the gauges; later ones still count while active."""
        for i in range(state.MAX_KNOWN + 5):
            passed = outage(f"c{i}")
            state.activate(passed)
            state.deactivate(passed)
        late = outage("late")
        state.activate(late)

        active, _expired = state.degradation_counts()

        assert state.MAX_KNOWN + 1 == len(active)
        assert 1 == active[("late", "sources unavailable")]


class TestContextVariables:
    """The context variables' defaults: no request, no run, no canary."""

    def test_defaults(self):
        """Outside any sampling callback, run or canary block."""
        assert (None, None, False) == (
            state.current_request.get(),
            run_records.current_run_var.get(),
            state.canary.get(),
        )


class TestAround:
    """``around``: what a record reads of the process at its start or end, in one call."""

    def test_nothing_around_a_record_of_an_uninstrumented_process(self):
        assert state.Around(hooked=False, reasons=(), canary=False, drill={}) == state.around()

    def test_the_hooks_the_reasons_and_the_canary_block_around_it(self):
        state.add_user(lambda: None)
        state.activate(outage())
        token = state.canary.set(True)
        try:
            assert (
                state.Around(hooked=True, reasons=("sources unavailable", "canary"), canary=True, drill={})
                == state.around()
            )
        finally:
            state.canary.reset(token)


class TestInstrumentorUsers:
    """``add_user`` / ``remove_user`` / ``hooks_enabled``: the span processor and log fields work
    while at least one instrumentor is instrumented."""

    def test_the_first_installs_and_the_last_uninstalls(self):
        """Two instrumentors: hooks installed once, uninstalled once, after the second leaves."""
        calls: list[str] = []

        state.add_user(lambda: calls.append("install"))
        state.add_user(lambda: calls.append("install"))
        assert state.hooks_enabled()
        state.remove_user(lambda: calls.append("uninstall"))
        assert state.hooks_enabled()
        state.remove_user(lambda: calls.append("uninstall"))

        assert ["install", "uninstall"] == calls
        assert not state.hooks_enabled()

    def test_an_extra_uninstrument_does_nothing(self):
        """Uninstrumenting with nothing instrumented neither uninstalls nor goes below zero."""
        calls: list[str] = []

        state.remove_user(lambda: calls.append("uninstall"))
        state.add_user(lambda: calls.append("install"))

        assert ["install"] == calls
        assert state.hooks_enabled()


class TestApiInstruments:
    """``bind_api`` / ``api_instruments``: the public API records through the providers of the
    latest ``instrument()``."""

    def test_binding_again_to_the_same_providers_keeps_the_set(self):
        """The observable gauges are registered once per meter provider."""
        tracer_provider, meter_provider = TracerProvider(), MeterProvider()
        bound = state.bind_api(Settings(), tracer_provider, meter_provider)

        assert bound is state.bind_api(Settings(), tracer_provider, meter_provider)
        assert bound is state.api_instruments()

    def test_other_providers_get_a_new_set(self):
        """A later ``instrument()`` with other providers moves the API to them."""
        first = state.bind_api(Settings(), TracerProvider(), MeterProvider())
        second = state.bind_api(Settings(), TracerProvider(), MeterProvider())

        assert first is not second
        assert second is state.api_instruments()

    def test_before_any_instrument_the_global_providers(self):
        """``api_instruments`` binds a set on the global providers when nothing was bound yet."""
        assert state.api_instruments() is state.api_instruments()
