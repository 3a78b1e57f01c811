"""openai SDK instrumentation (entry point ``otel_sampling_openai``).

One GenAI inference span ``chat {model}`` (kind CLIENT) per Chat Completions or Responses API call,
for every call shape, sync and async: ``chat.completions.create`` (plain, ``stream=True``),
``chat.completions.stream()`` / ``.parse()``, ``responses.create`` / ``.stream()`` / ``.parse()``,
and each of them through ``with_raw_response`` / ``with_streaming_response``. Endings, cost, time
to first chunk, degraded mode, failover and content capture come from the shared machinery
(:mod:`otel_sampling.instrumentation._provider`). The span carries ``openai.api.type``
(``chat_completions`` / ``responses``, GenAI semconv for openai); ``gen_ai.operation.name`` is
``chat`` for both. Through the SDK's Azure OpenAI clients ``gen_ai.provider.name`` is
``azure.ai.openai`` (GenAI semconv well-known value), and the request's ``model``, a deployment name
there, is not compared with the served model (no substitution or fallback is read from it).

Wrap point: ``openai._base_client.SyncAPIClient.request`` / ``AsyncAPIClient.request`` for
``POST /chat/completions`` and ``POST /responses``. Every shape above ends there exactly once per
call (the SDK's retries run inside it), including ``parse()`` (which posts directly, not through
``create``) and a ``with_raw_response`` namespace touched before ``instrument()`` (it captured the
unwrapped bound ``create``). The request body (``options.json_data``) gives the request model,
token limit and ``stream``. Raw responses: ``with_raw_response`` returns a
``LegacyAPIResponse`` (its JSON body already read, decoded by us), ``with_streaming_response`` an
``APIResponse`` (its body still on the wire: the span ends when the caller parses it, closes it,
or drops it); both ``_parse`` methods and the ``close`` methods are wrapped for that.

Trace context: the SDK sends none of its own, so each request (every attempt) carries the global
propagator's headers (W3C ``traceparent`` by default) for the span current when the SDK builds that
attempt's headers (``BaseClient._build_headers``, wrapped): our ``chat`` span, or a span another
instrumentation started around the attempt. Also when HTTP client spans are suppressed, so that a
gateway or the provider can join the trace. The headers go among the custom headers of the options
the SDK copies for each attempt (as ``extra_headers`` would, under the caller's), so the caller's
options and header dicts are left as they were; a header the caller set on the call (``Omit()``
included) or on the client is kept (``OTEL_SAMPLING_OMIT_PROVIDER_TRACE_CONTEXT=true`` turns it
off).

Chat usage follows the semantic conventions: ``gen_ai.usage.input_tokens`` is ``prompt_tokens``,
which already includes ``prompt_tokens_details.cached_tokens`` (reported as
``gen_ai.usage.cache_read.input_tokens``). A chat stream carries usage only when the request set
``stream_options={"include_usage": True}``, and counts as complete once a choice has a
``finish_reason`` (the SDK consumes ``[DONE]`` itself, and a stream cut before it ends silently).
Responses API: :mod:`otel_sampling.instrumentation.openai_responses`.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any, ClassVar, NamedTuple

from opentelemetry import propagate

from otel_sampling import names
from otel_sampling import state as _state
from otel_sampling.content import Content
from otel_sampling.instrumentation import call_answers, openai_responses
from otel_sampling.instrumentation._provider import (
    ProviderState,
    Request,
    async_close_wrapper,
    async_create_wrapper,
    close_wrapper,
    create_wrapper,
    finally_wrappers,
    guarded,
    is_object,
    member,
    parse_wrapper,
    reasoning_level,
    request_options,
    sequence,
)
from otel_sampling.instrumentation._targets import Target, TargetTableInstrumentor
from otel_sampling.instrumentation.openai_content import chat_input, chat_output, responses_input
from otel_sampling.instrumentation.openai_fields import as_str, error_envelope, field, usage_of
from otel_sampling.instrumentation.streams import Accumulator, AsyncStreamProxy, StreamProxy
from otel_sampling.metrics import Instruments
from otel_sampling.records.call_signals import CallChecks
from otel_sampling.rules.call_checks import Answer, ToolCall
from otel_sampling.rules.values import Response, Usage, clean_usage

logger = logging.getLogger(__name__)

PROVIDER = "openai"  # gen_ai.provider.name well-known value
AZURE_PROVIDER = "azure.ai.openai"  # gen_ai.provider.name well-known value of the SDK's Azure OpenAI clients
CHAT_PATH = "/chat/completions"
RESPONSES_PATH = "/responses"
# The span attributes (openai.api.type, GenAI semconv for openai; built once, read-only) and the
# token-limit keys, first found wins (and as a set), per (method, path) of an inference endpoint.
_APIS: dict[tuple[object, object], tuple[dict[str, str], tuple[str, ...], frozenset[str]]] = {
    ("post", CHAT_PATH): (
        {names.OPENAI_API_TYPE: names.OPENAI_API_TYPE_CHAT_COMPLETIONS},
        ("max_completion_tokens", "max_tokens"),
        frozenset({"max_completion_tokens", "max_tokens"}),
    ),
    ("post", RESPONSES_PATH): (
        {names.OPENAI_API_TYPE: names.OPENAI_API_TYPE_RESPONSES},
        ("max_output_tokens",),
        frozenset({"max_output_tokens"}),
    ),
}


def to_usage(usage: Any) -> Usage:
    """Semantic-convention usage from an openai ``CompletionUsage`` (or its JSON); None: nothing reported."""
    return usage_of(usage, "prompt_tokens", "completion_tokens", "prompt_tokens_details", "completion_tokens_details")


def _finish_reasons(choices: Any) -> tuple[str, ...]:
    return tuple(r for c in sequence(choices) if isinstance(r := field(c, "finish_reason"), str))


def _is_refusal(message: Any) -> bool:
    """A ``message`` / ``delta`` whose ``refusal`` holds the model's refusal (a non-empty string)."""
    refusal = field(message, "refusal")
    return isinstance(refusal, str) and bool(refusal)


