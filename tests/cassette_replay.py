"""Replays a recorded provider exchange (``tests/data/cassettes``) through a real SDK client.

A cassette is one real HTTP exchange taken from a public instrumentation test suite (its
``source`` and ``license`` fields say where from). :func:`transport` answers the SDK with the
recorded status, headers and body, in small pieces so that SSE is split at arbitrary points.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2

CASSETTES = Path(__file__).parent / "data" / "cassettes"
CHUNK_SIZE = 7  # bytes per body piece: SSE events arrive split across reads


def load(name: str) -> dict[str, Any]:
    return json.loads((CASSETTES / name).read_text(encoding="utf-8"))


def base_url(cassette: dict[str, Any]) -> str:
    """The SDK base URL: the recorded URL without the Messages path and the query."""
    url = urlsplit(cassette["request"]["url"])
    return f"{url.scheme}://{url.netloc}{url.path.removesuffix('/v1/messages')}"


def transport(cassette: dict[str, Any], sync: bool = True) -> httpx2.MockTransport:
    """A transport answering every request with the recording; a request to another path fails."""
    recorded, answer = cassette["request"], cassette["response"]
    body = answer["body"].encode("utf-8")

    def pieces() -> Iterator[bytes]:
        for start in range(0, len(body), CHUNK_SIZE):
            yield body[start:start + CHUNK_SIZE]

    async def apieces():
        for piece in pieces():
            yield piece

    def handler(request: httpx2.Request) -> httpx2.Response:
        assert (request.method, request.url.path) == (recorded["method"], recorded["path"])
        return httpx2.Response(answer["status"], headers=answer.get("headers") or {},
                               content=pieces() if sync else apieces())

    return httpx2.MockTransport(handler)


def call_kwargs(method: Any, body: dict[str, Any], drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """Keyword arguments reproducing the recorded body: keys the method no longer takes
    (anthropic 2.x dropped ``temperature``, ``top_k``, ``top_p``) go through ``extra_body``."""
    params = inspect.signature(method).parameters
    kwargs = {k: v for k, v in body.items() if k in params and k not in drop}
    extra = {k: v for k, v in body.items() if k not in params and k not in drop}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs
