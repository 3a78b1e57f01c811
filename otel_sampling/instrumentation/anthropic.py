"""anthropic SDK instrumentation (entry point ``otel_sampling_anthropic``).

One GenAI inference span ``chat {model}`` (kind CLIENT) per Messages API call, whatever the call
shape, sync and async: ``messages.create`` (plain and ``stream=True``), the ``messages.stream()``
managers, ``messages.parse``, the beta ``messages.*`` (``fallbacks`` included), the Bedrock and
Vertex beta classes (which copy ``create`` at import), ``with_raw_response`` (also when it was
first touched before ``instrument()``) and ``with_streaming_response``.

Why the wrap point is the client's ``request``: every one of those shapes reaches
``SyncAPIClient.request`` / ``AsyncAPIClient.request`` exactly once per API call (retries
inside), with ``options.span_name == "anthropic.messages.create"``; wrapping the resource
methods instead misses the platform copies and a ``with_raw_response`` cached before
instrumenting. ``instrumentation_dependencies`` pins the SDK range this private hook was read
from: ``anthropic >= 1.14, < 3`` (1.14 is the first release whose request options carry
``span_name``; the 0.x releases run on httpx, not httpx2). Our span is current while ``request``
runs, so the span anthropic emits itself (``anthropic.messages.create``, on by default from 1.14)
is its child, never a sibling; anthropic records no metrics, so nothing is counted twice. That
span's ``traceparent`` is what the SDK sends with each attempt
(``anthropic._tracing.inject_trace_headers``, unless the client's ``propagation`` option is off),
so requests already join our trace: we add no headers of our own.

Usage follows the semantic conventions: ``gen_ai.usage.input_tokens`` is anthropic's
``input_tokens`` plus ``cache_read_input_tokens`` plus ``cache_creation_input_tokens`` (anthropic's
``input_tokens`` excludes cache tokens). A stream's final usage is the ``message_start`` usage
overwritten field by field by the ``message_delta`` usage, never their sum. A server-side fallback
(a ``fallback`` content block, or a ``fallback_message`` entry in beta ``usage.iterations``) makes
the call ``degradation.mode=degraded`` with ``degradation.reason=provider_fallback``; the served
model is the response's ``model``. ``gen_ai.provider.name`` is ``anthropic``, or ``aws.bedrock`` /
``gcp.vertex_ai`` for the SDK's Bedrock and Vertex AI clients (GenAI semconv well-known values);
there the request names a platform model id, which is not compared with the served model.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Mapping
from typing import Any, ClassVar

from otel_sampling import names
from otel_sampling.content import Content, generic_part, text_part
from otel_sampling.instrumentation import call_answers
from otel_sampling.instrumentation._provider import (
    ProviderState,
    Request,
    async_close_wrapper,
    async_create_wrapper,
    close_wrapper,
    create_wrapper,
    is_object,
    parse_wrapper,
    reasoning_level,
    request_options,
    sequence,
)
from otel_sampling.instrumentation._targets import Target, TargetTableInstrumentor
from otel_sampling.records.call_signals import CallChecks
from otel_sampling.rules.endings import reported_error_type
from otel_sampling.rules.values import MAX_TOKEN_COUNT, Response, Usage, token_count

PROVIDER = "anthropic"  # gen_ai.provider.name well-known value
MESSAGES_SPAN_NAME = "anthropic.messages.create"  # FinalRequestOptions.span_name of every Messages call
# gen_ai.provider.name well-known values of the cloud platforms the SDK has clients for, by client module.
_PLATFORMS = (("anthropic.lib.bedrock.", "aws.bedrock"), ("anthropic.lib.vertex.", "gcp.vertex_ai"))
_THINKING = "thinking_tokens"
_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
_COUNTED_FIELDS = (*_USAGE_FIELDS, _THINKING)  # what _counts reads, in its order
# A stream's content delta type -> (the block key it adds to, the delta field that holds the text).
_DELTA_FIELDS: dict[str, tuple[str, str]] = {
    "text_delta": ("text", "text"),
    "thinking_delta": ("thinking", "thinking"),
    "input_json_delta": ("input", "partial_json"),
}


def _usage(base: int | None, output: int | None, read: int | None, creation: int | None, thinking: int | None) -> Usage:
    """Semantic-convention usage from anthropic's token counts: input adds the cache tokens."""
    total_input = None
    if base is not None:
        total_input = base + (read or 0) + (creation or 0)
        if total_input > MAX_TOKEN_COUNT:
            total_input = None
    return Usage(total_input, output, read, creation, thinking)


