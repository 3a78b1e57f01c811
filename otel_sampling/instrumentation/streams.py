"""Stream proxies that end a provider call's span exactly once, however the stream ends.

A proxy (``wrapt.ObjectProxy``, so every attribute and ``isinstance`` check passes through) feeds
each event to a provider-specific accumulator and ends the call with the ending
:func:`otel_sampling.rules.endings.stream_ending` (or, on an error, the SDK's failure) gives:

* on exhaustion: success if the accumulator saw the terminal event, else ``incomplete_stream``
  (ending ``error``);
* on an error while reading: ERROR with the error's ``error.type`` and ending; the same exception
  object propagates (a second reader, in another thread or task, that gets the SDK generator's
  "already executing" error while the first reads on does not end the call);
* on ``close()`` / ``aclose()`` / ``__exit__`` / ``__aexit__`` / garbage collection before the end:
  the partial response seen so far, no error, ending ``cancelled`` (the caller chose to stop);
  ``completed`` when the terminal event had already arrived.

A failure the provider sends as an event, which the SDK yields instead of raising (openai's
Responses ``error`` / ``response.failed``), reaches the call through the accumulator's response
(``Response.error_type``): the call ends with it whatever the exit. How a stream ended is the
rule :func:`otel_sampling.rules.endings.stream_ending`.

The first event fixes the call's time to first chunk.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from typing import Any, Protocol

import wrapt

from otel_sampling.records.provider_call import ProviderCall
from otel_sampling.rules import endings
from otel_sampling.rules.endings import fallback_failure, stream_ending
from otel_sampling.rules.values import Failure, Response

logger = logging.getLogger(__name__)


class Accumulator(Protocol):
    complete: bool

    def observe(self, event: Any) -> None: ...

    def response(self) -> Response: ...


def _step(stream: Any, iterate: str, step: str) -> Any:
    """What reads the next event: the step of the stream's own iterator (``iter(stream).__next__``;
    the SDK streams' ``__iter__`` reads what their ``__next__`` reads, and resuming that generator
    costs less than a call of ``__next__`` per event), else the stream's own step (None: not readable)."""
    iterate_method = getattr(stream, iterate, None)
    if iterate_method is None:
        return getattr(stream, step, None)
    return getattr(iterate_method(), step)


# wrapt 1.x (still supported) cannot subscript ObjectProxy at run time, so no ObjectProxy[Any] here.
class _StreamProxyBase(wrapt.ObjectProxy):  # type: ignore[type-arg]
    def __init__(self, stream: Any, call: ProviderCall, accumulator: Accumulator,
                 failure: Callable[[BaseException], Failure]) -> None:
        super().__init__(stream)
        self._self_call: ProviderCall | None = call
        self._self_accumulator = accumulator
        self._self_failure = failure
        self._self_blind = False  # an event could not be read: "no terminal event" would be our guess
        self._self_first = True  # no event read yet: the next one fixes the time to first chunk
        # Readers inside the stream now. A second one (another thread or task) gets the SDK
        # generator's "already executing" error while the first goes on reading: not the stream's end.
        self._self_reading = 0

    # __next__ / __anext__ feed each event to the accumulator inline (the per-event path is the
    # proxy's frame and the accumulator's); these two run off that path.
    def _self_first_event(self) -> None:
        self._self_first = False
        call = self._self_call
        if call is not None:
            call.first_chunk()

    def _self_unreadable(self) -> None:
        self._self_blind = True
        logger.debug("otel-sampling: could not read a stream event", exc_info=True)

    def _self_end(self, exc: BaseException | None, exhausted: bool) -> None:
        call, self._self_call = self._self_call, None
        if call is None:
            return
        try:
            response, error_type, ending = self._self_outcome(exc, exhausted)
        except Exception:
            logger.debug("otel-sampling: could not read how a stream ended", exc_info=True)
            response = None
            if exc is not None:
                error_type, ending = fallback_failure(exc)
            else:  # the SDK raised nothing: no error of the host's to report
                error_type, ending = None, (endings.COMPLETED if exhausted else endings.CANCELLED).ending
        try:
            call.end(response, error_type, ending)
        except Exception:
            logger.debug("otel-sampling: could not end a stream's span", exc_info=True)

    def _self_outcome(self, exc: BaseException | None, exhausted: bool) -> tuple[Response, str | None, str]:
        """What was seen, ``error.type`` (None: no error) and the ending."""
        accumulator = self._self_accumulator
        response = accumulator.response()
        if exc is not None:
            failure = self._self_failure(exc)
            return response, failure.error_type, failure.ending
        ended = stream_ending(response, accumulator.complete, exhausted, self._self_blind)
        return response, ended.error_type, ended.ending

    def __del__(self) -> None:
        try:
            self._self_end(None, exhausted=False)
        except Exception:  # a proxy whose construction failed has no call (nor stream) to end
            logger.debug("otel-sampling: could not end a collected stream's span", exc_info=True)

    def __copy__(self) -> Any:
        # A copy reads the same response but is not this call: hand back an uninstrumented copy.
        return copy.copy(self.__wrapped__)

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return copy.deepcopy(self.__wrapped__, memo)  # as __copy__; raises what the stream raises

    def __reduce_ex__(self, protocol: Any) -> Any:
        return self.__wrapped__.__reduce_ex__(protocol)  # pickled as the stream (which refuses)

    def __reduce__(self) -> Any:
        return self.__wrapped__.__reduce__()


