"""What a provider request asked for (offered tools, structured output) and what its answer held (tool
calls, texts), read for the checks of :mod:`otel_sampling.rules.call_checks`.

Read only for a call whose request body gives one of its SDK's :data:`ANTHROPIC_KEYS` /
:data:`OPENAI_KEYS` / :data:`GEMINI_KEYS` an object or array (``_provider._asks``). Request bodies are the JSON the SDK
sends (``options.json_data``); answers are the SDK's parsed models (or dicts: the SDKs do not
validate answers, so any member may hold any JSON value). Each reader keeps at most
:data:`MAX_TOOL_CALLS` tool calls and, per tool call or text, at most ``MAX_CHECKED_CHARS + 1``
characters (past that the rule does not parse it): a hostile stream cannot grow memory.

Where each thing is read:

========================  ==========================================  ==========================================
                          anthropic Messages                          openai Chat Completions / Responses
========================  ==========================================  ==========================================
offered tools             ``tools[].name`` / ``input_schema`` (a      ``tools[].function.name`` / ``parameters``
                          server tool: no schema)                     (custom tools: ``custom.name``) / Responses
                                                                      ``tools[].name`` / ``parameters``
structured output         ``output_config.format`` (and the beta      ``response_format`` / Responses
                          ``output_format``) ``json_schema``          ``text.format``: ``json_schema``
                          ``.schema``                                 ``.schema``, or ``json_object``
forced tool               ``tool_choice`` ``{"type": "tool",          ``tool_choice`` ``{"type": "function",
                          "name"}``                                   "function": {"name"}}`` / ``{"type":
                                                                      "function", "name"}``
tool calls                ``tool_use`` / ``server_tool_use`` blocks   ``message.tool_calls[].function`` /
                          (``input``); stream: ``content_block_start`` ``delta.tool_calls[]`` by index; Responses
                          and ``input_json_delta``                    ``function_call`` items (``custom_tool_call``:
                                                                      name only); its stream: the terminal
                                                                      event's response
texts                     the ``text`` blocks, joined                 each choice's ``message.content`` (stream:
                                                                      ``delta.content``); each ``message`` item's
                                                                      ``output_text`` parts, joined
========================  ==========================================  ==========================================

Gemini (google-genai's REST body and ``HttpResponse`` JSON): :func:`gemini_asked`, :class:`GeminiAnswers`
(``functionCall`` parts; each answer's JSON is parsed again here, only for a call with checks).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping
from typing import Any, Final, Protocol

from otel_sampling.instrumentation.streams import Accumulator
from otel_sampling.records.call_signals import CallChecks
from otel_sampling.rules.call_checks import MAX_CHECKED_CHARS, MAX_OFFERED_TOOLS, Answer, Asked, ToolCall
from otel_sampling.rules.values import Response

logger = logging.getLogger(__name__)

MAX_TOOL_CALLS: Final = 1024  # tool calls read from one answer; later ones are not read
MAX_TEXTS: Final = 128  # choices / output messages read from one answer
_KEPT: Final = MAX_CHECKED_CHARS + 1  # characters kept of a streamed text: past the limit is past it

#: Request keys that may ask for a check (anthropic, openai): a body with none of them is not read.
ANTHROPIC_KEYS: Final = frozenset({"tools", "output_config", "output_format", "tool_choice"})
OPENAI_KEYS: Final = frozenset({"tools", "response_format", "text", "tool_choice"})
GEMINI_KEYS: Final = frozenset({"tools", "generationConfig", "toolConfig"})


def _get(obj: Any, key: str) -> Any:
    """``obj[key]`` of a JSON object, ``obj.key`` of an SDK model (a dict by its type: an ABC check
    costs more than the read)."""
    return obj.get(key) if issubclass(type(obj), dict) else getattr(obj, key, None)


def _list(value: Any) -> list[Any] | tuple[Any, ...]:
    return value if isinstance(value, (list, tuple)) else ()


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class AnswerReader(Protocol):
    """Reads one API's answers: a parsed one, and a stream's events."""

    def of(self, result: Any) -> Answer: ...

    def stream(self) -> StreamReader: ...


class StreamReader(Protocol):
    def observe(self, event: Any) -> None: ...

    def answer(self) -> Answer: ...


# ---------------------------------------------------------------------- what a request asked for
def _offered(tools: Any, name_of: Any, schema_of: Any) -> dict[str, object]:
    offered: dict[str, object] = {}
    for tool in _list(tools)[:MAX_OFFERED_TOOLS]:
        name = name_of(tool)
        if isinstance(name, str):
            offered[name] = schema_of(tool)
    return offered


def _json_schema(fmt: Any) -> tuple[bool, object]:
    """``(asked, schema)`` of an output format: ``json_schema`` (its ``schema``; openai Chat nests it
    in ``json_schema``), ``json_object`` (any JSON), else not asked."""
    kind = fmt.get("type") if issubclass(type(fmt), dict) else getattr(fmt, "type", None)  # _get, inline
    if kind == "json_schema":
        schema = _get(fmt, "schema")
        if schema is None:
            schema = _get(_get(fmt, "json_schema"), "schema")
        return True, schema
    return (True, None) if kind == "json_object" else (False, None)


def anthropic_asked(body: Mapping[str, Any]) -> Asked | None:
    """What an anthropic Messages request asked for (None: nothing to check)."""
    tools: dict[str, object] = {}
    listed = body.get("tools")
    for tool in (listed if type(listed) is list else _list(listed))[:MAX_OFFERED_TOOLS]:
        if type(tool) is dict:  # the common case, read without _get
            name = tool.get("name")
            if isinstance(name, str):
                tools[name] = tool.get("input_schema")
        elif isinstance(name := _get(tool, "name"), str):
            tools[name] = _get(tool, "input_schema")
    config: Any = body.get("output_config")  # most requests: the SDK's omit sentinel, without a format
    fmt = config.get("format") if isinstance(config, dict) else getattr(config, "format", None)  # _get, inline
    # (no format: not asked, without _json_schema's call)
    structured, schema = _json_schema(fmt) if fmt is not None else _NOT_ASKED
    if not structured and (fmt := body.get("output_format")) is not None:
        structured, schema = _json_schema(fmt)
    choice = body.get("tool_choice")
    forced = None
    if type(choice) is dict:
        if choice.get("type") == "tool" and isinstance(name := choice.get("name"), str):
            forced = name
    elif _get(choice, "type") == "tool":
        forced = _str(_get(choice, "name"))
    if not tools and not structured and forced is None:
        return None
    # _make: built from its fields in order, without __new__'s keyword binding; it checks their number.
    return Asked._make((tools, structured or forced is not None, schema, forced))


_NOT_ASKED: Final = (False, None)  # _json_schema's answer for no output format


def _openai_tool_name(tool: Any) -> Any:
    kind = _get(tool, "type")
    nested = _get(tool, kind) if kind in ("function", "custom") else None
    return _get(nested, "name") if nested is not None else _get(tool, "name")


def _openai_tool_schema(tool: Any) -> object:
    nested = _get(tool, "function")
    return _get(nested if nested is not None else tool, "parameters")


def openai_asked(body: Mapping[str, Any]) -> Asked | None:
    """What an openai Chat Completions or Responses request asked for (None: nothing to check)."""
    listed = body.get("tools")
    if type(listed) is list:
        # :func:`_offered` of openai tools, a Chat Completions function tool as the SDK sends it (a
        # dict whose ``function`` is a dict) read without the general readers' calls.
        tools: dict[str, object] = {}
        for tool in listed[:MAX_OFFERED_TOOLS]:
            if type(tool) is dict and tool.get("type") == "function" and type(function := tool.get("function")) is dict:
                if isinstance(name := function.get("name"), str):
                    tools[name] = function.get("parameters")
            elif isinstance(name := _openai_tool_name(tool), str):
                tools[name] = _openai_tool_schema(tool)
    else:
        tools = _offered(listed, _openai_tool_name, _openai_tool_schema)
    fmt = body.get("response_format") if "messages" in body else _get(body.get("text"), "format")
    if type(fmt) is dict and fmt.get("type") == "json_schema" and "schema" not in fmt:
        # Chat Completions' json_schema format as sent (its schema nested in json_schema): _json_schema's read
        nested = fmt.get("json_schema")
        structured, schema = True, (nested.get("schema") if type(nested) is dict else _get(nested, "schema"))
    else:
        structured, schema = _json_schema(fmt)
    choice = body.get("tool_choice")
    forced = None
    if type(choice) is not str and _get(choice, "type") == "function":  # not "auto" / "required" / "none"
        forced = _str(_get(_get(choice, "function"), "name") or _get(choice, "name"))
    if not tools and not structured and forced is None:
        return None
    # _make: built from its fields in order, without __new__'s keyword binding; it checks their number.
    return Asked._make((tools, structured or forced is not None, schema, forced))


# ---------------------------------------------------------------------- anthropic answers
class AnthropicAnswers:
    """Tool calls and text of a ``Message``, and of a Messages stream."""

    def of(self, message: Any) -> Answer:
        calls: list[ToolCall] = []
        texts: list[str] = []
        content = message.get("content") if isinstance(message, dict) else getattr(message, "content", None)
        for block in content if type(content) is list else _list(content):
            # A block as the SDK builds it, a model, reads its fields by getattr (_get's other case).
            get = block.get if isinstance(block, dict) else functools.partial(getattr, block)
            kind = get("type", None)
            if kind in ("tool_use", "server_tool_use") and len(calls) < MAX_TOOL_CALLS:
                calls.append(ToolCall(get("name", None), get("input", None)))
            elif kind == "text" and isinstance(text := get("text", None), str):
                texts.append(text)
        return Answer(tuple(calls), ("".join(texts) if texts else None,))

    def stream(self) -> StreamReader:
        return _AnthropicStream()


class _AnthropicStream:
    __slots__ = ("_blocks", "_text")

    def __init__(self) -> None:
        self._blocks: dict[int, list[Any]] = {}  # index -> [name, arguments text] of a tool call
        self._text: str | None = None

    def observe(self, event: Any) -> None:
        kind = _get(event, "type")
        if kind == "content_block_start":
            block = _get(event, "content_block")
            index = _get(event, "index")
            block_type = _get(block, "type")
            if block_type in ("tool_use", "server_tool_use") and isinstance(index, int):
                if len(self._blocks) < MAX_TOOL_CALLS:
                    self._blocks[index] = [_get(block, "name"), ""]
            elif block_type == "text" and self._text is None:
                self._text = ""
        elif kind == "content_block_delta":
            delta = _get(event, "delta")
            delta_type = _get(delta, "type")
            if delta_type == "input_json_delta":
                seen = self._blocks.get(_get(event, "index"))
                more = _get(delta, "partial_json")
                if seen is not None and isinstance(more, str) and len(seen[1]) < _KEPT:
                    seen[1] = (seen[1] + more)[:_KEPT]
            elif delta_type == "text_delta":
                more = _get(delta, "text")
                if isinstance(more, str) and len(self._text or "") < _KEPT:
                    self._text = ((self._text or "") + more)[:_KEPT]

    def answer(self) -> Answer:
        # A tool call with no input deltas has input {} (the SDK's own accumulation reads it so).
        calls = tuple(ToolCall(name, arguments or "{}") for name, arguments in self._blocks.values())
        return Answer(calls, (self._text,))


# ---------------------------------------------------------------------- openai answers
def _chat_tool_call(call: Any) -> ToolCall:
    if _get(call, "type") == "custom":  # free text input: its name only
        custom = _get(call, "custom")
        return ToolCall(_get(custom, "name"), _get(custom, "input"), checked=False)
    function = _get(call, "function")
    return ToolCall(_get(function, "name"), _get(function, "arguments"))


class OpenAIAnswers:
    """Tool calls and texts of a ``ChatCompletion`` or a Responses ``Response``, and of their streams
    (``responses``: the request went to the Responses API)."""

    def __init__(self, responses: bool) -> None:
        self._responses = responses

    def of(self, result: Any) -> Answer:
        return responses_answer(result) if self._responses else chat_answer(result)

    def stream(self) -> StreamReader:
        return _ResponsesStream() if self._responses else _ChatStream()


def chat_answer(completion: Any) -> Answer:
    calls: list[ToolCall] = []
    texts: list[str | None] = []
    for choice in _list(_get(completion, "choices"))[:MAX_TEXTS]:
        message = _get(choice, "message")
        texts.append(_str(_get(message, "content")))
        for call in _list(_get(message, "tool_calls")):
            if len(calls) < MAX_TOOL_CALLS:
                calls.append(_chat_tool_call(call))
    return Answer(tuple(calls), tuple(texts))


def responses_answer(response: Any) -> Answer:
    calls: list[ToolCall] = []
    texts: list[str | None] = []
    for item in _list(_get(response, "output")):
        kind = _get(item, "type")
        if kind == "function_call" and len(calls) < MAX_TOOL_CALLS:
            calls.append(ToolCall(_get(item, "name"), _get(item, "arguments")))
        elif kind == "custom_tool_call" and len(calls) < MAX_TOOL_CALLS:
            calls.append(ToolCall(_get(item, "name"), _get(item, "input"), checked=False))
        elif kind == "message" and len(texts) < MAX_TEXTS:
            parts = [_get(p, "text") for p in _list(_get(item, "content")) if _get(p, "type") == "output_text"]
            texts.append("".join(p for p in parts if isinstance(p, str)) if parts else None)
    return Answer(tuple(calls), tuple(texts))


class _ChatStream:
    __slots__ = ("_texts", "_calls")

    def __init__(self) -> None:
        self._texts: dict[int, str | None] = {}
        self._calls: dict[tuple[int, int], list[Any]] = {}  # (choice, index) -> [name, arguments text]

    def observe(self, chunk: Any) -> None:
        for choice in _list(_get(chunk, "choices")):
            index = _get(choice, "index")
            if not isinstance(index, int):
                index = 0
            delta = _get(choice, "delta")
            content = _get(delta, "content")
            if index not in self._texts and len(self._texts) < MAX_TEXTS:
                self._texts[index] = None
            if isinstance(content, str) and index in self._texts:
                seen = self._texts[index] or ""
                if len(seen) < _KEPT:
                    self._texts[index] = (seen + content)[:_KEPT]
            for call in _list(_get(delta, "tool_calls")):
                self._see_call(index, call)

    def _see_call(self, choice: int, call: Any) -> None:
        position = _get(call, "index")
        key = (choice, position if isinstance(position, int) else 0)
        seen = self._calls.get(key)
        if seen is None:
            if len(self._calls) >= MAX_TOOL_CALLS:
                return
            seen = self._calls[key] = [None, ""]
        function = _get(call, "function")
        name = _get(function, "name")
        if isinstance(name, str) and name:
            seen[0] = name
        more = _get(function, "arguments")
        if isinstance(more, str) and len(seen[1]) < _KEPT:
            seen[1] = (seen[1] + more)[:_KEPT]

    def answer(self) -> Answer:
        calls = tuple(ToolCall(name, arguments) for name, arguments in self._calls.values())
        return Answer(calls, tuple(self._texts[i] for i in sorted(self._texts)))


class _ResponsesStream:
    __slots__ = ("_response",)

    def __init__(self) -> None:
        self._response: Any = None

    def observe(self, event: Any) -> None:
        if _get(event, "type") in ("response.completed", "response.incomplete") and self._response is None:
            self._response = _get(event, "response")

    def answer(self) -> Answer:
        return responses_answer(self._response) if self._response is not None else Answer()


# ---------------------------------------------------------------------- Gemini (google-genai) requests and answers
def gemini_asked(body: Mapping[str, Any]) -> Asked | None:
    """What a ``generateContent`` REST body asked for: ``tools[].functionDeclarations[]`` (``name``,
    ``parametersJsonSchema`` (as google-genai sends it: ``parameters_json_schema``) else
    ``parameters``), ``generationConfig.responseMimeType`` ``application/json``
    (``responseJsonSchema`` / ``response_json_schema`` else ``responseSchema``), a forced tool
    (``toolConfig.functionCallingConfig``: mode ``ANY`` with one allowed name)."""
    tools: dict[str, object] = {}
    for tool in _list(body.get("tools")):
        for declaration in _list(_get(tool, "functionDeclarations")):
            name = _get(declaration, "name")
            if isinstance(name, str) and len(tools) < MAX_OFFERED_TOOLS:
                tools[name] = _first(declaration, "parametersJsonSchema", "parameters_json_schema", "parameters")
    config = body.get("generationConfig")
    structured = _get(config, "responseMimeType") == "application/json"
    schema = None
    if structured:
        schema = _first(config, "responseJsonSchema", "response_json_schema", "responseSchema")
    calling = _get(body.get("toolConfig"), "functionCallingConfig")
    allowed = _list(_get(calling, "allowedFunctionNames"))
    forced = _str(allowed[0]) if _get(calling, "mode") == "ANY" and len(allowed) == 1 else None
    if not tools and not structured and forced is None:
        return None
    return Asked(tools, structured or forced is not None, schema, forced)


def _first(obj: Any, *keys: str) -> Any:
    """The first of ``keys`` ``obj`` holds (google-genai sends some fields in snake case:
    ``parameters_json_schema``, ``response_json_schema``)."""
    for key in keys:
        value = _get(obj, key)
        if value is not None:
            return value
    return None


def _gemini_candidates(body: Any) -> list[Any] | tuple[Any, ...]:
    """The candidates of a ``GenerateContentResponse`` in an SDK ``HttpResponse`` body (its JSON text:
    parsed again here, only for a call with checks)."""
    answer = json.loads(body) if isinstance(body, str) and body else None
    return _list(answer.get("candidates")) if isinstance(answer, dict) else ()


def _gemini_parts(candidate: Any, calls: list[ToolCall]) -> str | None:
    """The candidate's text (its thoughts left out; None without text), its function calls added to ``calls``."""
    texts: list[str] = []
    for part in _list(_get(_get(candidate, "content"), "parts")):
        call = _get(part, "functionCall")
        if call is not None and len(calls) < MAX_TOOL_CALLS:
            calls.append(ToolCall(_get(call, "name"), _get(call, "args")))
        elif isinstance(text := _get(part, "text"), str) and _get(part, "thought") is not True:
            texts.append(text)
    return "".join(texts) if texts else None