def _members(value: Any) -> dict[str, Any]:
    """What ``getattr(value, name, None)`` reads for a field name, as one dict: a model's instance
    dict over its pydantic extras (the SDK keeps the JSON members it does not declare there); none
    for a JSON scalar, array or dict (which have no such attributes). The SDK builds answers without
    validating them, so any member may hold any of these. Read there rather than with ``getattr``,
    for which pydantic's ``__getattr__`` raises and catches an ``AttributeError`` when the name is
    neither a field nor an extra (about 15k instructions)."""
    fields = getattr(value, "__dict__", None)
    if type(fields) is not dict:
        return _NO_MEMBERS
    extra = getattr(value, "__pydantic_extra__", None)
    if extra and type(extra) is dict:
        return {**extra, **fields}
    return fields


_NO_MEMBERS: dict[str, Any] = {}  # never written


def _counts(usage: Mapping[str, Any]) -> tuple[int | None, int | None, int | None, int | None, int | None]:
    """The token counts among ``usage``'s members (:func:`_members`), in :data:`_USAGE_FIELDS` order
    then the thinking tokens: each a :func:`~otel_sampling.rules.values.token_count` or None."""
    base, output, read, creation = map(usage.get, _USAGE_FIELDS)
    # Four plain ints in range, the common case, tested one by one (cheaper than a set of their
    # types); else each read on its own.
    if not (
        type(base) is int
        and type(output) is int
        and type(read) is int
        and type(creation) is int
        and 0 <= base <= MAX_TOKEN_COUNT
        and 0 <= output <= MAX_TOKEN_COUNT
        and 0 <= read <= MAX_TOKEN_COUNT
        and 0 <= creation <= MAX_TOKEN_COUNT
    ):
        base, output, read, creation = map(token_count, (base, output, read, creation))
    # usage.output_tokens_details.thinking_tokens (the SDK's BetaOutputTokensDetails; an extra
    # field, a dict, on the non-beta models): reasoning, already inside output_tokens.
    details = usage.get("output_tokens_details")
    thinking = None
    if details is not None:
        thinking = token_count(
            details.get(_THINKING) if isinstance(details, dict) else getattr(details, _THINKING, None)
        )
    return base, output, read, creation, thinking


def _usage_fields(usage: Mapping[str, Any], into: dict[str, int]) -> None:
    """Copy the usage fields among ``usage``'s members (:func:`_members`) that are token counts
    into ``into`` (later values overwrite); one that is none is left off before it is summed, as if
    not reported (:func:`~otel_sampling.rules.values.token_count`)."""
    counts: tuple[Any, ...] = _counts(usage)
    # The (field, count) pairs whose count is not None, picked in C (no Python step per field).
    into.update(itertools.compress(zip(_COUNTED_FIELDS, counts, strict=True), map(operator.is_not, counts, _NONES)))


_NONES = itertools.repeat(None)  # operator.is_not's second argument, for map() (never exhausted)


def _is_fallback_usage(usage: Mapping[str, Any]) -> bool:
    """beta ``usage.iterations`` (a member, :func:`_members`) has a ``fallback_message`` entry."""
    iterations = usage.get("iterations")
    if not iterations:  # most answers: nothing to read
        return False
    return any(getattr(iteration, "type", None) == "fallback_message" for iteration in sequence(iterations))


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _error_envelope(members: Mapping[str, Any]) -> str | None:
    """``error.type`` of the error a body the SDK parsed as a message reports (``{"type": "error",
    "error": {"type": "overloaded_error", ...}}`` sent with HTTP 200, or an ``error`` member of
    any JSON type), else None (:func:`~otel_sampling.rules.endings.reported_error_type`), from
    the message's members (:func:`_members`)."""
    error = members.get("error")
    marked = members.get("type") == "error"
    if error is None and not marked:  # every successful answer
        return None
    return reported_error_type(error, (_get(error, "type"),), marked=marked)


_MESSAGE_MEMBERS = ("model", "id", "stop_reason", "content", "usage", "type")
_MESSAGE_FIELDS = operator.itemgetter(*_MESSAGE_MEMBERS)
_USAGE_COUNTS = operator.itemgetter(*_USAGE_FIELDS)
_REQUEST_MEMBERS = ("model", "max_tokens", "output_config", "thinking")  # what request_of reads of a body
_REQUEST_FIELDS = operator.itemgetter(*_REQUEST_MEMBERS)


