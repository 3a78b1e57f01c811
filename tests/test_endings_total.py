"""Classification is total (issue 7, item 3): whatever a sampling callback returns or raises, and
whatever a provider answers, the request gets exactly one ending from ``names.ENDINGS`` and
classifying it never raises.

The classify functions are driven directly with Hypothesis-generated answers (many examples), then
(fewer examples) through the real wrapper: a real mcp ``ClientSession`` dispatching generated
``CreateMessageRequest``s to a callback that returns or raises the generated answer. There the host
must get the very object back (or the very exception), and exactly one span and one
``mcp.sampling.requests`` point must record the ending the classify functions give.
"""

from __future__ import annotations

import asyncio
import sys

import pytest

pytest.importorskip("mcp_types", reason="mcp 2.x sessions")

import anyio
import mcp_types as types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, MCPError

from otel_sampling import names
from otel_sampling.instrumentation import anthropic as anthropic_instr
from otel_sampling.instrumentation import openai as openai_instr
from otel_sampling.instrumentation import openai_responses
from otel_sampling.policy import EndingRule
from otel_sampling.rules import endings
from otel_sampling.rules.endings import ending_of, failure_of
from otel_sampling.rules.values import Response, Usage
from sampling_server import build_server

if sys.version_info < (3, 11):  # anyio brings the backport there
    from exceptiongroup import BaseExceptionGroup

# Text as a hostile peer sends it: controls, bidi overrides, lone surrogates, long runs.
hostile_text = st.text(st.characters(codec=None, categories=None), max_size=64) | st.sampled_from(
    ["", "\x00", "\ud800", "\u202e", "timed out after 1s", "policy.denied", "completed"]) | st.integers(
    1000, 20_000).map(lambda n: "x" * n)
codes = st.integers(min_value=-(2**63), max_value=2**63) | st.sampled_from([-1, -32001, -32003, -32600, -32603, 0])
json_leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | hostile_text
json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=4)
                          | st.dictionaries(hostile_text, inner, max_size=4), max_leaves=20)
frame_data = json_value | st.fixed_dictionaries(
    {"reason": st.sampled_from(names.ENDINGS) | hostile_text | json_leaf},
    optional={"resetsAt": json_leaf, "extra": json_value})
stop_reasons = st.none() | st.sampled_from(["endTurn", "stopSequence", "maxTokens", "refusal", "content_filter",
                                            "toolUse"]) | hostile_text
rules = st.lists(st.builds(EndingRule, ending=st.sampled_from([e for e in names.ENDINGS if e != "completed"]),
                           code=st.none() | codes, message_contains=st.none() | hostile_text), max_size=3)


def _exception_of(kind: str, code: int, message: str, data: object) -> BaseException:
    if kind == "mcp":
        return MCPError(code=code, message=message, data=data)
    if kind == "group":
        return BaseExceptionGroup("g", [MCPError(code=code, message=message, data=data)])
    if kind == "nested group":
        return BaseExceptionGroup("g", [BaseExceptionGroup("h", [ValueError(message)])])
    if kind == "wide group":
        return BaseExceptionGroup("g", [ValueError(message), MCPError(code=code, message=message)])
    return {"cancelled": asyncio.CancelledError, "timeout": TimeoutError, "value": ValueError,
            "runtime": RuntimeError, "key": KeyError, "keyboard": KeyboardInterrupt, "exit": SystemExit,
            "os": OSError}[kind](message)


EXCEPTION_KINDS = ["mcp", "group", "nested group", "wide group", "cancelled", "timeout", "value", "runtime", "key",
                   "keyboard", "exit", "os"]
exceptions = st.builds(_exception_of, st.sampled_from(EXCEPTION_KINDS), codes.filter(lambda c: abs(c) < 2**31),
                       hostile_text, json_value)


