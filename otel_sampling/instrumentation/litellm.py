"""LiteLLM instrumentation (entry point ``otel_sampling_litellm``).

One GenAI inference span ``chat {model}`` (kind CLIENT) per upstream attempt, whatever the call
shape, sync and async: ``litellm.completion`` / ``acompletion`` (streamed too), ``litellm.responses``
/ ``aresponses``, and every ``litellm.Router`` endpoint built on them. Endings, cost, time to first
chunk, degraded mode, failover and content capture come from the shared machinery
(:mod:`otel_sampling.instrumentation._provider`).

Wrap point: the package's functions ``litellm.completion``, ``acompletion``, ``responses`` and
``aresponses``: the public entry points, which pick LiteLLM's native (Rust) path or its Python one
(``litellm.main``, not wrapped: LiteLLM's package functions hold it from their import on, so a
wrapper there could not be taken off again, and they reach it only through the wrapped entry
points, or from LiteLLM's own helpers such as ``text_completion``, which are not traced). A ``Router`` runs
each attempt by looking ``litellm.<endpoint>`` up at call time (its host's ``invoke``), so each
attempt, retries and fallback hops included, is one call to a wrapped function: one span. A
retry LiteLLM runs inside one call (its ``num_retries`` argument, the openai SDK's ``max_retries``
underneath) stays inside that call's span, as the SDKs' own retries do in the other instrumentors.
A host that binds ``from litellm import completion`` before ``instrument()`` keeps the unwrapped
function: instrument first (``opentelemetry-instrument`` does).

A call given one of LiteLLM's test doubles (``mock_response``, ``mock_tool_calls``, ``mock_timeout``)
sends nothing upstream: it makes no span.

One call, one span: LiteLLM calls some providers through the openai SDK (``openai/...``, Azure,
and the OpenAI-compatible ones). The LiteLLM span owns the attempt: a provider SDK call made while
one of our calls is being sent is not traced again (the rule is in ``_provider``), so with the
openai instrumentor also loaded there is still one span per attempt, named with the provider
LiteLLM resolved rather than ``openai``.

``gen_ai.provider.name``: the provider LiteLLM resolves for the call (``litellm.get_llm_provider``:
the ``custom_llm_provider`` argument, else the model's ``provider/`` prefix, else LiteLLM's own
model table), as the GenAI semconv well-known value where one exists (:data:`PROVIDERS`:
``openai``, ``anthropic``, ``azure`` → ``azure.ai.openai``, ``gemini`` → ``gcp.gemini``,
``vertex_ai`` → ``gcp.vertex_ai``, ``bedrock`` → ``aws.bedrock``...), else LiteLLM's own id
(``ollama``, ``openrouter``, ``together_ai``: the ``LlmProviders`` values, a closed set), else
``_OTHER`` (LiteLLM's resolution of a model, ``custom_llm_provider`` and ``api_base`` is read once
per ``instrument()`` and kept: it reads LiteLLM's tables and the process environment, which a
process sets before its calls). ``gen_ai.request.model`` is the model sent upstream (``openai/gpt-4o`` is ``gpt-4o``);
on Azure it is a deployment name, not compared with the served model. ``server.address`` /
``server.port`` come from ``api_base`` when the call or the deployment names one.

The served model is the provider's, as LiteLLM hands it over: ``ModelResponse.model`` and a
Responses answer's ``model`` copy the provider's answer; a stream chunk's ``model`` is the model
asked for (LiteLLM writes its own name there), so a stream's served model is the
``provider_response_model`` LiteLLM keeps in each chunk's ``_hidden_params``. Through a gateway
whose body echoes the requested model, the first ``OTEL_SAMPLING_SERVED_MODEL_HEADERS`` header the
provider's response carries names it instead, read from the headers LiteLLM keeps with the answer
and each chunk (``_hidden_params["additional_headers"]``, as ``llm_provider-<name>``). Usage and
finish reasons are read as the openai instrumentor reads Chat Completions and Responses answers
(LiteLLM answers in those shapes whatever the provider). Errors: LiteLLM's exceptions (the openai
SDK's classes) by their HTTP status: 429 and 5xx ``model.unavailable``, 408 / ``litellm.Timeout``
``timeout``; ``ContextWindowExceededError`` and ``ContentPolicyViolationError`` are 400s, ``error``.
A stream cut short (a dropped connection, a body ending before the final event, a provider error
event) reaches the caller as LiteLLM's ``MidStreamFallbackError``, which it gives HTTP status 500:
``model.unavailable`` (LiteLLM's exception does not tell the three apart).

Router fallbacks: a Router stamps each attempt's ``metadata`` (``attempted_fallbacks``, and the
failures before it in ``previous_models``); an attempt on a fallback hop whose call succeeds is
degraded, with the reason of the failure that made the Router fall back
(:func:`fallback_reason`): a context-window failure ``context_window_fallback``, a content-policy
one ``content_policy_fallback``, anything else (an outage, a 429) ``failover``. The reason is the
call's own (``CallSummary.client_fallback``), so it holds outside a sampling request, a run and a
parent span too; the request and the run the call is made in carry it as any call reason, and a
fallback for the request's fit is theirs too rather than ``failover`` (``rules/verdict``).

Trace context: each call carries the global propagator's headers for our span in
``extra_headers`` (a copy; a header the caller set is kept), which LiteLLM sends with the
upstream request; ``OTEL_SAMPLING_OMIT_PROVIDER_TRACE_CONTEXT=true`` turns it off.
``instrumentation_dependencies``: ``litellm >= 1.110, < 2``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

from opentelemetry import propagate

from otel_sampling import names
from otel_sampling.content import Content
from otel_sampling.drills import Drill
from otel_sampling.instrumentation import openai_responses
from otel_sampling.instrumentation._provider import (
    ProviderState,
    Request,
    async_create_wrapper,
    create_wrapper,
    reasoning_level,
    server_of_url,
)
from otel_sampling.instrumentation._targets import HostTargets, Target, TargetTableInstrumentor
from otel_sampling.instrumentation.openai import StreamAccumulator, chat_response_of, to_usage
from otel_sampling.instrumentation.openai_content import chat_input, chat_output, responses_input
from otel_sampling.instrumentation.streams import Accumulator
from otel_sampling.metrics import Instruments
from otel_sampling.rules.endings import error_type_of, failure_of
from otel_sampling.rules.values import Failure, Response, Usage, clean_usage

#: LiteLLM provider id -> ``gen_ai.provider.name`` well-known value (GenAI semconv registry).
PROVIDERS: Mapping[str, str] = {
    "openai": "openai",
    "text-completion-openai": "openai",
    "azure": "azure.ai.openai",
    "azure_text": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "anthropic": "anthropic",
    "anthropic_text": "anthropic",
    "bedrock": "aws.bedrock",
    "vertex_ai": "gcp.vertex_ai",
    "vertex_ai_beta": "gcp.vertex_ai",
    "gemini": "gcp.gemini",
    "cohere": "cohere",
    "cohere_chat": "cohere",
    "deepseek": "deepseek",
    "groq": "groq",
    "mistral": "mistral_ai",
    "perplexity": "perplexity",
    "watsonx": "ibm.watsonx.ai",
    "watsonx_text": "ibm.watsonx.ai",
    "xai": "x_ai",
}
#: LiteLLM providers whose ``model`` names a deployment of the caller's, not a model.
DEPLOYMENT_PROVIDERS = frozenset({"azure", "azure_text"})
#: The exception class names (``previous_models[].exception_type``) that make a Router fall back
#: through ``context_window_fallbacks`` / ``content_policy_fallbacks``, and the reason each gives.
FALLBACK_REASONS: Mapping[str, str] = {
    "ContextWindowExceededError": names.REASON_CONTEXT_WINDOW_FALLBACK,
    "ContentPolicyViolationError": names.REASON_CONTENT_POLICY_FALLBACK,
}
#: How many (model, ``custom_llm_provider``, api base) resolutions a state keeps (see ``_State._resolved``).
MAX_RESOLUTIONS = 256
_KEY_TYPES = (str, type(None))  # a resolution is kept for these arguments only (hashable, as LiteLLM takes them)
_MAX_KEY_LENGTH = 1024  # ... and only when short: what is kept stays small
_MAX_TOKENS_KEYS = ("max_completion_tokens", "max_tokens", "max_output_tokens")
_MAX_TOKENS_NAMES = frozenset(_MAX_TOKENS_KEYS)
#: LiteLLM's test doubles: a call given one is answered (or failed) by LiteLLM itself, nothing is sent.
_MOCKS = frozenset({"mock_response", "mock_tool_calls", "mock_timeout"})


def provider_name(litellm_provider: Any, known: frozenset[str]) -> str:
    """``gen_ai.provider.name`` for a LiteLLM provider id: its well-known value (:data:`PROVIDERS`),
    else the id itself when it is one of LiteLLM's (``known``), else ``_OTHER``."""
    if not isinstance(litellm_provider, str):
        return names.OVERFLOW_LABEL
    return PROVIDERS.get(litellm_provider) or (litellm_provider if litellm_provider in known else names.OVERFLOW_LABEL)