def response_of(message: Any) -> Response:
    """What a non-streamed ``Message`` / ``BetaMessage`` reports (output content not read); an
    error body that came with HTTP 200 ends the call as that error (``Response.error_type``), one
    without a ``content`` list holds no answer (``Response.answered``; the SDK does not validate
    answers: a body that is not a JSON object reaches us as it is)."""
    # The SDK's models with no pydantic extras, the common case: their members are their instance
    # dicts, read here (_members merges the extras, or reads no members of a non-model).
    members = getattr(message, "__dict__", None)
    if type(members) is not dict or getattr(message, "__pydantic_extra__", None):
        members = _members(message)
    try:  # the members a Message always has (the SDK sets every field it declares), in one C call
        model, response_id, stop_reason, blocks, usage, kind = _MESSAGE_FIELDS(members)
    except KeyError:  # a body the SDK built without one (it does not validate answers)
        model, response_id, stop_reason, blocks, usage, kind = map(members.get, _MESSAGE_MEMBERS)
    error = members.get("error")
    fields = getattr(usage, "__dict__", None)
    usage = fields if type(fields) is dict and not getattr(usage, "__pydantic_extra__", None) else _members(usage)
    content = blocks if isinstance(blocks, (list, tuple)) else None
    fallback = _is_fallback_usage(usage) if usage.get("iterations") else False
    if content is not None and not fallback:
        for block in content:
            if getattr(block, "type", None) == "fallback":
                fallback = True
                break
    try:  # the SDK's Usage sets all four
        base, output, read, creation = _USAGE_COUNTS(usage)
    except KeyError:
        base, output, read, creation = map(usage.get, _USAGE_FIELDS)
    # Four plain ints, none negative, output and the summed input in range, no thinking tokens: the
    # common case, summed here (_counts reads the rest). Each input count is within the sum's range.
    if (
        type(base) is int
        and type(output) is int
        and type(read) is int
        and type(creation) is int
        and base >= 0
        and read >= 0
        and creation >= 0
        and 0 <= output <= MAX_TOKEN_COUNT
        and (total := base + read + creation) <= MAX_TOKEN_COUNT
        and usage.get("output_tokens_details") is None
    ):
        read_usage = Usage._make((total, output, read, creation, None))
    else:
        read_usage = _usage(*_counts(usage))
    # _make: a namedtuple built from one tuple of its fields, in order, skips the keyword binding of
    # its __new__ (about 2k instructions); it checks their number.
    return Response._make(
        (
            model if isinstance(model, str) and model else None,
            response_id if isinstance(response_id, str) and response_id else None,
            (stop_reason,) if isinstance(stop_reason, str) and stop_reason else (),
            read_usage,
            fallback,
            None,  # output: content capture fills it (ProviderState.parsed)
            # Every successful answer has no error member and a type that is not "error".
            None if error is None and kind != "error" else _error_envelope(members),
            content is not None,  # answered
            False,  # refusal: anthropic's come as a stop reason
        )
    )


def _block_part(block: Any) -> dict[str, Any]:
    """A GenAI semconv message part from an anthropic content block (object or dict)."""
    get = block.get if isinstance(block, Mapping) else (lambda key, default=None: getattr(block, key, default))
    kind = get("type")
    if kind == "text":
        return text_part(get("text", ""))
    if kind in ("tool_use", "server_tool_use"):
        return {"type": "tool_call", "id": get("id"), "name": get("name"), "arguments": get("input")}
    if kind == "tool_result":
        result = get("content")
        if not isinstance(result, str):
            result = [_block_part(b) for b in sequence(result)]
        return {"type": "tool_call_response", "id": get("tool_use_id"), "response": result}
    if kind == "thinking":
        return {"type": "reasoning", "content": get("thinking", "")}
    return generic_part(kind)  # images, documents...: the kind only


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [text_part(content)]
    return [_block_part(b) for b in sequence(content)]


def output_of(message: Any, response: Response) -> list[Any]:
    """The output messages of a non-streamed ``Message`` (content capture on)."""
    return output_messages(
        response.finish_reasons[0] if response.finish_reasons else None, getattr(message, "content", None)
    )


def output_messages(stop_reason: str | None, blocks: Any) -> list[Any]:
    message: dict[str, Any] = {"role": "assistant", "parts": _parts(blocks)}
    if stop_reason:
        message["finish_reason"] = stop_reason
    return [message]