# ---------------------------------------------------------------- the classify functions, directly
@settings(max_examples=500)
@given(code=codes | json_leaf, data=frame_data, message=json_leaf, ending_rules=rules)
def test_every_error_frame_gets_one_ending_and_never_completed(code, data, message, ending_rules):
    got = endings.from_error_frame(code, data, message, ending_rules)
    assert got.ending in names.ENDINGS and got.ending != names.ENDING_COMPLETED
    assert got.error_type == str(code)  # an error frame always sets error.type (MCP semconv: the code)
    assert got.resets_at is None or isinstance(got.resets_at, str)


@settings(max_examples=300)
@given(stop_reason=stop_reasons | json_value)
def test_every_result_is_completed_or_refused(stop_reason):
    got = endings.from_result(stop_reason)
    assert got.ending == (names.ENDING_REFUSED if stop_reason in ("refusal", "content_filter")
                          else names.ENDING_COMPLETED)
    assert got.error_type is None


@settings(max_examples=300)
@given(reason=st.none() | hostile_text)
def test_every_cancellation_is_timeout_or_cancelled(reason):
    assert endings.from_cancellation(reason).ending in (names.ENDING_TIMEOUT, names.ENDING_CANCELLED)


@settings(max_examples=500)
@given(exc=exceptions, ending_rules=rules)
def test_every_exception_gets_one_ending(exc, ending_rules):
    got = (endings.from_cancellation(None) if endings.is_cancellation(exc)
           else endings.from_exception(exc, ending_rules))
    assert got.ending in names.ENDINGS and got.ending != names.ENDING_COMPLETED
    assert isinstance(got.error_type, str) and got.error_type


# ---------------------------------------------------------------- provider answers, directly
usage_counts = st.none() | st.integers(min_value=-(2**70), max_value=2**70) | hostile_text | st.booleans()
responses = st.builds(Response, model=st.none() | hostile_text, response_id=st.none() | hostile_text,
                      finish_reasons=st.lists(hostile_text | st.sampled_from(["refusal", "content_filter"]),
                                              max_size=3).map(tuple),
                      usage=st.builds(Usage, usage_counts, usage_counts, usage_counts, usage_counts),
                      provider_fallback=st.booleans(), output=st.none(),
                      error_type=st.none() | hostile_text | st.sampled_from(["overloaded_error", "timeout_error"]))


@settings(max_examples=300)
@given(response=st.none() | responses, error_type=st.none() | hostile_text | st.sampled_from(
    ["overloaded_error", "rate_limit_exceeded", "timeout_error", "server_error"]))
def test_every_provider_answer_gets_one_ending(response, error_type):
    assert ending_of(response, error_type) in names.ENDINGS


@settings(max_examples=300)
@given(exc=exceptions)
def test_every_provider_exception_gets_one_ending(exc):
    failure = failure_of(exc, (TimeoutError,), (OSError,))
    assert failure.ending in names.ENDINGS and isinstance(failure.error_type, str) and failure.error_type


answer_bodies = st.dictionaries(
    st.sampled_from(["model", "id", "type", "stop_reason", "content", "choices", "output", "usage", "status",
                     "error", "incomplete_details"]), json_value, max_size=8)


@settings(max_examples=500)
@given(body=answer_bodies)
def test_every_provider_body_reads_into_a_response_with_one_ending(body):
    """The readers take the SDKs' models and plain JSON alike (a model built without validation
    carries whatever JSON the provider sent); no shape makes them raise."""
    for read in (openai_instr.chat_response_of, openai_responses.response_of):
        response = read(body)
        assert ending_of(response, response.error_type) in names.ENDINGS
        assert response.model is None or isinstance(response.model, str)
    response = anthropic_instr.response_of(type("Message", (), body)())
    assert ending_of(response, response.error_type) in names.ENDINGS
    assert response.model is None or isinstance(response.model, str)


# ---------------------------------------------------------------- through the real wrapper
content_blocks = (st.builds(types.TextContent, text=hostile_text)
                  | st.builds(types.ImageContent, data=st.just("iVBORw0KGgo="), mime_type=hostile_text)
                  | st.builds(types.AudioContent, data=st.just("UklGRg=="), mime_type=hostile_text))
