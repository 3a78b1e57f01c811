"""What a provider call's answer did with what its request asked for: the tool calls the model got
wrong, structured output that failed, and truncation.

Plain decisions over plain values: the SDK modules read an :class:`Asked` from the request and an
:class:`Answer` from the answer; :func:`check` and :func:`truncation` decide. Nothing here keeps
or returns argument or answer content: the outcome is counts and closed values (``names``).

Tool calls (:func:`tool_call_error`), each call the model made:

* ``not_offered``: its name is not among the request's offered tools;
* ``invalid_arguments``: its arguments are not JSON (an arguments text that does not parse, or
  that parses to anything but an object), or do not satisfy the offered tool's input schema
  (:func:`conforms`);
* else no error. A tool offered without an input schema (a provider's server tool) takes any
  arguments; arguments longer than :data:`MAX_CHECKED_CHARS` characters are not checked (the call
  is counted, never an error): the check's cost stays bounded whatever the model sends.

Structured output (:func:`structured_failure`), a call that asked for it (openai
``response_format`` ``json_schema`` / ``json_object``, Responses ``text.format``, anthropic
``output_config.format``, or a forced tool through ``tool_choice``): each answer text (a choice,
an output message) must parse as JSON (else ``invalid_json``) and satisfy the schema (else
``schema_mismatch``); for a forced tool, the call of that tool carries the output (no such call:
``invalid_json``, nothing parseable came back). An answer with no text but tool calls (the model
chose a tool first) is not judged, and not counted as a structured-output request either, so
that failures over requests is a rate. A text over :data:`MAX_CHECKED_CHARS` characters is
parsed and checked no further (counted as a request, never a failure).

The schema check (:func:`conforms`) is bounded and partial on purpose: JSON types (``type``, one or
a list, also in OpenAPI's upper case as Gemini's ``Schema`` writes them; an integral float is an
``integer``, a bool is neither an ``integer`` nor a ``number``),
``required``, ``properties`` and ``additionalProperties: false`` of objects, ``items`` of arrays,
at most :data:`MAX_SCHEMA_DEPTH` levels deep and :data:`MAX_SCHEMA_NODES` values visited per check;
not read (passes): ``$ref``, ``anyOf`` / ``oneOf`` / ``allOf``, ``enum``, formats, ranges and
patterns. It costs about 3 µs for a three-property object (jsonschema's ``Draft202012Validator``,
built per call as the request's schema is a new object each time: about 26 µs), so that a call
with tools stays cheap; what it misses is not an error, never a false one.

Truncation (:func:`truncation`): ``max_tokens`` for a finish reason that says the output limit cut
the answer (openai ``length``, Responses ``incomplete`` with ``max_output_tokens`` (``length``
once read), anthropic ``max_tokens``, Gemini ``MAX_TOKENS``); ``context_length`` for anthropic's
``model_context_window_exceeded`` and for a provider's context-length error
(:func:`context_length_error`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from operator import is_
from typing import Any, Final, NamedTuple

from otel_sampling import names

MAX_CHECKED_CHARS: Final = 65_536  # longer arguments / answer texts are not parsed nor checked
MAX_SCHEMA_DEPTH: Final = 8  # nested levels of a schema read; deeper ones pass
MAX_SCHEMA_NODES: Final = 256  # values visited per check; the rest pass
_FIRST_BUDGET: Final = MAX_SCHEMA_NODES - 1  # what is left of it once the top-level object is visited
MAX_OFFERED_TOOLS: Final = 512  # offered tools read from one request; a call to a later one is not "not offered"
MESSAGE_CHARS_READ: Final = 1024  # of a provider error's message, to tell a context-length error

# Finish reasons (every provider's vocabulary as the SDK modules report it) -> truncation kind.
_TRUNCATING: Final = {
    "length": names.TRUNCATION_MAX_TOKENS,  # openai Chat Completions; Responses max_output_tokens
    "max_tokens": names.TRUNCATION_MAX_TOKENS,  # anthropic
    "MAX_TOKENS": names.TRUNCATION_MAX_TOKENS,  # Gemini
    "model_context_window_exceeded": names.TRUNCATION_CONTEXT_LENGTH,  # anthropic
}
#: The finish reasons :func:`truncation` reads: an answer with none of them was not cut.
TRUNCATING_REASONS: Final = frozenset(_TRUNCATING)
# error.type values that are a context-length error on their own (openai's error code).
_CONTEXT_LENGTH_TYPES: Final = frozenset({"context_length_exceeded", "string_above_max_length"})
# What a provider's context-length error message says (lower case), when its type is generic
# (anthropic invalid_request_error "prompt is too long: 210000 tokens > 200000 maximum"; Gemini
# INVALID_ARGUMENT "The input token count (N) exceeds the maximum number of tokens allowed (M)").
_CONTEXT_LENGTH_WORDS: Final = (
    "prompt is too long",
    "maximum context length",
    "context length",
    "context window",
    "input token count",
)


class Asked(NamedTuple):
    """What a request asked for. ``tools``: offered tool name -> its input schema (None: none to
    check); ``structured``: it asked for structured output; ``schema``: that output's JSON
    schema (None: any JSON); ``forced_tool``: the tool whose call carries the structured output."""

    tools: Mapping[str, object]
    structured: bool = False
    schema: object = None
    forced_tool: str | None = None


NOTHING_ASKED: Final = Asked({})


class ToolCall(NamedTuple):
    """One tool call of an answer: ``name`` as sent; ``arguments`` as JSON text (openai) or the
    decoded value (anthropic's ``input``); ``checked``: False for a call whose arguments are
    free text (openai custom tools): only its name is checked."""

    name: object
    arguments: object
    checked: bool = True


class Answer(NamedTuple):
    """What an answer holds for the checks: its tool calls, and the text of each choice or output
    message (None: a choice with no text)."""

    tool_calls: tuple[ToolCall, ...] = ()
    texts: tuple[str | None, ...] = ()


class Checked(NamedTuple):
    """The outcome of :func:`check`: counts and closed values only."""

    tool_calls: int = 0
    not_offered: int = 0
    invalid_arguments: int = 0
    structured: bool = False  # a structured-output request whose answer was judged
    structured_failure: str | None = None  # names.STRUCTURED_OUTPUT_FAILURES, or None


NOTHING_CHECKED: Final = Checked()


def check(asked: Asked, answer: Answer) -> Checked:
    """Every tool call of ``answer`` against ``asked`` (:func:`tool_call_error`), and its structured
    output (:func:`structured_failure`)."""
    not_offered = invalid = 0
    calls = answer.tool_calls
    tools = asked.tools
    forced = asked.forced_tool
    # Whether every call of the forced tool passed its tool check (a plain-str name, its arguments
    # checked: they parsed and fit that tool's schema, the structured output's), and how many came.
    forced_fit = forced is not None
    forced_calls = 0
    for name, arguments, checked in calls:
        # A call's error (the module docstring; tool_call_error reads it from here), one frame for
        # all calls: ``fit`` is no error with its arguments checked.
        if not isinstance(name, str) or name not in tools:
            not_offered += 1
            fit = False
        elif not checked:  # free text: its name only
            fit = False
        else:
            if type(arguments) is str and len(arguments) <= MAX_CHECKED_CHARS:  # a JSON text (openai): _decoded, inline
                try:
                    value, end = _DECODER.raw_decode(arguments)
                    if end != len(arguments):
                        value = json.loads(arguments)
                except (ValueError, RecursionError):  # leading white space too: json.loads' own answer
                    value = _decoded(arguments)
            else:  # decoded by the SDK already (anthropic's input), or a text past the limit
                value = arguments if type(arguments) is dict else _decoded(arguments)
            if value is _TOO_LONG:  # not checked, never an error
                fit = True
            elif isinstance(value, dict):
                schema = tools[name]
                # An object schema (the common case): conforms' visit of it, without its two calls (a
                # "type" that only says it equals "object" goes there too, as conforms would send it).
                if type(schema) is dict and schema.get("type") == "object":
                    fit = _object_conforms(schema, value, 0, [_FIRST_BUDGET])
                else:
                    fit = schema is None or conforms(schema, value)
                if not fit:
                    invalid += 1
            else:  # not a JSON object
                invalid += 1
                fit = False
        if forced_fit and name == forced:
            forced_calls += 1
            if not fit or type(name) is not str:
                forced_fit = False
    judged: bool
    failure: str | None
    if not asked.structured:
        judged, failure = False, None
    elif forced_fit and forced_calls:  # well-formed, read once already: not parsed and checked again
        judged, failure = True, None
    else:
        judged, failure = structured_failure(asked, answer)
    # _make: built from its fields in order, without __new__'s keyword binding; it checks their number.
    return Checked._make((len(calls), not_offered, invalid, judged, failure))


def tool_call_error(asked: Asked, call: ToolCall) -> str | None:
    """``not_offered``, ``invalid_arguments`` or None (the module docstring), as :func:`check` counts it."""
    checked = check(Asked(asked.tools), Answer((call,)))
    if checked.not_offered:
        return names.TOOL_CALL_ERROR_NOT_OFFERED
    return names.TOOL_CALL_ERROR_INVALID_ARGUMENTS if checked.invalid_arguments else None


def structured_failure(asked: Asked, answer: Answer) -> tuple[bool, str | None]:
    """``(judged, failure)``: whether the answer was judged, and ``invalid_json``,
    ``schema_mismatch`` or None (the module docstring)."""
    if asked.forced_tool is not None:
        forced = [call for call in answer.tool_calls if call.name == asked.forced_tool]
        if not forced:
            return True, names.STRUCTURED_OUTPUT_INVALID_JSON
        values = [_decoded(call.arguments) for call in forced]
        schema = asked.tools.get(asked.forced_tool)
    else:
        texts: Sequence[str | None] = answer.texts
        if all(map(is_, texts, _NONES)):  # no text (in C, by identity): a tool call's common answer
            if answer.tool_calls:
                return False, None  # the model called a tool first: no structured answer yet
            texts = ("",)
        elif any(map(is_, texts, _NONES)):  # by identity, in C (a text's own __eq__ is never asked)
            texts = [text for text in texts if text is not None]
        values = [_decoded(text) for text in texts]
        schema = asked.schema
    for value in values:
        if value is _NOT_JSON:
            return True, names.STRUCTURED_OUTPUT_INVALID_JSON
    for value in values:
        if value is not _TOO_LONG and schema is not None and not conforms(schema, value):
            return True, names.STRUCTURED_OUTPUT_SCHEMA_MISMATCH
    return True, None


def truncation(finish_reasons: Sequence[str], context_length: bool = False) -> str | None:
    """``context_length`` when the provider said the input did not fit (``context_length``: its
    error said so, :func:`context_length_error`; or a finish reason), ``max_tokens`` when a finish
    reason says the output limit cut the answer, else None."""
    if context_length:
        return names.TRUNCATION_CONTEXT_LENGTH
    kind = None
    for reason in finish_reasons:
        found = _TRUNCATING.get(reason)
        if found == names.TRUNCATION_CONTEXT_LENGTH:
            return found
        kind = kind or found
    return kind


def context_length_error(error_type: str | None, message: object) -> bool:
    """Whether a provider's error is a context-length error: its ``error.type`` says so (openai's
    ``context_length_exceeded``), or its message does (the first :data:`MESSAGE_CHARS_READ`
    characters, as anthropic and Gemini word it)."""
    if error_type in _CONTEXT_LENGTH_TYPES:
        return True
    if not isinstance(message, str):
        return False
    text = message[:MESSAGE_CHARS_READ].lower()
    return any(words in text for words in _CONTEXT_LENGTH_WORDS)


def utilization(input_tokens: int | None, context_window: int | None) -> float | None:
    """Input tokens over the served model's context window (None when either is unknown or the
    window is not a positive count)."""
    if input_tokens is None or not isinstance(context_window, int) or context_window <= 0:
        return None
    return input_tokens / context_window


class Signals(NamedTuple):
    """What one provider call shows (:func:`judge`): its checks, truncation kind (or None), and
    context utilization (or None)."""

    checked: Checked
    asked: Asked
    truncation: str | None
    utilization: float | None


NO_SIGNALS: Final = Signals(NOTHING_CHECKED, NOTHING_ASKED, None, None)


def judge(
    asked: Asked | None,
    answer: Answer | None,
    context_length: bool,
    finish_reasons: Sequence[str],
    input_tokens: int | None,
    window: int | None,
) -> Signals:
    """The call's signals, in one call: its answer checked against what it asked (``asked`` None:
    it asked for nothing; ``answer`` None: no answer to read: none came, an error body, a refusal),
    its :func:`truncation`, its :func:`utilization`. :data:`NO_SIGNALS` (the same object) when
    there is nothing to record: always so for a call that asked for nothing (``asked`` None), had
    no context-length error, no ``window`` and none of :data:`TRUNCATING_REASONS`, which a caller
    may skip the call for."""
    # (none of TRUNCATING_REASONS, the common case: no truncation, without its loop)
    truncated = (
        truncation(finish_reasons, context_length)
        if context_length or not TRUNCATING_REASONS.isdisjoint(finish_reasons)
        else None
    )
    utilized = utilization(input_tokens, window) if window is not None else None
    if asked is None:
        if truncated is None and utilized is None:
            return NO_SIGNALS
        return Signals(NOTHING_CHECKED, NOTHING_ASKED, truncated, utilized)
    if answer is None:  # nothing read to judge: no count, not even 0
        return judge(None, None, context_length, finish_reasons, input_tokens, window)
    return Signals._make((check(asked, answer), asked, truncated, utilized))  # (_make: see check)


# ---------------------------------------------------------------------- JSON values and the schema check
# What json.loads decodes with (no hooks): its raw_decode reads a JSON text that holds nothing but
# one value, as json.loads does, without json.loads' two calls; any other text goes to json.loads.
_DECODER: Final = json.JSONDecoder()
_NOT_JSON: Final = object()  # a text that does not parse
_NONES: Final = itertools.repeat(None)  # is_'s second argument, for map() (never exhausted)
_TOO_LONG: Final = object()  # a text past MAX_CHECKED_CHARS: not parsed


def _decoded(arguments: object) -> object:
    """A JSON text decoded as json.loads decodes it (:data:`_NOT_JSON` when it does not parse,
    :data:`_TOO_LONG` past the limit); any other value as it is (the SDK decoded it already)."""
    if not isinstance(arguments, str):
        return arguments
    if len(arguments) > MAX_CHECKED_CHARS:
        return _TOO_LONG
    try:
        return json.loads(arguments)
    except (ValueError, RecursionError):
        return _NOT_JSON


def conforms(schema: object, value: object) -> bool:
    """Whether ``value`` satisfies the parts of ``schema`` this check reads (the module docstring);
    a schema that is not an object reads as no constraint."""
    return _conforms(schema, value, 0, [MAX_SCHEMA_NODES])


def _conforms(schema: Any, value: object, depth: int, budget: list[int]) -> bool:
    if not isinstance(schema, dict) or depth > MAX_SCHEMA_DEPTH:  # (not Mapping: an ABC check costs more)
        return True
    budget[0] -= 1
    if budget[0] < 0:
        return True
    kind = schema.get("type")
    # A kind that names the value's own JSON type fits without _is_type (the common case).
    if isinstance(value, dict):
        if kind is not None and kind != "object" and not _is_type(value, kind):
            return False
        return _object_conforms(schema, value, depth, budget)
    if kind is not None and kind != _TYPE_NAMES.get(type(value)) and not _is_type(value, kind):
        return False
    if isinstance(value, list):
        items = schema.get("items")
        # Past the budget the rest reads as conforming: a check never visits more than the budget.
        return not issubclass(type(items), dict) or all(
            _conforms(items, item, depth + 1, budget) for item in value[: max(budget[0], 0)]
        )
    return True


def _object_conforms(schema: Mapping[str, Any], value: dict[Any, Any], depth: int, budget: list[int]) -> bool:
    required = schema.get("required")
    if isinstance(required, list):
        for key in required:
            if isinstance(key, str) and key not in value:
                return False
    properties: Any = schema.get("properties")
    if not isinstance(properties, dict):
        return True
    if schema.get("additionalProperties") is False and not value.keys() <= properties.keys():
        return False
    for key, item in value.items():
        if budget[0] <= 0:  # the rest pass unread
            break
        sub = properties.get(key)
        if sub is None:
            continue
        if type(item) is str and type(sub) is dict and depth < MAX_SCHEMA_DEPTH:
            # A string property (the common leaf): _conforms' visit of it, without its call.
            budget[0] -= 1  # stays >= 0: the loop's check above
            kind = sub.get("type")
            if kind is not None and kind != "string" and not _is_type(item, kind):
                return False
        elif not _conforms(sub, item, depth + 1, budget):
            return False
    return True


def _is_type(value: object, kind: object) -> bool:
    if isinstance(kind, list):
        return any(_is_type(value, one) for one in kind)
    if isinstance(kind, str) and kind.isupper():  # OpenAPI's upper-case names (Gemini's Schema): "OBJECT"
        kind = kind.lower()
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if isinstance(value, bool):
        return kind not in _KNOWN_TYPES  # never an integer nor a number
    if kind == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if kind == "number":
        return isinstance(value, (int, float))
    return True  # a type name JSON Schema does not define: no constraint


# The JSON type name of a decoded value's exact type (an int or a float may be "integer" or "number").
_TYPE_NAMES: Final[dict[type, str]] = {str: "string", list: "array", bool: "boolean", type(None): "null"}
_KNOWN_TYPES: Final = frozenset({"object", "array", "string", "boolean", "null", "integer", "number"})
