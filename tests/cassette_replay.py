"""Replays a recorded provider exchange (``tests/data/cassettes``) through a real SDK client.

A cassette is one JSON file: one real HTTP exchange taken from a public instrumentation test suite
(its ``source`` and ``license`` fields say where from): the recorded request (method, URL, path,
body) and response (status, headers, body text: JSON or SSE as recorded). :func:`transport`
answers the SDK with the recorded response, the body in small pieces so SSE events split across
reads. Serves both SDKs' cassettes (``anthropic/``, ``openai/``).
"""

from __future__ import annotations

import importlib
import inspect
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import openai

CASSETTES = Path(__file__).parent / "data" / "cassettes"
CHUNK_SIZE = 7  # bytes per body piece: SSE events arrive split across reads
# What each SDK appends to its base_url: anthropic's base_url has no /v1, openai's ends in /v1.
_ENDPOINTS = ("/v1/messages", "/chat/completions", "/responses")


def load(relative: str) -> dict[str, Any]:
    return json.loads((CASSETTES / relative).read_text(encoding="utf-8"))


def base_url(cassette: dict[str, Any]) -> str:
    """The SDK ``base_url`` of the recorded request: its URL without the endpoint path and the query
    (``https://api.anthropic.com``, ``https://api.openai.com/v1``)."""
    url = urlsplit(cassette["request"]["url"])
    path = next((url.path.removesuffix(e) for e in _ENDPOINTS if url.path.endswith(e)), url.path)
    return f"{url.scheme}://{url.netloc}{path}"


def transport(cassette: dict[str, Any], *, asynchronous: bool = False, http: Any = httpx2) -> httpx2.MockTransport:
    """Answers every request with the recording; a request to another method or path fails the test.
    ``asynchronous``: for an ``httpx2.AsyncClient`` (its body must be an async iterator); ``http``:
    the SDK's HTTP library (``httpx2``; openai 2.x: ``httpx``)."""
    recorded, answer = cassette["request"], cassette["response"]
    body = answer["body"].encode("utf-8")

    def pieces() -> Iterator[bytes]:
        for start in range(0, len(body), CHUNK_SIZE):
            yield body[start : start + CHUNK_SIZE]

    async def async_pieces() -> AsyncIterator[bytes]:
        for piece in pieces():
            yield piece

    def handler(request: Any) -> Any:
        assert (request.method, request.url.path) == (recorded["method"], recorded["path"])
        return http.Response(
            answer["status"], headers=answer.get("headers") or {}, content=async_pieces() if asynchronous else pieces()
        )

    transport: httpx2.MockTransport = http.MockTransport(handler)
    return transport


#: The HTTP library of the installed openai: httpx for openai 2.x, httpx2 from 3.0.
OPENAI_HTTP: Any = importlib.import_module("httpx" if openai.__version__.startswith("2.") else "httpx2")


def call_kwargs(method: Any, body: dict[str, Any], drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """Keyword arguments that make ``method`` send the recorded body, without the keys in ``drop``:
    keys the method does not take (anthropic 2.x dropped ``temperature``, ``top_k``, ``top_p``) go
    through ``extra_body``."""
    params = inspect.signature(method).parameters
    kwargs = {k: v for k, v in body.items() if k in params and k not in drop}
    extra = {k: v for k, v in body.items() if k not in params and k not in drop}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs
