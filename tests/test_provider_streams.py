"""The stream proxy and the call ending through the real anthropic SDK on an in-process transport,
where the test controls the exact bytes and the exact exception object.
"""

from __future__ import annotations

import asyncio
import json

import anthropic
import httpx2
import pytest
from opentelemetry.trace import StatusCode

from otel_sampling import names

KW = {"model": "claude-req", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
MESSAGE_START = {"type": "message_start", "message": {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-req", "content": [],
    "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 1}}}


def sse(event: dict) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def test_a_mid_stream_error_reaches_the_caller_as_the_same_object(anthropic_instrumented):
    boom = httpx2.RemoteProtocolError("peer closed connection without sending complete message body")

    def body():
        yield sse(MESSAGE_START)
        raise boom

    transport = httpx2.MockTransport(lambda request: httpx2.Response(
        200, headers={"content-type": "text/event-stream"}, content=body()))
    c = anthropic.Anthropic(api_key="k", base_url="http://provider.test", max_retries=0, open_telemetry=False,
                            http_client=httpx2.Client(transport=transport))
    stream = c.messages.create(**KW, stream=True)
    with pytest.raises(httpx2.RemoteProtocolError) as info:
        list(stream)
    assert info.value is boom
    (span,) = anthropic_instrumented.spans()
    assert (span.attributes[names.ERROR_TYPE], span.attributes[names.ENDING]) == ("connection_error",
                                                                                 "model.unavailable")
    assert span.attributes[names.GEN_AI_USAGE_INPUT_TOKENS] == 3  # what message_start said


def test_an_async_error_reaches_the_caller_as_the_same_object(anthropic_instrumented):
    boom = httpx2.ReadTimeout("read timed out")

    async def body():
        yield sse(MESSAGE_START)
        raise boom

    async def main():
        transport = httpx2.MockTransport(lambda request: httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, content=body()))
        c = anthropic.AsyncAnthropic(api_key="k", base_url="http://provider.test", max_retries=0,
                                     open_telemetry=False, http_client=httpx2.AsyncClient(transport=transport))
        stream = await c.messages.create(**KW, stream=True)
        with pytest.raises(httpx2.ReadTimeout) as info:
            async for _ in stream:
                pass
        return info.value

    assert asyncio.run(main()) is boom
    (span,) = anthropic_instrumented.spans()
    assert (span.attributes[names.ERROR_TYPE], span.attributes[names.ENDING]) == ("timeout", "timeout")


def test_a_response_without_a_model_omits_the_attribute(anthropic_instrumented):
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "x"}],
               "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 1}}
    transport = httpx2.MockTransport(lambda request: httpx2.Response(200, json=message))
    c = anthropic.Anthropic(api_key="k", base_url="http://provider.test", max_retries=0, open_telemetry=False,
                            http_client=httpx2.Client(transport=transport))
    assert c.messages.create(**KW).model is None
    (span,) = anthropic_instrumented.spans()
    assert names.GEN_AI_RESPONSE_MODEL not in span.attributes  # not None, not the request model
    assert span.attributes[names.DEGRADATION_MODE] == "primary"
    assert span.status.status_code is StatusCode.UNSET
    points = anthropic_instrumented.points(names.METRIC_GEN_AI_OPERATION_DURATION)
    assert [p.attributes[names.GEN_AI_RESPONSE_MODEL] for p in points] == ["_unknown"]
