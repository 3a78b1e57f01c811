"""A provider answer of the test's choosing through the real anthropic and openai SDKs.

The answer is any JSON value as the body of an HTTP 200 (``json.dumps`` as Python writes it, so
``NaN`` and ``Infinity`` reach the SDK, which reads them back), or, for a stream, a list of SSE
events ``(event name or None, data)``. An ``httpx2.MockTransport`` hands it to the SDK client:
nothing leaves the process. ``call(api, answer, stream=...)`` makes the call the way a host does
(a stream is read to its end) and returns what the host got.

APIs: ``anthropic`` (Messages), ``chat`` (openai Chat Completions), ``responses`` (openai Responses).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import httpx2
import openai

from cassette_replay import OPENAI_HTTP

APIS = ("anthropic", "chat", "responses")
MESSAGES = [{"role": "user", "content": "hi"}]
REQUEST_MODEL = {"anthropic": "claude-req", "chat": "gpt-req", "responses": "gpt-req"}
_BASE_URL = "http://provider.test"


def body(value: object) -> bytes:
    return json.dumps(value).encode()


def sse(events: list[tuple[str | None, object]], done: bool = False) -> bytes:
    """SSE bytes: one ``event:`` line when named, one ``data:`` line; openai chat ends with ``[DONE]``."""
    out = []
    for name, data in events:
        out.append((f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n")
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def _http(api: str) -> Any:
    """The HTTP library of the SDK that calls ``api``: httpx2, or httpx for openai 2.x."""
    return httpx2 if api == "anthropic" else OPENAI_HTTP


def _transport(api: str, content: bytes, stream: bool) -> Any:
    headers = {"content-type": "text/event-stream" if stream else "application/json"}
    return _http(api).MockTransport(lambda request: _http(api).Response(200, headers=headers, content=content))


def _sync_call(api: str, content: bytes, stream: bool) -> Any:
    http = _http(api).Client(transport=_transport(api, content, stream))
    model = REQUEST_MODEL[api]
    if api == "anthropic":
        client: Any = anthropic.Anthropic(
            api_key="k", base_url=_BASE_URL, max_retries=0, open_telemetry=False, http_client=http
        )
        result = client.messages.create(model=model, max_tokens=8, messages=MESSAGES, stream=stream)
    elif api == "chat":
        client = openai.OpenAI(api_key="k", base_url=_BASE_URL + "/v1", max_retries=0, http_client=http)
        extra = {"stream_options": {"include_usage": True}} if stream else {}
        result = client.chat.completions.create(model=model, messages=MESSAGES, stream=stream, **extra)
    else:
        client = openai.OpenAI(api_key="k", base_url=_BASE_URL + "/v1", max_retries=0, http_client=http)
        result = client.responses.create(model=model, input="hi", stream=stream)
    return list(result) if stream else result


async def _async_call(api: str, content: bytes, stream: bool) -> Any:
    http = _http(api).AsyncClient(transport=_transport(api, content, stream))
    model = REQUEST_MODEL[api]
    if api == "anthropic":
        client: Any = anthropic.AsyncAnthropic(
            api_key="k", base_url=_BASE_URL, max_retries=0, open_telemetry=False, http_client=http
        )
        result = await client.messages.create(model=model, max_tokens=8, messages=MESSAGES, stream=stream)
    elif api == "chat":
        client = openai.AsyncOpenAI(api_key="k", base_url=_BASE_URL + "/v1", max_retries=0, http_client=http)
        result = await client.chat.completions.create(model=model, messages=MESSAGES, stream=stream)
    else:
        client = openai.AsyncOpenAI(api_key="k", base_url=_BASE_URL + "/v1", max_retries=0, http_client=http)
        result = await client.responses.create(model=model, input="hi", stream=stream)
    return [event async for event in result] if stream else result


def call(api: str, answer: Any, *, stream: bool = False, run_async: bool = False) -> tuple[str, Any]:
    """Make one call answered by ``answer`` (a JSON body, or SSE events when ``stream``).

    Returns ``("ok", result)`` (a stream: the list of its events) or ``("raised", exception)``.
    """
    content = sse(answer, done=api == "chat") if stream else body(answer)
    try:
        if run_async:
            return "ok", asyncio.run(_async_call(api, content, stream))
        return "ok", _sync_call(api, content, stream)
    except Exception as exc:  # noqa: BLE001 - what the host got is the subject
        return "raised", exc
