"""google-genai SDK instrumentation (entry point ``otel_sampling_google_genai``).

One GenAI inference span ``chat {model}`` (kind CLIENT) per ``generateContent`` or
``streamGenerateContent`` request, whatever the call shape, sync and async:
``client.models.generate_content`` / ``generate_content_stream``, their ``client.aio`` twins, and
the chats built on them (``client.chats`` / ``client.aio.chats``: ``send_message`` and
``send_message_stream``). Automatic function calling sends one request per turn: one span each.
Endings, cost, time to first chunk, degraded mode, failover and content capture come from the
shared machinery (:mod:`otel_sampling.instrumentation._provider`).

Wrap point: ``google.genai._api_client.BaseApiClient.request`` / ``request_streamed`` /
``async_request`` / ``async_request_streamed``, for a ``post`` to a path ending in
``:generateContent`` or ``:streamGenerateContent``. Every shape above reaches exactly one of them
once per request (the SDK's retries run inside), with the REST body already built: the JSON the
Gemini API and Vertex AI share (``contents``, ``systemInstruction``,
``generationConfig.maxOutputTokens``; answers ``modelVersion``, ``responseId``, ``candidates``,
``promptFeedback``, ``usageMetadata``), so both modes read the same. ``request_streamed`` is a
generator that sends the request when first read: the span starts at the call, and a request
that fails (HTTP 429...) ends it when the stream is first read; the async twin sends it before
returning its stream. ``gen_ai.request.model`` is the model of the path (``models/gemini-2.5-flash``
is ``gemini-2.5-flash``; a tuned model or a Vertex AI endpoint is a deployment name, not compared
with the served model). ``instrumentation_dependencies``: ``google-genai >= 2.30, < 4``: the same
hooks and REST bodies from 2.30 on (google-adk's floor: it pins ``google-genai < 3``); 2.x sends
through httpx, 3.x through httpx2, and the installed major picks the state that reads its errors.

``gen_ai.provider.name`` is ``gcp.gemini`` (Gemini API) or ``gcp.vertex_ai`` (the client's
``vertexai`` mode), GenAI semconv well-known values; both are priced as genai-prices' ``google``.
The served model is the answer's ``modelVersion`` (a gateway's ``OTEL_SAMPLING_SERVED_MODEL_HEADERS``
are not read). Usage (``usageMetadata``):
``gen_ai.usage.input_tokens`` is ``promptTokenCount`` plus ``toolUsePromptTokenCount``
(``promptTokenCount`` already includes ``cachedContentTokenCount``, reported as
``gen_ai.usage.cache_read.input_tokens``); ``gen_ai.usage.output_tokens`` is
``candidatesTokenCount`` plus ``thoughtsTokenCount`` (thinking tokens are output, billed as such),
and ``thoughtsTokenCount`` is also ``gen_ai.usage.reasoning.output_tokens``.
A stream's usage is its last chunk's.

Endings: a candidate ``finishReason`` that says the model's output was blocked (:data:`BLOCKED`:
``SAFETY``, ``RECITATION``, ``PROHIBITED_CONTENT``, ``BLOCKLIST``, ``SPII`` and the image ones),
or a ``promptFeedback.blockReason`` (the prompt was blocked: no candidates), is ``refused``;
``MAX_TOKENS`` and the others are reported in ``gen_ai.response.finish_reasons`` as sent and the
call is ``completed``. Errors: the SDK's ``APIError`` is named by its ``status``
(``RESOURCE_EXHAUSTED``, ``UNAVAILABLE``, ``DEADLINE_EXCEEDED``...), else its HTTP ``code``; HTTP 429
and 5xx are ``model.unavailable``, 408 and 504 (``DEADLINE_EXCEEDED``) and the client's own
timeouts ``timeout``. A stream counts as complete once a chunk carried a ``finishReason`` or a
block reason: one cut before (``truncate``, a dropped connection) ends ``incomplete_stream``, one
the caller leaves early ends ``cancelled``.

Trace context: the SDK sends none of its own, so each request carries the global propagator's
headers for our span: added to the request the SDK builds (``BaseApiClient._build_request``, wrapped
too), which already holds the client's headers and the call's ``http_options.headers``; the
caller's options and the client's headers are left as they were, and a header set on the call or
the client is kept; ``OTEL_SAMPLING_OMIT_PROVIDER_TRACE_CONTEXT=true`` turns it off.
"""