params = st.builds(
    types.CreateMessageRequestParams,
    messages=st.lists(st.builds(types.SamplingMessage, role=st.sampled_from(["user", "assistant"]),
                                content=content_blocks), min_size=1, max_size=3),
    max_tokens=st.integers(min_value=-(2**80), max_value=2**80),
    model_preferences=st.none() | st.builds(types.ModelPreferences, hints=st.none() | st.lists(
        st.builds(types.ModelHint, name=st.none() | hostile_text), max_size=20)),
    system_prompt=st.none() | hostile_text,
    include_context=st.none() | st.sampled_from(["none", "thisServer", "allServers"]),
    stop_sequences=st.none() | st.lists(hostile_text, max_size=4),
    metadata=st.none() | st.dictionaries(hostile_text, json_value, max_size=4),
)
results = st.builds(types.CreateMessageResult, role=st.just("assistant"), content=content_blocks,
                    model=hostile_text, stop_reason=stop_reasons)
error_frames = st.builds(types.ErrorData, code=codes.filter(lambda c: abs(c) < 2**31), message=hostile_text,
                         data=frame_data)
# What mcp reads without instrumentation too: a dict it validates, or something it cannot.
odd_returns = st.none() | st.integers() | hostile_text | st.dictionaries(hostile_text, json_value, max_size=3)
wrapper_exceptions = st.builds(_exception_of, st.sampled_from([k for k in EXCEPTION_KINDS
                                                               if k not in ("keyboard", "exit")]),
                               codes.filter(lambda c: abs(c) < 2**31), hostile_text, json_value)
answers = results.map(lambda r: ("return", r)) | error_frames.map(lambda e: ("return", e)) \
    | odd_returns.map(lambda v: ("return", v)) | wrapper_exceptions.map(lambda e: ("raise", e))


def expected_ending(how: str, answer: object) -> str | None:
    """The ending the classify functions give (None: a return mcp itself must validate)."""
    if how == "raise":
        assert isinstance(answer, BaseException)
        if endings.is_cancellation(answer):
            return endings.from_cancellation(None).ending
        return endings.from_exception(answer).ending
    if isinstance(answer, types.ErrorData):
        return endings.from_error_frame(answer.code, answer.data, answer.message).ending
    if isinstance(answer, types.CreateMessageResult):
        return endings.from_result(answer.stop_reason).ending
    return None


async def _dispatch_all(cases: list) -> list:
    """Each case through ``ClientSession.dispatch_input_request`` (both sampling paths end there)."""
    current: list = []

    async def callback(ctx, params):
        how, answer = current[0]
        if how == "raise":
            raise answer
        return answer

    got = []
    async with Client(build_server(), mode="legacy", sampling_callback=callback) as client:
        for i, (request_params, case) in enumerate(cases):
            current[:] = [case]
            ctx = type("Ctx", (), {"request_id": i, "meta": None})()
            try:
                got.append(("return", await client.session.dispatch_input_request(
                    ctx, types.CreateMessageRequest(params=request_params))))
            except BaseException as exc:  # noqa: BLE001 - what the host got is the subject
                got.append(("raise", exc))
    return got


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases=st.lists(st.tuples(params, answers), min_size=1, max_size=8))
def test_through_the_wrapper_the_host_gets_its_answer_and_each_request_one_ending(mcp_instrumented, cases):
    from conftest import SPANS

    SPANS.clear()
    before = sum(mcp_instrumented.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_ENDING).values())
    got = anyio.run(_dispatch_all, cases)
    for (how, answer), (got_how, got_answer) in zip((case for _, case in cases), got, strict=True):
        assert (got_how, got_answer) == (how, answer) and got_answer is answer  # the same object, unchanged
    spans = mcp_instrumented.spans(names.SPAN_SAMPLING)
    assert len(spans) == len(cases)  # one span per request, each ended once
    for span, (_, (how, answer)) in zip(spans, cases, strict=True):
        ending = span.attributes[names.SAMPLING_ENDING]
        assert ending in names.ENDINGS
        expected = expected_ending(how, answer)
        assert expected is None or ending == expected, (how, answer, ending)
    after = sum(mcp_instrumented.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_ENDING).values())
    assert after - before == len(cases)