def _metadata(kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
    for key in ("metadata", "litellm_metadata"):  # chat endpoints / the Responses API
        value = kwargs.get(key)
        if isinstance(value, Mapping) and "attempted_fallbacks" in value:
            return value
    return {}


def fallback_reason(kwargs: Mapping[str, Any]) -> str | None:
    """Why a Router made this attempt on a fallback model (None: it is not a fallback hop).

    Read from the metadata the Router stamps on the attempt: ``attempted_fallbacks`` above 0 is a
    hop, and the last of ``previous_models`` is the failure it falls back from: its
    ``exception_type`` picks the reason (:data:`FALLBACK_REASONS`, else ``failover``)."""
    metadata = _metadata(kwargs)
    hops = metadata.get("attempted_fallbacks")
    if not isinstance(hops, int) or isinstance(hops, bool) or hops <= 0:
        return None
    failures = metadata.get("previous_models")
    last = failures[-1] if isinstance(failures, (list, tuple)) and failures else None
    failure = last.get("exception_type") if isinstance(last, Mapping) else None
    return FALLBACK_REASONS.get(failure, names.REASON_FAILOVER) if isinstance(failure, str) else names.REASON_FAILOVER


# The server of the call being started: request_of reads it from the call's arguments, server_of
# hands it to the shared wrapper right after (both in the caller's context).
_server: ContextVar[tuple[str, int | None] | None] = ContextVar("otel_sampling_litellm_server", default=None)


def server_of_base(api_base: Any, url_type: Any) -> tuple[str, int | None] | None:
    """``(server.address, server.port)`` of an ``api_base`` URL (the scheme's port when it names
    none), parsed with ``url_type`` (``httpx.URL``); None when there is none or it is no URL."""
    if not isinstance(api_base, str) or not api_base:
        return None
    try:
        url = url_type(api_base)
    except Exception:  # noqa: BLE001 - a malformed api_base: LiteLLM reports it to the caller itself
        return None
    return server_of_url(url)


_PROVIDER_HEADER = "llm_provider-"  # LiteLLM's prefix for the provider's response headers it keeps


def provider_header_keys(header_names: tuple[str, ...]) -> tuple[str, ...]:
    """The keys LiteLLM keeps the provider's response headers ``header_names`` under (``llm_provider-<name>``)."""
    return tuple(_PROVIDER_HEADER + name for name in header_names)


def gateway_model(hidden: Any, header_keys: tuple[str, ...]) -> str | None:
    """The model the first of ``header_keys`` (:func:`provider_header_keys` of
    ``OTEL_SAMPLING_SERVED_MODEL_HEADERS``) names in the provider's response headers LiteLLM keeps
    in an answer's or a chunk's ``_hidden_params["additional_headers"]``, or None."""
    headers = hidden.get("additional_headers") if isinstance(hidden, dict) else None
    if type(headers) is dict:  # LiteLLM's own: none of the keys, the usual answer, asked in C
        if headers.keys().isdisjoint(header_keys):
            return None
    elif not isinstance(headers, Mapping):
        return None
    for key in header_keys:
        value = headers.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def hidden_params(answer: Any) -> Any:
    """LiteLLM's ``_hidden_params`` of an answer or a chunk, or None. A pydantic private attribute:
    read from the model's private values as LiteLLM's own ``hidden_params`` does, without a trip
    through pydantic's ``__getattr__``; any other object by its attribute."""
    private = getattr(answer, "__pydantic_private__", None)
    if type(private) is dict and "_hidden_params" in private:
        return private["_hidden_params"]
    return getattr(answer, "_hidden_params", None)


class ChatStreamAccumulator(StreamAccumulator):
    """The openai chat chunk accumulator, with the served model LiteLLM keeps aside: a
    ``CustomStreamWrapper`` chunk's ``model`` is the model asked for (OpenRouter's excepted), the
    provider's own is in its ``_hidden_params["provider_response_model"]``, and a gateway's
    served-model header (``header_names``) in its ``additional_headers``, which wins."""

    __slots__ = ("_served", "_gateway", "_header_keys", "_headers_read", "_chunk_class")

    def __init__(
        self, capture: bool = False, header_keys: tuple[str, ...] = (), chunk_class: type | None = None
    ) -> None:
        super().__init__(capture)
        self._served: str | None = None
        self._gateway: str | None = None
        self._header_keys = header_keys  # provider_header_keys of the served-model headers
        # The provider's response headers are the same in every chunk: read in the first that has them.
        self._headers_read = not header_keys
        self._chunk_class: Any = chunk_class  # LiteLLM's ModelResponseStream: read plainly (observe)

    def observe(self, chunk: Any) -> None:
        if self._plain and type(chunk) is self._chunk_class:
            # The openai accumulator's plain reading, for a ``ModelResponseStream``: its ``usage``
            # is an extra field, absent from every chunk but the last (an attribute read of an
            # absent one raises inside pydantic, and the plain reading would give way to the
            # tolerant one on every chunk).
            try:
                plain = self._plain_choices(chunk.choices)
                if plain:
                    extra = chunk.__pydantic_extra__
                    usage = extra.get("usage") if extra else None
                    if usage is not None:
                        self._usage = usage
            except (AttributeError, TypeError):  # a shape LiteLLM did not validate: read again, tolerantly
                plain = False
            if not plain:
                self._observe(chunk)
        else:
            super().observe(chunk)
        hidden = hidden_params(chunk)
        if not isinstance(hidden, dict):
            return
        served = hidden.get("provider_response_model")
        if served != self._served and isinstance(served, str) and served:
            self._served = served
        if not self._headers_read and isinstance(hidden.get("additional_headers"), Mapping):
            self._headers_read = True
            self._gateway = gateway_model(hidden, self._header_keys)

    def response(self) -> Response:
        response = super().response()
        served = self._gateway or self._served
        return response._replace(model=served) if served else response


#: The fields of LiteLLM's ``Usage`` and of its token details that ``to_usage`` reads (see :func:`_usage_of`).
_USAGE_FIELDS = frozenset({"prompt_tokens", "completion_tokens", "prompt_tokens_details", "completion_tokens_details"})
_DETAIL_FIELDS = ("cached_tokens", "cache_write_tokens", "reasoning_tokens")


def _plain_usage_classes(usage_class: type, prompt_details: type, completion_details: type) -> tuple[type, ...]:
    """LiteLLM's ``Usage``, ``PromptTokensDetailsWrapper`` and ``CompletionTokensDetailsWrapper``
    when none of them has a class attribute of a name :func:`_usage_of` reads (an attribute read
    then finds an instance's field, or nothing); () otherwise."""
    classes = (usage_class, prompt_details, completion_details)
    names_read = (*_USAGE_FIELDS, *_DETAIL_FIELDS)
    if any(hasattr(cls, name) for cls in classes for name in names_read):
        return ()
    return classes


def _usage_of(usage: Any, plain: tuple[Any, ...]) -> Usage:
    """:func:`~otel_sampling.instrumentation.openai.to_usage` of an answer's ``usage``: LiteLLM's own
    ``Usage`` (``plain``: :func:`_plain_usage_classes`) with every field set and its details LiteLLM's
    own (or None), none carrying ``cache_write_tokens`` or an extra field, read from their fields
    directly, as the attribute reads of ``to_usage`` find them (without the lookup of the absent
    ``cache_write_tokens`` in pydantic's ``__getattr__`` and its exception); any other by ``to_usage``."""
    if plain and type(usage) is plain[0]:
        fields = usage.__dict__
        if fields.keys() >= _USAGE_FIELDS:
            details: Any = fields["prompt_tokens_details"]
            output_details: Any = fields["completion_tokens_details"]
            if details is None:
                cached = None
            elif type(details) is plain[1] and not details.__pydantic_extra__:
                detail_fields = details.__dict__
                if "cache_write_tokens" in detail_fields or "cached_tokens" not in detail_fields:
                    return to_usage(usage)
                cached = detail_fields["cached_tokens"]
            else:
                return to_usage(usage)
            if output_details is None:
                reasoning = None
            elif type(output_details) is plain[2] and "reasoning_tokens" in output_details.__dict__:
                reasoning = output_details.__dict__["reasoning_tokens"]
            else:
                return to_usage(usage)
            return clean_usage(Usage(fields["prompt_tokens"], fields["completion_tokens"], cached, None, reasoning))
    return to_usage(usage)


def _model_response_of(answer: Any, choice_class: Any, plain_usage: tuple[type, ...] = ()) -> Response | None:
    """What :func:`~otel_sampling.instrumentation.openai.chat_response_of` reads from a LiteLLM
    ``ModelResponse`` whose choices are all LiteLLM's ``Choices`` and which has no ``error``
    member, read from its fields directly (its ``usage`` is a pydantic extra); None for any other
    shape, which the tolerant reading takes."""
    fields = answer.__dict__
    extra = answer.__pydantic_extra__ or {}
    choices = fields.get("choices")
    if type(choices) is not list or "error" in fields or "error" in extra:
        return None
    reasons: list[str] = []
    refusal = False
    for choice in choices:
        if type(choice) is not choice_class:
            return None
        reason = choice.finish_reason
        if isinstance(reason, str):
            reasons.append(reason)
        message_refusal = getattr(choice.message, "refusal", None)
        if isinstance(message_refusal, str) and message_refusal:
            refusal = True
    model, response_id = fields.get("model"), fields.get("id")
    # _make: a namedtuple built from one tuple of its fields, in order, skips the keyword binding of
    # its __new__ (about 2k instructions); it checks their number.
    return Response._make(
        (
            model if isinstance(model, str) and model else None,
            response_id if isinstance(response_id, str) else None,
            tuple(reasons),
            _usage_of(fields["usage"] if "usage" in fields else extra.get("usage"), plain_usage),
            False,  # provider_fallback
            None,  # output: content capture fills it (ProviderState.parsed)
            None,  # error_type: an answer with an error member is read tolerantly
            bool(choices),  # answered
            refusal,
        )
    )


class _Never:
    """A type no result is an instance of: the stream type of the other calling convention."""


class _State(ProviderState):
    """LiteLLM's answers to the shared wrappers (see the module docstring)."""

    provider = names.OVERFLOW_LABEL  # every call names the provider LiteLLM resolved
    envelope_fields = ("code", "type")
    inject_trace_context = True  # LiteLLM sends the call's extra_headers upstream
    handles_upstream = True  # ... and its answer's _hidden_params hold the upstream response headers
    http_library = "httpx"  # LiteLLM's own HTTP client

    responses = False  # the view's endpoint: Chat Completions (``completion``) or the Responses API
    asynchronous = False  # the view's calling convention: which side of the shared wrappers proxies a stream

    def __init__(self, instruments: Instruments) -> None:
        super().__init__(instruments)
        self._header_keys = provider_header_keys(self.served_model_headers)
        # One view of this state per endpoint and calling convention: what the positional arguments
        # are, and which side of the shared wrappers a stream is proxied on (the same classes
        # stream both ways). The views share everything else (failover memory, LiteLLM's classes).
        self._views: dict[tuple[bool, bool], _State] = {}
        for responses in (False, True):
            for asynchronous in (False, True):
                view = copy.copy(self)
                view.responses, view.asynchronous = responses, asynchronous
                self._views[responses, asynchronous] = view

    def view(self, responses: bool, asynchronous: bool) -> _State:
        """This state as the wrapper of one endpoint (Responses API or not) and convention sees it."""
        return self._views[responses, asynchronous]

    def bind_sdk(self) -> None:
        """Nothing is imported here: importing LiteLLM takes seconds, and ``instrument()`` runs in
        processes that may never use it. Its classes are read on the first call (:meth:`_classes`);
        the targets are wrapped once the host imports LiteLLM (``host_targets``)."""
        self._bound: dict[str, Any] = {}  # shared by the views (a shallow copy keeps the dict)
        self._resolutions: dict[tuple[str, Any, Any], tuple[str, str, bool, Any]] = {}  # see _resolved

    def _classes(self) -> Mapping[str, Any]:
        """LiteLLM's classes: its answers, its streams, its exceptions (the openai SDK's)."""
        bound = self._bound
        if bound:
            return bound
        import openai
        from litellm import exceptions, get_llm_provider
        from litellm.litellm_core_utils.streaming_handler import CustomStreamWrapper
        from litellm.responses.streaming_iterator import BaseResponsesAPIStreamingIterator
        from litellm.types.llms.openai import ResponsesAPIResponse
        from litellm.types.utils import (
            Choices,
            CompletionTokensDetailsWrapper,
            LlmProviders,
            ModelResponse,
            ModelResponseStream,
            PromptTokensDetailsWrapper,
        )
        from litellm.types.utils import Usage as LiteLLMUsage

        bound.update(
            get_llm_provider=get_llm_provider,
            responses_class=ResponsesAPIResponse,
            response_class=(ModelResponse, ResponsesAPIResponse),
            chat_stream=CustomStreamWrapper,
            chunk_class=ModelResponseStream,
            chat_class=ModelResponse,
            choice_class=Choices,
            plain_usage=_plain_usage_classes(LiteLLMUsage, PromptTokensDetailsWrapper, CompletionTokensDetailsWrapper),
            streams=(CustomStreamWrapper, BaseResponsesAPIStreamingIterator),
            known_providers=frozenset(p.value for p in LlmProviders),
            timeout_types=(openai.APITimeoutError, self._httpx.TimeoutException),
            connection_types=(openai.APIConnectionError, self._httpx.TransportError),
            exceptions=exceptions,
        )
        return bound

    @property
    def stream_types(self) -> tuple[Any, Any]:  # type: ignore[override]
        streams = self._classes()["streams"]
        return (_Never, streams) if self.asynchronous else (streams, _Never)

    @property
    def response_class(self) -> tuple[type, ...]:  # type: ignore[override]
        classes: tuple[type, ...] = (self._bound or self._classes())["response_class"]
        return classes

    raw_response_classes: tuple[type, ...] = ()

    def error_type(self, exc: BaseException) -> str:
        sdk = self._classes()
        return error_type_of(exc, sdk["timeout_types"], sdk["connection_types"], self.envelope_fields)

    def failure(self, exc: BaseException) -> Failure:
        sdk = self._classes()
        return failure_of(exc, sdk["timeout_types"], sdk["connection_types"], self.envelope_fields)

    def drill_error(self, client: Any, options: Any, drill: Drill) -> BaseException:
        """The exception LiteLLM raises for ``drill.failure`` (nothing is sent): ``litellm.Timeout``,
        ``ServiceUnavailableError`` (503) or ``RateLimitError`` (429), which a Router retries and
        falls back from as from a real one."""
        message = f"otel-sampling drill {drill.name!r}: {drill.failure}"
        exceptions, model, provider = self._classes()["exceptions"], drill.target_model, "otel-sampling-drill"
        if drill.failure == names.DRILL_FAILURE_TIMEOUT:
            timeout: BaseException = exceptions.Timeout(message, model=model, llm_provider=provider)
            return timeout
        error_class = (
            exceptions.RateLimitError
            if drill.failure == names.DRILL_FAILURE_RATE_LIMITED
            else exceptions.ServiceUnavailableError
        )
        error: BaseException = error_class(message, llm_provider=provider, model=model)
        return error

    def request_of(self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Request | None:
        """``completion(model, messages, ...)`` / ``responses(input, model, ...)``: the model and
        provider LiteLLM resolves for it, the token limit, whether streamed, the Router's fallback."""
        body = kwargs  # wrapt's own dict for this call, which nothing changes: read as it is
        if args:
            body = dict(kwargs)
            for name, value in zip(("input", "model") if self.responses else ("model", "messages"), args, strict=False):
                body.setdefault(name, value)
        model = body.get("model")
        if not isinstance(model, str):
            return None
        # Most calls name none of them (asked in C); one named as None is not given.
        if not _MOCKS.isdisjoint(body) and any(body.get(key) is not None for key in _MOCKS):
            return None
        upstream, provider, deployment, server = self._resolved(model, body)
        _server.set(server)
        max_tokens = None
        if not _MAX_TOKENS_NAMES.isdisjoint(body):  # most calls name no limit (asked in C)
            for key in _MAX_TOKENS_KEYS:
                if body.get(key) is not None:
                    max_tokens = body[key]
                    break
        attributes = None
        if "reasoning_effort" in body or "reasoning" in body:
            attributes = {**reasoning_level(body, "reasoning_effort"), **reasoning_level(body, "reasoning", "effort")}
        return Request._make(  # in its field order (_make: see _model_response_of)
            (
                upstream,
                max_tokens,
                body.get("stream") is True,
                body,
                provider,
                attributes,
                deployment,
                fallback_reason(body) if "metadata" in body or "litellm_metadata" in body else None,  # client_fallback
                None,  # effort: LiteLLM's reasoning level is an attribute
            )
        )

    def _resolved(self, model: str, body: Mapping[str, Any]) -> tuple[str, str, bool, tuple[str, int | None] | None]:
        """(upstream model, ``gen_ai.provider.name``, whether the model names a deployment, server
        of the api base) as LiteLLM resolves the call; the model as given and no provider when
        LiteLLM cannot (the call then fails in LiteLLM). A resolution is kept per (model,
        ``custom_llm_provider``, api base) given, up to :data:`MAX_RESOLUTIONS` (LiteLLM resolves
        from its own tables and the process environment, which a process sets before its calls:
        reading them again on every call costs as much as the rest of our call)."""
        api_base = body.get("api_base") or body.get("base_url")
        custom_llm_provider = body.get("custom_llm_provider")
        key = (model, custom_llm_provider, api_base)
        keyed = type(custom_llm_provider) in _KEY_TYPES and type(api_base) in _KEY_TYPES
        if keyed and (known := self._resolutions.get(key)) is not None:  # only short keys are kept
            return known
        keyed = keyed and len(model) + len(custom_llm_provider or "") + len(api_base or "") <= _MAX_KEY_LENGTH
        classes = self._classes()
        try:
            upstream, provider, _, resolved_base = classes["get_llm_provider"](
                model=model, custom_llm_provider=custom_llm_provider, api_base=api_base
            )
        except Exception:  # noqa: BLE001 - an unknown provider: LiteLLM itself raises for the call
            return model, names.OVERFLOW_LABEL, False, server_of_base(api_base, self._url_type)
        resolved = (
            upstream or model,
            provider_name(provider, classes["known_providers"]),
            provider in DEPLOYMENT_PROVIDERS,
            server_of_base(api_base or resolved_base, self._url_type),
        )
        if keyed and len(self._resolutions) < MAX_RESOLUTIONS:
            self._resolutions[key] = resolved
        return resolved

    def input_content(self, body: Any) -> Content:
        return chat_input(body) if "messages" in body else responses_input(body)

    def with_trace_context(
        self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The call's keyword arguments with ``extra_headers`` (a copy) adding the propagator's
        headers for our span; a header the caller set (any case) is kept."""
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        given_headers = kwargs.get("extra_headers")
        if given_headers is None:  # the usual call: the carrier is a dict of our own, sent as it is
            return (args, {**kwargs, "extra_headers": carrier}) if carrier else (args, kwargs)
        given_headers = given_headers if isinstance(given_headers, Mapping) else {}
        given = {str(key).lower() for key in given_headers}
        added = {key: value for key, value in carrier.items() if key.lower() not in given}
        if not added:
            return args, kwargs
        return args, {**kwargs, "extra_headers": {**given_headers, **added}}

    def server_of(self, instance: Any) -> tuple[str, int | None] | None:
        """The server of the call :meth:`request_of` just read (the shared wrappers ask right after it)."""
        server = _server.get()
        _server.set(None)  # nothing of the call stays in the caller's context
        return server

    def new_accumulator(self, stream: Any) -> Accumulator:
        """Chat chunks (``CustomStreamWrapper``) or Responses events."""
        capture = self.capture.enabled
        if isinstance(stream, self._classes()["chat_stream"]):
            return ChatStreamAccumulator(capture, self._header_keys, self._classes()["chunk_class"])
        return openai_responses.ResponsesStreamAccumulator(capture=capture)

    def response_of(self, result: Any) -> Response:
        """What a ``ModelResponse`` or a Responses answer reports; a gateway's served-model header
        (kept by LiteLLM with the answer) names the served model."""
        classes = self._bound or self._classes()
        if type(result) is classes["chat_class"]:
            response = _model_response_of(result, classes["choice_class"], classes["plain_usage"]) or chat_response_of(
                result
            )
        elif isinstance(result, classes["responses_class"]):
            response = openai_responses.response_of(result)
        else:
            response = chat_response_of(result)
        served = gateway_model(hidden_params(result), self._header_keys) if self._header_keys else None
        return response._replace(model=served) if served else response

    def output_of(self, result: Any, seen: Response) -> list[Any]:
        if isinstance(result, self._classes()["responses_class"]):
            return openai_responses.output_of(result, seen)
        return chat_output(result)


def _chat(state: _State) -> Any:
    return create_wrapper(state.view(False, False))


def _achat(state: _State) -> Any:
    return async_create_wrapper(state.view(False, True))


def _responses(state: _State) -> Any:
    return create_wrapper(state.view(True, False))


def _aresponses(state: _State) -> Any:
    return async_create_wrapper(state.view(True, True))


SUPPORTED = ">= 1.110, < 2"
_TARGETS = (
    Target("litellm", "completion", _chat),
    Target("litellm", "acompletion", _achat),
    Target("litellm", "responses", _responses, optional=True),
    Target("litellm", "aresponses", _aresponses, optional=True),
)


class LiteLLMInstrumentor(TargetTableInstrumentor):
    """Instruments LiteLLM's completion and Responses calls and every Router attempt (see the module docstring).

    ``instrument(tracer_provider=None, meter_provider=None, logger_provider=None)``; providers
    default to the global ones (the logger provider carries the opt-in content events).
    """

    dependencies = (f"litellm {SUPPORTED}",)
    # Wrapped once the host imports LiteLLM (instrument() never imports it: see _State.bind_sdk).
    host_targets = (HostTargets(("litellm",), SUPPORTED, _TARGETS),)
    state_class = _State