from __future__ import annotations

import copy
import importlib
import json
from collections.abc import Callable, Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any, ClassVar

from opentelemetry import propagate

from otel_sampling import names
from otel_sampling import state as _state
from otel_sampling.content import Content, generic_part, text_part
from otel_sampling.drills import Drill
from otel_sampling.instrumentation import call_answers
from otel_sampling.instrumentation._provider import (
    ProviderState,
    Request,
    async_create_wrapper,
    create_wrapper,
    guarded,
    sequence,
    server_of_url,
)
from otel_sampling.instrumentation._targets import Target, TargetTableInstrumentor
from otel_sampling.instrumentation.streams import UnreadEvents
from otel_sampling.metrics import Instruments
from otel_sampling.records.call_signals import CallChecks
from otel_sampling.rules.endings import error_type_of, failure_of
from otel_sampling.rules.values import MAX_TOKEN_COUNT, Failure, Response, Usage, token_count

PROVIDER = "gcp.gemini"  # gen_ai.provider.name well-known value of the Gemini API
VERTEX_PROVIDER = "gcp.vertex_ai"  # gen_ai.provider.name well-known value of Vertex AI
GENERATE = ":generateContent"
STREAM_GENERATE = ":streamGenerateContent"
_MODELS = "models/"
_read_json = json.JSONDecoder().raw_decode  # (value, end) of the JSON text a string starts with
_JSON_SPACE = " \t\n\r"  # JSON's whitespace (RFC 8259)
#: Candidate finish reasons saying the output was blocked (``google.genai.types.FinishReason``):
#: the call is ``refused``. A ``promptFeedback.blockReason`` (any) is too.
BLOCKED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _count(value: Any) -> int | None:
    """:func:`~otel_sampling.rules.values.token_count`, with the usual case (absent, or a plain count) first."""
    if value is None or (type(value) is int and 0 <= value <= MAX_TOKEN_COUNT):
        return value
    return token_count(value)


#: The ``usageMetadata`` counts that add to (or detail) the prompt's and the candidates'.
_OTHER_COUNTS = frozenset({"thoughtsTokenCount", "toolUsePromptTokenCount", "cachedContentTokenCount"})


def to_usage(metadata: Any) -> Usage:
    """Semantic-convention usage from a ``usageMetadata`` object (see the module docstring)."""
    if not isinstance(metadata, dict):
        return Usage()
    get = metadata.get
    prompt, candidates = get("promptTokenCount"), get("candidatesTokenCount")
    if (  # the usual answer: plain counts of the prompt and the candidates, nothing else to add
        type(prompt) is int
        and type(candidates) is int
        and 0 <= prompt <= MAX_TOKEN_COUNT
        and 0 <= candidates <= MAX_TOKEN_COUNT
        and _OTHER_COUNTS.isdisjoint(metadata)
    ):
        return Usage(prompt, candidates)
    thoughts, tool_prompt, cached = (
        get("thoughtsTokenCount"),
        get("toolUsePromptTokenCount"),
        get("cachedContentTokenCount"),
    )
    prompt, candidates, thoughts = _count(prompt), _count(candidates), _count(thoughts)
    input_tokens = None
    if prompt is not None:
        tool_prompt = _count(tool_prompt)
        input_tokens = token_count(prompt + tool_prompt) if tool_prompt else prompt
    output_tokens = None
    if candidates is not None or thoughts is not None:
        output_tokens = token_count((candidates or 0) + thoughts) if thoughts else (candidates or 0)
    return Usage(input_tokens, output_tokens, _count(cached), reasoning_output_tokens=thoughts)


def _blocked(answer: Any) -> bool:
    """The prompt was blocked: ``promptFeedback.blockReason`` is set."""
    return _str(_get(_get(answer, "promptFeedback"), "blockReason")) is not None


def _error_type(answer: Any) -> str | None:
    """``error.type`` of an error body that came with HTTP 200 (``{"error": {"status", "code"}}``)."""
    error = _get(answer, "error")
    if not error:
        return None
    named = _str(_get(error, "status"))
    code = _get(error, "code")
    if named is None and isinstance(code, int) and not isinstance(code, bool):
        named = str(code)
    return named or names.ERROR_TYPE_ERROR_EVENT


_NOTHING = Response(None, None, (), Usage(), answered=False)


def response_of(answer: Any) -> Response:
    """What a ``GenerateContentResponse`` JSON object reports (output content not read)."""
    if not isinstance(answer, dict):
        return _NOTHING
    get = answer.get
    candidates, model, response_id = get("candidates"), get("modelVersion"), get("responseId")
    answered = refusal = "promptFeedback" in answer and _blocked(answer)
    reasons: list[str] = []
    if isinstance(candidates, (list, tuple)):
        for candidate in candidates:
            if isinstance(candidate, dict):
                answered = True
                reason = candidate.get("finishReason")
                if isinstance(reason, str) and reason:
                    reasons.append(reason)
                    refusal = refusal or reason in BLOCKED
    return Response(
        model if isinstance(model, str) and model else None,
        response_id if isinstance(response_id, str) and response_id else None,
        tuple(reasons),
        to_usage(get("usageMetadata")),
        error_type=_error_type(answer) if "error" in answer else None,
        answered=answered,
        refusal=refusal,
    )


def _part(part: Any) -> dict[str, Any]:
    """A GenAI semconv message part from a Gemini ``Part`` (JSON)."""
    if not isinstance(part, dict):
        return generic_part(None)
    if isinstance(text := part.get("text"), str):
        return {"type": "reasoning", "content": text} if part.get("thought") is True else text_part(text)
    if isinstance(call := part.get("functionCall"), dict):
        return {"type": "tool_call", "id": call.get("id"), "name": call.get("name"), "arguments": call.get("args")}
    if isinstance(result := part.get("functionResponse"), dict):
        return {"type": "tool_call_response", "id": result.get("id"), "response": result.get("response")}
    kind = next(iter(part), None)  # inlineData, fileData, executableCode...: the kind only
    return generic_part(kind)


def _parts(content: Any) -> list[dict[str, Any]]:
    return [_part(p) for p in sequence(_get(content, "parts"))]


def _role(role: Any) -> Any:
    return "assistant" if role == "model" else role


def output_messages(candidates: list[Any] | tuple[Any, ...]) -> list[Any]:
    """The output messages of a list of candidates (content capture on)."""
    messages = []
    for candidate in candidates:
        message: dict[str, Any] = {"role": "assistant", "parts": _parts(_get(candidate, "content"))}
        if reason := _str(_get(candidate, "finishReason")):
            message["finish_reason"] = reason
        messages.append(message)
    return messages


def _joined(parts: list[Any]) -> list[Any]:
    """Streamed parts with each run of text parts (of the answer, or of its thoughts) joined into one."""
    joined: list[Any] = []
    for part in parts:
        last = joined[-1] if joined else None
        if (
            isinstance(part, dict)
            and isinstance(text := part.get("text"), str)
            and isinstance(last, dict)
            and isinstance(last.get("text"), str)
            and part.get("thought") == last.get("thought")
            and part.keys() <= {"text", "thought"}
        ):
            joined[-1] = {**last, "text": last["text"] + text}
        else:
            joined.append(part)
    return joined


#: How many chunk bodies a stream's accumulator holds unread (see :class:`StreamAccumulator`), and
#: how many characters at most in all: a chunk past either is read as it comes.
MAX_PENDING_CHUNKS = 32
MAX_PENDING_CHARS = 1 << 20
#: Keys of a chunk that say more than its model, id, usage and candidates (as the SDK's
#: ``json.dumps`` writes them); a body without any of them is a plain one.
_TELLING_KEYS = ('"finishReason"', '"error"', '"promptFeedback"')