def chat_response_of(completion: Any) -> Response:
    """What a non-streamed ``ChatCompletion`` reports (output content not read): an error body that
    came with HTTP 200 ends the call as that error (:func:`error_envelope`); ``answered`` when a
    choice object came (the SDK does not validate answers: ``choices`` may be null, or the body
    not a JSON object at all); ``refusal`` when a choice's ``message.refusal`` holds one."""
    choices = sequence(field(completion, "choices"))
    return Response(
        as_str(field(completion, "model")) or None,
        as_str(field(completion, "id")),
        _finish_reasons(choices),
        to_usage(field(completion, "usage")),
        error_type=error_envelope(completion),
        answered=any(is_object(c) for c in choices),
        refusal=any(_is_refusal(field(c, "message")) for c in choices),
    )


class _ChatModels(NamedTuple):
    """The SDK's Chat Completions models, whose exact instances are read by plain attribute reads
    (:meth:`_State.response_of`): the SDK builds them with every declared field set, so that
    reading one never goes through pydantic's ``__getattr__``. A field the SDK types as a model
    holds that model or, since it does not validate answers, the JSON value that came (a dict, a
    list, a string, a number, null), none of which has an attribute of the names read here: the
    plain reads of a field's members raise ``AttributeError`` for those, and the tolerant read
    takes the answer then."""

    completion: type[Any]
    usage: type[Any]
    chunk: type[Any]
    chunk_choice: type[Any]
    declares_cache_writes: bool  # PromptTokensDetails.cache_write_tokens, declared in later releases

    @classmethod
    def of_sdk(cls) -> _ChatModels:
        from openai.types import completion_usage
        from openai.types.chat import chat_completion, chat_completion_chunk

        return cls(
            chat_completion.ChatCompletion,
            completion_usage.CompletionUsage,
            chat_completion_chunk.ChatCompletionChunk,
            chat_completion_chunk.Choice,
            "cache_write_tokens" in completion_usage.PromptTokensDetails.model_fields,
        )


