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

Each event's time goes to the call's ``chunk_times`` (the first fixes its time to first chunk).
``iter(proxy)`` (``aiter``) is a generator of its own over the stream's events, as the SDK
stream's ``__iter__`` (``__aiter__``) is, and ``next(proxy)`` (``anext``) reads the same events.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Protocol

import wrapt

from otel_sampling.records.provider_call import MAX_CHUNK_TIMES, ProviderCall
from otel_sampling.rules import endings
from otel_sampling.rules.endings import fallback_failure, stream_ending
from otel_sampling.rules.values import Failure, Response

logger = logging.getLogger(__name__)
UNREADABLE = "otel-sampling: could not read a stream event"


class Accumulator(Protocol):
    """Reads a stream's events. An accumulator may also have ``skipped_events``: the ``type`` of
    events it reads nothing from (a frozenset, or None: it reads every event), which the proxy
    then does not hand it (no Python call per such event)."""

    complete: bool

    def observe(self, event: Any) -> None: ...

    def response(self) -> Response: ...


class UnreadEvents(ValueError):
    """Raised by an accumulator's ``response()`` when an event it kept unread could not be read
    once it came to read it: ``response`` is what the other events said. The stream is then read
    blind, as when an event cannot be read as it comes."""

    def __init__(self, response: Response) -> None:
        super().__init__("a stream event could not be read")
        self.response = response


def _step(stream: Any, iterate: str, step: str) -> Any:
    """What reads the next event: the step of the stream's own iterator (``iter(stream).__next__``;
    the SDK streams' ``__iter__`` reads what their ``__next__`` reads, and resuming that generator
    costs less than a call of ``__next__`` per event), else the stream's own step (None: not readable)."""
    iterate_method = getattr(stream, iterate, None)
    if iterate_method is None:
        return getattr(stream, step, None)
    return getattr(iterate_method(), step)


def _in_use(step: Any) -> bool:
    """Whether another reader is inside the stream now: the ``gi_running`` (``ag_running``) of the
    generator whose step reads the events (a thread blocked in it, a task awaiting in it); never,
    for a stream read by its own ``__next__``. Asked only when reading raised: a second reader gets
    the generator's "already executing" error while the first goes on, which is not the stream's end."""
    generator = getattr(step, "__self__", None)
    for flag in ("gi_running", "ag_running"):
        if isinstance(running := getattr(generator, flag, None), bool):
            return running
    return False


class _Reading:
    """One stream's call and what its events showed so far: the per-event path reads this plain
    object, not the proxy (whose every attribute access goes through wrapt's forwarding)."""

    __slots__ = ("call", "accumulator", "failure", "step", "blind", "times", "skipped")

    def __init__(
        self,
        call: ProviderCall | None,
        accumulator: Accumulator,
        failure: Callable[[BaseException], Failure],
        step: Any,
    ) -> None:
        self.call = call  # None once ended
        self.accumulator = accumulator
        self.failure = failure
        self.step = step  # reads the SDK stream's next event (:func:`_step`)
        self.blind = False  # an event could not be read: "no terminal event" would be our guess
        # The call's event times (ProviderCall.chunk_times), appended to here as events come.
        self.times: list[float] = call.chunk_times if call is not None else []
        skipped = getattr(accumulator, "skipped_events", None)
        # Event types not handed to the accumulator (it reads nothing from them), or None.
        self.skipped: frozenset[str] | None = skipped if isinstance(skipped, frozenset) and skipped else None

    def read(self) -> Any:
        """``next(stream)``: the next event (seen by the accumulator), or what the stream raised
        (``StopIteration`` at its end); the call ends with how the stream ended."""
        try:
            event = self.step()
        except StopIteration:
            self.end(None, exhausted=True)
            raise
        except BaseException as exc:
            if not self.in_use():
                self.end(exc, exhausted=False)
            raise
        self.observe(event)
        return event

    def in_use(self) -> bool:
        """Another reader is inside the stream now (:func:`_in_use`)."""
        return _in_use(self.step)

    async def read_async(self) -> Any:
        """``await anext(stream)``: as :meth:`read`, ``StopAsyncIteration`` at the end."""
        try:
            event = await self.step()
        except StopAsyncIteration:
            self.end(None, exhausted=True)
            raise
        except BaseException as exc:
            if not self.in_use():
                self.end(exc, exhausted=False)
            raise
        self.observe(event)
        return event

    def observe(self, event: Any) -> None:
        try:
            if len(self.times) < MAX_CHUNK_TIMES:
                self.times.append(time.perf_counter())
            skipped = self.skipped  # types it reads nothing from; a type that is not a str is read
            if skipped is None or type(kind := getattr(event, "type", None)) is not str or kind not in skipped:
                self.accumulator.observe(event)
        except Exception:  # an event we cannot read: the stream goes on, the call ends unreadable
            self.blind = True
            logger.debug(UNREADABLE, exc_info=True)

    def end(self, exc: BaseException | None, exhausted: bool) -> None:
        """End the call once (later calls do nothing): with ``exc`` raised by the stream, else as
        exhausted (read to its end) or not (closed or dropped before)."""
        call, self.call = self.call, None
        if call is None:
            return
        error_type: str | None
        try:  # what was seen, error.type (None: no error) and the ending
            try:
                response = self.accumulator.response()
            except UnreadEvents as unread:
                logger.debug(UNREADABLE, exc_info=True)
                self.blind, response = True, unread.response
            if exc is not None:
                error_type, ending = self.failure(exc)
            else:
                ended = stream_ending(response, self.accumulator.complete, exhausted, self.blind)
                error_type, ending = ended.error_type, ended.ending
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