class StreamAccumulator:
    """Reads the chunks of a ``streamGenerateContent`` stream (each a ``GenerateContentResponse``
    in the SDK's ``SdkHttpResponse.body``): model, id and usage from the latest chunk that has
    them, finish reasons per candidate, a block; with ``capture``, each candidate's parts too.

    A plain chunk (no finish reason, error or prompt feedback anywhere in its text: most of a
    stream) can only set the model, id, usage and that candidates came: its text is kept unread
    (up to :data:`MAX_PENDING_CHUNKS`, :data:`MAX_PENDING_CHARS` in all) until a chunk that says
    more, or the end, and is read only if that later chunk does not set all of these itself. An
    unreadable kept chunk that is read makes the reading of the chunk that settles it fail (once
    that chunk was read), as it would have; one
    settled at the end makes :meth:`response` raise :class:`UnreadEvents` with what the others said."""

    __slots__ = (
        "complete",
        "_model",
        "_id",
        "_reasons",
        "_usage",
        "_blocked",
        "_error",
        "_answered",
        "_parts",
        "_pending",
        "_pending_chars",
    )

    def __init__(self, capture: bool = False) -> None:
        self.complete = False
        self._model: str | None = None
        self._id: str | None = None
        self._reasons: dict[int, str] = {}
        self._usage: Any = None
        self._blocked = False
        self._error: str | None = None
        self._answered = False
        self._parts: dict[int, list[Any]] | None = {} if capture else None
        self._pending: list[str] = []  # plain chunks' bodies, unread, in order
        self._pending_chars = 0  # their length in all

    def observe(self, event: Any) -> None:
        body = getattr(event, "body", None)
        if not isinstance(body, str) or not body:
            return
        pending = self._pending
        if (  # keys are found in the text only as written: none escaped (``\u``)
            self._parts is None
            and len(pending) < MAX_PENDING_CHUNKS
            and self._pending_chars + len(body) <= MAX_PENDING_CHARS
            and body[0] == "{"
            and "\\u" not in body
            and _TELLING_KEYS[0] not in body
            and _TELLING_KEYS[1] not in body
            and _TELLING_KEYS[2] not in body
        ):
            pending.append(body)
            self._pending_chars += len(body)
            return
        # The SDK's own json.dumps of the chunk: one JSON value, nothing around it.
        chunk = _read_json(body)[0]
        unreadable = self._settle(chunk) if pending else None
        self._read(chunk)
        if unreadable is not None:
            raise unreadable

    def _settle(self, later: Any) -> ValueError | None:
        """Read the kept plain chunks, in order, unless ``later`` (the chunk that follows them, or
        None) sets everything they could; the error of the first that could not be read.

        Chunks ``later`` overrides are dropped undecoded: each is the SDK's own ``json.dumps`` of a
        chunk it decoded before yielding it, so none can be unreadable (a stream the SDK cannot
        decode fails in the SDK, and the call ends with its error)."""
        pending = self._pending
        if type(later) is dict:
            get = later.get
            model, response_id, candidates = get("modelVersion"), get("responseId"), get("candidates")
            if (
                isinstance(model, str)
                and model
                and isinstance(response_id, str)
                and response_id
                and get("usageMetadata") is not None
                and (
                    self._answered
                    or (isinstance(candidates, (list, tuple)) and any(isinstance(c, dict) for c in candidates))
                )
            ):
                pending.clear()
                self._pending_chars = 0
                return None
        unreadable: ValueError | None = None
        for body in pending:
            try:
                chunk = _read_json(body)[0]
            except ValueError as exc:
                unreadable = unreadable or exc
            else:
                self._read(chunk)
        pending.clear()
        self._pending_chars = 0
        return unreadable

    def _read(self, chunk: Any) -> None:
        if not isinstance(chunk, dict):
            return
        get = chunk.get
        # Every chunk names the model and the id: one seen already is not checked again.
        model = get("modelVersion")
        if model != self._model and isinstance(model, str) and model:
            self._model = model
        response_id = get("responseId")
        if response_id != self._id and isinstance(response_id, str) and response_id:
            self._id = response_id
        if (usage := get("usageMetadata")) is not None:
            self._usage = usage
        if "error" in chunk and self._error is None:
            self._error = _error_type(chunk)
        if "promptFeedback" in chunk and _blocked(chunk):
            self._blocked = self._answered = self.complete = True
        candidates = get("candidates")
        if not isinstance(candidates, (list, tuple)):
            return
        for position, candidate in enumerate(candidates):
            if not isinstance(candidate, dict):
                continue
            self._answered = True
            reason = candidate.get("finishReason")
            if reason and isinstance(reason, str):  # most chunks have none: the index is read only when needed
                index = candidate.get("index")
                self._reasons[index if isinstance(index, int) else position] = reason
                self.complete = True
            if self._parts is not None:
                index = candidate.get("index")
                index = index if isinstance(index, int) else position
                self._parts.setdefault(index, []).extend(sequence(_get(candidate.get("content"), "parts")))

    def _output(self, parts: dict[int, list[Any]]) -> list[Any]:
        return output_messages(
            [
                {
                    "content": {"parts": _joined(parts[i])},
                    **({"finishReason": self._reasons[i]} if i in self._reasons else {}),
                }
                for i in sorted(parts)
            ]
        )

    def response(self) -> Response:
        unreadable = self._settle(None) if self._pending else None
        reasons = tuple(self._reasons[i] for i in sorted(self._reasons))
        response = Response(
            self._model,
            self._id,
            reasons,
            to_usage(self._usage),
            output=self._output(self._parts) if self._parts is not None else None,
            error_type=self._error,
            answered=self._answered,
            refusal=self._blocked or any(reason in BLOCKED for reason in reasons),
        )
        if unreadable is not None:
            raise UnreadEvents(response) from unreadable
        return response


def _argument(args: tuple[Any, ...], kwargs: dict[str, Any], position: int, name: str) -> Any:
    return args[position] if len(args) > position else kwargs.get(name)


def model_of_path(path: str) -> tuple[str, bool]:
    """The model a ``{model}:generateContent`` path names, and whether it is a deployment name
    (a tuned model, a Vertex AI endpoint) rather than a model: ``models/x`` and
    ``publishers/google/models/x`` name ``x``."""
    resource = path.split("?", 1)[0].rpartition(":")[0]
    head, found, model = resource.rpartition(_MODELS)
    if found and (not head or head.endswith("/")) and "/" not in model:
        return model, False
    return resource.rpartition("/")[2], True


#: How many request paths a state keeps read (see ``_State.request_of``), each up to this long.
MAX_PATHS = 256
_MAX_PATH_LENGTH = 1024
_NOT_GENERATE = ("", False, False)  # what endpoint_of gives a path that is no generateContent one


def endpoint_of(path: str) -> tuple[str, bool, bool]:
    """``(model, deployment, stream)`` of a ``{model}:generateContent`` or
    ``{model}:streamGenerateContent`` path (:func:`model_of_path`); ``_NOT_GENERATE`` for any other."""
    endpoint = path.split("?", 1)[0]
    stream = endpoint.endswith(STREAM_GENERATE)
    if not (stream or endpoint.endswith(GENERATE)):
        return _NOT_GENERATE
    resource = endpoint[: -len(STREAM_GENERATE if stream else GENERATE)]
    if resource.startswith(_MODELS) and "/" not in resource[len(_MODELS) :]:  # the Gemini API's models/x
        return resource[len(_MODELS) :], False, stream
    model, deployment = model_of_path(path)
    return model, deployment, stream


def json_value(text: str) -> Any:
    """``json.loads(text)``: the same value, or the same ``ValueError``; the usual text (a JSON
    value, nothing but whitespace after it) read by the C decoder alone, without ``json.loads``'
    Python frames."""
    try:
        value, end = _read_json(text)
    except ValueError:  # leading whitespace, or no JSON: json.loads' own answer
        return json.loads(text)
    if end != len(text) and text[end:].strip(_JSON_SPACE):
        return json.loads(text)  # raises: extra data
    return value


_ANSWERS = call_answers.GeminiAnswers()


