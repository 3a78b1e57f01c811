"""What a call's answer did with what its request asked for (otel_sampling.rules.call_checks).

Schemas are the shapes the providers document for tool input schemas and structured outputs
(JSON Schema objects with ``type``, ``properties``, ``required``, ``additionalProperties``).
"""

from __future__ import annotations

import pytest

from otel_sampling import names
from otel_sampling.rules.call_checks import (
    MAX_CHECKED_CHARS,
    MAX_SCHEMA_NODES,
    NO_SIGNALS,
    Answer,
    Asked,
    Checked,
    ToolCall,
    check,
    conforms,
    context_length_error,
    judge,
    structured_failure,
    tool_call_error,
    truncation,
    utilization,
)

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"],
}
OFFERED = Asked({"get_weather": WEATHER, "web_search": None})


# ---------------------------------------------------------------------- tool calls
def test_a_call_to_an_offered_tool_with_arguments_that_satisfy_its_schema_is_no_error() -> None:
    assert tool_call_error(OFFERED, ToolCall("get_weather", '{"city": "Paris", "days": 3}')) is None
    assert tool_call_error(OFFERED, ToolCall("get_weather", {"city": "Paris"})) is None  # anthropic's input


def test_a_call_to_a_tool_the_request_did_not_offer_is_not_offered() -> None:
    assert tool_call_error(OFFERED, ToolCall("delete_everything", "{}")) == names.TOOL_CALL_ERROR_NOT_OFFERED
    assert tool_call_error(OFFERED, ToolCall(None, "{}")) == names.TOOL_CALL_ERROR_NOT_OFFERED
    assert tool_call_error(Asked({}), ToolCall("get_weather", "{}")) == names.TOOL_CALL_ERROR_NOT_OFFERED


@pytest.mark.parametrize(
    "arguments",
    [
        '{"city": "Par',  # not JSON
        "[1, 2]",  # JSON, not an object
        "{}",  # a required property missing
        '{"city": 42}',  # a property of the wrong type
        '{"city": "Paris", "days": "three"}',
        '{"city": "Paris", "days": true}',  # a bool is not an integer
        {"city": None},
    ],
)
def test_arguments_that_are_not_json_or_miss_the_schema_are_invalid(arguments: object) -> None:
    assert tool_call_error(OFFERED, ToolCall("get_weather", arguments)) == names.TOOL_CALL_ERROR_INVALID_ARGUMENTS


def test_a_tool_offered_without_a_schema_takes_any_object_and_free_text_tools_only_their_name() -> None:
    assert tool_call_error(OFFERED, ToolCall("web_search", '{"anything": 1}')) is None
    assert tool_call_error(OFFERED, ToolCall("web_search", "not json")) == names.TOOL_CALL_ERROR_INVALID_ARGUMENTS
    assert tool_call_error(OFFERED, ToolCall("get_weather", "free text", checked=False)) is None


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "required": ["city"]},
        {"type": "OBJECT", "required": ["city"]},  # OpenAPI's upper case (Gemini's Schema)
        {"type": ["object", "null"], "required": ["city"]},  # one of a list of types
        {"required": ["city"]},  # no type: an object's keywords still read
    ],
)
def test_an_object_schema_is_read_whatever_way_it_names_its_type(schema: dict[str, object]) -> None:
    asked = Asked({"get_weather": schema})
    assert tool_call_error(asked, ToolCall("get_weather", '{"city": "Paris"}')) is None
    assert tool_call_error(asked, ToolCall("get_weather", '{"days": 3}')) == names.TOOL_CALL_ERROR_INVALID_ARGUMENTS


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        (' \n{"city": "Paris"}', None),  # white space around the object, as json.loads reads it
        ('{"city": "Paris"} \t\n', None),
        ('{"city": "Paris"} {}', names.TOOL_CALL_ERROR_INVALID_ARGUMENTS),  # more than one value
        ('{"city": "Paris"}x', names.TOOL_CALL_ERROR_INVALID_ARGUMENTS),
        ('{"city": "Paris", "days": NaN}', names.TOOL_CALL_ERROR_INVALID_ARGUMENTS),  # json.loads' NaN: not an integer
        ('"{\\"city\\": \\"Paris\\"}"', names.TOOL_CALL_ERROR_INVALID_ARGUMENTS),  # a string holding JSON
        ("[" * 10_000 + "]" * 10_000, names.TOOL_CALL_ERROR_INVALID_ARGUMENTS),  # deeper than json.loads reads
    ],
)
def test_arguments_text_is_read_as_json_loads_reads_it(arguments: str, error: str | None) -> None:
    assert tool_call_error(OFFERED, ToolCall("get_weather", arguments)) == error


