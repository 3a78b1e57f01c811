"""Real recorded anthropic exchanges replayed through the instrumented SDK (sync and async).

Each cassette's ``verified`` block is what the real SDK parsed from the recording (served model,
stop reason, usage, or the raised error and its envelope type); the span must say the same, with
input tokens in semantic-convention terms (anthropic's input plus cache reads and writes).
"""

from __future__ import annotations

import asyncio
import functools
from types import SimpleNamespace

import anthropic
import httpx2
import pytest
from opentelemetry.trace import StatusCode

from cassette_replay import CASSETTES, base_url, call_kwargs, load, transport
from otel_sampling import names

# The SDK warns about recorded models past their deprecation date: expected for old recordings.
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
FILES = sorted(p.name for p in (CASSETTES / "anthropic").glob("*.json"))


def _invoke(messages, cassette):
    """Call the SDK the way the recording was made; return the final message (or raise)."""
    body = cassette["request"]["body"]
    how = cassette["sdk_call"]
    if how == "messages.stream":
        with messages.stream(**call_kwargs(messages.stream, body, drop=("stream",))) as stream:
            return stream.get_final_message()
    if how == "messages.create(stream=True)":
        events = list(messages.create(**call_kwargs(messages.create, body)))
        assert events[-1].type == "message_stop"
        return None
    return messages.create(**call_kwargs(messages.create, body))


async def _ainvoke(messages, cassette):
    body = cassette["request"]["body"]
    how = cassette["sdk_call"]
    if how == "messages.stream":
        async with messages.stream(**call_kwargs(messages.stream, body, drop=("stream",))) as stream:
            return await stream.get_final_message()
    if how == "messages.create(stream=True)":
        events = [e async for e in await messages.create(**call_kwargs(messages.create, body))]
        assert events[-1].type == "message_stop"
        return None
    return await messages.create(**call_kwargs(messages.create, body))


def _resource(client, cassette):
    if cassette["sdk_call"].startswith("beta."):  # the beta call with the recorded anthropic-beta header
        beta = cassette["request"]["headers"]["anthropic-beta"]
        return SimpleNamespace(create=functools.partial(client.beta.messages.create, betas=[beta]))
    return client.messages


def _check(span, cassette, raised):
    verified = cassette["verified"]
    a = span.attributes
    if "raised" in verified:
        assert raised is not None and type(raised).__name__ == verified["raised"].split("(")[0]
        assert span.status.status_code is StatusCode.ERROR
        assert a[names.ERROR_TYPE] == verified["error_type"]
        return
    assert raised is None
    usage = verified["usage"]
    cache_read = usage.get("cache_read_input_tokens") or 0
    cache_creation = usage.get("cache_creation_input_tokens") or 0
    assert a[names.GEN_AI_RESPONSE_MODEL] == verified["model"]
    assert a[names.GEN_AI_RESPONSE_FINISH_REASONS] == (verified["stop_or_finish_reason"],)
    assert a[names.GEN_AI_USAGE_INPUT_TOKENS] == usage["input_tokens"] + cache_read + cache_creation
    assert a[names.GEN_AI_USAGE_OUTPUT_TOKENS] == usage["output_tokens"]
    assert a.get(names.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, 0) == cache_read
    assert a.get(names.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS, 0) == cache_creation
    assert a[names.ENDING] == "completed"
    assert span.status.status_code is StatusCode.UNSET


@pytest.mark.parametrize("name", FILES)
def test_replay_sync(anthropic_instrumented, name):
    cassette = load(f"anthropic/{name}")
    client = anthropic.Anthropic(
        api_key="test",
        base_url=base_url(cassette),
        max_retries=0,
        http_client=httpx2.Client(transport=transport(cassette)),
    )
    raised = None
    try:
        _invoke(_resource(client, cassette), cassette)
    except anthropic.APIError as exc:
        raised = exc
    (span,) = anthropic_instrumented.spans()
    assert span.attributes[names.GEN_AI_REQUEST_MODEL] == cassette["request"]["body"]["model"]
    assert span.attributes[names.SERVER_ADDRESS] == "api.anthropic.com"
    _check(span, cassette, raised)


@pytest.mark.parametrize("name", [n for n in FILES if not n.startswith("error_500")])
def test_replay_async(anthropic_instrumented, name):
    cassette = load(f"anthropic/{name}")

    async def main():
        http_client = httpx2.AsyncClient(transport=transport(cassette, asynchronous=True))
        client = anthropic.AsyncAnthropic(
            api_key="test", base_url=base_url(cassette), max_retries=0, http_client=http_client
        )
        try:
            await _ainvoke(client.messages, cassette)
        except anthropic.APIError as exc:
            return exc
        finally:
            await client.close()
        return None

    raised = asyncio.run(main())
    (span,) = anthropic_instrumented.spans()
    _check(span, cassette, raised)
