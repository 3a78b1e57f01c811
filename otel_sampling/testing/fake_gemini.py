"""The Gemini REST shapes the fake provider answers with (``generateContent``, ``streamGenerateContent``).

The bodies of the Gemini API (``POST /v1beta/models/<model>:generateContent``) and of Vertex AI
(``POST /v1beta1/projects/<p>/locations/<l>/publishers/google/models/<model>:generateContent``),
which share one JSON shape: a ``GenerateContentResponse`` (``candidates``, ``promptFeedback``,
``usageMetadata``, ``modelVersion``, ``responseId``), streamed as one such object per SSE
``data:`` line (``?alt=sse``, what google-genai asks for), and Google's error body
``{"error": {"code", "message", "status"}}``. Pure functions of the parsed scenario; the
server (:mod:`otel_sampling.testing.fake_provider`) sends them.
"""

from __future__ import annotations

import uuid
from typing import Any

from otel_sampling.testing import fake_answers

GENERATE = ":generateContent"
STREAM_GENERATE = ":streamGenerateContent"
#: HTTP status -> google.rpc status name, as the Gemini API and Vertex AI send them.
STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
PROMPT_TOKENS = 25
CACHED_TOKENS = 400
THOUGHTS_TOKENS = 7
MAX_CANDIDATES = 100_000  # the ``candidates=<n>`` scenario's ceiling


def is_gemini(path: str) -> bool:
    """A ``generateContent`` or ``streamGenerateContent`` path (query left out)."""
    return path.endswith((GENERATE, STREAM_GENERATE))


def model_of(path: str) -> str:
    """The model a ``.../models/<model>:generateContent`` path names."""
    return path.rpartition(":")[0].rpartition("/")[2]


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    """Google's error body for an HTTP status (200: an ``INTERNAL`` error sent with HTTP 200)."""
    name = STATUSES.get(status, "INTERNAL" if status in (200,) or status >= 500 else "UNKNOWN")
    code = 500 if status == 200 else status
    return {"error": {"code": code, "message": message or f"fake {name} ({code})", "status": name}}


def finish_reason(sc: dict[str, str]) -> str:
    """``SAFETY`` for ``refusal``, ``MAX_TOKENS`` for ``length``, else ``STOP``."""
    return "SAFETY" if "refusal" in sc else "MAX_TOKENS" if "length" in sc else "STOP"


def usage(sc: dict[str, str], output_tokens: int) -> dict[str, Any]:
    """``usageMetadata``: ``promptTokenCount`` includes the cached tokens, as Gemini counts them."""
    cached = CACHED_TOKENS if "cache" in sc else 0
    thoughts = THOUGHTS_TOKENS if "thinking" in sc else 0
    metadata: dict[str, Any] = {
        "promptTokenCount": PROMPT_TOKENS + cached,
        "candidatesTokenCount": output_tokens,
        "totalTokenCount": PROMPT_TOKENS + cached + output_tokens + thoughts,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": PROMPT_TOKENS + cached}],
    }
    if cached:
        metadata["cachedContentTokenCount"] = cached
    if thoughts:
        metadata["thoughtsTokenCount"] = thoughts
    return metadata


def _parts(sc: dict[str, str], text: str) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if "thinking" in sc:
        parts.append({"text": "Thinking it over", "thought": True})
    parts.append({"text": text})
    if "tool" in sc:
        name, args = fake_answers.tool_call(sc)
        parts.append({"functionCall": {"name": name, "args": args}})
    return parts


def answer(
    sc: dict[str, str], served: str | None, words: list[str], *, response_id: str | None = None
) -> dict[str, Any]:
    """A complete ``GenerateContentResponse`` (``prompt_blocked``: a blocked prompt, no candidates)."""
    body: dict[str, Any] = {
        "usageMetadata": usage(sc, 0 if "prompt_blocked" in sc else len(words)),
        "modelVersion": served,
        "responseId": response_id or uuid.uuid4().hex[:22],
    }
    if "prompt_blocked" in sc:
        body["promptFeedback"] = {"blockReason": "SAFETY"}
        return body
    count = min(int(sc.get("candidates") or 1), MAX_CANDIDATES)
    body["candidates"] = [
        {
            "content": {"role": "model", "parts": _parts(sc, "".join(words))},
            "finishReason": finish_reason(sc),
            "index": index,
        }
        for index in range(count)
    ]
    return body


def chunks(sc: dict[str, str], served: str | None, words: list[str]) -> list[dict[str, Any]]:
    """The SSE chunks of a streamed answer: one per word, the last one with the finish reason and
    the usage (as Gemini sends them: every chunk names the model version and response id)."""
    response_id = uuid.uuid4().hex[:22]
    if "prompt_blocked" in sc:
        return [answer(sc, served, words, response_id=response_id)]
    out = []
    for n, word in enumerate(words):
        parts: list[dict[str, Any]] = [{"text": word}]
        if n == 0 and "thinking" in sc:
            parts.insert(0, {"text": "Thinking it over", "thought": True})
        out.append(
            {
                "candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}],
                "usageMetadata": {"promptTokenCount": PROMPT_TOKENS, "totalTokenCount": PROMPT_TOKENS},
                "modelVersion": served,
                "responseId": response_id,
            }
        )
    last: dict[str, Any] = {"content": {"role": "model", "parts": []}, "finishReason": finish_reason(sc), "index": 0}
    if "tool" in sc:
        name, args = fake_answers.tool_call(sc)
        last["content"]["parts"] = [{"functionCall": {"name": name, "args": args}}]
    out.append(
        {
            "candidates": [last],
            "usageMetadata": usage(sc, len(words)),
            "modelVersion": served,
            "responseId": response_id,
        }
    )
    return out