class StreamAccumulator:
    """Reads ``RawMessageStreamEvent``s: model and usage from ``message_start`` (whose message is
    the answer: a stream without one holds none), stop reason and final usage from
    ``message_delta``, completion from ``message_stop``; with ``capture``, the content blocks too.
    The SDK builds events without validating them: a field may be missing or of any JSON type."""

    __slots__ = (
        "complete",
        "skipped_events",
        "_model",
        "_id",
        "_stop_reason",
        "_usage",
        "_fallback",
        "_blocks",
        "_answered",
    )

    def __init__(self, capture: bool = False) -> None:
        self.complete = False
        self._model: str | None = None
        self._id: str | None = None
        self._stop_reason: str | None = None
        self._usage: dict[str, int] = {}
        self._fallback = False
        self._blocks: dict[int, dict[str, Any]] | None = {} if capture else None
        self._answered = False
        # Without content capture, the text deltas (most of a stream's events) hold nothing to read.
        self.skipped_events = None if capture else _CONTENT_EVENTS

    def observe(self, event: Any) -> None:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            message = getattr(event, "message", None)
            self._answered = self._answered or is_object(message)
            model, response_id = getattr(message, "model", None), getattr(message, "id", None)
            self._model = model if isinstance(model, str) and model else None
            self._id = response_id if isinstance(response_id, str) and response_id else None
            _usage_fields(_members(getattr(message, "usage", None)), self._usage)
        elif kind == "content_block_start":
            block: Any = getattr(event, "content_block", None)
            if getattr(block, "type", None) == "fallback":
                self._fallback = True
            if self._blocks is not None and isinstance(index := getattr(event, "index", None), int):
                self._blocks[index] = block.to_dict() if hasattr(block, "to_dict") else {"type": _get(block, "type")}
        elif kind == "content_block_delta" and self._blocks is not None:
            if isinstance(index := getattr(event, "index", None), int):
                self._add_delta(
                    self._blocks.setdefault(index, {"type": "text", "text": ""}), getattr(event, "delta", None)
                )
        elif kind == "message_delta":
            stop_reason = getattr(getattr(event, "delta", None), "stop_reason", None)
            if isinstance(stop_reason, str) and stop_reason:
                self._stop_reason = stop_reason
            usage = _members(getattr(event, "usage", None))
            _usage_fields(usage, self._usage)
            if usage.get("iterations"):  # most answers: nothing to read
                self._fallback = self._fallback or _is_fallback_usage(usage)
        elif kind == "message_stop":
            self.complete = True

    @staticmethod
    def _add_delta(block: dict[str, Any], delta: Any) -> None:
        kind = getattr(delta, "type", None)
        fields = _DELTA_FIELDS.get(kind) if isinstance(kind, str) else None
        if fields is None or not isinstance(more := getattr(delta, fields[1], None), str):
            return
        seen = block.get(fields[0])
        block[fields[0]] = (seen if isinstance(seen, str) else "") + more

    def response(self) -> Response:
        reasons = (self._stop_reason,) if self._stop_reason else ()
        output = None
        if self._blocks is not None:
            output = output_messages(self._stop_reason, [self._blocks[i] for i in sorted(self._blocks)])
        usage = _usage(*map(self._usage.get, _COUNTED_FIELDS))
        return Response(self._model, self._id, reasons, usage, self._fallback, output, answered=self._answered)


_CONTENT_EVENTS = frozenset({"content_block_delta", "content_block_stop", "ping"})
_ANSWERS = call_answers.AnthropicAnswers()