class _State(ProviderState):
    """The google-genai SDK's answers to the shared wrappers (see the module docstring)."""

    provider = PROVIDER
    envelope_fields = ("status",)
    accumulator = StreamAccumulator
    accumulator_captures = True
    inject_trace_context = True  # the SDK sends no traceparent of its own
    # Google's error model (google.rpc.Code over HTTP): 503 UNAVAILABLE, 429 RESOURCE_EXHAUSTED.
    drill_answers: ClassVar[Mapping[str, tuple[int, str]]] = {
        names.DRILL_FAILURE_OVERLOADED: (503, "UNAVAILABLE"),
        names.DRILL_FAILURE_RATE_LIMITED: (429, "RESOURCE_EXHAUSTED"),
    }

    def __init__(self, instruments: Instruments) -> None:
        super().__init__(instruments)
        # The trace context goes on the request the SDK builds (:func:`_build_request_wrapper`),
        # which already holds the client's and the call's headers: the shared wrappers' copy of
        # the call's arguments is not made.
        self.propagates_per_request, self.propagates = self.propagates, False
        self._endpoints: dict[str, tuple[str, bool, bool]] = {}  # path -> endpoint_of(path), shared by the views
        # ``request_streamed`` builds its request when its generator is first read, after the call
        # stopped being current: its wrapper sees this state as a view that reads the trace context
        # at the call and hands it to ``_build_request`` in the options (:meth:`with_trace_context`).
        self.streamed = copy.copy(self)
        self.streamed.propagates = self.propagates_per_request

    def bind_sdk(self) -> None:
        """google-genai's classes (not the anthropic / openai layout ``ProviderState`` reads)."""
        import types

        from google.genai import errors
        from google.genai import types as genai_types

        self.response_class = (genai_types.HttpResponse,)  # what request() returns
        # request_streamed is a generator function, async_request_streamed returns an async generator.
        self.stream_types = (types.GeneratorType, types.AsyncGeneratorType)
        self.raw_response_classes = ()
        self._timeout_types = (self._httpx.TimeoutException,)
        self._connection_types = (self._httpx.TransportError,)
        try:  # a client the caller hands the SDK (http_options.httpx_client) may be an httpx one
            httpx = importlib.import_module("httpx")
            self._timeout_types += (httpx.TimeoutException,)
            self._connection_types += (httpx.TransportError,)
        except ImportError:
            pass
        self._errors = errors

    def error_type(self, exc: BaseException) -> str:
        return error_type_of(exc, self._timeout_types, self._connection_types, self.envelope_fields, "code")

    def failure(self, exc: BaseException) -> Failure:
        return failure_of(exc, self._timeout_types, self._connection_types, self.envelope_fields, "code")

    def error_body(self, error_type: str, message: str) -> dict[str, Any]:
        """Google's error shape: ``{"error": {"code", "message", "status"}}``."""
        code = next((c for c, name in self.drill_answers.values() if name == error_type), 500)
        return {"error": {"code": code, "message": message, "status": error_type}}

    def drill_error(self, client: Any, options: Any, drill: Drill) -> BaseException:
        """The exception the SDK raises for ``drill.failure``: a client timeout as httpx2 raises it,
        else the ``ClientError`` / ``ServerError`` its answer gives (nothing is sent)."""
        message = f"otel-sampling drill {drill.name!r}: {drill.failure}"
        if drill.failure == names.DRILL_FAILURE_TIMEOUT:
            timeout: BaseException = self._httpx.ReadTimeout(message)
            return timeout
        status, error_type = self.drill_answers[drill.failure]
        error_class = self._errors.ClientError if status < 500 else self._errors.ServerError
        error: BaseException = error_class(status, self.error_body(error_type, message), None)
        return error

    def request_of(self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Request | None:
        """``request(http_method, path, request_dict, http_options=None)``: a ``generateContent``
        or ``streamGenerateContent`` post, or None."""
        if len(args) > 2:  # how the SDK calls it: request(http_method, path, request_dict, http_options)
            method, path, body = args[0], args[1], args[2]
        else:
            method = _argument(args, kwargs, 0, "http_method")
            path = _argument(args, kwargs, 1, "path")
            body = _argument(args, kwargs, 2, "request_dict")
        if method != "post":
            return None
        # A client sends the same few paths again and again: each read once (up to MAX_PATHS kept).
        endpoint = self._endpoints.get(path) if type(path) is str else None
        if endpoint is None:
            if not isinstance(path, str):
                return None
            endpoint = endpoint_of(path)
            if type(path) is str and len(path) <= _MAX_PATH_LENGTH and len(self._endpoints) < MAX_PATHS:
                self._endpoints[path] = endpoint
        if endpoint is _NOT_GENERATE:
            return None
        model, deployment, stream = endpoint
        if not isinstance(body, dict):
            body = {}
        config = body.get("generationConfig")
        max_tokens = config.get("maxOutputTokens") if isinstance(config, dict) else None
        vertex = getattr(instance, "vertexai", False) is True
        return Request(
            model or None, max_tokens, stream, body, VERTEX_PROVIDER if vertex else None, deployment=deployment
        )

    ask_keys = call_answers.GEMINI_KEYS

    def checks_of(self, body: Any) -> CallChecks | None:
        asked = call_answers.gemini_asked(body)
        return None if asked is None else CallChecks(asked, _ANSWERS)

    def input_content(self, body: Any) -> Content:
        system = body.get("systemInstruction")
        return Content(
            _parts(system) if isinstance(system, dict) else None,
            [
                {"role": _role(c.get("role")), "parts": _parts(c)}
                for c in sequence(body.get("contents"))
                if isinstance(c, dict)
            ],
        )

    def with_trace_context(
        self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``request_streamed``'s arguments carrying the propagator's headers for our span. A call
        that gives no ``http_options`` (the usual case) gets a :class:`_TraceHeaders` as its options:
        empty, so the SDK reads it as none, and :func:`_build_request_wrapper` adds its headers to
        the request the SDK builds (real options would make the SDK merge them into a copy of the
        client's on every request: a pydantic validation and a setattr per field). A call that
        gives options gets a copy of them whose ``headers`` add ours. A header set on the call or
        on the client is kept."""
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        positional = len(args) > 3
        options = args[3] if positional else kwargs.get("http_options")
        if options is None:
            new_options: Any = _TraceHeaders(carrier)
        else:
            given_headers = _get_headers(options)
            client_headers = _get_headers(getattr(instance, "_http_options", None))
            given = {key.lower() for key in (*given_headers, *client_headers)}
            added = {key: value for key, value in carrier.items() if key.lower() not in given}
            if not added:
                return args, kwargs
            headers = {**given_headers, **added}
            if isinstance(options, dict):
                new_options = {**options, "headers": headers}
            else:  # types.HttpOptions
                new_options = options.model_copy(update={"headers": headers})
        if positional:
            return (*args[:3], new_options, *args[4:]), kwargs
        if len(args) == 3 and "http_options" not in kwargs:
            return (*args, new_options), kwargs
        return args, {**kwargs, "http_options": new_options}

    def server_of(self, instance: Any) -> tuple[str, int | None] | None:
        url = getattr(getattr(instance, "_http_options", None), "base_url", None)
        last_url, last_server = self._last_server
        if url == last_url:
            return last_server
        server = server_of_url(self._httpx.URL(url)) if isinstance(url, str) else None
        self._last_server = (url, server)
        return server

    def parsed(self, result: Any) -> Response:
        """What an ``SdkHttpResponse`` body (a ``GenerateContentResponse`` JSON) reports; with
        content capture on, its output messages too."""
        body = getattr(result, "body", None)
        answer = json_value(body) if isinstance(body, str) and body else None
        response = response_of(answer)
        if (capture := self.capture).span or capture.event:
            response = response._replace(output=output_messages(sequence(_get(answer, "candidates"))))
        return response


def _get_headers(options: Any) -> Mapping[str, Any]:
    headers = options.get("headers") if isinstance(options, dict) else getattr(options, "headers", None)
    return headers if isinstance(headers, Mapping) else {}


class _TraceHeaders(dict[str, Any]):
    """The ``http_options`` of a streamed call that gave none: an empty dict (the SDK reads it as no
    options, in every version: it only asks whether options are truthy) carrying the propagator's
    headers for our span, which :func:`_build_request_wrapper` adds to the request the SDK builds."""

    __slots__ = ("headers",)

    def __init__(self, headers: dict[str, str]) -> None:
        super().__init__()
        self.headers = headers


def _add_trace_context(request: Any, carrier: dict[str, str] | None) -> None:
    """Add ``carrier``, else the propagator's headers for the current span (ours: the call is
    active), to the ``HttpRequest`` the SDK just built, but none it has already (set on the client
    or the call, any case). Its headers become a new dict: google-genai 2.x hands the client's own
    dict to a request whose call set no options."""
    if carrier is None:
        carrier = {}
        propagate.inject(carrier)
    if not carrier:
        return
    headers = request.headers
    try:  # C-level lower-casing: every header name the SDK and propagators set is a str
        given = set(map(str.lower, headers))
        fresh = given.isdisjoint(map(str.lower, carrier))
    except TypeError:  # a name that is no str: compared one by one
        given = {str(key).lower() for key in headers}
        fresh = False
    if fresh:
        request.headers = {**headers, **carrier}
        return
    added = {key: value for key, value in carrier.items() if str(key).lower() not in given}
    if added:
        request.headers = {**headers, **added}


def _build_request_wrapper(state: _State) -> Callable[..., Any]:
    """wrapt wrapper for ``BaseApiClient._build_request(http_method, path, request_dict,
    http_options)``, called once per request (the SDK's retries send the request it built again):
    inside one of our calls, the request gets the trace context (:func:`_add_trace_context`). The
    request already holds the client's headers and the call's ``http_options.headers`` (the SDK
    merged them), so a header set on either is kept, and the caller's options are not copied."""
    if not state.propagates_per_request:

        def unchanged(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            return wrapped(*args, **kwargs)

        return unchanged

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        request = wrapped(*args, **kwargs)
        options = args[3] if len(args) > 3 else kwargs.get("http_options")
        if type(options) is _TraceHeaders:  # a streamed call's, read at the call
            carrier: dict[str, str] | None = options.headers
        elif _state.current_call.get() is not None:
            carrier = None  # the current span's
        else:  # the request goes out as the SDK built it
            return request
        guarded("add the trace context to a provider request", _add_trace_context, request, carrier)
        return request

    return wrapper


def _streamed_wrapper(state: _State) -> Callable[..., Any]:
    return create_wrapper(state.streamed)


_CLIENT = "google.genai._api_client"
_TARGETS = (
    Target(_CLIENT, "BaseApiClient.request", create_wrapper),
    Target(_CLIENT, "BaseApiClient.request_streamed", _streamed_wrapper),
    Target(_CLIENT, "BaseApiClient.async_request", async_create_wrapper),
    Target(_CLIENT, "BaseApiClient.async_request_streamed", async_create_wrapper),
    Target(_CLIENT, "BaseApiClient._build_request", _build_request_wrapper),
)


class _HttpxState(_State):
    """google-genai 2.x: the same client methods and REST bodies as 3.x, sent through httpx (3.0
    moved to httpx2): httpx's timeouts and transport errors, an httpx timeout for a drill."""

    http_library = "httpx"


class GoogleGenAIInstrumentor(TargetTableInstrumentor):
    """Instruments every google-genai ``generateContent`` call shape (see the module docstring).

    ``instrument(tracer_provider=None, meter_provider=None, logger_provider=None)``; providers
    default to the global ones (the logger provider carries the opt-in content events).
    Supported range: ``google-genai >= 2.30, < 4``; the installed major picks the state (2.x on
    httpx, 3.x on httpx2).
    """

    targets = _TARGETS
    dependencies = ("google-genai >= 2.30, < 4",)
    state_class = _State

    def _table(self) -> tuple[tuple[Target, ...], Callable[[Instruments], Any]]:
        return self.targets, _HttpxState if _installed_major() == 2 else _State


def _installed_major() -> int | None:
    try:
        return int(version("google-genai").split(".", 1)[0])
    except (PackageNotFoundError, ValueError):
        return None
