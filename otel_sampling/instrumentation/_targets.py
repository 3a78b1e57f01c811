"""Target tables: what an instrumentor wraps, read by both wrap and unwrap.

A target is ``(module, "Class.method", wrapper factory)``. Wrapping and unwrapping walk the same
table, so ``uninstrument()`` restores exactly what ``instrument()`` replaced. Our wrappers are
marked, so that a target already wrapped by us is not wrapped twice, and so that unwrapping
removes our layer even when another library has wrapped the same function on top of it (a
plain ``unwrap`` would strip theirs and leave ours).

Besides its own table, every instrumentor wraps the start of the server-side stdio transport
(:mod:`~otel_sampling.instrumentation._stdio_trap`) in the mcp modules loaded at its
``instrument()``; the last ``uninstrument()`` unwraps it.

A table may also name :class:`HostTargets`: targets in a library the host may not use at all (an
agent framework's own MCP client). They are wrapped only when that library is installed at a
supported version, and only once the host imports their module (``instrument()`` never imports a
framework for them: importing one can change the host, its logging for instance).
"""

from __future__ import annotations

import functools
import importlib
import logging
import sys
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any, NamedTuple

import wrapt
from opentelemetry import trace
from opentelemetry.instrumentation.dependencies import DependencyConflict, get_dependency_conflicts

# mypy does not resolve this class in the installed module (it reports no attribute); it is public there (__all__).
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from otel_sampling import drills, log_fields
from otel_sampling import state as otel_state
from otel_sampling.instrumentation import _stdio_trap
from otel_sampling.instrumentation._provider import guarded
from otel_sampling.metrics import Instruments
from otel_sampling.records import run as run_records
from otel_sampling.settings import settings_for_instrument

logger = logging.getLogger(__name__)

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]
_MARK = "_otel_sampling_wrapper"
_reported_missing: set[tuple[str, str]] = set()  # once per process, not on every instrument()
_reported_outside: set[tuple[str, str]] = set()  # (instrumentor or library, installed version): once per process


def _warn_outside_range(key: tuple[str, str], message: str, *args: object) -> None:
    """One WARNING per process for ``key`` (who, installed version) being outside its supported range."""
    if key not in _reported_outside:
        _reported_outside.add(key)
        logger.warning(message, *args)


class Target(NamedTuple):
    """One wrapped function: ``module``, dotted ``attribute`` inside it, and the wrapper factory
    (called with the instrumentor's state, returns a wrapt wrapper). ``optional``: the attribute
    exists in some of the supported versions only (a name added or removed within the range), so
    its absence is not reported."""

    module: str
    attribute: str
    factory: Callable[[Any], Wrapper]
    optional: bool = False


class HostTargets(NamedTuple):
    """Targets in a library the host may or may not use.

    ``distributions``: the names the library is installed under (the first one installed is the one
    checked); ``specifier``: the PEP 440 range the targets are written for (``">= 4.2, < 5"``);
    ``targets``: what is wrapped, each once the host imports its module. Not installed: nothing
    happens, silently. Installed outside the range: one WARNING per process naming the version and
    the range, and nothing is wrapped.
    """

    distributions: tuple[str, ...]
    specifier: str
    targets: tuple[Target, ...]


def supported(group: HostTargets) -> bool:
    """True when the group's library is installed within its range (see :class:`HostTargets`)."""
    for distribution in group.distributions:
        conflict = get_dependency_conflicts([f"{distribution} {group.specifier}"])
        if conflict is None:
            return True
        if conflict.found:  # installed (``"name version"``), outside the range
            _warn_outside_range(
                (distribution, conflict.found),
                "otel-sampling: %s is outside the supported range %s; %s is not instrumented",
                conflict.found,
                group.specifier,
                ", ".join(f"{t.module}.{t.attribute}" for t in group.targets),
            )
            return False
    return False  # none of its distributions is installed


# The start of the server-side stdio transport, wherever mcp binds it.
_STDIO_STARTS = tuple(
    Target(module, attribute, _stdio_trap.start_wrapper) for module, attribute in _stdio_trap.START_POINTS
)


def _loaded(targets: Iterable[Target]) -> list[Target]:
    """The targets whose module is imported and binds the attribute (none is imported for them)."""
    return [target for target in targets if hasattr(sys.modules.get(target.module), target.attribute.split(".", 1)[0])]


def _owner(target: Target) -> tuple[Any, str] | None:
    """The object holding the target's last attribute, and that attribute's name."""
    try:
        obj: Any = importlib.import_module(target.module)
        *path, name = target.attribute.split(".")
        for part in path:
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    return (obj, name) if hasattr(obj, name) else None


def _layers(function: Any) -> Iterator[Any]:
    """The function and every wrapper layer below it, outermost first."""
    while function is not None:
        yield function
        function = getattr(function, "__wrapped__", None)


def _is_ours(layer: Any) -> bool:
    return isinstance(layer, wrapt.FunctionWrapper) and getattr(layer._self_wrapper, _MARK, False)


def wrap_targets(targets: Iterable[Target], state: Any) -> None:
    """Wrap every target that exists; a missing one is reported once at WARNING (the SDK changed),
    unless it is ``optional``."""
    for target in targets:
        owner = _owner(target)
        if owner is None:
            if not target.optional and (target.module, target.attribute) not in _reported_missing:
                _reported_missing.add((target.module, target.attribute))
                logger.warning(
                    "otel-sampling: %s.%s not found (is the installed version supported?); it is not instrumented",
                    target.module,
                    target.attribute,
                )
            continue
        if any(_is_ours(layer) for layer in _layers(vars(owner[0]).get(owner[1]))):
            continue
        wrapper = target.factory(state)
        setattr(wrapper, _MARK, True)
        wrapt.wrap_function_wrapper(owner[0], owner[1], wrapper)


def unwrap_targets(targets: Iterable[Target]) -> None:
    """Remove our wrapper layer from every target, wherever it sits in the wrapper chain."""
    for target in targets:
        owner = _owner(target)
        if owner is None:
            continue
        obj, name = owner
        outer: Any = vars(obj).get(name)
        if _is_ours(outer):
            setattr(obj, name, outer.__wrapped__)
            continue
        for layer in _layers(outer):
            inner: Any = getattr(layer, "__wrapped__", None)
            if _is_ours(inner):
                layer.__wrapped__ = inner.__wrapped__  # splice ours out under someone else's wrapper
                break


class TargetTableInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """An instrumentor that wraps one target table.

    Subclasses set ``targets``, ``dependencies`` (the supported library range, as pip requirement
    strings) and ``state_class`` (built from the :class:`~otel_sampling.metrics.Instruments`, handed
    to every wrapper factory).

    The range is checked at ``instrument()``, the same under ``opentelemetry-instrument`` and when
    called by hand: a library that is not installed is skipped with a DEBUG line (the host does
    not use it); an installed version outside the range is skipped with one WARNING per process
    naming the version and the range (the host uses it, and gets no telemetry from it), unless
    ``warns_outside_range`` is false (an instrumentor whose library is in every process of its
    kind, most of which do not use the part it instruments).

    ``instrument(tracer_provider=None, meter_provider=None)``: providers default to the global ones;
    settings come from ``OTEL_SAMPLING_*`` (:func:`otel_sampling.settings.settings_for_instrument`:
    a malformed policy file is logged at ERROR and left out). Never raises into the host: if the
    providers themselves fail, that is logged at WARNING and nothing is wrapped.
    """

    targets: tuple[Target, ...] = ()
    host_targets: tuple[HostTargets, ...] = ()
    dependencies: tuple[str, ...] = ()
    warns_outside_range = True
    state_class: Callable[[Instruments], Any]

    def instrumentation_dependencies(self) -> Collection[str]:
        return self.dependencies

    def _table(self) -> tuple[tuple[Target, ...], Callable[[Instruments], Any]]:
        """The target table and state class for the installed library version.

        The class attributes by default; an instrumentor that covers several majors of its library
        with different tables overrides this.
        """
        return self.targets, self.state_class

    def _check_dependency_conflicts(self) -> DependencyConflict | None:
        # BaseInstrumentor.instrument() runs this check unless given skip_dep_check (as
        # opentelemetry-instrument does: the dist declares no `instruments` extra, one package for
        # three SDKs) and logs any conflict at ERROR. A version conflict _instrument warns of
        # itself is left to it, so that both paths say it once, at WARNING; anything else keeps
        # OTel's report (an instrumentor called by hand for a library that is not installed).
        conflict: DependencyConflict | None = super()._check_dependency_conflicts()
        if conflict is not None and conflict.found and self.warns_outside_range:
            return None
        return conflict

    def _host_targets(self) -> tuple[HostTargets, ...]:
        """The host-library targets for the installed library version (the class attribute by default)."""
        return self.host_targets

    def _watch_host_targets(self, state: Any) -> None:
        """Wrap each supported host target when its module is imported (at once if it already is)."""
        for group in self._host_targets():
            try:
                if not supported(group):
                    continue
                for target in group.targets:
                    wrapt.register_post_import_hook(
                        functools.partial(self._wrap_imported, target, state), target.module
                    )
            except Exception:
                logger.debug("otel-sampling: could not watch %s", group.distributions, exc_info=True)

    def _wrap_imported(self, target: Target, state: Any, module: Any) -> None:
        # Called inside the host's import: never raise there. A hook left by an earlier
        # instrument() (hooks cannot be removed) finds another state and does nothing.
        if getattr(self, "_state", None) is state:
            try:
                wrap_targets((target,), state)
            except Exception:
                logger.debug("otel-sampling: could not wrap %s.%s", target.module, target.attribute, exc_info=True)

    def _instrument(self, **kwargs: Any) -> None:
        conflict = get_dependency_conflicts(self.dependencies)
        if conflict is not None:
            _report_conflict(type(self).__name__, conflict, self.warns_outside_range)
            return
        targets, state_class = self._table()
        tracer_provider, meter_provider = kwargs.get("tracer_provider"), kwargs.get("meter_provider")
        try:
            settings = settings_for_instrument()
            instruments = Instruments(
                settings,
                tracer_provider,
                meter_provider,
                kwargs.get("logger_provider"),
                in_flight=otel_state.in_flight_store,
            )
            state = state_class(instruments)
        except Exception:
            logger.warning(
                "otel-sampling: %s could not set up its telemetry; nothing is instrumented",
                type(self).__name__,
                exc_info=True,
            )
            return
        wrap_targets(targets, state)
        wrap_targets(_loaded(_STDIO_STARTS), None)
        # A state with background work (the stall watchdog) starts it here and stops it on uninstrument.
        self._state = state
        if hasattr(state, "start"):
            state.start()
        self._watch_host_targets(state)
        _install_degradation_state(self, settings, tracer_provider, meter_provider, kwargs.get("logger_provider"))

    def _uninstrument(self, **kwargs: Any) -> None:
        guarded("end the running drills", drills.stop_all)  # a drill never outlives its instrumentation
        unwrap_targets(self._table()[0])
        unwrap_targets(_loaded(target for group in self._host_targets() for target in group.targets))
        state, self._state = getattr(self, "_state", None), None
        if state is not None and hasattr(state, "stop"):
            state.stop()
        if self.__dict__.pop("_otel_sampling_processor", False):
            _uninstall_span_processor()
        if not otel_state.hooks_enabled():  # the last instrumentor
            unwrap_targets(_loaded(_STDIO_STARTS))


def _report_conflict(instrumentor: str, conflict: DependencyConflict, warns: bool) -> None:
    """Say why an instrumentor wraps nothing: with ``warns``, WARNING, once per process, for an
    installed version outside its range; else, and for a library that is not installed, DEBUG."""
    if not (warns and conflict.found):
        logger.debug("otel-sampling: %s skipped: %s", instrumentor, conflict)
        return
    _warn_outside_range(
        (instrumentor, conflict.found),
        "otel-sampling: %s instruments nothing: %s is installed, outside the supported range %s",
        instrumentor,
        conflict.found,
        conflict.required,
    )


def _install_degradation_state(
    instrumentor: Any, settings: Any, tracer_provider: Any, meter_provider: Any, logger_provider: Any = None
) -> None:
    """Every instrumentor binds the public API's telemetry and installs the degradation span
    processor (once per tracer provider): whichever of them a host loads, degraded mode is stamped."""
    try:
        otel_state.bind_api(settings, tracer_provider, meter_provider, logger_provider)
        _install_span_processor(
            tracer_provider if tracer_provider is not None else trace.get_tracer_provider(),
            settings.attribute_max_length if settings.guard_foreign_spans else None,
        )
        instrumentor._otel_sampling_processor = True
    except Exception:
        logger.warning("otel-sampling: could not install the degradation span processor", exc_info=True)


def _install_span_processor(tracer_provider: Any, foreign_max_length: int | None = None) -> None:
    """Called by ``instrument()``: add the processor to ``tracer_provider`` once, turn it on; the
    foreign-span guard on with ``foreign_max_length`` (the string cap), off with None (the latest
    ``instrument()`` decides)."""
    otel_state.add_user(log_fields.install)
    add = getattr(tracer_provider, "add_span_processor", None)
    if add is None:
        return  # a no-op or proxy provider: no SDK spans to stamp
    with otel_state.processors_lock:
        processor = otel_state.span_processors.get(tracer_provider)
        if processor is None:
            processor = run_records.DegradationSpanProcessor()
            add(processor)
            otel_state.span_processors[tracer_provider] = processor
        processor.foreign_max_length = foreign_max_length


def _uninstall_span_processor() -> None:
    """Called by ``uninstrument()``: the last one turns the processors and log fields off."""
    otel_state.remove_user(log_fields.uninstall)