class _State(ProviderState):
    provider = PROVIDER
    max_tokens_keys = ("max_tokens",)
    accumulator = StreamAccumulator
    accumulator_captures = True
    response_of = staticmethod(response_of)
    output_of = staticmethod(output_of)
    response_type = "types.Message"
    extra_response_types = ("types.beta.BetaMessage",)
    # Anthropic's errors page: 529 overloaded_error, 429 rate_limit_error.
    drill_answers: ClassVar[Mapping[str, tuple[int, str]]] = {
        names.DRILL_FAILURE_OVERLOADED: (529, "overloaded_error"),
        names.DRILL_FAILURE_RATE_LIMITED: (429, "rate_limit_error"),
    }

    ask_keys = call_answers.ANTHROPIC_KEYS

    def checks_of(self, body: Any) -> CallChecks | None:
        asked = call_answers.anthropic_asked(body)
        return None if asked is None else CallChecks(asked, _ANSWERS)

    def error_body(self, error_type: str, message: str) -> dict[str, Any]:
        """Anthropic's error shape: ``{"type": "error", "error": {"type", "message"}}``."""
        return {"type": "error", "error": {"type": error_type, "message": message}}

    def bind_sdk(self) -> None:
        super().bind_sdk()
        # None and the SDK's sentinels for an argument left out, by type: asked before their names.
        sentinels = (getattr(self._sdk, name, None) for name in ("omit", "NOT_GIVEN"))
        self.left_out_types = frozenset({type(None), *(type(s) for s in sentinels if type(s).__name__ in _LEFT_OUT)})

    def request_of(self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Request | None:
        """``request(cast_to, options, *, stream=False, stream_cls=None)``: a Messages call or None."""
        options = args[1] if len(args) > 1 else kwargs.get("options")
        if getattr(options, "span_name", None) != MESSAGES_SPAN_NAME:
            return None
        body = getattr(options, "json_data", None)
        if type(body) is not dict or getattr(options, "extra_json", None):  # common: a dict, no extra_body
            options, body = request_options(args, kwargs)
        provider = None
        module = type(instance).__module__
        if module.startswith("anthropic.lib."):  # the platform clients' modules: one check for the others
            for prefix, name in _PLATFORMS:
                if module.startswith(prefix):
                    provider = name
                    break
        try:  # the SDK's Messages body holds them all (one left out as its omit sentinel), in one C call
            model, max_tokens, config, thinking = _REQUEST_FIELDS(body)
        except KeyError:
            model, max_tokens, config, thinking = map(body.get, _REQUEST_MEMBERS)
        # Left out (the SDK's omit sentinel, the common case): no effort level to read; with thinking
        # left out too, the effort is 0 (effort_of).
        left_out = self.left_out_types
        config_left_out = type(config) in left_out or type(config).__name__ in _LEFT_OUT
        if config_left_out and (type(thinking) in left_out or type(thinking).__name__ in _LEFT_OUT):
            level: dict[str, str] = {}
            effort: str | int | None = 0
        else:
            level = {} if config_left_out else reasoning_level(body, "output_config", "effort")
            effort = effort_of(thinking, level.get(names.GEN_AI_REQUEST_REASONING_LEVEL) if level else None)
        # A platform's model id (Bedrock ``anthropic.claude-...-v1:0`` or an inference profile, Vertex
        # ``claude-...@version``) is not the name the answer reports: not compared with the served model.
        return Request._make(  # in its field order (_make: see response_of)
            (
                model,
                max_tokens,
                kwargs.get("stream") is True,
                body,
                provider,
                level or None,  # attributes
                provider is not None,  # deployment
                None,  # client_fallback
                effort,
            )
        )

    def input_content(self, body: Any) -> Content:
        system = body.get("system")
        messages = body.get("messages")
        return Content(
            _parts(system) if system else None,
            [
                {"role": m.get("role"), "parts": _parts(m.get("content"))}
                for m in sequence(messages)
                if isinstance(m, Mapping)
            ],
        )


_TARGETS = (
    Target("anthropic._base_client", "SyncAPIClient.request", create_wrapper),
    Target("anthropic._base_client", "AsyncAPIClient.request", async_create_wrapper),
    Target("anthropic._response", "BaseAPIResponse._parse", parse_wrapper),
    Target("anthropic._response", "APIResponse.close", close_wrapper),
    Target("anthropic._response", "AsyncAPIResponse.close", async_close_wrapper),
)


class AnthropicInstrumentor(TargetTableInstrumentor):
    """Instruments every anthropic Messages API call shape (see the module docstring).

    ``instrument(tracer_provider=None, meter_provider=None, logger_provider=None)``; providers
    default to the global ones (the logger provider carries the opt-in content events).
    """

    targets = _TARGETS
    dependencies = ("anthropic >= 1.14, < 3",)
    state_class = _State


# The SDK's sentinels for an argument left out (anthropic ``Omit`` / ``NotGiven``).
_LEFT_OUT = frozenset({"Omit", "NotGiven"})


def effort_of(thinking: object, level: object) -> str | int | None:
    """A Messages request's effort (:mod:`otel_sampling.rules.effort`), from its ``thinking`` and
    ``output_config.effort`` values: ``thinking.budget_tokens`` when thinking is enabled with a
    budget (an int >= 0); else the level when it is a string; else 0 when thinking is disabled or
    not asked for (left out, the SDK's body holds its omit sentinel, dropped as it sends; the API
    takes only an object); else None (thinking of another type, such as adaptive thinking whose
    budget the model decides, or an unreadable budget)."""
    named = level if isinstance(level, str) else None
    if thinking is None or type(thinking).__name__ in _LEFT_OUT:  # the common case, without an ABC check
        kind = None
    elif isinstance(thinking, Mapping):
        kind = thinking.get("type")
    else:
        return named  # not an object (the API rejects it): no budget to read
    if kind is None or kind == "disabled":
        return named if named is not None else 0
    if kind == "enabled":
        budget = thinking.get("budget_tokens") if isinstance(thinking, Mapping) else None
        if isinstance(budget, int) and not isinstance(budget, bool) and budget >= 0:
            return budget
    return named