class StreamProxy(_StreamProxyBase):
    """Proxy for a synchronous stream (``anthropic.Stream``, ``openai.Stream``)."""

    # wrapt's proxy defines every special method for any proxied object; a sync stream has no async
    # context manager protocol. None is Python's "operation not available": `async with` raises
    # TypeError and the contextlib ABCs say no, as for the stream itself.
    __aenter__ = None  # type: ignore[assignment]  # None on purpose: see above
    __aexit__ = None  # type: ignore[assignment]  # None on purpose: see above

    def __init__(self, stream: Any, call: ProviderCall, accumulator: Accumulator,
                 failure: Callable[[BaseException], Failure]) -> None:
        super().__init__(stream, call, accumulator, failure)
        self._self_next = _step(stream, "__iter__", "__next__")

    def __iter__(self) -> StreamProxy:
        return self

    def __next__(self) -> Any:
        alone = not self._self_reading
        self._self_reading += 1
        try:
            event = self._self_next()
        except StopIteration:
            self._self_end(None, exhausted=True)
            raise
        except BaseException as exc:
            if alone:
                self._self_end(exc, exhausted=False)
            raise
        finally:
            self._self_reading -= 1
        try:
            if self._self_first:
                self._self_first_event()
            self._self_accumulator.observe(event)
        except Exception:  # noqa: BLE001 - an event we cannot read: the stream goes on, the call ends unreadable
            self._self_unreadable()
        return event

    def __enter__(self) -> StreamProxy:
        self.__wrapped__.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> Any:
        try:
            return self.__wrapped__.__exit__(*exc_info)
        finally:
            self._self_end(None, exhausted=False)

    def close(self) -> Any:
        try:
            return self.__wrapped__.close()
        finally:
            self._self_end(None, exhausted=False)


class AsyncStreamProxy(_StreamProxyBase):
    """Proxy for an asynchronous stream (``anthropic.AsyncStream``, ``openai.AsyncStream``)."""

    # As on StreamProxy: an async stream is neither a sync context manager nor iterable.
    __enter__ = None  # type: ignore[assignment]  # None on purpose: see above
    __exit__ = None  # type: ignore[assignment]  # None on purpose: see above
    __iter__ = None  # type: ignore[assignment]  # None on purpose: see above

    def __init__(self, stream: Any, call: ProviderCall, accumulator: Accumulator,
                 failure: Callable[[BaseException], Failure]) -> None:
        super().__init__(stream, call, accumulator, failure)
        self._self_next = _step(stream, "__aiter__", "__anext__")

    def __aiter__(self) -> AsyncStreamProxy:
        return self

    async def __anext__(self) -> Any:
        alone = not self._self_reading
        self._self_reading += 1
        try:
            event = await self._self_next()
        except StopAsyncIteration:
            self._self_end(None, exhausted=True)
            raise
        except BaseException as exc:
            if alone:
                self._self_end(exc, exhausted=False)
            raise
        finally:
            self._self_reading -= 1
        try:
            if self._self_first:
                self._self_first_event()
            self._self_accumulator.observe(event)
        except Exception:  # noqa: BLE001 - an event we cannot read: the stream goes on, the call ends unreadable
            self._self_unreadable()
        return event

    async def __aenter__(self) -> AsyncStreamProxy:
        await self.__wrapped__.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> Any:
        try:
            return await self.__wrapped__.__aexit__(*exc_info)
        finally:
            self._self_end(None, exhausted=False)

    async def close(self) -> Any:
        try:
            return await self.__wrapped__.close()
        finally:
            self._self_end(None, exhausted=False)

    @property
    def aclose(self) -> Any:
        # openai's AsyncStream.aclose() calls its own close(), past the proxy's. A property, so that
        # a stream without aclose (anthropic's) still has none: the lookup raises AttributeError.
        wrapped_aclose = self.__wrapped__.aclose

        async def aclose() -> Any:
            try:
                return await wrapped_aclose()
            finally:
                self._self_end(None, exhausted=False)

        return aclose