def _sdk_usage(usage: Any, models: _ChatModels) -> Usage | None:
    """:func:`to_usage` of a ``CompletionUsage`` the SDK built (see :class:`_ChatModels`); None:
    another shape, for :func:`to_usage`. ``cache_write_tokens`` is read as a member where the SDK
    does not declare it (it keeps it among the pydantic extras)."""
    if type(usage) is not models.usage:
        return Usage() if usage is None else None
    details, output_details = usage.prompt_tokens_details, usage.completion_tokens_details
    cached = written = reasoning = None
    try:
        if details is not None:
            cached = details.cached_tokens
            written = (
                details.cache_write_tokens if models.declares_cache_writes else member(details, "cache_write_tokens")
            )
        if output_details is not None:
            reasoning = output_details.reasoning_tokens
    except AttributeError:  # details that came as another JSON value
        return None
    # Each a token count or None (clean_usage: token_count of each, checked at once)
    return clean_usage(Usage(usage.prompt_tokens, usage.completion_tokens, cached, written, reasoning))


class _ChatAnswers(call_answers.OpenAIAnswers):
    """Chat Completions answers (:class:`~otel_sampling.instrumentation.call_answers.OpenAIAnswers`)."""

    def __init__(self, models: _ChatModels) -> None:
        super().__init__(responses=False)
        self._models = models

    def of(self, result: Any) -> Answer:
        """What :func:`~otel_sampling.instrumentation.call_answers.chat_answer` reads (each choice's
        text, its function tool calls' names and arguments), from a ``ChatCompletion`` (the SDK's
        own class, not ``parse()``'s subclass) read as plain attributes (:class:`_ChatModels`),
        function tool calls only; another shape (a custom tool call, a member holding another JSON
        value) by ``chat_answer``, the tolerant read."""
        if type(result) is not self._models.completion or type(choices := result.choices) is not list:
            return call_answers.chat_answer(result)
        calls: list[ToolCall] = []
        texts: list[str | None] = []
        try:
            for choice in choices[: call_answers.MAX_TEXTS]:
                message = choice.message
                texts.append(text if isinstance(text := message.content, str) else None)
                tool_calls = message.tool_calls
                if tool_calls is None:
                    continue
                if type(tool_calls) is not list:
                    return call_answers.chat_answer(result)
                for call in tool_calls:
                    if call.type == "custom":  # free text input, read by its name only
                        return call_answers.chat_answer(result)
                    function = call.function
                    if len(calls) < call_answers.MAX_TOOL_CALLS:
                        calls.append(ToolCall(function.name, function.arguments))
        except AttributeError:  # a member that came as another JSON value
            return call_answers.chat_answer(result)
        return Answer(tuple(calls), tuple(texts))


def _index_of(choice: Any) -> int:
    index = getattr(choice, "index", 0)
    return index if isinstance(index, int) else 0


# Choices whose delta showed content or a refusal, remembered per stream (the rest are read on):
# a stream cannot name more choices than this in its bookkeeping.
MAX_SETTLED_CHOICES = 128


