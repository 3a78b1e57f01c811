"""Content and secrets through the real exporters.

One host run, on both MCP protocol paths, places a sentinel in every place content can hide:
the tool arguments and the tool's result and error, the sampling messages, system prompt,
metadata, stop sequences and ``_meta``, the host's error frame and exception, the provider
prompts, metadata and output, and the provider error bodies (fake provider ``error_message=``).
A second sentinel is the API key: passed as ``api_key`` to anthropic and openai (sent as
``x-api-key`` / ``Authorization``), again as an explicit ``Authorization`` header, in the base
URL's userinfo and as a query parameter (``default_query``).

Everything is exported through the real exporters: spans, metrics and events (log records) over
OTLP/HTTP to :class:`OTLPReceiver`, the metrics also through the Prometheus exporter, and our own
Python log records at DEBUG. Every exported byte is scanned for each sentinel, raw and in its
JSON-escaped, URL-quoted and base64 forms.

* Content capture off (the default): neither sentinel appears anywhere.
* ``SPAN_AND_EVENT``: the content sentinel appears only in ``gen_ai.system_instructions``,
  ``gen_ai.input.messages`` and ``gen_ai.output.messages`` (GenAI semantic conventions), on the
  inference spans and ``gen_ai.client.inference.operation.details`` events, each value cut at the
  documented limit (``OTEL_SAMPLING_ATTRIBUTE_MAX_LENGTH``, default 256): a marker past the limit
  never arrives. The API key never appears.

Model hints and tool names are not content: they are recorded by design (``otel_sampling.sampling.model_hints``,
``otel_sampling.sampling.tool.name``), so no sentinel is put there.
"""

import base64
import contextlib
import json
import logging
import re
from typing import Annotated
from urllib.parse import quote

import anthropic
import anyio
import mcp_types as types
import openai
import pytest
from mcp import Client
from mcp.server.mcpserver import Context, MCPServer, Resolve, Sample
from mcp.shared.message import ServerMessageMetadata
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from prometheus_client import CollectorRegistry, generate_latest

from harness.otlp_receiver import OTLPReceiver
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor
from otel_sampling.settings import DEFAULT_ATTRIBUTE_MAX_LENGTH

SENTINEL = 'SNTL"7f3a9c2e41'  # the quote makes its JSON-escaped form differ from the raw one
API_KEY = "sk-KEY-5e2b90c4d1a7"
TAIL = "TAIL-0d9e6b1f"  # placed past the attribute limit: cut away even with capture on
LONG = "x" * (2 * DEFAULT_ATTRIBUTE_MAX_LENGTH)
CONTENT_KEYS = frozenset({names.GEN_AI_SYSTEM_INSTRUCTIONS, names.GEN_AI_INPUT_MESSAGES, names.GEN_AI_OUTPUT_MESSAGES})
PATHS = ("legacy", "auto")


def forms(secret: str) -> list[bytes]:
    """Byte strings any copy of ``secret`` would contain: raw, JSON-escaped (ASCII and not),
    URL-quoted, and the base64 characters fixed by the secret alone at each of the 3 alignments."""
    raw = secret.encode()
    found = {
        raw,
        json.dumps(secret)[1:-1].encode(),
        json.dumps(secret, ensure_ascii=False)[1:-1].encode(),
        quote(secret, safe="").encode(),
        quote(secret).encode(),
    }
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw)
        first, last = -(-offset // 3), (offset + len(raw)) // 3  # whole 3-byte groups inside the secret
        found.add(encoded[4 * first : 4 * last])
    return sorted(found)


def leaks(secret: str, blobs: list[bytes]) -> list[bytes]:
    return [form for form in forms(secret) for blob in blobs if form in blob]


# ---------------------------------------------------------------- the MCP server
def _params(note: str) -> dict:
    return {
        "messages": [
            types.SamplingMessage(
                role="user", content=types.TextContent(text=f"ticket {SENTINEL} {note} {LONG} {TAIL}")
            )
        ],
        "max_tokens": 64,
        "system_prompt": f"system {SENTINEL}",
        "metadata": {"note": SENTINEL, SENTINEL: 1},
        "stop_sequences": [SENTINEL],
        "model_preferences": types.ModelPreferences(hints=[types.ModelHint(name="claude")]),
    }


def _ask(note: str) -> Sample:
    return Sample(**_params(note))


def build_server() -> MCPServer:
    # This module has no `from __future__ import annotations`: MCPServer evaluates the tool annotations.
    server = MCPServer("secret-server", version="1.0.0")

    @server.tool()
    async def ask(note: str, answer: Annotated[types.CreateMessageResult, Resolve(_ask)]) -> str:
        return f"{answer.model} said {SENTINEL}"

    @server.tool()
    async def ask_with_meta(note: str, ctx: Context) -> str:
        """Legacy path: a request whose ``_meta`` carries the sentinel (and a traceparent made of it)."""
        params = types.CreateMessageRequestParams(**_params(note))
        params = params.model_copy(
            update={"meta": {"traceparent": f"00-{SENTINEL}-01", "note": SENTINEL, SENTINEL: SENTINEL}}
        )
        result = await ctx.session.send_request(
            types.CreateMessageRequest(params=params),
            types.CreateMessageResult,
            metadata=ServerMessageMetadata(related_request_id=ctx.request_context.request_id),
        )
        return result.model

    @server.tool()
    async def fail(note: str) -> str:
        raise ValueError(f"tool failed on {note}")

    return server


# ---------------------------------------------------------------- the host
def _clients(fp_url: str) -> tuple[anthropic.AsyncAnthropic, openai.AsyncOpenAI]:
    """Clients carrying the key every way the SDKs send one."""
    userinfo_url = fp_url.replace("http://", f"http://user:{API_KEY}@")
    common = {"api_key": API_KEY, "max_retries": 0, "default_query": {"key": API_KEY}}
    return (
        anthropic.AsyncAnthropic(
            base_url=userinfo_url, default_headers={"Authorization": f"Bearer {API_KEY}"}, **common
        ),
        openai.AsyncOpenAI(base_url=f"{userinfo_url}/v1", **common),
    )


def host_callback(fp_url: str):
    async def callback(ctx, params):
        text = params.messages[0].content.text
        claude, gpt = _clients(fp_url)
        try:
            message = await claude.messages.create(
                model="claude-sonnet-5-5",
                max_tokens=64,
                system=params.system_prompt,
                messages=[{"role": "user", "content": text}],
                metadata={"user_id": SENTINEL},
                extra_headers={"x-fake-scenario": f"text=answer+{SENTINEL}"},
            )
            await gpt.chat.completions.create(
                model="gpt-4o",
                user=SENTINEL,
                extra_headers={"x-fake-scenario": f"text=answer+{SENTINEL}"},
                messages=[{"role": "system", "content": params.system_prompt}, {"role": "user", "content": text}],
            )
            failing = {"x-fake-scenario": f"status=400,error_message=bad request {SENTINEL}"}
            for call in (
                claude.messages.create(
                    model="claude-sonnet-5-5",
                    max_tokens=8,
                    extra_headers=failing,
                    messages=[{"role": "user", "content": SENTINEL}],
                ),
                gpt.chat.completions.create(
                    model="gpt-4o", extra_headers=failing, messages=[{"role": "user", "content": SENTINEL}]
                ),
            ):
                with pytest.raises((anthropic.BadRequestError, openai.BadRequestError), match=re.escape(SENTINEL)):
                    await call  # the error body carries the sentinel
        finally:
            for client in (claude, gpt):
                await client.close()
        if " deny " in text:
            return types.ErrorData(
                code=-32003, message=f"denied {SENTINEL}", data={"reason": "policy.denied", "detail": SENTINEL}
            )
        if " raise " in text:
            raise RuntimeError(f"boom {SENTINEL}")
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(text=f"ok {SENTINEL}"),
            model=message.model,
            stop_reason="endTurn",
        )

    return callback


async def host_run(fp_url: str) -> None:
    for mode in PATHS:
        async with Client(build_server(), mode=mode, sampling_callback=host_callback(fp_url)) as client:
            calls = [
                ("ask", {"note": f" complete {SENTINEL}"}),
                ("ask", {"note": f" deny {SENTINEL}"}),
                ("ask", {"note": f" raise {SENTINEL}"}),
                ("fail", {"note": SENTINEL}),
            ]
            if mode == "legacy":
                calls.append(("ask_with_meta", {"note": f" complete {SENTINEL}"}))
            for tool, arguments in calls:
                with contextlib.suppress(Exception):  # denials and raises reach the host as errors
                    await client.call_tool(tool, arguments)


class Exported:
    """Everything one host run exported: OTLP bodies, Prometheus text, our log lines."""

    def __init__(self, receiver: OTLPReceiver, prometheus: bytes, log_lines: list[str]) -> None:
        self.receiver = receiver
        self.prometheus = prometheus
        self.log_lines = log_lines

    def blobs(self, without_content: bool = False) -> list[bytes]:
        bodies = [_without_content(path, body) if without_content else body for path, body in self.receiver.bodies]
        return [*bodies, self.prometheus, *(line.encode() for line in self.log_lines)]

    def content_values(self) -> list[tuple[str, str, str]]:
        """(where, key, value) of every content attribute exported: spans, span events, log records."""
        out = [
            (span["name"], k, v)
            for span in self.receiver.spans
            for k, v in span["attributes"].items()
            if k in CONTENT_KEYS
        ]
        out += [
            (f"{span['name']}/{event['name']}", k, v)
            for span in self.receiver.spans
            for event in span["events"]
            for k, v in event["attributes"].items()
            if k in CONTENT_KEYS
        ]
        out += [
            (record["event_name"], k, v)
            for record in self.receiver.logs
            for k, v in record["attributes"].items()
            if k in CONTENT_KEYS
        ]
        return out


def _without_content(path: str, body: bytes) -> bytes:
    """``body`` with the values of the content attributes emptied (spans, span events, log records)."""
    if path not in ("/v1/traces", "/v1/logs"):
        return body
    request = ExportTraceServiceRequest() if path == "/v1/traces" else ExportLogsServiceRequest()
    request.ParseFromString(body)
    attribute_lists = []
    if path == "/v1/traces":
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    attribute_lists.append(span.attributes)
                    attribute_lists.extend(event.attributes for event in span.events)
    else:
        attribute_lists = [
            record.attributes
            for resource in request.resource_logs
            for scope in resource.scope_logs
            for record in scope.log_records
        ]
    for attributes in attribute_lists:
        for kv in attributes:
            if kv.key in CONTENT_KEYS:
                kv.value.string_value = ""
    return request.SerializeToString()


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))  # the message with its arguments, and the traceback


def export_one_run(fake_provider, capture: str | None) -> Exported:
    registry = CollectorRegistry()
    lines = _Lines()
    ours = logging.getLogger("otel_sampling")
    level = ours.level
    with OTLPReceiver() as receiver, pytest.MonkeyPatch.context() as env:
        if capture:
            env.setenv(names.ENV_CAPTURE_MESSAGE_CONTENT, capture)
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=receiver.endpoint)))
        meter_provider = MeterProvider(
            metric_readers=[
                PeriodicExportingMetricReader(
                    OTLPMetricExporter(endpoint=receiver.metrics_endpoint), export_interval_millis=3_600_000
                ),  # shutdown() exports
                PrometheusMetricReader(registry=registry),
            ]
        )
        logger_provider = LoggerProvider()
        logger_provider.add_log_record_processor(
            SimpleLogRecordProcessor(OTLPLogExporter(endpoint=receiver.logs_endpoint))
        )
        instrumentors = [MCPSamplingInstrumentor(), AnthropicInstrumentor(), OpenAIInstrumentor()]
        ours.addHandler(lines)
        ours.setLevel(logging.DEBUG)
        try:
            for instrumentor in instrumentors:
                instrumentor.instrument(
                    tracer_provider=tracer_provider, meter_provider=meter_provider, logger_provider=logger_provider
                )
            anyio.run(host_run, fake_provider.url)
            prometheus = generate_latest(registry)
        finally:
            for instrumentor in instrumentors:
                instrumentor.uninstrument()
            ours.removeHandler(lines)
            ours.setLevel(level)
            tracer_provider.shutdown()
            meter_provider.shutdown()
            logger_provider.shutdown()
    return Exported(receiver, prometheus, lines.lines)


@pytest.fixture(scope="module")
def capture_off(fake_provider) -> Exported:
    return export_one_run(fake_provider, None)


@pytest.fixture(scope="module")
def capture_on(fake_provider) -> Exported:
    return export_one_run(fake_provider, names.CAPTURE_SPAN_AND_EVENT)


def _ran_everything(exported: Exported) -> None:
    """The run did what it claims: both paths, all endings, provider successes and failures."""
    spans = exported.receiver.spans
    sampling = [s for s in spans if s["name"] == names.SPAN_SAMPLING]
    assert {s["attributes"][names.SAMPLING_PATH] for s in sampling} == {names.PATH_RPC, names.PATH_MRTR}
    assert {s["attributes"][names.SAMPLING_ENDING] for s in sampling} == {"completed", "policy.denied", "error"}
    assert {s["attributes"].get(names.SAMPLING_TOOL_NAME) for s in sampling} >= {"ask", "ask_with_meta"}
    chats = [s for s in spans if s["name"].startswith("chat ")]
    assert {s["status_code"] for s in chats} == {"UNSET", "ERROR"}
    assert {s["attributes"][names.GEN_AI_PROVIDER_NAME] for s in chats} == {"anthropic", "openai"}
    assert exported.prometheus and exported.receiver.metrics


def test_nothing_secret_is_exported_by_default(capture_off):
    _ran_everything(capture_off)
    # the inference details events (semconv #579: recommended, without content by default), no other
    assert {record["event_name"] for record in capture_off.receiver.logs} == {names.EVENT_INFERENCE_DETAILS}
    assert capture_off.content_values() == []
    blobs = capture_off.blobs()
    assert leaks(SENTINEL, blobs) == []
    assert leaks(API_KEY, blobs) == []


def test_opted_in_content_is_only_where_the_convention_puts_it(capture_on):
    _ran_everything(capture_on)
    values = capture_on.content_values()
    # Captured (so the checks below are not vacuous), only on inference spans and their events.
    assert values and all(where.startswith("chat ") or where == names.EVENT_INFERENCE_DETAILS for where, _, _ in values)
    assert any(json.dumps(SENTINEL)[1:-1] in v for _, _, v in values)  # as JSON inside the JSON value
    assert {record["event_name"] for record in capture_on.receiver.logs} == {names.EVENT_INFERENCE_DETAILS}
    # Cut at the documented limit: the long prompt's value is exactly the limit, its tail never arrives.
    assert max(len(v) for _, _, v in values) == DEFAULT_ATTRIBUTE_MAX_LENGTH
    assert leaks(TAIL, capture_on.blobs()) == []
    # Outside the content attributes, no sentinel; the key nowhere at all.
    assert leaks(SENTINEL, capture_on.blobs(without_content=True)) == []
    assert leaks(API_KEY, capture_on.blobs()) == []


def test_the_scan_finds_what_it_looks_for():
    """The scan itself: each form of a secret is found inside a larger blob."""
    for form in forms(SENTINEL):
        assert leaks(SENTINEL, [b"<" + form + b">"])
    for prefix in (b"", b"a", b"ab"):  # base64 of a blob holding the secret at any alignment
        assert leaks(SENTINEL, [base64.b64encode(prefix + SENTINEL.encode() + b"tail")])
    assert leaks(SENTINEL, [b"nothing here"]) == []
