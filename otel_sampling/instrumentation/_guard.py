"""The boundary between a wrapper and our own code: a failure of ours never reaches the host.

Every wrapper of the target tables calls into our code (start a record, end it, read a fact of the
connection) through :func:`guarded`. An exception raised there is logged at DEBUG (``otel-sampling:
could not <step>``, with its traceback) and the wrapper goes on with the step's fallback value; the
host's own call, what it returns and what it raises, is never inside the guard. ``BaseException``
that is not an ``Exception`` (a cancellation, ``KeyboardInterrupt``) is not ours to stop: it
propagates.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar, overload

logger = logging.getLogger(__name__)

T = TypeVar("T")


@overload
def guarded(step: str, function: Callable[..., T], /, *args: Any, fallback: T, **kwargs: Any) -> T: ...


@overload
def guarded(step: str, function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T | None: ...


def guarded(step: str, function: Callable[..., Any], /, *args: Any, fallback: Any = None, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``; ``fallback`` (default None) when it raised an ``Exception``.

    ``step`` names what the call does, as the debug log line says it ("start a provider call").
    """
    try:
        return function(*args, **kwargs)
    except Exception:
        logger.debug("otel-sampling: could not %s", step, exc_info=True)
        return fallback