class StreamAccumulator:
    """Reads ``ChatCompletionChunk``s: model and id from any chunk, finish reasons per choice,
    usage from the final chunk when ``include_usage`` was asked for, a refusal from any choice's
    ``delta.refusal``; with ``capture``, each choice's text and tool calls too. (A chunk with an
    ``error`` member the SDK raises as ``APIError`` itself.)

    Per chunk, once the model, the id and a choice object came (content capture off), the chunk's
    ``choices`` and ``usage`` and each choice's ``index`` and ``finish_reason`` are read as plain
    attributes; before that too for a chunk of the SDK's own classes (``models``: the state's
    :class:`_ChatModels`; None, as for another library's chunks: read tolerantly until then). A
    chunk the SDK built otherwise (it does not validate answers: a member missing, a choice that
    is not an object, an ``index`` that cannot be a key) is read again by the tolerant reading,
    which takes any shape and reads an ``index`` that is not an int as 0. A choice's ``delta`` is
    read until it carried content text or a refusal: a refused message has its ``refusal`` in
    place of any content, so after the first text of a choice none can come.
    """

    __slots__ = (
        "complete",
        "_model",
        "_id",
        "_finish_reasons",
        "_usage",
        "_choices",
        "_answered",
        "_refusal",
        "_settled",
        "_plain",
        "_models",
        "_sdk_chunk",
    )

    def __init__(self, capture: bool = False, models: _ChatModels | None = None) -> None:
        self.complete = False
        self._model: str | None = None
        self._id: str | None = None
        self._finish_reasons: dict[int, str] = {}
        self._usage: Any = None
        # choice index -> {"text": [...], "tools": {tool index: {"id", "name", "arguments"}}}
        self._choices: dict[int, dict[str, Any]] | None = {} if capture else None
        self._answered = False
        self._refusal = False
        self._settled: set[int] = set()  # choice indices whose delta showed text or a refusal
        self._plain = False  # model, id and a choice object came, no capture: plain attribute reads
        self._models = models
        # The SDK's chunk class, whose instances are read plainly from the first (no capture):
        # the SDK sets every declared member.
        self._sdk_chunk = models.chunk if models is not None and not capture else None

    def observe(self, chunk: Any) -> None:
        if self._plain:  # what _observe reads, for the SDK's models
            try:
                if self._plain_choices(chunk.choices):
                    usage = chunk.usage
                    if usage is not None:
                        self._usage = usage
                    return
            except (AttributeError, TypeError):  # a shape the SDK did not validate: read again, tolerantly
                pass
        elif type(chunk) is self._sdk_chunk and self._sdk_read(chunk):
            return
        self._observe(chunk)

    def _plain_choices(self, choices: Any) -> bool:
        """A chunk's choices, of the SDK's models, read by plain attribute reads; False when they
        are not a list (the chunk is read tolerantly). Raises ``AttributeError`` or ``TypeError``
        on a shape the SDK did not validate."""
        if type(choices) is not list:
            return False
        for choice in choices:
            index = choice.index
            if index not in self._settled:
                self._see_delta(index, choice.delta)
            reason = choice.finish_reason
            if reason is not None and isinstance(reason, str):
                self._finish_reasons[index if type(index) is int else 0] = reason
                self.complete = True
        return True

    def _sdk_read(self, chunk: Any) -> bool:
        """What :meth:`_observe` reads, from a chunk of the SDK's class whose choices are the SDK's
        with an int ``index`` (read as plain attributes: the SDK sets every declared member); False,
        nothing read, for any other shape."""
        choices = chunk.choices
        if type(choices) is not list:
            return False
        for choice in choices:
            if type(choice) is not self._models.chunk_choice or type(choice.index) is not int:  # type: ignore[union-attr]
                return False
        if self._model is None and type(model := chunk.model) is str and model:
            self._model = model
        if self._id is None and type(chunk_id := chunk.id) is str:
            self._id = chunk_id
        for choice in choices:
            index = choice.index
            if isinstance(reason := choice.finish_reason, str):
                self._finish_reasons[index] = reason
                self.complete = True
            if index not in self._settled:
                self._see_delta(index, choice.delta)
        if choices:
            self._answered = True
        if (usage := chunk.usage) is not None:
            self._usage = usage
        self._plain = self._answered and self._model is not None and self._id is not None
        return True

    def _see_delta(self, index: Any, delta: Any) -> None:
        """Until a choice's delta carried text or a refusal: a refusal there makes the call's. (An
        ``index`` that is not an int is choice 0's, as :func:`_index_of` reads it.)"""
        if type(index) is not int:
            index = 0
            if index in self._settled:
                return
        refusal = getattr(delta, "refusal", None)
        if isinstance(refusal, str) and refusal:
            self._refusal = True
        elif not (isinstance(content := getattr(delta, "content", None), str) and content):
            return
        if len(self._settled) < MAX_SETTLED_CHOICES:
            self._settled.add(index)

    def _observe(self, chunk: Any) -> None:
        if self._model is None and isinstance(model := getattr(chunk, "model", None), str) and model:
            self._model = model
        if self._id is None and isinstance(chunk_id := getattr(chunk, "id", None), str):
            self._id = chunk_id
        choices = getattr(chunk, "choices", None)
        if not isinstance(choices, (list, tuple)):  # what sequence() reads, without a call per chunk
            choices = ()
        for choice in choices:
            # The SDK made every choice that came as a JSON object a model; one that came as
            # anything else reads as nothing below. Judged until the first object came.
            if not self._answered:
                if not is_object(choice):
                    continue
                self._answered = True
            index = _index_of(choice)
            reason = getattr(choice, "finish_reason", None)
            if isinstance(reason, str):
                self._finish_reasons[index] = reason
                self.complete = True
            delta = getattr(choice, "delta", None)
            if index not in self._settled:
                self._see_delta(index, delta)
            if self._choices is not None and is_object(choice):
                self._add_delta(self._choices.setdefault(index, {"text": [], "tools": {}}), delta)
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self._usage = usage
        self._plain = self._choices is None and self._answered and self._model is not None and self._id is not None

    @staticmethod
    def _add_delta(seen: dict[str, Any], delta: Any) -> None:
        if isinstance(text := getattr(delta, "content", None), str):
            seen["text"].append(text)
        for call in getattr(delta, "tool_calls", None) or ():
            tool = seen["tools"].setdefault(getattr(call, "index", 0), {"id": None, "name": None, "arguments": ""})
            tool["id"] = getattr(call, "id", None) or tool["id"]
            function = getattr(call, "function", None)
            tool["name"] = getattr(function, "name", None) or tool["name"]
            if isinstance(arguments := getattr(function, "arguments", None), str):
                tool["arguments"] += arguments

    def _output(self, choices: dict[int, dict[str, Any]]) -> list[Any]:
        messages = []
        for index in sorted(choices):
            seen = choices[index]
            parts: list[dict[str, Any]] = [{"type": "text", "content": "".join(seen["text"])}] if seen["text"] else []
            parts += [{"type": "tool_call", **seen["tools"][i]} for i in sorted(seen["tools"])]
            message: dict[str, Any] = {"role": "assistant", "parts": parts}
            if index in self._finish_reasons:
                message["finish_reason"] = self._finish_reasons[index]
            messages.append(message)
        return messages

    def response(self) -> Response:
        finish_reasons = self._finish_reasons
        if len(finish_reasons) > 1:
            reasons = tuple(finish_reasons[i] for i in sorted(finish_reasons))
        else:
            reasons = tuple(finish_reasons.values())
        output = self._output(self._choices) if self._choices is not None else None
        usage = _sdk_usage(self._usage, self._models) if self._models is not None else None
        return Response(
            self._model,
            self._id,
            reasons,
            to_usage(self._usage) if usage is None else usage,
            output=output,
            answered=self._answered,
            refusal=self._refusal,
        )


