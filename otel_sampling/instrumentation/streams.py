"""Stream proxies that end a provider call's span exactly once, however the stream ends.

A proxy (``wrapt.ObjectProxy``, so every attribute and ``isinstance`` check passes through) feeds
each event to a provider-specific accumulator and ends the call:

* on exhaustion: success if the accumulator saw the terminal event, else ``incomplete_stream``;
* on an error while reading: ERROR with the error's ``error.type``; the same exception propagates;
* when the accumulator saw an error event the SDK yields instead of raising (its optional
  ``error_type``, openai's Responses ``error`` / ``response.failed``): ERROR with that type;
* on ``close()`` / ``aclose()`` / ``__exit__`` / ``__aexit__`` / garbage collection before the end:
  the partial response seen so far, no error (the caller chose to stop).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from typing import Any, Protocol

import wrapt

from otel_sampling import names
from otel_sampling.provider_call import ProviderCall, Response

logger = logging.getLogger(__name__)


class Accumulator(Protocol):
    complete: bool

    def observe(self, event: Any) -> None: ...

    def response(self) -> Response: ...


class _StreamProxyBase(wrapt.ObjectProxy):  # type: ignore[misc]
    def __init__(self, stream: Any, call: ProviderCall, accumulator: Accumulator,
                 error_type: Callable[[BaseException], str]) -> None:
        super().__init__(stream)
        self._self_call: ProviderCall | None = call
        self._self_accumulator = accumulator
        self._self_error_type = error_type

    def _self_observe(self, event: Any) -> None:
        try:
            self._self_accumulator.observe(event)
        except Exception:
            logger.debug("otel-sampling: could not read a stream event", exc_info=True)

    def _self_end(self, exc: BaseException | None, exhausted: bool) -> None:
        call, self._self_call = self._self_call, None
        if call is None:
            return
        try:
            accumulator = self._self_accumulator
            if exc is not None:
                error_type: str | None = self._self_error_type(exc)
            elif (event_error := getattr(accumulator, "error_type", None)) is not None:
                error_type = event_error  # an error the provider sent as an event, which the SDK yields
            elif exhausted and not accumulator.complete:
                error_type = names.ERROR_TYPE_INCOMPLETE_STREAM
            else:
                error_type = None
            call.end(accumulator.response(), error_type)
        except Exception:
            logger.debug("otel-sampling: could not end a stream's span", exc_info=True)

    def __del__(self) -> None:
        self._self_end(None, exhausted=False)

    def __copy__(self) -> Any:
        # A copy reads the same response but is not this call: hand back an uninstrumented copy.
        return copy.copy(self.__wrapped__)


class StreamProxy(_StreamProxyBase):
    """Proxy for a synchronous stream (``anthropic.Stream``)."""

    def __iter__(self) -> StreamProxy:
        return self

    def __next__(self) -> Any:
        try:
            event = self.__wrapped__.__next__()
        except StopIteration:
            self._self_end(None, exhausted=True)
            raise
        except BaseException as exc:
            self._self_end(exc, exhausted=False)
            raise
        self._self_observe(event)
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
    """Proxy for an asynchronous stream (``anthropic.AsyncStream``)."""

    def __aiter__(self) -> AsyncStreamProxy:
        return self

    async def __anext__(self) -> Any:
        try:
            event = await self.__wrapped__.__anext__()
        except StopAsyncIteration:
            self._self_end(None, exhausted=True)
            raise
        except BaseException as exc:
            self._self_end(exc, exhausted=False)
            raise
        self._self_observe(event)
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