def test_arguments_past_the_size_limit_are_counted_not_checked() -> None:
    huge = '{"city": ' + " " * MAX_CHECKED_CHARS + "42}"
    assert tool_call_error(OFFERED, ToolCall("get_weather", huge)) is None


def test_check_counts_every_call_and_each_kind_of_error() -> None:
    answer = Answer(
        (
            ToolCall("get_weather", '{"city": "Paris"}'),
            ToolCall("get_weather", "{}"),
            ToolCall("send_email", "{}"),
            ToolCall("rm", "{}"),
        )
    )
    assert check(OFFERED, answer) == Checked(tool_calls=4, not_offered=2, invalid_arguments=1)


# ---------------------------------------------------------------------- structured output
SCHEMA = Asked({}, structured=True, schema=WEATHER)


@pytest.mark.parametrize(
    ("texts", "failure"),
    [
        (('{"city": "Paris"}',), None),
        (('{"city": "Par',), names.STRUCTURED_OUTPUT_INVALID_JSON),
        (("Sure! Here is the JSON",), names.STRUCTURED_OUTPUT_INVALID_JSON),
        (("",), names.STRUCTURED_OUTPUT_INVALID_JSON),
        ((None,), names.STRUCTURED_OUTPUT_INVALID_JSON),  # a choice with no text
        (('{"town": "Paris"}',), names.STRUCTURED_OUTPUT_SCHEMA_MISMATCH),
        (('{"city": "Paris"}', '{"city": 1}'), names.STRUCTURED_OUTPUT_SCHEMA_MISMATCH),  # any choice
    ],
)
def test_structured_output_must_parse_and_satisfy_the_schema(
    texts: tuple[str | None, ...], failure: str | None
) -> None:
    assert structured_failure(SCHEMA, Answer(texts=texts)) == (True, failure)


