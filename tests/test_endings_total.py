"""Every answer ends once, through the real code that reads it: whatever a provider sends, the
readers make a response with one ending; whatever a sampling callback returns or raises, the
host gets that very object (or exception) back and the request exactly one span and one
``otel_sampling.sampling.requests`` point, with the ending the rules give.

The rules themselves, and their totality over any value, are tests/rules/test_endings.py. Here
real mcp ``ClientSession``s dispatch Hypothesis-generated ``CreateMessageRequest``s (fewer
examples: each is a real request).
"""

from __future__ import annotations

import pytest

pytest.importorskip("mcp_types", reason="mcp 2.x sessions")

import anyio
import mcp_types as types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from conftest import (
    EXCEPTION_KINDS,
    SPANS,
    codes,
    exception_of,
    frame_data,
    hostile_text,
    json_value,
    stop_reasons,
)
from otel_sampling import names
from otel_sampling.instrumentation import anthropic as anthropic_instr
from otel_sampling.instrumentation import openai as openai_instr
from otel_sampling.instrumentation import openai_responses
from otel_sampling.rules import endings
from otel_sampling.rules.endings import answer_ending
from sampling_server import build_server

# ---------------------------------------------------------------- provider answers, through the readers
answer_bodies = st.dictionaries(
    st.sampled_from(
        [
            "model",
            "id",
            "type",
            "stop_reason",
            "content",
            "choices",
            "output",
            "usage",
            "status",
            "error",
            "incomplete_details",
        ]
    ),
    json_value,
    max_size=8,
)


@settings(max_examples=500)
@given(body=answer_bodies)
def test_every_provider_body_reads_into_a_response_with_one_ending(body):
    """The readers take the SDKs' models and plain JSON alike (a model built without validation
    carries whatever JSON the provider sent); no shape makes them raise."""
    for read in (openai_instr.chat_response_of, openai_responses.response_of):
        response = read(body)
        assert answer_ending(response, response.error_type).ending in names.ENDINGS
        assert response.model is None or isinstance(response.model, str)
    response = anthropic_instr.response_of(type("Message", (), body)())
    assert answer_ending(response, response.error_type).ending in names.ENDINGS
    assert response.model is None or isinstance(response.model, str)


# ---------------------------------------------------------------- through the real mcp wrapper
content_blocks = (
    st.builds(types.TextContent, text=hostile_text)
    | st.builds(types.ImageContent, data=st.just("iVBORw0KGgo="), mime_type=hostile_text)
    | st.builds(types.AudioContent, data=st.just("UklGRg=="), mime_type=hostile_text)
)
params = st.builds(
    types.CreateMessageRequestParams,
    messages=st.lists(
        st.builds(types.SamplingMessage, role=st.sampled_from(["user", "assistant"]), content=content_blocks),
        min_size=1,
        max_size=3,
    ),
    max_tokens=st.integers(min_value=-(2**80), max_value=2**80),
    model_preferences=st.none()
    | st.builds(
        types.ModelPreferences,
        hints=st.none() | st.lists(st.builds(types.ModelHint, name=st.none() | hostile_text), max_size=20),
    ),
    system_prompt=st.none() | hostile_text,
    include_context=st.none() | st.sampled_from(["none", "thisServer", "allServers"]),
    stop_sequences=st.none() | st.lists(hostile_text, max_size=4),
    metadata=st.none() | st.dictionaries(hostile_text, json_value, max_size=4),
)
results = st.builds(
    types.CreateMessageResult,
    role=st.just("assistant"),
    content=content_blocks,
    model=hostile_text,
    stop_reason=stop_reasons,
)
error_frames = st.builds(
    types.ErrorData, code=codes.filter(lambda c: abs(c) < 2**31), message=hostile_text, data=frame_data
)
# What mcp reads without instrumentation too: a dict it validates, or something it cannot.
odd_returns = st.none() | st.integers() | hostile_text | st.dictionaries(hostile_text, json_value, max_size=3)
wrapper_exceptions = st.builds(
    exception_of,
    st.sampled_from([k for k in EXCEPTION_KINDS if k not in ("keyboard", "exit")]),
    codes.filter(lambda c: abs(c) < 2**31),
    hostile_text,
    json_value,
)
answers = (
    results.map(lambda r: ("return", r))
    | error_frames.map(lambda e: ("return", e))
    | odd_returns.map(lambda v: ("return", v))
    | wrapper_exceptions.map(lambda e: ("raise", e))
)


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
                got.append(
                    (
                        "return",
                        await client.session.dispatch_input_request(
                            ctx, types.CreateMessageRequest(params=request_params)
                        ),
                    )
                )
            except BaseException as exc:  # noqa: BLE001 - what the host got is the subject
                got.append(("raise", exc))
    return got


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(cases=st.lists(st.tuples(params, answers), min_size=1, max_size=8))
def test_through_the_wrapper_the_host_gets_its_answer_and_each_request_one_ending(mcp_instrumented, cases):
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