_RESPONSES = call_answers.OpenAIAnswers(responses=True)


class _State(ProviderState):
    """One state for both endpoints: the request's path picks the API (token-limit keys,
    ``openai.api.type``, content), the result's type its extraction, the stream's URL its
    accumulator."""

    provider = PROVIDER
    envelope_fields = ("code", "type")
    response_type = "types.chat.ChatCompletion"
    extra_response_types = ("types.responses.Response",)
    raw_response_type = "_response.BaseAPIResponse"  # with_streaming_response
    extra_raw_response_types = ("_legacy_response.LegacyAPIResponse",)  # with_raw_response
    # OpenAI's error codes page: 503 "overloaded or not ready yet", 429 rate limit reached.
    drill_answers: ClassVar[Mapping[str, tuple[int, str]]] = {
        names.DRILL_FAILURE_OVERLOADED: (503, "server_error"),
        names.DRILL_FAILURE_RATE_LIMITED: (429, "rate_limit_exceeded"),
    }

    def error_body(self, error_type: str, message: str) -> dict[str, Any]:
        """OpenAI's error shape: ``{"error": {"message", "type", "param", "code"}}``."""
        return {"error": {"message": message, "type": error_type, "param": None, "code": error_type}}

    inject_trace_context = True  # the SDK sends no traceparent of its own

    def __init__(self, instruments: Instruments) -> None:
        super().__init__(instruments)
        # The trace context goes on each attempt's headers as the SDK builds them
        # (:func:`_build_headers_wrapper`), not on a copy of the call's options: the shared
        # wrappers' copy is not made.
        self.propagates_per_attempt, self.propagates = self.propagates, False
        # client -> the lower-cased names of the headers it sends on every request (:func:`_add_trace_context`)
        self.client_headers: weakref.WeakKeyDictionary[Any, frozenset[str]] = weakref.WeakKeyDictionary()
        # ... and the last client's, without a weak reference made per call
        self.last_client_headers: tuple[Callable[[], object], frozenset[str]] = (_no_client, frozenset())
        self._responses_class = self.response_class[1]  # extra_response_types[0]
        self._chat_models = _ChatModels.of_sdk()
        self._chat_answers = _ChatAnswers(self._chat_models)
        from openai import Omit
        from openai._models import FinalRequestOptions
        from openai.lib.azure import BaseAzureClient

        self.omit_type = Omit
        self._options_type = FinalRequestOptions

        self._azure_client = BaseAzureClient

    def response_of(self, result: Any) -> Response:
        """What a parsed ``ChatCompletion`` or Responses ``Response`` reports (``parse()`` results
        subclass them). A ``ChatCompletion`` of the SDK's own class (not a subclass) whose choices
        and messages came as JSON objects (:class:`_ChatModels`), without an undeclared member (an
        ``error`` among them), is read as plain attributes; any other by :func:`chat_response_of`."""
        models = self._chat_models
        if (
            type(result) is models.completion
            and not result.__pydantic_extra__
            and type(choices := result.choices) is list
        ):
            reasons = []
            refusal = False
            try:
                for choice in choices:
                    if type(reason := choice.finish_reason) is str:
                        reasons.append(reason)
                    if type(said := choice.message.refusal) is str and said:
                        refusal = True
                usage = _sdk_usage(result.usage, models)
            except AttributeError:  # a choice or a message that came as another JSON value
                usage = None
            if usage is not None:
                model, response_id = result.model, result.id
                return Response(
                    model if type(model) is str and model else None,
                    response_id if type(response_id) is str else None,
                    tuple(reasons),
                    usage,
                    answered=bool(choices),
                    refusal=refusal,
                )
        if isinstance(result, self._responses_class):
            return openai_responses.response_of(result)
        return chat_response_of(result)

    def output_of(self, result: Any, seen: Response) -> list[Any]:
        """The output messages of a parsed ``ChatCompletion`` or ``Response`` (content capture on)."""
        if isinstance(result, self._responses_class):
            return openai_responses.output_of(result, seen)
        return chat_output(result)

    def request_of(self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Request | None:
        """``request(cast_to, options, *, stream, stream_cls)``: a ``POST`` to an inference endpoint, or None."""
        try:
            options = args[1]
        except IndexError:  # given by keyword
            options = kwargs.get("options")
        # The SDK's own options with a JSON object body and no extra_body (the usual call) are read
        # as plain attributes; anything else as request_options() reads it.
        url: object
        method: object
        if type(options) is self._options_type and type(body := options.json_data) is dict and not options.extra_json:
            url, method = options.url, options.method
        else:
            options, body = request_options(args, kwargs)
            url, method = getattr(options, "url", None), getattr(options, "method", None)
        if type(method) is str and type(url) is str:  # the SDK's own options: one look-up
            api = _APIS.get((method, url))
        else:  # another type (a caller's own options): compared, as the SDK's request would
            api = _APIS.get(("post", url)) if isinstance(url, str) and method == "post" else None
        if api is None or not body:
            return None
        attributes, max_tokens_keys, any_max_tokens_key = api
        max_tokens = None
        if not any_max_tokens_key.isdisjoint(body):  # asked in C: many requests set no limit
            for key in max_tokens_keys:
                if key in body:
                    max_tokens = body[key]
                    break
        # Chat Completions' reasoning_effort, the Responses API's reasoning.effort (most requests set
        # neither: the endpoint's own read-only attributes then)
        if "reasoning_effort" in body or "reasoning" in body:
            attributes = {
                **attributes,
                **reasoning_level(body, "reasoning_effort"),
                **reasoning_level(body, "reasoning", "effort"),
            }
        if isinstance(instance, self._azure_client):
            # Azure OpenAI: ``model`` is the caller's deployment name, which says nothing of the model served.
            return Request(
                body.get("model"), max_tokens, body.get("stream") is True, body, AZURE_PROVIDER, attributes, True
            )
        return Request(body.get("model"), max_tokens, body.get("stream") is True, body, attributes=attributes)

    ask_keys = call_answers.OPENAI_KEYS

    def checks_of(self, body: Any) -> CallChecks | None:
        asked = call_answers.openai_asked(body)
        return None if asked is None else CallChecks(asked, self._chat_answers if "messages" in body else _RESPONSES)

    def input_content(self, body: Any) -> Content:
        # Chat Completions requires ``messages``; the Responses API has ``input`` / ``instructions`` instead.
        return chat_input(body) if "messages" in body else responses_input(body)

    def new_accumulator(self, stream: Any) -> Accumulator:
        """Chat chunks or Responses events, by the endpoint the stream came from."""
        capture = self.capture.enabled
        if stream.response.request.url.path.endswith(RESPONSES_PATH):
            return openai_responses.ResponsesStreamAccumulator(capture=capture)
        return StreamAccumulator(capture=capture, models=self._chat_models)


def _end_left(state: ProviderState, helper_stream: Any) -> None:
    """End the call of the stream proxy a ``stream()`` helper's stream reads, as left by the caller
    (the response is closed already: only the span is left to end)."""
    raw = getattr(helper_stream, "_raw_stream", None)
    if isinstance(raw, (StreamProxy, AsyncStreamProxy)):
        raw._self_end(None, exhausted=False)  # what the proxy's own close() ends it with


# ``close()`` of the ``stream()`` helpers' streams (sync and async) closes the HTTP response
# directly, past our proxy; the proxy's call ends too, so the span ends when the caller leaves
# the ``with`` block.
_stream_close_wrapper, _stream_aclose_wrapper = finally_wrappers("end an openai stream's span", _end_left)


_NO_CLIENT = object()


def _no_client() -> object:
    return _NO_CLIENT  # no client is this one


def _client_header_names(client: Any, omit: type) -> frozenset[str]:
    """The lower-cased names of the headers a client sends on every request (its ``default_headers``,
    the caller's among them; one it leaves out with the SDK's ``omit`` type it does not send)."""
    return frozenset(key.lower() for key, value in client.default_headers.items() if not isinstance(value, omit))


def _add_trace_context(state: _State, client: Any, options: Any) -> None:
    """Put the global propagator's headers for the current span among one attempt's custom headers
    (``options.headers`` of the options the SDK copied for that attempt, replaced by a new dict, as
    the SDK's own per-attempt hooks do: the caller's options and header dicts are not touched),
    but none the client sends. The SDK merges the custom headers over the client's,
    case-insensitively, a later one winning and an ``Omit()`` removing it: a header the caller set
    on the call (``Omit()`` included) is kept as the caller gave it. The client's names are read
    once per client (its default headers are fixed when it is made)."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    if not carrier:
        return
    last_client, named = state.last_client_headers  # most processes call through one client
    if last_client() is not client:
        try:
            known = state.client_headers.get(client)
            if known is None:
                known = state.client_headers[client] = _client_header_names(client, state.omit_type)
            named = known
            state.last_client_headers = (weakref.ref(client), named)
        except TypeError:  # a client that cannot be a key (a subclass with __eq__ and no __hash__): read each time
            named = _client_header_names(client, state.omit_type)
    custom = options.headers  # NotGiven (no headers, the common call) is falsy
    # A name the caller set on the call in any case (Omit() included) is the caller's too: openai 2.x
    # merges the custom headers over the client's case-sensitively, so ours would go out beside it.
    taken = named | {key.lower() for key in custom} if custom else named
    try:
        disjoint = taken.isdisjoint(map(str.lower, carrier))  # in C
    except TypeError:  # a propagator that wrote a key of another type (bytes): its own lower()
        disjoint = taken.isdisjoint(key.lower() for key in carrier)
    if not disjoint:
        carrier = {key: value for key, value in carrier.items() if key.lower() not in taken}
        if not carrier:
            return
    options.headers = {**carrier, **custom} if custom else carrier


def _build_headers_wrapper(state: _State) -> Callable[..., Any]:
    """wrapt wrapper for ``BaseClient._build_headers(options, *, retries_taken)``, called once per
    attempt: inside one of our calls, the attempt's headers get the trace context (:func:`_add_trace_context`)."""
    if not state.propagates_per_attempt:

        def unchanged(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            return wrapped(*args, **kwargs)

        return unchanged

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        current = _state.current_call.get()
        # Outside our calls, and inside one whose adapter sent the trace context (LiteLLM's
        # extra_headers), the request goes out as the SDK built it.
        if current is not None and not current.handles_upstream:
            guarded(
                "add the trace context to a provider request",
                _add_trace_context,
                state,
                instance,
                args[0] if args else kwargs["options"],
            )
        return wrapped(*args, **kwargs)

    return wrapper


_CHAT_STREAMS = "openai.lib.streaming.chat._completions"
_RESPONSE_STREAMS = "openai.lib.streaming.responses._responses"
_TARGETS = (
    Target("openai._base_client", "SyncAPIClient.request", create_wrapper),
    Target("openai._base_client", "AsyncAPIClient.request", async_create_wrapper),
    Target("openai._base_client", "BaseClient._build_headers", _build_headers_wrapper),
    Target("openai._legacy_response", "LegacyAPIResponse._parse", parse_wrapper),
    Target("openai._response", "BaseAPIResponse._parse", parse_wrapper),
    Target("openai._response", "APIResponse.close", close_wrapper),
    Target("openai._response", "AsyncAPIResponse.close", async_close_wrapper),
    Target(_CHAT_STREAMS, "ChatCompletionStream.close", _stream_close_wrapper),
    Target(_CHAT_STREAMS, "AsyncChatCompletionStream.close", _stream_aclose_wrapper),
    Target(_RESPONSE_STREAMS, "ResponseStream.close", _stream_close_wrapper),
    Target(_RESPONSE_STREAMS, "AsyncResponseStream.close", _stream_aclose_wrapper),
)


class _HttpxState(_State):
    """openai 2.x: the same client, request options, raw responses and stream helpers as 3.x, on
    httpx (3.0 moved to httpx2): raw httpx errors escape its streams, httpx types build a drill's answer."""

    http_library = "httpx"


class OpenAIInstrumentor(TargetTableInstrumentor):
    """Instruments the openai SDK's Chat Completions and Responses API calls, every call shape.

    ``instrument(tracer_provider=None, meter_provider=None, logger_provider=None)``; providers
    default to the global ones (the logger provider carries the opt-in content events).
    Supported range: ``openai >= 2.0, < 4`` (``instrumentation_dependencies``): the wrap points,
    request options, raw responses and stream helpers read here are the same from 2.0 on; the
    installed major picks the state (2.x runs on httpx, 3.x on httpx2). openai 2.x is what
    frameworks still pin (llama-index-llms-openai: ``openai >= 1.108.1, < 3``).
    """

    targets = _TARGETS
    dependencies = ("openai >= 2.0, < 4",)
    state_class = _State

    def _table(self) -> tuple[tuple[Target, ...], Callable[[Instruments], Any]]:
        return self.targets, _HttpxState if _installed_major() == 2 else _State


def _installed_major() -> int | None:
    try:
        return int(version("openai").split(".", 1)[0])
    except (PackageNotFoundError, ValueError):
        return None
