"""Replays a recorded provider exchange (``tests/data/cassettes``) through a real SDK client.

A cassette is one JSON file: the recorded request (method, URL, path, body) and response (status,
headers, body text: JSON or SSE as recorded), plus its ``source`` and ``license``. The transport
answers the SDK with the recorded response, body in small pieces so SSE events split across reads.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2

CASSETTES = Path(__file__).parent / "data" / "cassettes"
_ENDPOINTS = ("/chat/completions", "/responses")


def load(relative: str) -> dict[str, Any]:
    return json.loads((CASSETTES / relative).read_text(encoding="utf-8"))


def base_url(cassette: dict[str, Any]) -> str:
    """The SDK ``base_url`` of the recorded request (``https://api.openai.com/v1``)."""
    url = urlsplit(cassette["request"]["url"])
    path = next((url.path[: -len(e)] for e in _ENDPOINTS if url.path.endswith(e)), url.path)
    return f"{url.scheme}://{url.netloc}{path}"


def transport(cassette: dict[str, Any], *, asynchronous: bool = False, chunk_size: int = 7) -> httpx2.MockTransport:
    """Answers with the recorded response; a request to another method or path fails the test.
    ``asynchronous``: for an ``httpx2.AsyncClient`` (its body must be an async iterator)."""
    recorded, answer = cassette["request"], cassette["response"]
    body = answer["body"].encode()

    def handler(request: httpx2.Request) -> httpx2.Response:
        assert (request.method, request.url.path) == (recorded["method"], recorded["path"])

        def pieces() -> Iterator[bytes]:
            for start in range(0, len(body), chunk_size):
                yield body[start:start + chunk_size]

        async def async_pieces() -> AsyncIterator[bytes]:
            for piece in pieces():
                yield piece

        content = async_pieces() if asynchronous else pieces()
        return httpx2.Response(answer["status"], headers=answer.get("headers") or {}, content=content)

    return httpx2.MockTransport(handler)


def call_kwargs(method: Any, body: dict[str, Any]) -> dict[str, Any]:
    """Keywords that make ``method`` send the recorded body: keys it does not take go in ``extra_body``."""
    params = inspect.signature(method).parameters
    kwargs = {k: v for k, v in body.items() if k in params}
    extra = {k: v for k, v in body.items() if k not in params}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs
