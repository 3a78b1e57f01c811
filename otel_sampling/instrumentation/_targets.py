"""Target tables: what an instrumentor wraps, read by both wrap and unwrap.

A target is ``(module, "Class.method", wrapper factory)``. Wrapping and unwrapping walk the same
table, so ``uninstrument()`` restores exactly what ``instrument()`` replaced.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import wrapt
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor
from opentelemetry.instrumentation.utils import unwrap

from otel_sampling.instruments import Instruments
from otel_sampling.settings import settings_for_instrument

logger = logging.getLogger(__name__)

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]


class Target(NamedTuple):
    """One wrapped function: ``module``, dotted ``attribute`` inside it, and the wrapper factory
    (called with the instrumentor's state, returns a wrapt wrapper)."""

    module: str
    attribute: str
    factory: Callable[[Any], Wrapper]


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


def wrap_targets(targets: Iterable[Target], state: Any) -> None:
    """Wrap every target that exists; a missing one is reported at WARNING (the SDK changed)."""
    for target in targets:
        if _owner(target) is None:
            logger.warning("otel-sampling: %s.%s not found; it is not instrumented", target.module, target.attribute)
            continue
        wrapt.wrap_function_wrapper(target.module, target.attribute, target.factory(state))


def unwrap_targets(targets: Iterable[Target]) -> None:
    """Restore every wrapped target to its original function."""
    for target in targets:
        owner = _owner(target)
        if owner is not None:
            unwrap(*owner)


class TargetTableInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """An instrumentor that wraps one target table; subclasses set ``targets`` and ``make_state``.

    ``instrument(tracer_provider=None, meter_provider=None)``: providers default to the global ones;
    settings come from ``OTEL_SAMPLING_*`` (:func:`otel_sampling.settings.settings_for_instrument`:
    a malformed policy file is logged at ERROR and left out, never raised into the host).
    """

    targets: tuple[Target, ...] = ()

    def make_state(self, instruments: Instruments) -> Any:
        """The object each wrapper factory receives."""
        raise NotImplementedError

    def _instrument(self, **kwargs: Any) -> None:
        instruments = Instruments(settings_for_instrument(), kwargs.get("tracer_provider"), kwargs.get("meter_provider"))
        wrap_targets(self.targets, self.make_state(instruments))

    def _uninstrument(self, **kwargs: Any) -> None:
        unwrap_targets(self.targets)
