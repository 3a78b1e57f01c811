"""The request fingerprint is keyed, so a trace backend's reader cannot test guesses against it.

The definition (docs/security.md, "The request fingerprint"; docs/telemetry.md, "Request
identity"): the first 32 hex characters of HMAC-SHA-256(key, canonical form), where the canonical
form is the JSON object of the request's ``messages``, ``systemPrompt``, ``maxTokens``,
``temperature``, ``stopSequences``, ``metadata``, ``tools`` and ``toolChoice`` as named on the
wire, absent and null fields left out, keys sorted, no whitespace (``","`` and ``":"``), non-ASCII
characters as they are, encoded as UTF-8. The key is the UTF-8 bytes of
``OTEL_SAMPLING_FINGERPRINT_KEY`` (at least 32 characters, surrounding whitespace ignored), or
else 32 random bytes made for the process. ``OTEL_SAMPLING_OMIT_FINGERPRINT=true`` leaves the
attribute off spans; the identity store keeps working.

The requests are real mcp sessions (tests/sampling_server.py's ``sample`` tool, legacy path): a
4-digit PIN in a known prompt template, the low-entropy content the key protects.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client

from conftest import SPANS, TRACER_PROVIDER
from harness.limits import HANG_S
from otel_sampling import names, settings
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.settings import Settings
from sampling_server import SERVER_NAME, build_server

TESTS = Path(__file__).parent
SHARED_KEY = "0123456789abcdef0123456789abcdef-shared"  # 40 characters
PIN = "4711"
DENIED = types.ErrorData(code=-32003, message="Denied by policy", data={"reason": "policy.denied"})


def prompt(pin: str) -> str:
    return f"My PIN is {pin}, why is my card blocked?"


def canonical(text: str) -> bytes:
    """The canonical form of the request ``sample(text=...)`` sends (sampling_server.py: one user
    text message, ``maxTokens`` 64, the system prompt), built from the documented definition."""
    body = {
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        "systemPrompt": "You summarise tickets.",
        "maxTokens": 64,
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def keyed(key: str, text: str) -> str:
    return hmac.new(key.encode("utf-8"), canonical(text), hashlib.sha256).hexdigest()[:32]


def unkeyed(text: str) -> set[str]:
    """What an attacker without the key can compute: the unsalted SHA-256 prefix (the definition
    before the key), the full SHA-256 of the canonical form, and of the text alone."""
    full = hashlib.sha256(canonical(text)).hexdigest()
    return {full[:32], full, hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]}


def answering(*answers):
    """A sampling callback returning ``answers`` in turn (the last one from then on)."""
    queue = list(answers)

    async def callback(ctx, params):
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return callback


def result() -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(text="ok"),
        model="claude-sonnet-5-5-20261001",
        stop_reason="endTurn",
    )


async def ask(text: str, callback) -> None:
    async with Client(build_server(), mode="legacy", sampling_callback=callback) as client:
        with contextlib.suppress(BaseException):  # a denial surfaces as MCPError; the test reads the telemetry
            await client.call_tool("sample", {"hint": "claude-sonnet", "include_context": "none", "text": text})


@contextlib.contextmanager
def instrumented(telemetry) -> Iterator[None]:
    """The host instrumentor, instrumented now: after the test set its environment."""
    instrumentor = MCPSamplingInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        yield
    finally:
        instrumentor.uninstrument()


def exported(telemetry, text: str = prompt(PIN)) -> str:
    """The fingerprint on the span of one request for ``text`` in this process."""
    with instrumented(telemetry):
        anyio.run(ask, text, answering(result()))
    (span,) = telemetry.spans(names.SPAN_SAMPLING)
    return span.attributes[names.SAMPLING_FINGERPRINT]


# The same request in a process of its own: prints the fingerprint its span carries.
CHILD = """
import sys, anyio, mcp_types as types
from mcp import Client
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_sampling import names
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from sampling_server import build_server

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
MCPSamplingInstrumentor().instrument(tracer_provider=provider)

async def callback(ctx, params):
    return types.CreateMessageResult(role="assistant", content=types.TextContent(text="ok"), model="m",
                                     stop_reason="endTurn")

async def main():
    async with Client(build_server(), mode="legacy", sampling_callback=callback) as client:
        await client.call_tool("sample", {"hint": "claude-sonnet", "include_context": "none", "text": sys.argv[1]})

