"""The call wrappers every provider SDK shares (each SDK module supplies a :class:`ProviderState`);
:func:`guarded`, the one guard every wrapper (MCP and provider alike) calls our code through; and
:data:`instrumentation_enabled`, the suppression check every wrapper runs on every call.

A wrapped call starts a :class:`~otel_sampling.records.provider_call.ProviderCall` (current while the SDK
sends the request), then ends it with the parsed response, hands it to a stream proxy, or ends
it with the error. The result or exception reaches the caller unchanged (same object).

Raw responses (``with_raw_response`` / ``with_streaming_response``) reach the caller untouched:
a body the SDK already read is decoded by us from its bytes (the caller's ``.parse()`` cache is
not filled); a body not read yet (a streaming response, or SSE) is left alone and the call ends
when the caller parses it (the SDK's ``_parse``, wrapped through :func:`parse_wrapper`: a parsed
stream is proxied like any stream), or, if never parsed, when the caller closes the response
(:func:`close_wrapper`; leaving a ``with_streaming_response`` block does) or it is collected.

Suppressed instrumentation (``opentelemetry.instrumentation.utils.suppress_instrumentation``): a
call made inside it passes straight through (no span, no metric point, no proxy, no headers). The
wrappers that only end a call (``_parse``, ``close``) have nothing to end for such a call; a call
made outside it ends as usual even when its body is read inside.

Served model from a gateway's header: a gateway that serves another model than asked while its
body echoes the request names the served model in a response header; the first header of
``OTEL_SAMPLING_SERVED_MODEL_HEADERS`` (``settings.served_model_headers``) the response carries
is the call's served model. The headers are read where the SDK already holds the HTTP response,
without another request: its ``_parse`` (every parsed answer and stream goes through it, inside
``request``, while the call is ``state.current_call``) and a raw response handed to the caller.

Trace context: an SDK that does not send it itself (``ProviderState.inject_trace_context``) gets the
global propagator's headers for our span on the request options (a copy: the caller's options and
header dict are left as they were); a header the caller set on the call is kept.
"""

from __future__ import annotations

import copy
import importlib
import json
import logging
import operator
import os
import weakref
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any, ClassVar, NamedTuple, TypeVar, overload

from opentelemetry import context as otel_context
from opentelemetry import propagate
from opentelemetry.context.contextvars_context import ContextVarsRuntimeContext
from opentelemetry.instrumentation import utils as instrumentation_utils
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_sampling import drills, names
from otel_sampling import state as _state
from otel_sampling.content import Content, capture_mode
from otel_sampling.drills import Drill
from otel_sampling.instrumentation.call_answers import CheckedAccumulator
from otel_sampling.instrumentation.streams import Accumulator, AsyncStreamProxy, StreamProxy
from otel_sampling.metrics import Instruments
from otel_sampling.records.call_signals import CallChecks
from otel_sampling.records.failover import FailoverTracker
from otel_sampling.records.provider_call import ProviderCall
from otel_sampling.rules.call_checks import context_length_error
from otel_sampling.rules.endings import error_type_of, failure_of, fallback_failure
from otel_sampling.rules.values import Failure, Response

logger = logging.getLogger(__name__)

# ---------------------------------------------------------------------- the guard
# The boundary between a wrapper and our own code: a failure of ours never reaches the host. Every
# wrapper of the target tables (MCP and provider SDKs alike) calls into our code through
# :func:`guarded`. An exception raised there is logged at DEBUG (``otel-sampling: could not
# <step>``, with its traceback) and the wrapper goes on with the step's fallback value; the host's
# own call, what it returns and what it raises, is never inside the guard. ``BaseException`` that
# is not an ``Exception`` (a cancellation, ``KeyboardInterrupt``) is not ours to stop: it propagates.
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


# ---------------------------------------------------------------------- the suppression check
# is_instrumentation_enabled() reads the current context twice (once per key suppress_instrumentation()
# sets), each read three frames deep. instrumentation_enabled reads it once, straight from the
# ContextVar of OpenTelemetry's default runtime context (what opentelemetry.context.get_current()
# returns), and looks both keys up in it. The layout is checked once, here: with another runtime
# context (OTEL_PYTHON_CONTEXT) the context is read through get_current(); without the keys where
# this opentelemetry version keeps them, instrumentation_enabled is is_instrumentation_enabled itself.
# It lives beside the guard: every wrapper calls both, so neither is a hop into another module.
_SUPPRESSED: str = getattr(otel_context, "_SUPPRESS_INSTRUMENTATION_KEY", None) or ""
_SUPPRESSED_PLAIN: str = getattr(instrumentation_utils, "_SUPPRESS_INSTRUMENTATION_KEY_PLAIN", None) or ""


def _context_reader() -> Callable[[], Any]:
    """What returns the current context: the default runtime context's ``ContextVar.get`` (a C
    call), else ``opentelemetry.context.get_current``."""
    runtime = getattr(otel_context, "_RUNTIME_CONTEXT", None)
    variable = getattr(runtime, "_current_context", None)
    if type(runtime) is ContextVarsRuntimeContext and isinstance(variable, ContextVar):
        return variable.get
    return otel_context.get_current


_current_context = _context_reader()


def _enabled_in_one_read() -> bool:
    context = _current_context()
    return not (context.get(_SUPPRESSED) or context.get(_SUPPRESSED_PLAIN))


#: ``opentelemetry.instrumentation.utils.is_instrumentation_enabled()``: False inside
#: ``suppress_instrumentation()`` (or when either key it sets is set on its own), else True.
instrumentation_enabled: Callable[[], bool] = (
    _enabled_in_one_read if _SUPPRESSED and _SUPPRESSED_PLAIN else is_instrumentation_enabled
)


class Request(NamedTuple):
    """What a call asked for: model, token limit, whether streamed, the request body (the keyword
    arguments, or the JSON body) that content capture reads, the ``gen_ai.provider.name`` when
    it is not the SDK's own (anthropic's SDK talking to Bedrock: ``aws.bedrock``), further
    span attributes the SDK module knows from the request (openai's ``openai.api.type``), and
    ``deployment``: the model asked for is the caller's name for a deployment (Azure OpenAI), not
    a model name, so the served model is not compared with it; ``client_fallback``: the reason a
    client library's router made this call on a fallback model (LiteLLM), or None; ``effort``: the
    reasoning effort asked for when the SDK module reads it itself (anthropic's thinking budget,
    :func:`~otel_sampling.rules.effort.anthropic_effort`), else None: the
    ``gen_ai.request.reasoning.level`` among ``attributes`` is the call's effort."""

    model: Any
    max_tokens: Any
    stream: bool
    body: Any
    provider: str | None = None
    attributes: Mapping[str, Any] | None = None
    deployment: bool = False
    client_fallback: str | None = None
    effort: str | int | None = None


class ProviderState:
    """What the shared wrappers need to know about one SDK; subclasses set the class attributes.

    Attributes:
        provider: ``gen_ai.provider.name``, also the SDK's import name (``anthropic``, ``openai``).
        max_tokens_keys: request keywords holding the token limit, first found wins.
        envelope_fields: error-body fields that name the error, first set wins (``error.type``).
        response_type: dotted path, inside the SDK, of its parsed non-streamed response class.
        response_of: parsed response -> :class:`~otel_sampling.rules.values.Response`.
        output_of: ``(parsed response, its Response)`` -> output messages in the GenAI semconv
            shape, for content capture (None: this SDK captures no output).
        accumulator: a new stream :class:`~otel_sampling.instrumentation.streams.Accumulator`.
        accumulator_captures: the accumulator takes ``capture=True`` (content capture is on) and
            then fills ``Response.output``.
        extra_response_types: further parsed response classes (anthropic's beta ``BetaMessage``).
        raw_response_type: dotted path of the SDK's raw response base class (``with_raw_response``).
        extra_raw_response_types: further raw response classes (openai's ``with_raw_response``
            returns its ``LegacyAPIResponse``, ``with_streaming_response`` an ``APIResponse``).
        inject_trace_context: the SDK sends no trace context of its own (openai), so the request
            carries the global propagator's headers for our span (unless
            ``OTEL_SAMPLING_OMIT_PROVIDER_TRACE_CONTEXT`` is ``true``: ``propagates``, set per ``instrument()``).
        drill_answers: a drill's failure (``names.DRILL_FAILURES`` but ``timeout``) -> the HTTP
            status and error type the provider answers it with (its body: :meth:`error_body`).
        handles_upstream: a client library over another SDK (LiteLLM) whose adapter puts the trace
            context on the request it sends upstream and reads the served model from its answer:
            the upstream SDK's hooks (openai's headers and served-model header read) leave the
            call alone (``ProviderCall.handles_upstream``).
        http_library: the import name of the SDK's HTTP library (``httpx2``; openai 2.x: ``httpx``),
            whose raw errors can escape mid-stream and whose types build a drill's answer.

    Overridable: :meth:`request_of` (what a wrapped call asked for; None: not a call we trace),
    :meth:`input_content` (content capture of the request), :meth:`server_of`, :meth:`decode_raw`,
    :meth:`new_accumulator` (an SDK whose endpoints stream different events picks by stream),
    :meth:`bind_sdk` (an SDK not laid out as anthropic's and openai's), :meth:`with_trace_context`.
    Set per ``instrument()``: ``capture`` (the content capture mode, from the environment),
    ``propagates`` (requests carry our trace context), ``failovers`` (the failover memory),
    ``pending`` (raw responses not parsed yet).
    """

    provider: str
    max_tokens_keys: tuple[str, ...]
    envelope_fields: tuple[str, ...] = ("type",)
    response_type: str
    response_of: Callable[[Any], Response]
    output_of: Callable[[Any, Response], list[Any]] | None = None
    accumulator: Callable[..., Accumulator]
    accumulator_captures: bool = False
    extra_response_types: tuple[str, ...] = ()
    raw_response_type: str = "_response.BaseAPIResponse"
    extra_raw_response_types: tuple[str, ...] = ()
    inject_trace_context: bool = False
    handles_upstream: bool = False
    drill_answers: ClassVar[Mapping[str, tuple[int, str]]] = {}
    http_library: str = "httpx2"
    ask_keys: frozenset[str] = frozenset()

    def checks_of(self, body: Any) -> CallChecks | None:
        """What a request whose body has one of ``ask_keys`` asked for, with its answer's reader
        (:mod:`~otel_sampling.instrumentation.call_answers`); None: nothing to check."""
        return None

    def __init__(self, instruments: Instruments) -> None:
        self.instruments = instruments
        self.capture = capture_mode(os.environ)
        self.captures = bool(self.capture.span or self.capture.event)  # whether content is captured at all
        self.propagates = self.inject_trace_context and instruments.settings.propagate_to_provider
        # The last client base URL read and its server: a client's URL is one immutable object,
        # read on every call; its host and port are Python properties (IDNA decoding).
        self._last_server: tuple[Any, tuple[str, int | None] | None] = (object(), None)
        self.failovers = FailoverTracker()
        self.served_model_headers = instruments.settings.served_model_headers
        self.served_model_keys = frozenset(name.encode("ascii") for name in self.served_model_headers)
        # Raw responses whose body is not read yet -> their call (ended at parse or collection).
        self.pending: weakref.WeakKeyDictionary[Any, ProviderCall] = weakref.WeakKeyDictionary()
        # Whether a raw response was ever pending: until then the wrappers of ``_parse`` and ``close``
        # do not ask ``pending`` (its length is a Python call).
        self.had_pending = False
        self.drill_schedules = instruments.settings.policy.drills
        self._httpx = importlib.import_module(self.http_library)
        self._url_type = self._httpx.URL
        self.bind_sdk()

    def bind_sdk(self) -> None:
        """Read the SDK's classes: by default the anthropic / openai layout (``Stream`` and
        ``AsyncStream``, ``APITimeoutError`` and ``APIConnectionError``, ``_models.construct_type``,
        the response classes named by the class attributes). An SDK laid out otherwise overrides it."""
        sdk = importlib.import_module(self.provider)
        self.response_class: tuple[type, ...] = tuple(
            operator.attrgetter(path)(sdk) for path in (self.response_type, *self.extra_response_types)
        )
        self.stream_types: tuple[type, type] = (sdk.Stream, sdk.AsyncStream)
        self.raw_response_classes: tuple[type, ...] = tuple(
            cls
            for path in (self.raw_response_type, *self.extra_raw_response_types)
            if (cls := _sdk_class(self.provider, path)) is not None
        )
        self._construct = importlib.import_module(f"{self.provider}._models").construct_type
        self._timeout_types: tuple[type, ...] = (sdk.APITimeoutError, self._httpx.TimeoutException)
        self._connection_types: tuple[type, ...] = (sdk.APIConnectionError, self._httpx.TransportError)
        self._sdk = sdk

    def drill_error(self, client: Any, options: Any, drill: Drill) -> BaseException:
        """The exception the SDK raises for ``drill.failure``, built as the SDK builds it: for a
        timeout its ``APITimeoutError(request=...)``; else an HTTP answer with the status and
        error body of ``drill_answers`` (its message names the drill; :meth:`error_body`) turned
        into an exception by the client's own
        ``_make_status_error_from_response``, so the class is the one a real
        answer gets (anthropic 529: ``OverloadedError``). The request is built, never sent."""
        url = client._prepare_url(options.url)
        request = self._httpx.Request(str(getattr(options, "method", "post")).upper(), url)
        if drill.failure == names.DRILL_FAILURE_TIMEOUT:
            timeout: BaseException = self._sdk.APITimeoutError(request=request)
            return timeout
        status, error_type = self.drill_answers[drill.failure]
        body = self.error_body(error_type, f"otel-sampling drill {drill.name!r}: {drill.failure}")
        response = self._httpx.Response(status, request=request, json=body)
        error: BaseException = client._make_status_error_from_response(response)
        return error

    def error_body(self, error_type: str, message: str) -> dict[str, Any]:
        """The provider's JSON error body for an error of ``error_type`` (a drill's answer)."""
        return {"error": {"type": error_type, "message": message}}

    def error_type(self, exc: BaseException) -> str:
        """``error.type`` of an exception raised by this SDK (:func:`~otel_sampling.rules.endings.error_type_of`)."""
        return error_type_of(exc, self._timeout_types, self._connection_types, self.envelope_fields)

    def failure(self, exc: BaseException) -> Failure:
        """``error.type`` and ending of an exception (:func:`~otel_sampling.rules.endings.failure_of`)."""
        return failure_of(exc, self._timeout_types, self._connection_types, self.envelope_fields)

    def request_of(self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Request | None:
        """A ``create``-style call: everything is a keyword argument."""
        max_tokens = next((kwargs[k] for k in self.max_tokens_keys if k in kwargs), None)
        return Request(kwargs.get("model"), max_tokens, kwargs.get("stream") is True, kwargs)

    def input_content(self, body: Any) -> Content | None:
        """System instructions and input messages of a request body (only called when capture is on)."""
        return None

    def with_trace_context(
        self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The wrapped call's arguments carrying the trace context of the current span (ours) when
        ``propagates``: by default the ``request(cast_to, options, ...)`` of both SDKs' clients."""
        return _with_trace_context(args, kwargs)

    def server_of(self, instance: Any) -> tuple[str, int | None] | None:
        url = getattr(instance, "base_url", None)  # the SDK client itself
        if url is None:  # a resource: its client's
            url = getattr(getattr(instance, "_client", None), "base_url", None)
        last_url, last_server = self._last_server
        if url is last_url:
            return last_server
        server = server_of_url(url)
        if isinstance(url, self._url_type):  # immutable: the same object, the same server
            self._last_server = (url, server)
        return server

    def new_accumulator(self, stream: Any) -> Accumulator:
        """A new accumulator for ``stream`` (the SDK's stream object, not read here)."""
        if self.captures and self.accumulator_captures:
            return self.accumulator(capture=True)
        return self.accumulator()

    def parsed(self, result: Any) -> Response:
        """What a parsed response reports; with content capture on, its output messages too."""
        response = self.response_of(result)
        if self.captures and self.output_of is not None:
            try:
                response = response._replace(output=self.output_of(result, response))
            except Exception:  # content is an extra: the model, usage and ending still count
                logger.debug("otel-sampling: could not capture a %s call's output", self.provider, exc_info=True)
        return response

    def decode_raw(self, raw: Any) -> Response | None:
        """The response in a raw response whose body the SDK already read (None: not decodable)."""
        data = json.loads(raw.http_response.content)
        return self.parsed(self._construct(type_=raw._cast_to, value=data))


MAX_REASONING_LEVEL_LENGTH = 32  # longer strings are not an effort level


def reasoning_level(body: Mapping[str, Any], *path: str) -> dict[str, str]:
    """``{gen_ai.request.reasoning.level: value}`` for the string at ``path`` in a request body
    (anthropic ``output_config.effort``, openai ``reasoning_effort`` / ``reasoning.effort``); empty
    when the request sets none, or sets something that is not a short string."""
    value: Any = body
    for key in path:
        # A dict first: the Mapping check is a Python-level ABC call.
        value = value.get(key) if type(value) is dict or isinstance(value, Mapping) else None
    if isinstance(value, str) and 0 < len(value) <= MAX_REASONING_LEVEL_LENGTH and value.isprintable():
        return {names.GEN_AI_REQUEST_REASONING_LEVEL: value}
    return {}


def request_options(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Mapping[str, Any]]:
    """The ``FinalRequestOptions`` and JSON body (``{}`` when none) of a call to both SDKs' client
    ``request(cast_to, options, *, stream=False, stream_cls=None)``: the body as sent, with the
    caller's ``extra_body`` (``options.extra_json``) over it, as the SDKs merge them."""
    options = args[1] if len(args) > 1 else kwargs.get("options")
    body = getattr(options, "json_data", None)
    # A dict first: the Mapping check is a Python-level ABC call, run on every provider call otherwise.
    if type(body) is not dict and not isinstance(body, Mapping):
        body = {}
    extra = getattr(options, "extra_json", None)
    if extra and isinstance(extra, Mapping):  # most calls have none: no ABC check then
        body = {**body, **extra}
    return options, body


def _with_trace_context(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments of the SDK's ``request(cast_to, options, ...)`` with a copy of ``options``
    whose headers add the global propagator's (``opentelemetry.propagate.inject``) for the current
    span, ours: the call is active. A header the caller set on the call (any case) is kept; the
    arguments as given when the propagator adds nothing new."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    positional = len(args) > 1
    options = args[1] if positional else kwargs["options"]
    headers = options.headers if isinstance(options.headers, Mapping) else {}  # NotGiven: none
    given = {key.lower() for key in headers}
    added = {key: value for key, value in carrier.items() if key.lower() not in given}
    if not added:
        return args, kwargs
    options = copy.copy(options)  # the SDK's pydantic model, shallow: the caller's dict stays theirs
    options.headers = {**headers, **added}
    return ((args[0], options, *args[2:]), kwargs) if positional else (args, {**kwargs, "options": options})


def _sdk_class(provider: str, path: str) -> type | None:
    """``{provider}.{module}.{Class}`` from ``module.Class``; None when this SDK version lacks it."""
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(f"{provider}.{module}"), name, None)


_DEFAULT_PORTS = {"https": 443, "http": 80}


def sequence(value: Any) -> list[Any] | tuple[Any, ...]:
    """``value`` when it is a list or tuple, else ``()``. Requests: the SDKs take any iterable in a
    body and copy it only after our wrapper ran, so reading a generator here would send it empty.
    Answers: the SDKs build them without validating, so a hostile ``"choices": true`` reaches us."""
    return value if isinstance(value, (list, tuple)) else ()


# What a JSON scalar or array reads as; anything else the SDKs built from JSON came as an object.
_NOT_OBJECTS = (str, int, float, bool, list, tuple, type(None))


def is_object(value: Any) -> bool:
    """``value`` came as a JSON object: the SDK made it a model, or left it a dict (it does not
    validate answers, so a field typed as a model may hold any JSON value). Judged by its type:
    ``isinstance`` of a model against each type it is not reads the model's ``__class__`` through
    pydantic's attribute hook (about 500 instructions a type)."""
    return not issubclass(type(value), _NOT_OBJECTS)


def member(answer: Any, name: str) -> Any:
    """``answer.name`` (``answer[name]`` for a dict) as the SDK built it from the JSON, None when
    absent: a model's field is in its instance dict, an undeclared member the SDK kept in its
    pydantic extras. Read there rather than with ``getattr``, for which pydantic's ``__getattr__``
    raises and catches an ``AttributeError`` when the name is neither (about 15k instructions): an
    answer without an ``error`` member, every successful one, is read that way."""
    if issubclass(type(answer), dict):
        return answer.get(name)
    fields = getattr(answer, "__dict__", None)
    if isinstance(fields, dict) and name in fields:
        return fields[name]
    extra = getattr(answer, "__pydantic_extra__", None)
    return extra.get(name) if isinstance(extra, dict) else None


def server_of_url(url: Any) -> tuple[str, int | None] | None:
    """``(server.address, server.port)`` of an ``httpx2.URL`` (None: no host)."""
    host = getattr(url, "host", None)
    if not host:
        return None
    port = getattr(url, "port", None)
    if port is None:
        port = _DEFAULT_PORTS.get(getattr(url, "scheme", ""))
    return host, port


def _start(state: ProviderState, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> ProviderCall | None:
    """The started, active call; None for a call we do not trace. The server and the input content
    are extras: when reading them fails (logged), the call is traced without them."""
    request = state.request_of(instance, args, kwargs)
    if request is None:
        return None
    model, max_tokens, stream, body, provider, attributes, deployment, client_fallback, effort = request
    content = guarded("capture a provider call's input", state.input_content, body) if state.captures else None
    try:  # not through guarded(): one guard frame per wrapper boundary, and this one is _start's
        server = state.server_of(instance)
    except Exception:
        logger.debug("otel-sampling: could not read a provider client's server", exc_info=True)
        server = None
    if effort is None and attributes:
        effort = attributes.get(names.GEN_AI_REQUEST_REASONING_LEVEL)
    call = ProviderCall(
        state.instruments,
        provider or state.provider,
        model,
        max_tokens,
        stream,
        server,
        capture=state.capture,
        input_content=content,
        failovers=state.failovers,
        extra_attributes=attributes,
        compare_models=not deployment,
        client_fallback=client_fallback,
        effort=effort,
    )
    if _asks(state.ask_keys, body):
        call.checks = guarded("read what a provider call asked for", state.checks_of, body)
    call.handles_upstream = state.handles_upstream
    call.activate()
    return call


def _asks(keys: frozenset[str], body: Mapping[str, Any]) -> bool:
    """Whether ``body`` gives one of ``keys`` a JSON object or array that is not empty: a body may
    carry an argument the caller left out as the SDK's sentinel (anthropic's ``omit``) or as an
    empty object (google-genai's ``generationConfig``), so a key alone says nothing."""
    # A loop, truthiness first: anthropic's body holds every key, most as its omit sentinel (false),
    # which an isinstance() check reads the __class__ of; map()s in C cost more here.
    for key in keys:
        value = body.get(key)
        if value and isinstance(value, (list, dict)):
            return True
    return False


def _drill_error(
    state: ProviderState, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any], call: ProviderCall
) -> BaseException | None:
    """The exception a running drill fails this call with (None: no drill targets its model)."""
    drill = drills.failure_for(call.request_model)
    if drill is None:
        return None
    options, _ = request_options(args, kwargs)
    return state.drill_error(instance, options, drill)


def _drilled(
    state: ProviderState, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any], call: ProviderCall
) -> BaseException | None:
    """Follow the policy's drill schedule, then the exception a drill fails this call with, if any.
    Called only when there is a schedule or a running drill (the wrappers check both first)."""
    if state.drill_schedules:
        guarded("follow the drill schedule", drills.follow_schedule, state.drill_schedules)
    if not _state.drills.running:
        return None
    return guarded("fail a provider call for a drill", _drill_error, state, instance, args, kwargs, call)


def _classify(state: ProviderState, call: ProviderCall, exc: BaseException) -> Failure:
    call.deactivate()
    return state.failure(exc)


def _fail(state: ProviderState, call: ProviderCall, exc: BaseException) -> None:
    """End the call with the SDK's exception; when classifying it failed (logged), with the fallback failure."""
    failure = guarded("classify a provider error", _classify, state, call, exc, fallback=fallback_failure(exc))
    guarded("tell a context-length error", _note_context_length, call, failure, exc)
    call.end(None, *failure)


def _note_context_length(call: ProviderCall, failure: Failure, exc: BaseException) -> None:
    """A provider error that says the input does not fit the model's context window is a truncation."""
    if context_length_error(failure.error_type, getattr(exc, "message", None)):
        if call.checks is None:
            call.checks = CallChecks()
        call.checks.context_too_long()


def _proxy_or_end(state: ProviderState, call: ProviderCall, result: Any, direct: bool = False) -> Any:
    """End the call (or hand it to a stream proxy or a raw response); return what the caller gets.
    A stream gets a proxy that ends the call; a parsed response ends it now.

    ``direct``: ``result`` is what the SDK's ``request`` returned (the call is still active, and
    may be a raw response), built from the body as the call's response type. The SDK hands a JSON
    body that is not an object (a list, a string, a number, null) back as it is: an answer that
    holds nothing, read as one. (A raw response's ``parse(to=...)`` may ask for any type: there a
    result of another type is an answer we did not read.)
    """
    # Judged by the result's type: isinstance() of a model against each class it is not an instance
    # of reads its __class__ again (is_object).
    kind = type(result)
    if direct:
        call.deactivate()
        if issubclass(kind, state.raw_response_classes):
            _raw(state, call, result)
            return result
    # The common case: a parsed answer of the response class itself, found without issubclass() (the
    # SDKs' models' metaclass is an ABCMeta: a Python-level check).
    if kind in state.response_class or issubclass(kind, state.response_class):
        if call.checks is not None:
            guarded("read a provider answer's tool calls", _read_answer, call.checks, result)
        call.end(state.parsed(result))
        return result
    sync_stream, async_stream = state.stream_types
    if issubclass(kind, sync_stream):
        return StreamProxy(result, call, _accumulator(state, call, result), state.failure)
    if issubclass(kind, async_stream):
        return AsyncStreamProxy(result, call, _accumulator(state, call, result), state.failure)
    read = direct and not is_object(result)
    if read and call.checks is not None:
        guarded("read a provider answer's tool calls", _read_answer, call.checks, result)
    call.end(state.parsed(result) if read else None)
    return result


def _read_answer(checks: CallChecks, result: Any) -> None:
    if checks.reader is not None:
        checks.answered(checks.reader.of(result))


def _read_raw_answer(checks: CallChecks, http_response: Any) -> None:
    """The answer of a raw response whose body the SDK read already, from its JSON (the readers
    read a JSON object as they read the SDK's model)."""
    if checks.reader is not None:
        checks.answered(checks.reader.of(json.loads(http_response.content)))


def _accumulator(state: ProviderState, call: ProviderCall, stream: Any) -> Accumulator:
    """The stream's accumulator; for a call with checks, one that also reads its tool calls and texts."""
    accumulator = state.new_accumulator(stream)
    checks = call.checks
    if checks is not None and checks.reader is not None:
        return CheckedAccumulator(accumulator, checks.reader.stream(), checks)
    return accumulator


# What guarded() gives back when :func:`_proxy_or_end` failed (logged): the caller then gets
# :func:`_handed`, the result itself, and the call ends without response details.
_NOT_HANDED = object()


def _handed(state: ProviderState, call: ProviderCall, result: Any) -> Any:
    _end_unseen(state, call)
    return result


_FIRST, _SECOND = operator.itemgetter(0), operator.itemgetter(1)


def _note_served_model(state: ProviderState, call: ProviderCall, http_response: Any) -> None:
    """The call's served model: what the first of ``state.served_model_headers`` (lower-cased
    header names, ASCII as HTTP's are) present in the response's headers (``httpx2.Headers``)
    names (stripped; an empty value names none), if any.

    Whether any is present is asked of the raw header names, lower-cased, in C (most answers carry
    none of these headers): reading a name that is absent through ``Headers`` scans and decodes
    them all, per name. The ``Headers``' own list (``_list``, the same in httpx and httpx2) holds
    each name lower-cased already; without it, the names of ``raw`` are lower-cased here."""
    headers = http_response.headers
    items = getattr(headers, "_list", None)
    names = map(_SECOND, items) if type(items) is list else map(bytes.lower, map(_FIRST, headers.raw))
    if state.served_model_keys.isdisjoint(names):
        return
    for name in state.served_model_headers:
        value = headers.get(name)
        if isinstance(value, str) and value.strip():
            call.note_served_model(value.strip())
            return


def _raw(state: ProviderState, call: ProviderCall, raw: Any) -> None:
    http = raw.http_response
    if state.served_model_headers:
        guarded("read a gateway's served-model header", _note_served_model, state, call, http)
    if not getattr(raw, "_is_sse_stream", False) and http.is_stream_consumed:
        response = state.decode_raw(raw)
        if call.checks is not None:
            guarded("read a provider answer's tool calls", _read_raw_answer, call.checks, http)
        call.end(response)
        return
    state.pending[raw] = call
    state.had_pending = True
    weakref.finalize(raw, _end_unseen, state, call)  # never parsed: ended when collected (a no-op once ended)


def create_wrapper(state: ProviderState) -> Callable[..., Any]:
    """wrapt wrapper for a synchronous call (``create``, or the SDK's ``request``)."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        # A call made while another provider call of ours is being sent (a client library that calls
        # a provider SDK underneath: LiteLLM's openai provider calls the openai SDK) is that call's
        # upstream request: the outer call owns its span, so it is not traced again.
        if not instrumentation_enabled() or _state.current_call.get() is not None:
            return wrapped(*args, **kwargs)
        call = guarded("start a provider call", _start, state, instance, args, kwargs)
        if call is None:
            return wrapped(*args, **kwargs)
        if state.drill_schedules or _state.drills.running:
            drilled = _drilled(state, instance, args, kwargs, call)
            if drilled is not None:  # the SDK's own exception, raised before any request is sent
                guarded("end a failed provider call", _fail, state, call, drilled)
                raise drilled
        if state.propagates:
            args, kwargs = guarded(
                "add the trace context to a provider request",
                state.with_trace_context,
                instance,
                args,
                kwargs,
                fallback=(args, kwargs),
            )
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            guarded("end a failed provider call", _fail, state, call, exc)
            raise
        handed = guarded("end a provider call", _proxy_or_end, state, call, result, True, fallback=_NOT_HANDED)
        return _handed(state, call, result) if handed is _NOT_HANDED else handed

    return wrapper


def async_create_wrapper(state: ProviderState) -> Callable[..., Any]:
    """wrapt wrapper for an ``async def`` call (``create``, or the SDK's ``request``)."""

    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        # (an upstream request of a call of ours passes through: see create_wrapper)
        if not instrumentation_enabled() or _state.current_call.get() is not None:
            return await wrapped(*args, **kwargs)
        call = guarded("start a provider call", _start, state, instance, args, kwargs)
        if call is None:
            return await wrapped(*args, **kwargs)
        if state.drill_schedules or _state.drills.running:
            drilled = _drilled(state, instance, args, kwargs, call)
            if drilled is not None:  # the SDK's own exception, raised before any request is sent
                guarded("end a failed provider call", _fail, state, call, drilled)
                raise drilled
        if state.propagates:
            args, kwargs = guarded(
                "add the trace context to a provider request",
                state.with_trace_context,
                instance,
                args,
                kwargs,
                fallback=(args, kwargs),
            )
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            guarded("end a failed provider call", _fail, state, call, exc)
            raise
        handed = guarded("end a provider call", _proxy_or_end, state, call, result, True, fallback=_NOT_HANDED)
        return _handed(state, call, result) if handed is _NOT_HANDED else handed

    return wrapper


def _end_unseen(state: ProviderState, call: ProviderCall) -> None:
    """End a call whose response we did not see (or could not read). Runs in the caller's
    ``close()``, at collection or in a wrapper: our failure (a raising span processor) is logged,
    never raised there."""
    guarded("end a provider call", call.end, None)


def _end_unparsed(state: ProviderState, raw: Any) -> None:
    call = state.pending.pop(raw, None) if state.had_pending and state.pending else None
    if call is not None:
        _end_unseen(state, call)  # closed without being parsed: whatever the caller read, we did not see it


def finally_wrappers(
    step: str, end: Callable[[ProviderState, Any], None]
) -> tuple[Callable[[ProviderState], Callable[..., Any]], Callable[[ProviderState], Callable[..., Any]]]:
    """wrapt wrapper factories, for a method and for an ``async def`` one, that run
    ``end(state, instance)`` once the method returned or raised (through :func:`guarded`, as ``step``)."""

    def factory(state: ProviderState) -> Callable[..., Any]:
        def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            try:
                return wrapped(*args, **kwargs)
            finally:
                guarded(step, end, state, instance)

        return wrapper

    def async_factory(state: ProviderState) -> Callable[..., Any]:
        async def wrapper(
            wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
        ) -> Any:
            try:
                return await wrapped(*args, **kwargs)
            finally:
                guarded(step, end, state, instance)

        return wrapper

    return factory, async_factory


# A raw response's ``close`` (sync and async; ``with_streaming_response`` leaving its ``with``
# block): a call whose body was never parsed ends here, without response details.
close_wrapper, async_close_wrapper = finally_wrappers("end a raw response's call", _end_unparsed)


def parse_wrapper(state: ProviderState) -> Callable[..., Any]:
    """wrapt wrapper for a raw response's ``_parse`` (sync in both SDKs, also behind ``async parse``):
    ends the call of a raw response whose body was not read when the call returned; inside a call's
    ``request``, reads the served-model headers of the answer the SDK is parsing."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        call = state.pending.pop(instance, None) if state.had_pending and state.pending else None
        if call is None:
            current = _state.current_call.get() if state.served_model_headers else None
            # The answer of the call being sent: its headers may name the served model.
            if current is not None and not current.handles_upstream:
                guarded(
                    "read a gateway's served-model header",
                    _note_served_model,
                    state,
                    current,
                    getattr(instance, "http_response", None),
                )
            return wrapped(*args, **kwargs)
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            guarded("end a failed provider call", _fail, state, call, exc)
            raise
        handed = guarded("end a provider call", _proxy_or_end, state, call, result, False, fallback=_NOT_HANDED)
        return _handed(state, call, result) if handed is _NOT_HANDED else handed

    return wrapper
