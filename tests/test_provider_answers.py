"""Whatever a provider answers with HTTP 200, the call gets one ending and stays on the metrics.

Hypothesis builds answers: any JSON value, mostly shaped like the API's own answer (Messages,
Chat Completions, Responses; a body, or the events of a stream) with any field replaced by any
JSON value: hostile token counts (negative, beyond int64, floats, ``NaN``, bools), an ``error``
member of every JSON type, null or empty choices / content / output, refusal fields. Each goes
through the real SDK (``mock_answers``: ``httpx2.MockTransport``), instrumented with a price
table that prices the model most answers name. For every call:

* exactly one span of ours, ended, whose ending is one of ``names.ENDINGS``; status ERROR
  exactly when it has an ``error.type``;
* never ``completed`` (nor ``refused``) without an answer: what counts as one is read here from
  the body, per API reference (below), not from the code under test;
* one ``gen_ai.client.operation.duration`` point more, whatever the answer;
* no cost that is negative or not finite (span, ``otel_sampling.client.cost.usd``, the run around it),
  no token count outside ``[0, 2**63)`` on the span or the token histogram.

An answer, per API: Chat Completions, a choice object (a stream: a chunk choice with a
``finish_reason``); Messages, a ``content`` list (the API's empty ``end_turn`` answer is
``content: []``; a stream: ``message_start`` with its message, then ``message_stop``); Responses,
an ``output`` list (a stream: it, in the ``response.completed`` / ``response.incomplete`` event
that ends it).
None of them when the answer reports an error (an ``error`` member that is JSON-truthy, anthropic
``type: "error"``, a Responses ``status: "failed"`` or ``error`` event).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.metrics import Counter, Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader

import otel_sampling
from conftest import SPANS, Telemetry, with_policy
from mock_answers import call
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor

PRICED = "priced-model"
PRICES = f"""
[prices."{PRICED}"]
input_usd_per_mtok = 1.0
output_usd_per_mtok = 5.0
cache_read_usd_per_mtok = 0.5
cache_write_usd_per_mtok = 2.0
"""
INT64 = 2**63

# ---------------------------------------------------------------- JSON of any shape
text = st.text(max_size=12) | st.sampled_from(["", "\x00", "\u202e", "refusal", "error"])
json_leaf = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | text
json_value = st.recursive(
    json_leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3), max_leaves=8
)


def either(shaped: st.SearchStrategy, odd_share: st.SearchStrategy = json_value) -> st.SearchStrategy:
    """Mostly the shape the API sends, else any JSON value in its place."""
    return st.one_of(shaped, shaped, shaped, odd_share)


def members(required: dict, optional: dict) -> st.SearchStrategy:
    return st.fixed_dictionaries(required, optional=optional)


counts = st.integers(0, 10**6) | st.sampled_from(
    [-1, -(10**9), INT64 - 1, INT64, 2**70, True, False, 1.5, float("nan"), float("inf"), "12", None]
)
models = st.sampled_from([PRICED, PRICED, "other-model"]) | json_leaf
codes = st.sampled_from(["server_error", "rate_limit_exceeded", "timeout_error", "overloaded_error", 429, 500, ""])
errors = (
    st.sampled_from([None, None, None, False, 0, "", [], {}])
    | json_value
    | members({}, {"code": codes | json_leaf, "type": codes | json_leaf, "message": text})
)
refusals = st.sampled_from([None, None, "", "I can't help with that."]) | json_leaf

# Chat Completions
chat_usage = members(
    {},
    {
        "prompt_tokens": counts,
        "completion_tokens": counts,
        "prompt_tokens_details": either(members({}, {"cached_tokens": counts})),
    },
)
chat_message = members({}, {"role": st.just("assistant"), "content": st.none() | text, "refusal": refusals})
finish_reasons = st.sampled_from(["stop", "length", "content_filter", "tool_calls"]) | json_leaf
chat_choice = members(
    {}, {"index": st.integers(0, 3), "message": either(chat_message), "finish_reason": finish_reasons}
)
chat_body = members(
    {},
    {
        "id": text,
        "object": st.just("chat.completion"),
        "model": models,
        "choices": either(st.lists(either(chat_choice), max_size=2)),
        "usage": either(chat_usage),
        "error": errors,
    },
)
chat_delta = members({}, {"content": st.none() | text, "refusal": refusals})
chat_chunk = members(
    {},
    {
        "id": text,
        "model": models,
        "usage": either(chat_usage),
        "choices": either(
            st.lists(
                either(
                    members(
                        {}, {"index": st.integers(0, 3), "delta": either(chat_delta), "finish_reason": finish_reasons}
                    )
                ),
                max_size=2,
            )
        ),
        "error": errors,
    },
)
chat_events = st.lists(either(chat_chunk).map(lambda data: (None, data)), max_size=4)

# Messages (anthropic)
anthropic_usage = members(
    {},
    {
        "input_tokens": counts,
        "output_tokens": counts,
        "cache_read_input_tokens": counts,
        "cache_creation_input_tokens": counts,
    },
)
blocks = st.lists(
    either(members({"type": st.sampled_from(["text", "tool_use", "thinking"])}, {"text": text})), max_size=2
)
stop_reasons = st.sampled_from(["end_turn", "max_tokens", "refusal", "tool_use"]) | json_leaf
anthropic_body = members(
    {},
    {
        "id": text,
        "type": st.sampled_from(["message", "message", "error"]) | json_leaf,
        "role": st.just("assistant"),
        "model": models,
        "content": either(blocks),
        "stop_reason": stop_reasons,
        "usage": either(anthropic_usage),
        "error": errors,
    },
)
anthropic_event = st.one_of(
    members({"type": st.just("message_start")}, {"message": either(anthropic_body)}),
    members({"type": st.just("content_block_start")}, {"index": st.integers(0, 2), "content_block": json_value}),
    members(
        {"type": st.just("content_block_delta")},
        {"index": st.integers(0, 2), "delta": either(members({"type": st.just("text_delta")}, {"text": text}))},
    ),
    members(
        {"type": st.just("message_delta")},
        {"delta": either(members({}, {"stop_reason": stop_reasons})), "usage": either(anthropic_usage)},
    ),
    st.just({"type": "message_stop"}),
    members({"type": st.just("error")}, {"error": errors}),
    json_value,
)
event_names = st.sampled_from(
    ["message_start", "content_block_start", "content_block_delta", "message_delta", "message_stop", "ping", "error"]
)
anthropic_events = st.lists(
    st.tuples(st.none() | event_names, anthropic_event).map(
        lambda pair: (pair[0] or (pair[1].get("type") if isinstance(pair[1], dict) else None), pair[1])
    ),
    max_size=5,
)

# Responses
part = members({"type": st.sampled_from(["output_text", "refusal"])}, {"text": text, "refusal": text})
output_item = members(
    {"type": st.sampled_from(["message", "function_call", "reasoning"])},
    {"role": st.just("assistant"), "content": either(st.lists(either(part), max_size=2))},
)
responses_usage = members(
    {},
    {
        "input_tokens": counts,
        "output_tokens": counts,
        "input_tokens_details": either(members({}, {"cached_tokens": counts})),
    },
)
statuses = st.sampled_from(["completed", "incomplete", "failed", "in_progress"]) | json_leaf
responses_body = members(
    {},
    {
        "id": text,
        "object": st.just("response"),
        "model": models,
        "status": statuses,
        "output": either(st.lists(either(output_item), max_size=2)),
        "incomplete_details": either(
            members({}, {"reason": st.sampled_from(["max_output_tokens", "content_filter"]) | json_leaf})
        ),
        "usage": either(responses_usage),
        "error": errors,
    },
)
responses_event = st.one_of(
    members(
        {
            "type": st.sampled_from(
                [
                    "response.created",
                    "response.in_progress",
                    "response.completed",
                    "response.incomplete",
                    "response.failed",
                ]
            )
        },
        {"response": either(responses_body), "sequence_number": st.integers(0, 9)},
    ),
    members({"type": st.just("response.output_text.delta")}, {"delta": text}),
    members({"type": st.just("error")}, {"code": codes | json_leaf, "message": text}),
    json_value,
)
responses_events = st.lists(
    responses_event.map(
        lambda data: (data.get("type") if isinstance(data, dict) and isinstance(data.get("type"), str) else None, data)
    ),
    max_size=4,
)

BODIES = {"anthropic": either(anthropic_body), "chat": either(chat_body), "responses": either(responses_body)}
STREAMS = {"anthropic": anthropic_events, "chat": chat_events, "responses": responses_events}


# ---------------------------------------------------------------- what counts as an answer (docstring above)
def _truthy_error(obj: object) -> bool:
    return isinstance(obj, dict) and bool(obj.get("error"))


def has_answer(api: str, answer: object) -> bool:
    if not isinstance(answer, dict) or _truthy_error(answer):
        return False
    if api == "chat":
        return isinstance(answer.get("choices"), list) and any(isinstance(c, dict) for c in answer["choices"])
    if api == "anthropic":
        return answer.get("type") != "error" and isinstance(answer.get("content"), list)
    return answer.get("status") != "failed" and isinstance(answer.get("output"), list)


def stream_has_answer(api: str, events: list) -> bool:
    datas = [data for name, data in events if isinstance(data, dict)]
    if api == "chat":  # the SDK raises on a chunk with a truthy error before yielding it
        return not any(_truthy_error(d) for d in datas) and any(
            isinstance(c, dict) and isinstance(c.get("finish_reason"), str)
            for d in datas
            if isinstance(d.get("choices"), list)
            for c in d["choices"]
        )
    if api == "anthropic":
        read = [d for name, d in events if name not in (None, "ping") and isinstance(d, dict)]
        if any(name == "error" for name, _ in events):  # the SDK raises an `event: error`
            return False
        started = any(d.get("type") == "message_start" and isinstance(d.get("message"), dict) for d in read)
        return started and any(d.get("type") == "message_stop" for d in read)
    if any(_truthy_error(d) for d in datas):  # the SDK raises it when the host reads that far
        return False
    final = next(
        (
            d
            for d in datas
            if d.get("type") in ("response.completed", "response.incomplete", "response.failed", "error")
        ),
        None,
    )  # the stream's end
    return (
        final is not None
        and final["type"] in ("response.completed", "response.incomplete")
        and has_answer("responses", final.get("response"))
    )


# ---------------------------------------------------------------- the properties
class DeltaTelemetry(Telemetry):
    """Each collection holds only what was recorded since the last one: the points of one call."""

    def __init__(self) -> None:
        self.reader = InMemoryMetricReader(
            preferred_temporality={Counter: AggregationTemporality.DELTA, Histogram: AggregationTemporality.DELTA}
        )
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def collect(self) -> dict[str, list]:
        """Points by metric name, recorded since the last collection."""
        data = self.reader.get_metrics_data()
        found: dict[str, list] = {}
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    found.setdefault(metric.name, []).extend(metric.data.data_points)
        return found


@pytest.fixture
def priced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    telemetry = DeltaTelemetry()
    yield from with_policy(telemetry, tmp_path, monkeypatch, PRICES, AnthropicInstrumentor, OpenAIInstrumentor)
    telemetry.meter_provider.shutdown()


def check_one_call(
    telemetry: DeltaTelemetry, api: str, answer: object, answered: bool, stream: bool, run_async: bool = False
) -> None:
    SPANS.clear()
    telemetry.collect()
    with otel_sampling.run("answers") as run:
        call(api, answer, stream=stream, run_async=run_async)
    (span,) = [s for s in telemetry.spans() if s.name.startswith("chat")]  # one span of ours, ended
    attributes = span.attributes
    ending = attributes[names.ENDING]
    assert ending in names.ENDINGS
    assert (span.status.status_code.name == "ERROR") == (names.ERROR_TYPE in attributes)
    if ending in (names.ENDING_COMPLETED, names.ENDING_REFUSED):
        assert answered, (ending, answer)
    points = telemetry.collect()
    durations = points.get(names.METRIC_GEN_AI_OPERATION_DURATION, [])
    assert sum(p.count for p in durations) == 1  # the call is on the metrics, whatever it answered
    for usd in (
        attributes.get(names.GEN_AI_USAGE_COST_AMOUNT),
        run.cost_usd,
        *(p.value for p in points.get(names.METRIC_CLIENT_COST, [])),
    ):
        assert usd is None or (math.isfinite(usd) and usd >= 0), usd
    for key in (
        names.GEN_AI_USAGE_INPUT_TOKENS,
        names.GEN_AI_USAGE_OUTPUT_TOKENS,
        names.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
        names.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS,
    ):
        assert key not in attributes or 0 <= attributes[key] < INT64
    for point in points.get(names.METRIC_GEN_AI_TOKEN_USAGE, []):
        assert point.min >= 0 and point.max < INT64


PROPERTY = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("api", ["anthropic", "chat", "responses"])
def test_any_body_gets_one_ending_and_stays_on_the_metrics(priced, api):
    @PROPERTY
    @given(answer=BODIES[api])
    def check(answer):
        check_one_call(priced, api, answer, has_answer(api, answer), stream=False)

    check()


@pytest.mark.parametrize("api", ["anthropic", "chat", "responses"])
def test_any_stream_gets_one_ending_and_stays_on_the_metrics(priced, api):
    @PROPERTY
    @given(events=STREAMS[api])
    def check(events):
        check_one_call(priced, api, events, stream_has_answer(api, events), stream=True)

    check()


@pytest.mark.parametrize("api", ["anthropic", "chat", "responses"])
def test_any_answer_to_an_async_call_gets_one_ending_and_stays_on_the_metrics(priced, api):
    @settings(PROPERTY, max_examples=20)
    @given(answer=BODIES[api], events=STREAMS[api], stream=st.booleans())
    def check(answer, events, stream):
        sent = events if stream else answer
        answered = stream_has_answer(api, events) if stream else has_answer(api, answer)
        check_one_call(priced, api, sent, answered, stream=stream, run_async=True)

    check()
