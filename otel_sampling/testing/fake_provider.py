"""A fake LLM provider for trying and testing instrumented code: a real HTTP/1.1 server on 127.0.0.1.

Stdlib only, installed with the package (``docs/getting-started.md`` runs the triage example
against it; otel-sampling's own tests use it too).

It speaks enough of these APIs for the real SDKs (anthropic 2.x and openai 3.x, both on httpx2)
to parse every answer, in JSON and in streamed (chunked ``text/event-stream``) form:

* Anthropic Messages       ``POST /v1/messages`` (also ``?beta=true``), ``POST /v1/messages/count_tokens``;
  on Vertex AI ``POST .../models/<model>:rawPredict`` and ``:streamRawPredict`` (``AnthropicVertex``);
  on Bedrock ``POST /model/<model>/invoke`` (``AnthropicBedrock``, non-streamed: no AWS event stream)
* OpenAI Chat Completions  ``POST /v1/chat/completions`` (``stream_options.include_usage`` honoured)
* OpenAI Responses         ``POST /v1/responses``
* Gemini                   ``POST .../models/<model>:generateContent`` and ``:streamGenerateContent``
  (SSE, ``?alt=sse``), Gemini API and Vertex AI paths alike (google-genai; shapes:
  :mod:`otel_sampling.testing.fake_gemini`)

Point an SDK at it with ``base_url=fp.url`` (Anthropic) or ``base_url=fp.url + "/v1"`` (OpenAI: its
base URL carries the API version, the Anthropic SDK adds ``/v1`` itself), or with
``ANTHROPIC_BASE_URL`` / ``OPENAI_BASE_URL`` set to the same values; google-genai with
``http_options={"base_url": fp.url}`` (both modes). Any API key is accepted.

Scenarios
---------
Each request picks its behaviour with the header ``x-fake-scenario`` (``SCENARIO_HEADER``; send it
with the SDK's ``extra_headers=`` or ``default_headers=``): a comma-separated list of ``key`` or
``key=value`` tokens, e.g. ``status=529,fail_first=1``. Without the header (or with an empty one)
the answer is the default: HTTP 200, a text reply (``DEFAULT_TEXT``), stop reason ``end_turn`` /
``stop``, and a ``model`` that echoes the requested model. ``SCENARIOS`` below lists every token
and what it does (``--help`` prints that list); a key it does not list is ignored.

Request log
-----------
``fp.requests`` lists every POST in arrival order as a dict: ``path``, ``model``, ``stream``,
``retry_count`` (``x-stainless-retry-count``), ``scenario`` (parsed header, ``{}`` when absent) and
``headers`` (lower-cased names, ``authorization`` / ``x-api-key`` left out; ``traceparent`` is
there when the caller propagates context). Control endpoints: ``GET /_fake/requests`` (the log as
JSON), ``POST /_fake/reset`` (clear it), ``GET /_fake/health``.

Use
---
In-process::

    with FakeProvider() as fp:                       # fp.url == "http://127.0.0.1:<port>"
        client = anthropic.Anthropic(base_url=fp.url, api_key="sk-fake", max_retries=0)
        client.messages.create(..., extra_headers={"x-fake-scenario": "status=529"})
        fp.requests[-1]["scenario"]                  # {"status": "529"}
        openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-fake").chat.completions.create(...)

Leaving the ``with`` block stops the server completely: it closes the listening socket and every
open keep-alive connection, wakes any ``delay=``/``chunk_delay=`` wait, and joins every thread.

From a shell::

    python -m otel_sampling.testing.fake_provider [--port N] [-v]
    python -m otel_sampling.testing.fake_provider --help    # how to point an SDK at it, the scenarios

prints the URL on stdout (one line, flushed) and serves until SIGTERM or SIGINT, then exits 0.
``-v`` logs each request to stderr. The server writes nothing outside its own process (no files).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import socket
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from otel_sampling.testing import fake_answers, fake_gemini

__all__ = ["DEFAULT_TEXT", "FakeProvider", "SCENARIO_HEADER", "SCENARIOS", "parse_scenario"]

SCENARIO_HEADER = "x-fake-scenario"
DEFAULT_TEXT = "Hello from the fake provider"
# Every token of the scenario header, as ``key`` or ``key=<value>``, and what it does; ``--help``
# prints this list. "SSE" marks the streamed answers (chunked text/event-stream).
SCENARIOS: dict[str, str] = {
    "status=<code>": "answer with that HTTP status and a provider-shaped error body (anthropic: 529 "
    "overloaded_error, 429 rate_limit_error, 500 api_error...; openai: 429 rate_limit_exceeded, "
    "500 server_error...)",
    "fail_first=<n>": "with status=: fail only while x-stainless-retry-count < n, then succeed",
    "fail_model=<m>": "with status=: fail only the requests for model <m>; a request for any other model "
    "succeeds (a primary that is down, its fallback that serves)",
    "retry_after_ms=<m>": "value of retry-after-ms on errors (default 1, so SDK retries are instant)",
    "no_retry": "send x-should-retry: false on errors (the SDK does not retry)",
    "error_message=<m>": "with status=: the error body's message is <m> (what a provider echoes)",
    "delay=<s>": "wait that many seconds before sending the response headers",
    "chunk_delay=<s>": "wait that many seconds before each SSE event",
    "midstream_error": "SSE: after min(2, words-1) text deltas send a provider error event (anthropic "
    'event: error, openai data: {"error": ...})',
    "drop": "SSE: abort the TCP connection (RST, no terminating chunk) at that point",
    "truncate": "SSE: end the body cleanly at that point, without message_stop / [DONE]",
    "served_model=<m>": "report model <m> instead of the requested one (silent substitution)",
    "gateway_model=<m>": "a gateway that served model <m>: the body names the requested model, the response "
    "header ngrok-aig-model (or gateway_header's) names <m>",
    "gateway_header=<h>": "with gateway_model=: the response header that names the served model",
    "cache": "non-zero prompt-cache usage (anthropic cache_* tokens, openai cached_tokens)",
    "reasoning=<n>": "n reasoning tokens, inside the output tokens (anthropic usage.output_tokens_details."
    "thinking_tokens, openai completion_tokens_details / output_tokens_details.reasoning_tokens)",
    "fallback=<m>": "anthropic: the server-side fallback shape (a fallback content block, usage.iterations, model=<m>)",
    "refusal": 'anthropic stop_reason="refusal" (+ stop_details); openai finish_reason="content_filter"; '
    'Responses status="incomplete" (incomplete_details.reason="content_filter"); Gemini finishReason="SAFETY"',
    "prompt_blocked": 'Gemini: the prompt is blocked (promptFeedback.blockReason="SAFETY", no candidates)',
    "thinking": "Gemini: a thought part and usageMetadata.thoughtsTokenCount",
    "candidates=<n>": "Gemini, not streamed: n candidates (at most 100,000), each with its finishReason",
    "tool": "the model calls a tool (anthropic tool_use block, openai tool_calls, Responses a function_call "
    "output item)",
    "tool_name=<n>": "with tool: the model calls tool <n> (default get_weather), offered or not",
    "tool_args=<a>": "with tool: the arguments are bad_json (not JSON: a cut object; anthropic input and "
    'Gemini args: that string), missing (the object {}, no city) or wrong_type ({"city": 42}); '
    'default {"city": "Paris"}',
    "json=<j>": 'the output text is JSON (streamed in two deltas): valid {"city": "Paris"}, bad_json (a cut '
    'object), mismatch {"town": 42}',
    "context_length": "HTTP 400, the provider's context-length error (anthropic invalid_request_error "
    '"prompt is too long: ..."; openai code context_length_exceeded)',
    "text=<w1+w2+...>": "the output text, words separated by +",
    "length": 'anthropic stop_reason="max_tokens"; openai: finish_reason="length"; Responses status="incomplete" '
    '(incomplete_details.reason="max_output_tokens", event response.incomplete); Gemini finishReason="MAX_TOKENS"',
    "no_model": "openai Chat Completions, not streamed: a body without model",
    "failed": 'openai Responses: status="failed" with error.code="server_error" (streamed: a '
    "response.failed event instead of response.completed)",
    "error_200": "HTTP 200 carrying the provider's error body (JSON, also for a stream request)",
    "long_model=<n>": "report a served model name of n characters",
    "null_model": '"model": null in every body and event that carries a model',
    "null_choices": "null for the output list: anthropic content, openai choices, Responses output (in every "
    "body and event that carries one)",
    "no_usage": "leave usage out of every body and event",
    "odd_types": "wrong JSON types where strings are expected: model and id numbers, stop_reason / "
    "finish_reason / status numbers, token counts strings",
}
_JOIN_TIMEOUT_S = 5.0
_REDACTED_HEADERS = frozenset({"authorization", "x-api-key"})

ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    409: "conflict_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_ANTHROPIC_ERROR_MESSAGES = {
    "overloaded_error": "Overloaded",
    "rate_limit_error": "Number of request tokens has exceeded your per-minute rate limit",
}
OPENAI_ERRORS = {  # status -> (type, code)
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    502: ("server_error", None),
    503: ("server_error", "service_unavailable"),
}


def parse_scenario(value: str | None) -> dict[str, str]:
    """Parse an ``x-fake-scenario`` value; a bare ``key`` maps to ``"1"``. ``None``/empty -> ``{}``."""
    out: dict[str, str] = {}
    for tok in (value or "").split(","):
        tok = tok.strip()
        if not tok:
            continue
        key, _, val = tok.partition("=")
        out[key.strip()] = val.strip() if val else "1"
    return out


def _id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


GATEWAY_HEADER = "ngrok-aig-model"  # ngrok AI Gateway: "names the upstream model that produced the response"


def _gateway_headers(sc: dict[str, str]) -> dict[str, str]:
    """The header a gateway names its served model in (``gateway_model``), or none."""
    model = sc.get("gateway_model")
    return {sc.get("gateway_header") or GATEWAY_HEADER: model} if model else {}


def _reasoning(sc: dict[str, str]) -> int:
    """The reasoning tokens of ``reasoning=<n>`` (0 without it)."""
    value = sc.get("reasoning", "0")
    return int(value) if value.isdigit() else 0


def _long_model(sc: dict[str, str]) -> str | None:
    return "m" * int(sc["long_model"]) if "long_model" in sc else None


def _words(sc: dict[str, str]) -> list[str]:
    if sc.get("json") in fake_answers.JSON_TEXTS:
        text = fake_answers.JSON_TEXTS[sc["json"]]
        return [text[:5], text[5:]]
    text = sc.get("text", DEFAULT_TEXT).replace("+", " ")
    parts = text.split(" ")
    return [p if i == 0 else " " + p for i, p in enumerate(parts)]


_OUTPUT_LISTS = ("content", "choices", "output")


def _distort(sc: dict[str, str], obj: Any) -> Any:
    """Apply the hostile scenarios (``null_model``, ``null_choices``, ``no_usage``, ``odd_types``)
    to one answer body or SSE event, and to the message / response / delta objects it nests."""
    if not isinstance(obj, dict) or not sc.keys() & {"null_model", "null_choices", "no_usage", "odd_types"}:
        return obj
    for nested in ("message", "response", "delta"):
        if isinstance(obj.get(nested), dict):
            _distort(sc, obj[nested])
    if "null_model" in sc:
        for key in ("model", "modelVersion"):
            if key in obj:
                obj[key] = None
    if "null_choices" in sc:
        for key in _OUTPUT_LISTS:
            if isinstance(obj.get(key), list):
                obj[key] = None
    if "no_usage" in sc:
        obj.pop("usage", None)
        obj.pop("usageMetadata", None)
    if "odd_types" in sc:
        for key, value in (("model", 12345), ("id", 678), ("stop_reason", 42), ("status", 7)):
            if isinstance(obj.get(key), str):
                obj[key] = value
        for choice in obj.get("choices") or ():
            if isinstance(choice, dict) and "finish_reason" in choice:
                choice["finish_reason"] = 42
        usage = obj.get("usage")
        if isinstance(usage, dict):
            obj["usage"] = {k: str(v) if isinstance(v, int) else v for k, v in usage.items()}
    return obj


class _Abort(Exception):
    """Raised to end a response early on purpose (``drop``, or the server is stopping)."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeProvider/1.0"
    disable_nagle_algorithm = True  # headers and body go out in separate writes: no 40 ms delayed-ACK stalls
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        if self.server.verbose:
            super().log_message(format, *args)

    # ------------------------------------------------------------------ plumbing
    def _sleep(self, seconds: float) -> None:
        """Wait, but wake at once (and abandon the response) when the server is stopping."""
        if seconds > 0 and self.server.stopping.wait(seconds):
            raise _Abort()

    def _send_json(self, status: int, obj: object, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _start_sse(self, headers: dict[str, str]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _event(self, sc: dict[str, str], data: object, event: str | None = None) -> None:
        if "chunk_delay" in sc:
            self._sleep(float(sc["chunk_delay"]))
        payload = data if isinstance(data, str) else json.dumps(_distort(sc, data))
        msg = (f"event: {event}\n" if event else "") + f"data: {payload}\n\n"
        self._chunk(msg.encode())

    def _end_sse(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        # Abort without the terminating chunk; RST rather than FIN.
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        raise _Abort()

    def _stream_fault(self, sc: dict[str, str], send_error: Callable[[], None]) -> bool:
        """The mid-stream faults every streaming endpoint offers, at the current chunk: True when the
        stream ends here (``midstream_error`` after ``send_error()``, or ``truncate``); ``drop`` aborts."""
        if "midstream_error" in sc:
            send_error()
            self._end_sse()
            return True
        if "drop" in sc:
            self._drop()
        if "truncate" in sc:
            self._end_sse()
            return True
        return False

    # ------------------------------------------------------------------ routing
    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        path = urlsplit(self.path).path
        if path == "/_fake/requests":
            self._send_json(200, self.server.snapshot())
        elif path == "/_fake/health":
            self._send_json(200, {"ok": True})
        else:
            self._send_json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        path = urlsplit(self.path).path
        if path == "/_fake/reset":
            self.server.reset()
            return self._send_json(200, {"ok": True})

        sc = parse_scenario(self.headers.get(SCENARIO_HEADER))
        gemini = fake_gemini.is_gemini(path)
        if gemini:  # the model is in the path
            body["model"] = fake_gemini.model_of(path)
            body["stream"] = path.endswith(fake_gemini.STREAM_GENERATE)
        try:
            retry_count = int(self.headers.get("x-stainless-retry-count") or 0)
        except ValueError:
            retry_count = 0
        self.server.record(
            {
                "path": self.path,
                "retry_count": retry_count,
                "scenario": sc,
                "model": body.get("model"),
                "stream": bool(body.get("stream")),
                "headers": {k.lower(): v for k, v in self.headers.items() if k.lower() not in _REDACTED_HEADERS},
            }
        )
        try:
            if "delay" in sc:
                self._sleep(float(sc["delay"]))
            if path.endswith("/messages/count_tokens"):
                return self._send_json(200, {"input_tokens": 25}, {"request-id": _id("req_")})
            if path.endswith("/messages"):
                return self._anthropic(body, sc, retry_count)
            if path.endswith((":rawPredict", ":streamRawPredict")):  # anthropic on Vertex AI: model in the path
                body.setdefault("model", path.rpartition("/models/")[2].partition(":")[0])
                return self._anthropic(body, sc, retry_count)
            if path.startswith("/model/") and path.endswith("/invoke"):  # anthropic on Bedrock (JSON only)
                body.setdefault("model", path[len("/model/") : -len("/invoke")])
                return self._anthropic(body, sc, retry_count)
            if path.endswith("/chat/completions"):
                return self._openai_chat(body, sc, retry_count)
            if path.endswith("/responses"):
                return self._openai_responses(body, sc, retry_count)
            if gemini:
                return self._gemini(body, sc, retry_count)
            self._send_json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
        except (_Abort, OSError):  # dropped on purpose, stopping, or the client went away
            self.close_connection = True

    # ------------------------------------------------------------------ errors
    def _maybe_error(self, sc: dict[str, str], retry_count: int, provider: str, model: object) -> bool:
        if "context_length" in sc and provider != "gemini":
            self._context_length_error(provider)
            return True
        if "status" not in sc and "error_200" not in sc:
            return False
        if "fail_first" in sc and retry_count >= int(sc["fail_first"]):
            return False
        if "fail_model" in sc and model != sc["fail_model"]:
            return False
        status = 200 if "error_200" in sc else int(sc["status"])
        headers = {"retry-after-ms": sc.get("retry_after_ms", "1")}
        if "no_retry" in sc:
            headers["x-should-retry"] = "false"
        if provider == "gemini":
            self._send_json(status, fake_gemini.error_body(status, sc.get("error_message")), headers)
        elif provider == "anthropic":
            req_id = _id("req_")
            headers["request-id"] = req_id
            etype = ANTHROPIC_ERROR_TYPES.get(status, "overloaded_error" if status == 200 else "api_error")
            msg = sc.get("error_message") or _ANTHROPIC_ERROR_MESSAGES.get(etype, f"fake {etype}")
            body = {"type": "error", "error": {"type": etype, "message": msg}, "request_id": req_id}
            self._send_json(status, body, headers)
        else:
            headers["x-request-id"] = _id("req_")
            etype, code = OPENAI_ERRORS.get(status, ("server_error", None))  # 200 (error_200): server_error
            msg = sc.get("error_message") or f"fake {etype} ({status})"
            body = {"error": {"message": msg, "type": etype, "param": None, "code": code}}
            self._send_json(status, body, headers)
        return True

    def _context_length_error(self, provider: str) -> None:
        """The 400 each provider answers a request whose input does not fit the model's window with."""
        if provider == "anthropic":
            req_id = _id("req_")
            message = "prompt is too long: 210000 tokens > 200000 maximum"
            body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
            self._send_json(400, dict(body, request_id=req_id), {"request-id": req_id})
            return
        message = (
            "This model's maximum context length is 128000 tokens. However, your messages resulted in "
            "130000 tokens. Please reduce the length of the messages."
        )
        error = {
            "message": message,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
        self._send_json(400, {"error": error}, {"x-request-id": _id("req_")})

    # ------------------------------------------------------------------ anthropic
    @staticmethod
    def _anthropic_usage(sc: dict[str, str], output_tokens: int) -> dict[str, Any]:
        cache = "cache" in sc
        usage: dict[str, Any] = {
            "input_tokens": 25,
            "cache_creation_input_tokens": 100 if cache else 0,
            "cache_read_input_tokens": 400 if cache else 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 100 if cache else 0, "ephemeral_1h_input_tokens": 0},
            "output_tokens": output_tokens + _reasoning(sc),
            "service_tier": "standard",
        }
        if "reasoning" in sc:
            usage["output_tokens_details"] = {"thinking_tokens": _reasoning(sc)}
        return usage

    def _anthropic(self, body: dict[str, Any], sc: dict[str, str], retry_count: int) -> None:
        if self._maybe_error(sc, retry_count, "anthropic", body.get("model")):
            return
        requested = body.get("model") or "claude-fake"
        served = sc.get("fallback") or sc.get("served_model") or _long_model(sc) or requested
        words = _words(sc)
        stop_reason = (
            "refusal"
            if "refusal" in sc
            else "max_tokens"
            if "length" in sc
            else "tool_use"
            if "tool" in sc
            else "end_turn"
        )
        usage = self._anthropic_usage(sc, len(words))
        if "fallback" in sc:
            usage["iterations"] = [
                {
                    "type": "message",
                    "model": requested,
                    "input_tokens": 25,
                    "output_tokens": 3,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                },
                {
                    "type": "fallback_message",
                    "model": served,
                    "input_tokens": 25,
                    "output_tokens": len(words),
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                },
            ]
        content: list[dict[str, Any]] = []
        if "fallback" in sc:
            content.append(
                {
                    "type": "fallback",
                    "from": {"model": requested},
                    "to": {"model": served},
                    "trigger": {"type": "refusal", "category": "cyber"},
                }
            )
        content.append({"type": "text", "text": "".join(words)})
        if "tool" in sc:
            tool_name, tool_input = fake_answers.tool_call(sc)
            content.append({"type": "tool_use", "id": _id("toolu_"), "name": tool_name, "input": tool_input})
        msg: dict[str, Any] = {
            "id": _id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": served,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }
        if "refusal" in sc:
            msg["stop_details"] = {"type": "refusal", "category": "cyber", "explanation": "fake refusal"}
        headers = {
            "request-id": _id("req_"),
            "anthropic-organization-id": "org-fake",
            "anthropic-ratelimit-requests-remaining": "999",
            "anthropic-ratelimit-input-tokens-remaining": "100000",
            **_gateway_headers(sc),
        }
        if not body.get("stream"):
            self._send_json(200, _distort(sc, msg), headers)
            return

        self._start_sse(headers)
        start_usage = {k: v for k, v in usage.items() if k != "iterations"}
        start_usage["output_tokens"] = 1
        start_msg = {k: v for k, v in msg.items() if k != "stop_details"}
        start_msg.update(content=[], stop_reason=None, usage=start_usage)
        self._event(sc, {"type": "message_start", "message": start_msg}, "message_start")
        idx = 0
        if "fallback" in sc:
            self._event(
                sc, {"type": "content_block_start", "index": idx, "content_block": content[0]}, "content_block_start"
            )
            self._event(sc, {"type": "content_block_stop", "index": idx}, "content_block_stop")
            idx += 1
        self._event(
            sc,
            {"type": "content_block_start", "index": idx, "content_block": {"type": "text", "text": ""}},
            "content_block_start",
        )
        self._event(sc, {"type": "ping"}, "ping")
        cut = min(2, max(len(words) - 1, 0))
        for n, w in enumerate(words):
            if n == cut and self._stream_fault(
                sc,
                lambda: self._event(
                    sc,
                    {
                        "type": "error",
                        "error": {"type": "overloaded_error", "message": "Overloaded"},
                        "request_id": headers["request-id"],
                    },
                    "error",
                ),
            ):
                return
            self._event(
                sc,
                {"type": "content_block_delta", "index": idx, "delta": {"type": "text_delta", "text": w}},
                "content_block_delta",
            )
        self._event(sc, {"type": "content_block_stop", "index": idx}, "content_block_stop")
        if "tool" in sc:
            idx += 1
            tool = content[-1]
            self._event(
                sc,
                {"type": "content_block_start", "index": idx, "content_block": dict(tool, input={})},
                "content_block_start",
            )
            self._event(
                sc,
                {
                    "type": "content_block_delta",
                    "index": idx,
                    "delta": {"type": "input_json_delta", "partial_json": fake_answers.arguments_text(tool["input"])},
                },
                "content_block_delta",
            )
            self._event(sc, {"type": "content_block_stop", "index": idx}, "content_block_stop")
        delta_usage: dict[str, Any] = {
            "output_tokens": usage["output_tokens"],
            "input_tokens": 25,
            "cache_creation_input_tokens": usage["cache_creation_input_tokens"],
            "cache_read_input_tokens": usage["cache_read_input_tokens"],
        }
        if "output_tokens_details" in usage:
            delta_usage["output_tokens_details"] = usage["output_tokens_details"]
        if "fallback" in sc:
            delta_usage["iterations"] = usage["iterations"]
        delta: dict[str, Any] = {"stop_reason": stop_reason, "stop_sequence": None}
        if "refusal" in sc:
            delta["stop_details"] = msg["stop_details"]
        self._event(sc, {"type": "message_delta", "delta": delta, "usage": delta_usage}, "message_delta")
        self._event(sc, {"type": "message_stop"}, "message_stop")
        self._end_sse()

    # ------------------------------------------------------------------ gemini
    def _gemini(self, body: dict[str, Any], sc: dict[str, str], retry_count: int) -> None:
        if self._maybe_error(sc, retry_count, "gemini", body.get("model")):
            return
        served = sc.get("served_model") or _long_model(sc) or body.get("model")
        words = _words(sc)
        headers = {"x-gemini-service-tier": "standard", **_gateway_headers(sc)}
        if not body.get("stream"):
            self._send_json(200, _distort(sc, fake_gemini.answer(sc, served, words)), headers)
            return
        self._start_sse(headers)
        chunks = fake_gemini.chunks(sc, served, words)
        cut = min(2, max(len(chunks) - 1, 0))
        for n, chunk in enumerate(chunks):
            if n == cut and self._stream_fault(sc, lambda: self._event(sc, fake_gemini.error_body(503))):
                return
            self._event(sc, chunk)
        self._end_sse()

    # ------------------------------------------------------------------ openai chat
    @staticmethod
    def _openai_usage(sc: dict[str, str], completion: int) -> dict[str, Any]:
        cached = 400 if "cache" in sc else 0
        prompt = 25 + cached
        reasoning = _reasoning(sc)
        completion += reasoning
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": reasoning,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }

    def _openai_chat(self, body: dict[str, Any], sc: dict[str, str], retry_count: int) -> None:
        if self._maybe_error(sc, retry_count, "openai", body.get("model")):
            return
        served = sc.get("served_model") or _long_model(sc) or body.get("model") or "gpt-fake"
        words = _words(sc)
        finish = (
            "content_filter"
            if "refusal" in sc
            else "length"
            if "length" in sc
            else "tool_calls"
            if "tool" in sc
            else "stop"
        )
        cid, created = _id("chatcmpl-"), int(time.time())
        headers = {
            "x-request-id": _id("req_"),
            "openai-processing-ms": "1",
            "x-ratelimit-remaining-requests": "999",
            "x-ratelimit-remaining-tokens": "100000",
            **_gateway_headers(sc),
        }
        tool_name, tool_args = fake_answers.tool_call(sc)
        tool_calls: list[dict[str, Any]] = [
            {
                "id": _id("call_"),
                "type": "function",
                "function": {"name": tool_name, "arguments": fake_answers.arguments_text(tool_args)},
            }
        ]
        base = {
            "id": cid,
            "created": created,
            "model": served,
            "system_fingerprint": "fp_fake",
            "service_tier": "default",
        }
        if not body.get("stream"):
            message: dict[str, Any] = {
                "role": "assistant",
                "content": "".join(words),
                "refusal": None,
                "annotations": [],
            }
            if "tool" in sc:
                message["tool_calls"] = tool_calls
            resp = dict(
                base,
                object="chat.completion",
                choices=[{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
                usage=self._openai_usage(sc, len(words)),
            )
            if "no_model" in sc:
                del resp["model"]
            self._send_json(200, _distort(sc, resp), headers)
            return

        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        self._start_sse(headers)

        def chunk(choices: list[Any], usage: object = None) -> dict[str, Any]:
            c = dict(base, object="chat.completion.chunk", choices=choices)
            if include_usage:
                c["usage"] = usage
            return c

        self._event(
            sc,
            chunk(
                [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": "", "refusal": None},
                        "logprobs": None,
                        "finish_reason": None,
                    }
                ]
            ),
        )
        cut = min(2, max(len(words) - 1, 0))
        for n, w in enumerate(words):
            if n == cut and self._stream_fault(
                sc,
                lambda: self._event(
                    sc,
                    {
                        "error": {
                            "message": "The server had an error while processing your request.",
                            "type": "server_error",
                            "param": None,
                            "code": None,
                        }
                    },
                ),
            ):
                return
            self._event(sc, chunk([{"index": 0, "delta": {"content": w}, "logprobs": None, "finish_reason": None}]))
        if "tool" in sc:  # as openai streams a call: its id and name first, then its arguments in pieces
            function = tool_calls[0]["function"]
            arguments = function["arguments"]
            first = dict(tool_calls[0], index=0, function={"name": function["name"], "arguments": ""})
            pieces = [
                {"index": 0, "function": {"arguments": arguments[:6]}},
                {"index": 0, "function": {"arguments": arguments[6:]}},
            ]
            for tc in (first, *pieces):
                self._event(
                    sc, chunk([{"index": 0, "delta": {"tool_calls": [tc]}, "logprobs": None, "finish_reason": None}])
                )
        self._event(sc, chunk([{"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish}]))
        if include_usage:
            self._event(sc, chunk([], self._openai_usage(sc, len(words))))
        self._event(sc, "[DONE]")
        self._end_sse()

    # ------------------------------------------------------------------ openai responses
    def _openai_responses(self, body: dict[str, Any], sc: dict[str, str], retry_count: int) -> None:
        if self._maybe_error(sc, retry_count, "openai", body.get("model")):
            return
        served = sc.get("served_model") or _long_model(sc) or body.get("model") or "gpt-fake"
        words = _words(sc)
        text = "".join(words)
        cached = 400 if "cache" in sc else 0
        rid, mid = _id("resp_"), _id("msg_")
        usage = {
            "input_tokens": 25 + cached,
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
            "output_tokens": len(words) + _reasoning(sc),
            "output_tokens_details": {"reasoning_tokens": _reasoning(sc)},
            "total_tokens": 25 + cached + len(words) + _reasoning(sc),
        }
        item = {
            "type": "message",
            "id": mid,
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
        }
        outputs = [item]
        if "tool" in sc:
            tool_name, tool_args = fake_answers.tool_call(sc)
            outputs.append(
                {
                    "type": "function_call",
                    "id": _id("fc_"),
                    "call_id": _id("call_"),
                    "name": tool_name,
                    "arguments": fake_answers.arguments_text(tool_args),
                    "status": "completed",
                }
            )
        # The final status: incomplete for a content filter or the output token limit, failed on request.
        incomplete = "content_filter" if "refusal" in sc else "max_output_tokens" if "length" in sc else None
        final = "failed" if "failed" in sc else "incomplete" if incomplete else "completed"

        def response(status: str, output: list[Any], use: object) -> dict[str, Any]:
            done = status == final
            return {
                "id": rid,
                "object": "response",
                "created_at": time.time(),
                "status": status,
                "model": served,
                "output": output,
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
                "temperature": 1.0,
                "top_p": 1.0,
                "error": ({"code": "server_error", "message": "fake failure"} if done and final == "failed" else None),
                "incomplete_details": {"reason": incomplete} if done and incomplete else None,
                "instructions": None,
                "metadata": {},
                "usage": use,
                "service_tier": "default",
            }

        headers = {"x-request-id": _id("req_"), "openai-processing-ms": "1", **_gateway_headers(sc)}
        if not body.get("stream"):
            self._send_json(200, _distort(sc, response(final, outputs, usage)), headers)
            return
        self._start_sse(headers)
        seq = iter(range(10_000))

        def ev(kind: str, **fields: object) -> None:
            self._event(sc, {"type": kind, "sequence_number": next(seq), **fields}, kind)

        ev("response.created", response=response("in_progress", [], None))
        ev("response.in_progress", response=response("in_progress", [], None))
        ev("response.output_item.added", output_index=0, item=dict(item, status="in_progress", content=[]))
        ev(
            "response.content_part.added",
            item_id=mid,
            output_index=0,
            content_index=0,
            part={"type": "output_text", "text": "", "annotations": []},
        )
        cut = min(2, max(len(words) - 1, 0))
        for n, w in enumerate(words):
            if n == cut and self._stream_fault(
                sc, lambda: ev("error", code="server_error", message="fake mid-stream error", param=None)
            ):
                return
            ev("response.output_text.delta", item_id=mid, output_index=0, content_index=0, delta=w, logprobs=[])
        ev("response.output_text.done", item_id=mid, output_index=0, content_index=0, text=text, logprobs=[])
        ev("response.content_part.done", item_id=mid, output_index=0, content_index=0, part=item["content"][0])
        ev("response.output_item.done", output_index=0, item=item)
        ev(f"response.{final}", response=response(final, outputs, usage))
        self._end_sse()


class _Server(ThreadingHTTPServer):
    """A ThreadingHTTPServer that knows its connection threads and open sockets, so it can stop fully."""

    daemon_threads = True  # never keeps the interpreter alive; stop() still joins every thread
    request_queue_size = 1024  # listen backlog: hundreds of concurrent callers connect at once (socketserver: 5)
    block_on_close = False  # stop() does its own joining, with a timeout

    def __init__(self, address: tuple[str, int], verbose: bool = False) -> None:
        super().__init__(address, _Handler)
        self.verbose = verbose
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self._conns: dict[threading.Thread, socket.socket] = {}

    # -- request log
    def record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self._requests.append(entry)

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._requests)

    def reset(self) -> None:
        with self._lock:
            self._requests.clear()

    # -- connection threads
    def process_request(self, request: Any, client_address: Any) -> None:
        if self.stopping.is_set():
            self.shutdown_request(request)
            return
        t = threading.Thread(
            target=self._serve_connection,
            args=(request, client_address),
            name=f"fake-provider-conn-{client_address[1]}",
            daemon=True,
        )
        with self._lock:
            self._conns[t] = request
        t.start()

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:  # noqa: BLE001 - socketserver's own report of a failed request (handle_error prints it)
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            with self._lock:
                self._conns.pop(threading.current_thread(), None)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (OSError, _Abort)):
            return  # clients that go away (cancelled calls, dropped streams) are normal here
        super().handle_error(request, client_address)

    def close_connections(self) -> list[threading.Thread]:
        """Wake every connection thread: shut its socket down (reads see EOF, writes fail)."""
        with self._lock:
            conns = list(self._conns.items())
        for _, sock in conns:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        return [t for t, _ in conns]


class FakeProvider:
    """The fake provider on 127.0.0.1 (a free port unless ``port`` is given), served from a thread.

    ``start()``/``stop()``, or use it as a context manager. ``stop()`` is idempotent and leaves no
    thread behind.
    """

    def __init__(self, port: int = 0, *, verbose: bool = False) -> None:
        self._httpd = _Server(("127.0.0.1", port), verbose=verbose)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-provider", daemon=True
        )
        self._started = False
        self._stopped = False

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]  # an AF_INET server: (str host, int port)
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """A copy of the request log, oldest first."""
        return self._httpd.snapshot()

    def reset(self) -> None:
        """Clear the request log."""
        self._httpd.reset()

    def start(self) -> FakeProvider:
        if not self._started:
            self._started = True
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._started:
            self._httpd.shutdown()  # ends serve_forever; no new connections are accepted
            self._thread.join(_JOIN_TIMEOUT_S)
        self._httpd.stopping.set()  # wakes delay=/chunk_delay= waits
        threads = self._httpd.close_connections()
        self._httpd.server_close()
        deadline = time.monotonic() + _JOIN_TIMEOUT_S
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_DESCRIPTION = f"""\
Serve the fake LLM provider on 127.0.0.1 until SIGTERM or SIGINT (Ctrl-C). It prints its URL,
http://127.0.0.1:<port>, as one line on stdout.

Point an SDK at that URL:
  anthropic  base_url=URL     or ANTHROPIC_BASE_URL=URL
  openai     base_url=URL/v1  or OPENAI_BASE_URL=URL/v1   (openai's base URL ends in the API version)
Any API key is accepted.

Each request picks its behaviour with the header {SCENARIO_HEADER}: comma-separated tokens, key or
key=value (the SDKs' extra_headers= or default_headers=), e.g.
  {SCENARIO_HEADER}: status=529,fail_first=1
Without it: HTTP 200, the text "{DEFAULT_TEXT}", the requested model echoed.
GET /_fake/requests lists the requests received, POST /_fake/reset clears that log."""


def _scenario_help(width: int = 100) -> str:
    """The ``--help`` section listing ``SCENARIOS``: one token per line, its description beside it
    (wrapped to ``width`` columns, continuation lines indented under the description)."""
    column = 2 + max(len(token) for token in SCENARIOS) + 2
    lines = [f"scenarios ({SCENARIO_HEADER} tokens; SSE: streamed answers only):"]
    for token, description in SCENARIOS.items():
        lines += textwrap.wrap(
            description,
            width,
            initial_indent=f"  {token}".ljust(column),
            subsequent_indent=" " * column,
            break_on_hyphens=False,
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m otel_sampling.testing.fake_provider",
        description=_DESCRIPTION,
        epilog=_scenario_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log each request to stderr")
    args = parser.parse_args(argv)

    done = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    fp = FakeProvider(args.port, verbose=args.verbose).start()
    try:
        print(fp.url, flush=True)
        while not done.wait(0.2):
            pass
    finally:
        fp.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
