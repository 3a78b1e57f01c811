"""The create-call wrappers every provider SDK shares; each SDK module supplies a :class:`ProviderState`.

A wrapped ``create`` starts a :class:`~otel_sampling.provider_call.ProviderCall` (current while the
SDK sends the request), then ends it with the parsed response, hands it to a stream proxy, or ends
it with the error. The result or exception reaches the caller unchanged.
"""

from __future__ import annotations

import importlib
import logging
import operator
from collections.abc import Callable
from typing import Any

from otel_sampling.instrumentation.streams import Accumulator, AsyncStreamProxy, StreamProxy
from otel_sampling.instruments import Instruments
from otel_sampling.provider_call import ProviderCall, Response, error_type_of

logger = logging.getLogger(__name__)


class ProviderState:
    """What the shared wrappers need to know about one SDK; subclasses set the class attributes.

    Attributes:
        provider: ``gen_ai.provider.name``, also the SDK's import name (``anthropic``, ``openai``).
        max_tokens_keys: request keywords holding the token limit, first found wins.
        envelope_fields: error-body fields that name the error, first set wins (``error.type``).
        response_type: dotted path, inside the SDK, of its parsed non-streamed response class.
        response_of: parsed response -> :class:`~otel_sampling.provider_call.Response`.
        accumulator: a new stream :class:`~otel_sampling.instrumentation.streams.Accumulator`.
    """

    provider: str
    max_tokens_keys: tuple[str, ...]
    envelope_fields: tuple[str, ...] = ("type",)
    response_type: str
    response_of: Callable[[Any], Response]
    accumulator: Callable[[], Accumulator]

    def __init__(self, instruments: Instruments) -> None:
        import httpx2  # both SDKs' HTTP library; raw httpx2 errors can escape mid-stream

        sdk = importlib.import_module(self.provider)
        self.instruments = instruments
        self.response_class: type = operator.attrgetter(self.response_type)(sdk)
        self.stream_types: tuple[type, type] = (sdk.Stream, sdk.AsyncStream)
        self._timeout_types = (sdk.APITimeoutError, httpx2.TimeoutException)
        self._connection_types = (sdk.APIConnectionError, httpx2.TransportError)

    def error_type(self, exc: BaseException) -> str:
        """``error.type`` of an exception raised by this SDK (:func:`~otel_sampling.provider_call.error_type_of`)."""
        return error_type_of(exc, self._timeout_types, self._connection_types, self.envelope_fields)


def server_of(resource: Any) -> tuple[str, int | None] | None:
    """``(server.address, server.port)`` from the SDK client's ``base_url``."""
    url = getattr(getattr(resource, "_client", None), "base_url", None)
    host = getattr(url, "host", None)
    if not host:
        return None
    port = getattr(url, "port", None)
    if port is None:
        port = {"https": 443, "http": 80}.get(getattr(url, "scheme", ""), None)
    return host, port


def _start(state: ProviderState, resource: Any, kwargs: dict[str, Any]) -> ProviderCall | None:
    try:
        max_tokens = next((kwargs[k] for k in state.max_tokens_keys if k in kwargs), None)
        call = ProviderCall(state.instruments, state.provider, kwargs.get("model"), max_tokens,
                            kwargs.get("stream") is True, server_of(resource))
        call.activate()
        return call
    except Exception:
        logger.debug("otel-sampling: could not start the %s call", state.provider, exc_info=True)
        return None


def _fail(state: ProviderState, call: ProviderCall, exc: BaseException) -> None:
    try:
        call.deactivate()
        call.end(None, state.error_type(exc))
    except Exception:
        logger.debug("otel-sampling: could not end the %s call", state.provider, exc_info=True)


def _succeed(state: ProviderState, call: ProviderCall, result: Any) -> Any:
    """End the call (or hand it to a stream proxy); return what the caller gets."""
    try:
        call.deactivate()
        sync_stream, async_stream = state.stream_types
        if isinstance(result, sync_stream):
            return StreamProxy(result, call, state.accumulator(), state.error_type)
        if isinstance(result, async_stream):
            return AsyncStreamProxy(result, call, state.accumulator(), state.error_type)
        # A raw response (with_raw_response) is ended without reading its body.
        call.end(state.response_of(result) if isinstance(result, state.response_class) else None)
    except Exception:
        logger.debug("otel-sampling: could not end the %s call", state.provider, exc_info=True)
    return result


def create_wrapper(state: ProviderState):
    """wrapt wrapper for a synchronous ``create``."""

    def wrapper(wrapped, instance, args, kwargs):
        call = _start(state, instance, kwargs)
        if call is None:
            return wrapped(*args, **kwargs)
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            _fail(state, call, exc)
            raise
        return _succeed(state, call, result)

    return wrapper


def async_create_wrapper(state: ProviderState):
    """wrapt wrapper for an ``async def create``."""

    async def wrapper(wrapped, instance, args, kwargs):
        call = _start(state, instance, kwargs)
        if call is None:
            return await wrapped(*args, **kwargs)
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            _fail(state, call, exc)
            raise
        return _succeed(state, call, result)

    return wrapper