anyio.run(main)
(span,) = [s for s in exporter.get_finished_spans() if s.name == names.SPAN_SAMPLING]
print(span.attributes[names.SAMPLING_FINGERPRINT])
"""


def in_another_process(text: str, key: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TESTS.parent), env.get("PYTHONPATH")) if p)
    if key is not None:
        env[names.ENV_FINGERPRINT_KEY] = key
    done = subprocess.run(
        [sys.executable, "-c", CHILD, text],
        cwd=TESTS,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


# ------------------------------------------------------------------ without the key, nothing to test guesses against
def test_the_exported_value_is_no_unkeyed_hash_of_the_request(telemetry, monkeypatch):
    monkeypatch.delenv(names.ENV_FINGERPRINT_KEY, raising=False)
    value = exported(telemetry)
    assert len(value) == 32 and set(value) <= set("0123456789abcdef")
    assert value not in unkeyed(prompt(PIN))
    # The attack: every 4-digit PIN in the known template, hashed the ways one can without the key.
    assert [pin for pin in (f"{n:04d}" for n in range(10_000)) if value in unkeyed(prompt(pin))] == []


def test_with_a_shared_key_the_value_is_the_documented_hmac(telemetry, monkeypatch):
    monkeypatch.setenv(names.ENV_FINGERPRINT_KEY, SHARED_KEY)
    assert exported(telemetry) == keyed(SHARED_KEY, prompt(PIN))


def test_surrounding_whitespace_of_the_key_is_ignored(telemetry, monkeypatch):
    monkeypatch.setenv(names.ENV_FINGERPRINT_KEY, f"  {SHARED_KEY}\n")  # a secret file's trailing newline
    assert exported(telemetry) == keyed(SHARED_KEY, prompt(PIN))


# ------------------------------------------------------------------ across processes
@pytest.mark.subprocess
def test_processes_without_a_shared_key_give_different_values(telemetry, monkeypatch):
    monkeypatch.delenv(names.ENV_FINGERPRINT_KEY, raising=False)
    here = exported(telemetry)
    there = in_another_process(prompt(PIN), None)
    assert len(there) == 32
    assert here != there


@pytest.mark.subprocess
def test_processes_with_a_shared_key_give_equal_values(telemetry, monkeypatch):
    monkeypatch.setenv(names.ENV_FINGERPRINT_KEY, SHARED_KEY)
    here = exported(telemetry)
    there = in_another_process(prompt(PIN), SHARED_KEY)
    assert here == there == keyed(SHARED_KEY, prompt(PIN))


# ------------------------------------------------------------------ a bad key
def test_a_short_key_is_reported_once_and_a_key_of_the_process_used(telemetry, monkeypatch, caplog):
    monkeypatch.setattr(settings, "_reported", set())  # earlier tests may have reported it already
    short = "a" * (settings.FINGERPRINT_KEY_MIN_LENGTH - 1)
    monkeypatch.delenv(names.ENV_FINGERPRINT_KEY, raising=False)
    process_value = exported(telemetry)
    SPANS.clear()
    monkeypatch.setenv(names.ENV_FINGERPRINT_KEY, short)
    with caplog.at_level(logging.WARNING, logger="otel_sampling"):
        value = exported(telemetry)
        Settings.from_env()  # read again (every instrumentor reads it): not reported again
    reports = [r for r in caplog.records if names.ENV_FINGERPRINT_KEY in r.getMessage()]
    assert len(reports) == 1 and reports[0].levelno == logging.WARNING
    assert short not in reports[0].getMessage()  # a key, even a bad one, is never logged
    assert value == process_value != keyed(short, prompt(PIN))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, None),
        ("", None),
        ("   ", None),
        ("k" * 32, b"k" * 32),
        (" " + "k" * 32 + "\n", b"k" * 32),
        ("é" * 32, ("é" * 32).encode("utf-8")),
        ("k" * 31, None),
        ("k" * 32 + "\ud800", None),  # too short; a lone surrogate has no bytes
    ],
)
def test_the_key_setting(raw, expected, monkeypatch):
    monkeypatch.setattr(settings, "_reported", set())
    env = {} if raw is None else {names.ENV_FINGERPRINT_KEY: raw}
    assert Settings.from_env(env).fingerprint_key == expected


def test_the_key_is_not_in_the_settings_repr():
    assert SHARED_KEY not in repr(Settings.from_env({names.ENV_FINGERPRINT_KEY: SHARED_KEY}))


# ------------------------------------------------------------------ leaving the fingerprint off spans
@pytest.mark.parametrize(
    ("raw", "omit", "warned"),
    [
        (None, False, False),
        ("", False, False),
        ("false", False, False),
        ("FALSE", False, False),
        ("true", True, False),
        ("True", True, False),
        ("TRUE", True, False),
        ("yes", False, True),
        ("1", False, True),  # OTel booleans: only "true" is true; others warn
    ],
)
def test_the_omit_setting_is_an_otel_boolean(raw, omit, warned, monkeypatch, caplog):
    monkeypatch.setattr(settings, "_reported", set())
    env = {} if raw is None else {names.ENV_OMIT_FINGERPRINT: raw}
    with caplog.at_level(logging.WARNING, logger="otel_sampling"):
        assert Settings.from_env(env).omit_fingerprint is omit
    assert (names.ENV_OMIT_FINGERPRINT in caplog.text) is warned


def test_omitted_from_spans_the_violations_are_still_detected(telemetry, monkeypatch):
    monkeypatch.setenv(names.ENV_OMIT_FINGERPRINT, "true")
    callback = answering(result(), DENIED)
    with instrumented(telemetry):
        anyio.run(ask, prompt(PIN), callback)
        anyio.run(ask, prompt(PIN), callback)
    first, second = telemetry.spans(names.SPAN_SAMPLING)
    assert names.SAMPLING_FINGERPRINT not in first.attributes
    assert names.SAMPLING_FINGERPRINT not in second.attributes
    assert telemetry.counts(names.METRIC_SAMPLING_VIOLATIONS, names.SAMPLING_VIOLATION_KIND, names.MCP_SERVER_NAME) == {
        (names.VIOLATION_DECISION_FLIPPED, SERVER_NAME): 1
    }
    assert [link.context.span_id for link in second.links] == [first.context.span_id]