class GeminiAnswers:
    """Function calls and texts of a ``generateContent`` answer and of its stream's chunks."""

    def of(self, result: Any) -> Answer:
        calls: list[ToolCall] = []
        texts = [_gemini_parts(c, calls) for c in _gemini_candidates(getattr(result, "body", None))[:MAX_TEXTS]]
        return Answer(tuple(calls), tuple(texts))

    def stream(self) -> StreamReader:
        return _GeminiStream()


class _GeminiStream:
    __slots__ = ("_calls", "_texts")

    def __init__(self) -> None:
        self._calls: list[ToolCall] = []
        self._texts: dict[int, str | None] = {}

    def observe(self, event: Any) -> None:
        for position, candidate in enumerate(_gemini_candidates(getattr(event, "body", None))):
            index = _get(candidate, "index")
            index = index if isinstance(index, int) else position
            if index not in self._texts and len(self._texts) >= MAX_TEXTS:
                continue
            text = _gemini_parts(candidate, self._calls)
            seen = self._texts.get(index)
            if text is not None and len(seen or "") < _KEPT:
                self._texts[index] = ((seen or "") + text)[:_KEPT]
            else:
                self._texts.setdefault(index, seen)

    def answer(self) -> Answer:
        return Answer(tuple(self._calls), tuple(self._texts[i] for i in sorted(self._texts)))


# ---------------------------------------------------------------------- a stream's accumulator, checked too
class CheckedAccumulator:
    """An SDK accumulator that also feeds a :class:`StreamReader`, handing its answer to the call's
    checks when the stream's response is read (once the stream ended)."""

    __slots__ = ("_inner", "_reader", "_checks")

    def __init__(self, inner: Accumulator, reader: StreamReader, checks: CallChecks) -> None:
        self._inner = inner
        self._reader = reader
        self._checks = checks

    @property
    def complete(self) -> bool:
        return self._inner.complete

    @complete.setter
    def complete(self, value: bool) -> None:
        self._inner.complete = value

    def observe(self, event: Any) -> None:
        self._inner.observe(event)
        try:  # ours failing must not make the stream's own reading blind
            self._reader.observe(event)
        except Exception:
            logger.debug("otel-sampling: could not read a stream event's tool calls", exc_info=True)

    def response(self) -> Response:
        try:
            self._checks.answered(self._reader.answer())
        except Exception:
            logger.debug("otel-sampling: could not read a stream's tool calls", exc_info=True)
        return self._inner.response()