class _SaysItIsNone(str):
    """A text whose own ``==`` says it equals anything (None too)."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


class _RaisingEq(str):
    """A text whose own ``==`` raises."""

    __hash__ = str.__hash__

    def __eq__(self, other: object) -> bool:
        raise ValueError("no comparison")


def test_only_the_choices_with_text_are_judged() -> None:
    assert structured_failure(SCHEMA, Answer(texts=(None, '{"city": "Paris"}'))) == (True, None)
    assert structured_failure(SCHEMA, Answer(texts=('{"city": "Paris"}', None, "{"))) == (
        True,
        names.STRUCTURED_OUTPUT_INVALID_JSON,
    )
    assert structured_failure(SCHEMA, Answer(texts=())) == (True, names.STRUCTURED_OUTPUT_INVALID_JSON)  # no choice
    # A text is told from a choice without one by identity, whatever its own == says.
    odd = _SaysItIsNone('{"town": "Paris"}')
    assert structured_failure(SCHEMA, Answer(texts=(odd,))) == (True, names.STRUCTURED_OUTPUT_SCHEMA_MISMATCH)
    tool_first = Answer((ToolCall("get_weather", "{}"),), texts=(odd,))
    assert structured_failure(SCHEMA, tool_first) == (True, names.STRUCTURED_OUTPUT_SCHEMA_MISMATCH)
    assert structured_failure(SCHEMA, Answer((ToolCall("get_weather", "{}"),), texts=(None, None))) == (False, None)
    # ... and is never compared: an ``==`` that raises is not asked whether the text is None.
    asked = Asked({}, True, {"type": "object"})
    answer = Answer((), (_RaisingEq('{"q": "a"}'),))
    assert structured_failure(asked, answer) == (True, None)
    assert check(asked, answer) == Checked(0, 0, 0, True, None)


def test_json_mode_without_a_schema_only_has_to_parse() -> None:
    asked = Asked({}, structured=True)
    assert structured_failure(asked, Answer(texts=('{"anything": [1]}',))) == (True, None)
    assert structured_failure(asked, Answer(texts=("{",))) == (True, names.STRUCTURED_OUTPUT_INVALID_JSON)


def test_an_answer_that_calls_a_tool_first_is_not_judged() -> None:
    asked = Asked({"get_weather": WEATHER}, structured=True, schema=WEATHER)
    answer = Answer((ToolCall("get_weather", '{"city": "Paris"}'),), texts=(None,))
    assert check(asked, answer) == Checked(tool_calls=1)


def test_a_forced_tool_carries_the_structured_output() -> None:
    asked = Asked({"get_weather": WEATHER}, structured=True, forced_tool="get_weather")
    good = Answer((ToolCall("get_weather", {"city": "Paris"}),))
    wrong = Answer((ToolCall("get_weather", {"days": 2}),))
    assert structured_failure(asked, good) == (True, None)
    assert structured_failure(asked, wrong) == (True, names.STRUCTURED_OUTPUT_SCHEMA_MISMATCH)
    assert structured_failure(asked, Answer(texts=("hi",))) == (True, names.STRUCTURED_OUTPUT_INVALID_JSON)
    assert check(asked, wrong) == Checked(1, 0, 1, True, names.STRUCTURED_OUTPUT_SCHEMA_MISMATCH)


def test_a_forced_tool_call_checked_as_a_tool_call_gives_the_structured_outcome_too() -> None:
    asked = Asked({"get_weather": WEATHER, "web_search": None}, structured=True, forced_tool="get_weather")
    paris = ToolCall("get_weather", '{"city": "Paris"}')
    assert check(asked, Answer((paris,))) == Checked(1, 0, 0, True, None)
    assert check(asked, Answer((paris, ToolCall("web_search", "{}")))) == Checked(2, 0, 0, True, None)
    not_json = ToolCall("get_weather", "{city")
    assert check(asked, Answer((paris, not_json))) == Checked(2, 0, 1, True, names.STRUCTURED_OUTPUT_INVALID_JSON)
    free_text = ToolCall("get_weather", "{city", checked=False)  # its name only is checked as a tool call
    assert check(asked, Answer((free_text,))) == Checked(1, 0, 0, True, names.STRUCTURED_OUTPUT_INVALID_JSON)
    other = Answer((ToolCall("web_search", "{}"),))
    assert check(asked, other) == Checked(1, 0, 0, True, names.STRUCTURED_OUTPUT_INVALID_JSON)


# ---------------------------------------------------------------------- the schema check
def test_the_schema_check_reads_types_required_properties_items_and_closed_objects() -> None:
    schema = {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}},
            "score": {"type": ["number", "null"]},
            "n": {"type": "integer"},
        },
        "additionalProperties": False,
    }
    assert conforms(schema, {"tags": ["a"], "score": None, "n": 2.0})
    assert not conforms(schema, {"tags": ["a", 1]})
    assert not conforms(schema, {"score": "high"})
    assert not conforms(schema, {"n": 2.5})
    assert not conforms(schema, {"extra": 1})


def test_what_the_schema_check_does_not_read_passes() -> None:
    assert conforms({"$ref": "#/$defs/x"}, 1)
    assert conforms({"anyOf": [{"type": "string"}]}, 1)
    assert conforms({"type": "string", "enum": ["a"]}, "b")
    assert conforms({"type": "decimal"}, "x")  # not a JSON Schema type
    assert conforms("not a schema", 1)


def test_the_schema_check_is_bounded_in_depth() -> None:
    deep: dict[str, object] = {"type": "string"}
    value: object = 1
    for _ in range(20):
        deep = {"type": "object", "properties": {"a": deep}}
        value = {"a": value}
    assert conforms(deep, value)  # the mismatch lies past MAX_SCHEMA_DEPTH


def test_the_schema_check_visits_at_most_its_budget_of_values() -> None:
    schema = {"type": "array", "items": {"type": "integer"}}
    assert not conforms(schema, [*range(MAX_SCHEMA_NODES - 2), "x"])  # within the budget: read
    assert conforms(schema, [*range(MAX_SCHEMA_NODES), "x"])  # past it: passes unread
    members = {"type": "object", "properties": {f"k{i}": {"type": "integer"} for i in range(MAX_SCHEMA_NODES + 1)}}
    assert conforms(members, {**{f"k{i}": i for i in range(MAX_SCHEMA_NODES)}, f"k{MAX_SCHEMA_NODES}": "x"})
    strings = {"type": "object", "properties": {f"s{i}": {"type": "string"} for i in range(MAX_SCHEMA_NODES + 1)}}
    last = {f"s{MAX_SCHEMA_NODES}": 1}  # the one member of the wrong type, after the string members
    assert not conforms(strings, {**{f"s{i}": "x" for i in range(MAX_SCHEMA_NODES - 2)}, **last})
    assert conforms(strings, {**{f"s{i}": "x" for i in range(MAX_SCHEMA_NODES - 1)}, **last})
    nested = {"type": "object", "properties": {"s": {"type": "string"}, "o": strings}}  # both objects spend it
    assert not conforms(nested, {"s": "x", "o": {**{f"s{i}": "x" for i in range(MAX_SCHEMA_NODES - 4)}, **last}})
    assert conforms(nested, {"s": "x", "o": {**{f"s{i}": "x" for i in range(MAX_SCHEMA_NODES - 3)}, **last}})
    assert not conforms(nested, {"o": {**{f"s{i}": "x" for i in range(MAX_SCHEMA_NODES - 3)}, **last}})
    assert not conforms(nested, {"o": {f"s{i}": "x" for i in range(MAX_SCHEMA_NODES - 3)}, "s": 1})
    assert conforms(nested, {"o": {f"s{i}": "x" for i in range(MAX_SCHEMA_NODES - 2)}, "s": 1})
    undeclared = {f"extra{i}": i for i in range(MAX_SCHEMA_NODES)}  # members no property names cost nothing
    assert not conforms(WEATHER, {**undeclared, "city": 42})
    closed = {"type": "object", "properties": {"a": {}}, "additionalProperties": False}
    assert not conforms(closed, {"a": 1, "b": 2})  # a closed object's keys are all read


# ---------------------------------------------------------------------- truncation and context
@pytest.mark.parametrize(
    ("reasons", "kind"),
    [
        (("stop",), None),
        (("end_turn",), None),
        ((), None),
        (("length",), names.TRUNCATION_MAX_TOKENS),
        (("max_tokens",), names.TRUNCATION_MAX_TOKENS),
        (("MAX_TOKENS",), names.TRUNCATION_MAX_TOKENS),
        (("stop", "length"), names.TRUNCATION_MAX_TOKENS),
        (("model_context_window_exceeded",), names.TRUNCATION_CONTEXT_LENGTH),
    ],
)
def test_finish_reasons_that_say_the_answer_was_cut(reasons: tuple[str, ...], kind: str | None) -> None:
    assert truncation(reasons) == kind


def test_a_context_length_error_is_a_truncation_whatever_the_finish_reasons() -> None:
    assert truncation((), context_length=True) == names.TRUNCATION_CONTEXT_LENGTH


@pytest.mark.parametrize(
    ("error_type", "message", "expected"),
    [
        ("context_length_exceeded", None, True),  # openai's error code
        ("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum", True),  # anthropic
        ("400", "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", True),
        ("invalid_request_error", "max_tokens: Field required", False),
        ("rate_limit_error", None, False),
    ],
)
def test_context_length_errors(error_type: str, message: str | None, expected: bool) -> None:
    assert context_length_error(error_type, message) is expected


def test_utilization_is_input_tokens_over_the_window_where_both_are_known() -> None:
    assert utilization(50_000, 200_000) == 0.25
    assert utilization(None, 200_000) is None
    assert utilization(10, None) is None
    assert utilization(10, 0) is None


# ---------------------------------------------------------------------- one judgment per call
def test_a_call_that_asked_nothing_was_not_cut_and_has_no_window_shows_nothing() -> None:
    assert judge(None, None, False, ("stop",), 25, None) is NO_SIGNALS


def test_every_call_shows_its_truncation_and_utilization() -> None:
    signals = judge(None, None, False, ("length",), 50_000, 200_000)
    assert (signals.truncation, signals.utilization, signals.checked) == (names.TRUNCATION_MAX_TOKENS, 0.25, Checked())
    assert judge(None, None, True, (), None, None).truncation == names.TRUNCATION_CONTEXT_LENGTH


def test_a_call_that_asked_is_checked_only_when_its_answer_was_read() -> None:
    answer = Answer((ToolCall("rm", "{}"),))
    assert judge(OFFERED, answer, False, ("tool_calls",), None, None).checked == Checked(1, 1, 0)
    assert judge(OFFERED, None, False, (), None, None) is NO_SIGNALS  # an error body, a refusal, no answer