def _events(proxy: StreamProxy) -> Iterator[Any]:
    """``iter(proxy)``: a generator over the stream's events, as the SDK stream's ``__iter__`` is
    (its frame holds the proxy: a stream being read is not collected, so its call not ended).

    What :meth:`_Reading.read` does, written out in this one frame: it is the only Python frame
    the proxy adds per event (beside the accumulator's reading of it)."""
    reading: _Reading = proxy._self_reading
    step, observe, skipped, times = reading.step, reading.accumulator.observe, reading.skipped, reading.times
    while True:
        try:
            event = step()
        except StopIteration:
            reading.end(None, exhausted=True)
            return
        except BaseException as exc:
            if not reading.in_use():
                reading.end(exc, exhausted=False)
            raise
        try:
            if len(times) < MAX_CHUNK_TIMES:  # the time to first chunk, then the gaps (time per output chunk)
                times.append(time.perf_counter())
            if skipped is None or type(kind := getattr(event, "type", None)) is not str or kind not in skipped:
                observe(event)
        except Exception:  # as in _Reading.observe
            reading.blind = True
            logger.debug(UNREADABLE, exc_info=True)
        yield event


async def _async_events(proxy: AsyncStreamProxy) -> AsyncIterator[Any]:
    """``aiter(proxy)``: as :func:`_events`, an async generator as the SDK stream's ``__aiter__`` is."""
    reading: _Reading = proxy._self_reading
    step, observe, skipped, times = reading.step, reading.accumulator.observe, reading.skipped, reading.times
    while True:
        try:
            event = await step()
        except StopAsyncIteration:
            reading.end(None, exhausted=True)
            return
        except BaseException as exc:
            if not reading.in_use():
                reading.end(exc, exhausted=False)
            raise
        try:
            if len(times) < MAX_CHUNK_TIMES:  # the time to first chunk, then the gaps (time per output chunk)
                times.append(time.perf_counter())
            if skipped is None or type(kind := getattr(event, "type", None)) is not str or kind not in skipped:
                observe(event)
        except Exception:  # as in _Reading.observe
            reading.blind = True
            logger.debug(UNREADABLE, exc_info=True)
        yield event


# wrapt 1.x (still supported) cannot subscript ObjectProxy at run time, so no ObjectProxy[Any] here.
class _StreamProxyBase(wrapt.ObjectProxy):  # type: ignore[type-arg]
    _self_reading: _Reading  # set by each proxy's __init__

    def _self_end(self, exc: BaseException | None, exhausted: bool) -> None:
        self._self_reading.end(exc, exhausted)

    def __del__(self) -> None:
        try:
            self._self_reading.end(None, exhausted=False)
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

    def __init__(
        self, stream: Any, call: ProviderCall, accumulator: Accumulator, failure: Callable[[BaseException], Failure]
    ) -> None:
        super().__init__(stream)
        self._self_reading = _Reading(call, accumulator, failure, _step(stream, "__iter__", "__next__"))

    def __iter__(self) -> Iterator[Any]:
        return _events(self)

    def __next__(self) -> Any:
        return self._self_reading.read()

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

    def __init__(
        self, stream: Any, call: ProviderCall, accumulator: Accumulator, failure: Callable[[BaseException], Failure]
    ) -> None:
        super().__init__(stream)
        self._self_reading = _Reading(call, accumulator, failure, _step(stream, "__aiter__", "__anext__"))

    def __aiter__(self) -> AsyncIterator[Any]:
        return _async_events(self)

    async def __anext__(self) -> Any:
        return await self._self_reading.read_async()

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
