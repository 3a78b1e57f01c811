"""How the tests act as a host: helpers, not tests (importable without mcp 2.x; the MCP helpers need it).

* One tool call on the test MCP server (``sampling_server.py``) over a real in-memory session, on
  either protocol path (:data:`PATHS`): :func:`call`, answered by :func:`callback_returning`.
* Transports as hosts open them, on mcp 1.x or 2.x: :func:`in_a_task_of_its_own` (mcp-use's way)
  and :func:`serve_streamable_http` (a server on 127.0.0.1).
* The call-shape drivers (:data:`DRIVERS`): a real host workload for each wrapper family, run on
  its success path and on a host-exception path, asserting the host-level answers inside: mcp host
  and server on both protocol paths; the anthropic and openai SDKs, sync and async, plain,
  streamed, raw and helper shapes; google-genai (models, streams, chats) and LiteLLM (completion,
  Responses, a Router) where installed; all against the fake provider. The fault-injection, lifecycle and
  suppression tests run them.
* :class:`Sandwich`: a recording wrapper below ours (what the SDK's function returned or raised)
  and one above ours (what the host received), on every target of the given target tables.
* :class:`SpanBalance` (counts the spans of ours that start and that end) and
  :func:`add_span_processor`; :data:`ANTHROPIC_MESSAGE`, an anthropic answer as the API sends it;
  :func:`recording_logger_provider` (the log records, events included, that we emit).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import os
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, NamedTuple

import anthropic
import anyio
import openai
import pytest
import wrapt
from opentelemetry.sdk._logs import LoggerProvider, LogRecordProcessor
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from conftest import TRACER_PROVIDER
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor

PATHS = {"legacy": names.PATH_RPC, "auto": names.PATH_MRTR}  # Client mode -> sampling.path
ARGS = {"hint": "claude-sonnet", "include_context": "thisServer"}
SERVED = "claude-sonnet-5-5-20261001"


# ---------------------------------------------------------------- one tool call on the test server
# mcp 2.x is imported where it is used: the provider helpers below work without it.
def result(model: str = SERVED, stop_reason: str = "endTurn") -> Any:
    """A ``CreateMessageResult`` (mcp 2.x)."""
    import mcp_types as types

    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(text="ok"), model=model, stop_reason=stop_reason
    )


def callback_returning(value):
    async def callback(ctx, params):
        return value

    return callback


async def call(mode: str, callback, tool: str = "sample", args: dict | None = None, server: Any = None):
    """Call a tool of ``server`` (default: the test server) once; return the tool's text or the
    exception the host got."""
    from mcp import Client

    from sampling_server import build_server

    async with Client(server or build_server(), mode=mode, sampling_callback=callback) as client:
        try:
            out = await client.call_tool(tool, ARGS if args is None else args)
        except BaseException as exc:  # noqa: BLE001 - the test inspects what the host saw
            return exc
        return out.content[0].text if not out.is_error else ("tool_error", out.content[0].text)


def only_sampling_span(telemetry):
    spans = telemetry.spans(names.SPAN_SAMPLING)
    assert len(spans) == 1, [s.name for s in spans]
    return spans[0]


# ---------------------------------------------------------------- transports, either mcp major
async def in_a_task_of_its_own(open_transport, use):
    """Enter ``open_transport()`` in a task of its own and ``use`` its streams in this one (mcp-use's
    connection managers' way); ``use``'s result."""
    done = anyio.Event()

    async def connection_task(*, task_status):
        async with open_transport() as streams:
            task_status.started(streams)
            await done.wait()

    async with anyio.create_task_group() as tg:
        streams = await tg.start(connection_task)
        try:
            return await use(streams)
        finally:
            done.set()


async def serve_streamable_http(server, body):
    """The MCP ``server`` (mcp 1.x or 2.x ``FastMCP``) over streamable HTTP on 127.0.0.1 (a free
    port) around ``body(url)``; ``body``'s result."""
    import uvicorn  # mcp's dependency: imported with it

    http = uvicorn.Server(uvicorn.Config(server.streamable_http_app(), host="127.0.0.1", port=0, log_level="warning"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(http.serve)
        while not http.started:
            await anyio.sleep(0.02)
        port = http.servers[0].sockets[0].getsockname()[1]
        try:
            return await body(f"http://127.0.0.1:{port}/mcp")
        finally:
            http.should_exit = True


# ---------------------------------------------------------------- the call-shape drivers
def answer() -> Any:
    return result()


def sampling_request() -> Any:
    import mcp_types as types

    return types.CreateMessageRequest(
        params=types.CreateMessageRequestParams(
            messages=[types.SamplingMessage(role="user", content=types.TextContent(text="x"))],
            max_tokens=5,
            model_preferences=types.ModelPreferences(hints=[types.ModelHint(name="claude-sonnet")]),
        )
    )


def drive_mcp_host(mode: str) -> None:
    """A tool call that samples (end to end), then the sampling dispatch called directly with a
    callback that returns a result, returns an error frame, and raises."""
    import mcp_types as types
    from mcp import Client

    from sampling_server import build_server

    behaviour: dict[str, Any] = {}

    async def callback(ctx, params):
        if "raise" in behaviour:
            raise behaviour["raise"]
        return behaviour.get("return", answer())

    async def main():
        async with Client(build_server(), mode=mode, sampling_callback=callback) as client:
            out = await client.call_tool("sample", ARGS)
            assert out.content[0].text == f"{SERVED}|endTurn"
            ctx = type(
                "Ctx",
                (),
                {"request_id": 7, "meta": {"traceparent": "00-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-bbbbbbbbbbbbbbbb-01"}},
            )()
            for returned in (answer(), types.ErrorData(code=-1, message="User rejected sampling request")):
                behaviour["return"] = returned
                assert await client.session.dispatch_input_request(ctx, sampling_request()) is returned
            behaviour["raise"] = error = LookupError("the host's own failure")
            with pytest.raises(LookupError) as info:
                await client.session.dispatch_input_request(ctx, sampling_request())
            assert info.value is error

    anyio.run(main)


def drive_mcp_server(mode: str) -> None:
    """The server's sampling tool, answered, then denied (legacy: the server gets an MCPError)."""
    import mcp_types as types
    from mcp import Client, MCPError

    from sampling_server import build_server

    answers: list[Any] = [answer(), types.ErrorData(code=-1, message="User rejected sampling request")]

    async def callback(ctx, params):
        return answers.pop(0)

    async def main():
        async with Client(build_server(), mode=mode, sampling_callback=callback) as client:
            out = await client.call_tool("sample", ARGS)
            assert out.content[0].text == f"{SERVED}|endTurn"
            with pytest.raises(MCPError, match="User rejected sampling request"):  # as without instrumentation
                await client.call_tool("sample", ARGS)

    anyio.run(main)


ANTHROPIC_KW = {"model": "claude-req", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
# An anthropic Messages answer as the API sends it (the body an in-process transport returns).
ANTHROPIC_MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-req",
    "content": [{"type": "text", "text": "x"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 1},
}


def scenario(value: str) -> dict:
    return {"extra_headers": {"x-fake-scenario": value}}


def drive_anthropic_sync(fp) -> None:
    c = anthropic.Anthropic(base_url=fp.url, api_key="sk-fake", max_retries=0)
    assert c.messages.create(**ANTHROPIC_KW).stop_reason == "end_turn"
    assert c.messages.create(**ANTHROPIC_KW, **scenario("length")).stop_reason == "max_tokens"  # a truncation
    assert [e.type for e in c.messages.create(**ANTHROPIC_KW, stream=True)][-1] == "message_stop"
    with c.messages.stream(**ANTHROPIC_KW) as stream:
        assert stream.get_final_message().stop_reason == "end_turn"
    with c.messages.with_streaming_response.create(**ANTHROPIC_KW) as raw:
        assert raw.parse().stop_reason == "end_turn"
    assert c.messages.with_raw_response.create(**ANTHROPIC_KW).parse().stop_reason == "end_turn"
    with pytest.raises(anthropic.OverloadedError) as info:
        c.messages.create(**ANTHROPIC_KW, **scenario("status=529"))
    assert info.value.status_code == 529
    with pytest.raises(anthropic.APIStatusError) as info:
        list(c.messages.create(**ANTHROPIC_KW, stream=True, **scenario("midstream_error")))
    assert info.value.type == "overloaded_error"


def drive_anthropic_async(fp) -> None:
    async def main():
        c = anthropic.AsyncAnthropic(base_url=fp.url, api_key="sk-fake", max_retries=0)
        assert (await c.messages.create(**ANTHROPIC_KW)).stop_reason == "end_turn"
        assert (await c.messages.create(**ANTHROPIC_KW, **scenario("length"))).stop_reason == "max_tokens"
        assert [e.type async for e in await c.messages.create(**ANTHROPIC_KW, stream=True)][-1] == "message_stop"
        async with c.messages.with_streaming_response.create(**ANTHROPIC_KW) as raw:
            assert (await raw.parse()).stop_reason == "end_turn"
        assert (await (await c.messages.with_raw_response.create(**ANTHROPIC_KW)).parse()).stop_reason == "end_turn"
        with pytest.raises(anthropic.OverloadedError):
            await c.messages.create(**ANTHROPIC_KW, **scenario("status=529"))
        await c.close()

    anyio.run(main)


CHAT = {"model": "gpt-req", "messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 64}
RESP = {"model": "gpt-req", "input": "hi", "max_output_tokens": 64}
USAGE = {"stream_options": {"include_usage": True}}


def drive_openai_sync(fp) -> None:
    c = openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0)
    assert c.chat.completions.create(**CHAT).choices[0].finish_reason == "stop"
    assert c.chat.completions.create(**CHAT, **scenario("length")).choices[0].finish_reason == "length"  # truncated
    chunks = list(c.chat.completions.create(**CHAT, stream=True))
    assert [k.choices[0].finish_reason for k in chunks if k.choices][-1] == "stop"
    with c.chat.completions.stream(**CHAT, **USAGE) as stream:
        assert stream.get_final_completion().choices[0].finish_reason == "stop"
    assert c.responses.create(**RESP).status == "completed"
    with c.responses.stream(**RESP) as stream:
        assert stream.get_final_response().status == "completed"
    assert c.chat.completions.with_raw_response.create(**CHAT).parse().choices[0].finish_reason == "stop"
    raw_stream = c.chat.completions.with_raw_response.create(**CHAT, stream=True)  # read when parsed
    assert [k.choices[0].finish_reason for k in raw_stream.parse() if k.choices][-1] == "stop"
    with c.chat.completions.with_streaming_response.create(**CHAT) as raw:
        assert raw.parse().choices[0].finish_reason == "stop"
    with pytest.raises(openai.RateLimitError) as info:
        c.chat.completions.create(**CHAT, **scenario("status=429"))
    assert info.value.status_code == 429


def drive_openai_async(fp) -> None:
    async def main():
        c = openai.AsyncOpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0)
        assert (await c.chat.completions.create(**CHAT)).choices[0].finish_reason == "stop"
        assert (await c.chat.completions.create(**CHAT, **scenario("length"))).choices[0].finish_reason == "length"
        chunks = [k async for k in await c.chat.completions.create(**CHAT, stream=True)]
        assert [k.choices[0].finish_reason for k in chunks if k.choices][-1] == "stop"
        async with c.chat.completions.stream(**CHAT, **USAGE) as stream:
            assert (await stream.get_final_completion()).choices[0].finish_reason == "stop"
        async with c.responses.stream(**RESP) as stream:
            assert (await stream.get_final_response()).status == "completed"
        async with c.chat.completions.with_streaming_response.create(**CHAT) as raw:
            assert (await raw.parse()).choices[0].finish_reason == "stop"
        raw = await c.chat.completions.with_raw_response.create(**CHAT)
        assert raw.parse().choices[0].finish_reason == "stop"
        with pytest.raises(openai.RateLimitError):
            await c.chat.completions.create(**CHAT, **scenario("status=429"))
        await c.close()

    anyio.run(main)


GEMINI_MODEL = "gemini-req"


def _gemini_client(fp) -> Any:
    from google import genai

    # One attempt a call (the SDK's retries would resend the 503 of the error call).
    options = {"base_url": fp.url, "retry_options": {"attempts": 1}}
    return genai.Client(api_key="k-fake", http_options=options)


def _gemini_scenario(value: str) -> dict:
    return {"config": {"http_options": {"headers": {"x-fake-scenario": value}}}}


def drive_google_genai_sync(fp) -> None:
    from google.genai import errors

    c = _gemini_client(fp)
    assert c.models.generate_content(model=GEMINI_MODEL, contents="hi").candidates[0].finish_reason == "STOP"
    truncated = c.models.generate_content(model=GEMINI_MODEL, contents="hi", **_gemini_scenario("length"))
    assert truncated.candidates[0].finish_reason == "MAX_TOKENS"
    chunks = list(c.models.generate_content_stream(model=GEMINI_MODEL, contents="hi"))
    assert chunks[-1].candidates[0].finish_reason == "STOP"
    chat = c.chats.create(model=GEMINI_MODEL)
    assert chat.send_message("hi").text
    assert [chunk.text for chunk in chat.send_message_stream("again")]
    with pytest.raises(errors.ServerError) as info:
        c.models.generate_content(model=GEMINI_MODEL, contents="hi", **_gemini_scenario("status=503"))
    assert info.value.code == 503


def drive_google_genai_async(fp) -> None:
    from google.genai import errors

    async def main():
        c = _gemini_client(fp).aio
        answer = await c.models.generate_content(model=GEMINI_MODEL, contents="hi")
        assert answer.candidates[0].finish_reason == "STOP"
        truncated = await c.models.generate_content(model=GEMINI_MODEL, contents="hi", **_gemini_scenario("length"))
        assert truncated.candidates[0].finish_reason == "MAX_TOKENS"
        chunks = [chunk async for chunk in await c.models.generate_content_stream(model=GEMINI_MODEL, contents="hi")]
        assert chunks[-1].candidates[0].finish_reason == "STOP"
        chat = c.chats.create(model=GEMINI_MODEL)
        assert (await chat.send_message("hi")).text
        with pytest.raises(errors.ClientError) as info:
            await c.models.generate_content(model=GEMINI_MODEL, contents="hi", **_gemini_scenario("status=429"))
        assert info.value.code == 429

    anyio.run(main)


def _litellm():
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # its model table from the package, not fetched
    import litellm

    return litellm


def litellm_kw(fp, scenario_value: str = "") -> dict:
    """A LiteLLM call on its openai route to the fake provider (no retries of its own)."""
    kw = {"model": "openai/gpt-req", "api_base": fp.url + "/v1", "api_key": "sk-fake", "num_retries": 0}
    if scenario_value:
        kw["extra_headers"] = {"x-fake-scenario": f"{scenario_value},no_retry"}
    return kw


LITELLM_MESSAGES = [{"role": "user", "content": "hi"}]


def _litellm_router(litellm: Any, fp) -> Any:
    """A Router whose primary deployment is down (503 for its model only) and falls back."""
    params = {"api_base": fp.url + "/v1", "api_key": "sk-fake"}
    down = {"extra_headers": {"x-fake-scenario": "status=503,fail_model=gpt-req,no_retry"}}
    return litellm.Router(
        model_list=[
            {"model_name": "primary", "litellm_params": {"model": "openai/gpt-req", **params, **down}},
            {"model_name": "backup", "litellm_params": {"model": "openai/gpt-backup", **params}},
        ],
        fallbacks=[{"primary": ["backup"]}],
        num_retries=0,
    )


def drive_litellm_sync(fp) -> None:
    litellm = _litellm()
    kw = litellm_kw(fp)
    assert litellm.completion(messages=LITELLM_MESSAGES, **kw).choices[0].finish_reason == "stop"
    truncated = litellm.completion(messages=LITELLM_MESSAGES, **litellm_kw(fp, "length"))
    assert truncated.choices[0].finish_reason == "length"
    chunks = list(litellm.completion(messages=LITELLM_MESSAGES, stream=True, **kw))
    assert [k.choices[0].finish_reason for k in chunks if k.choices][-1] == "stop"
    assert litellm.responses(input="hi", **kw).status == "completed"
    assert [e.type for e in litellm.responses(input="hi", stream=True, **kw)][-1] == "response.completed"
    assert _litellm_router(litellm, fp).completion(model="primary", messages=LITELLM_MESSAGES).model == "gpt-backup"
    with pytest.raises(litellm.RateLimitError) as info:
        litellm.completion(messages=LITELLM_MESSAGES, **litellm_kw(fp, "status=429"))
    assert info.value.status_code == 429


def drive_litellm_async(fp) -> None:
    litellm = _litellm()

    async def main():
        kw = litellm_kw(fp)
        assert (await litellm.acompletion(messages=LITELLM_MESSAGES, **kw)).choices[0].finish_reason == "stop"
        truncated = await litellm.acompletion(messages=LITELLM_MESSAGES, **litellm_kw(fp, "length"))
        assert truncated.choices[0].finish_reason == "length"
        chunks = [k async for k in await litellm.acompletion(messages=LITELLM_MESSAGES, stream=True, **kw)]
        assert [k.choices[0].finish_reason for k in chunks if k.choices][-1] == "stop"
        events = [e.type async for e in await litellm.aresponses(input="hi", stream=True, **kw)]
        assert events[-1] == "response.completed"
        router = _litellm_router(litellm, fp)
        assert (await router.acompletion(model="primary", messages=LITELLM_MESSAGES)).model == "gpt-backup"
        with pytest.raises(litellm.RateLimitError):
            await litellm.acompletion(messages=LITELLM_MESSAGES, **litellm_kw(fp, "status=429"))

    anyio.run(main)


class _Recorded(LogRecordProcessor):
    def __init__(self, records: list) -> None:
        self.records = records

    def on_emit(self, log_record) -> None:
        self.records.append(log_record.log_record)

    def shutdown(self) -> None: ...

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def recording_logger_provider() -> tuple[LoggerProvider, list]:
    """A logger provider and the list it appends each emitted ``LogRecord`` to, in emit order."""
    records: list = []
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(_Recorded(records))
    return logger_provider, records


class Driver(NamedTuple):
    instrumentor: type
    run: Callable[[Any], None]  # called with the fake provider


DRIVERS = {
    "mcp_host_legacy": Driver(MCPSamplingInstrumentor, lambda fp: drive_mcp_host("legacy")),
    "mcp_host_2026": Driver(MCPSamplingInstrumentor, lambda fp: drive_mcp_host("auto")),
    "mcp_server_legacy": Driver(MCPServerSamplingInstrumentor, lambda fp: drive_mcp_server("legacy")),
    "mcp_server_2026": Driver(MCPServerSamplingInstrumentor, lambda fp: drive_mcp_server("auto")),
    "anthropic_sync": Driver(AnthropicInstrumentor, drive_anthropic_sync),
    "anthropic_async": Driver(AnthropicInstrumentor, drive_anthropic_async),
    "openai_sync": Driver(OpenAIInstrumentor, drive_openai_sync),
    "openai_async": Driver(OpenAIInstrumentor, drive_openai_async),
}
# google-genai and LiteLLM are extras (the mcp 1.x cells have no google-genai, only its own cell LiteLLM).
HAS_GEMINI = importlib.util.find_spec("google") is not None and importlib.util.find_spec("google.genai") is not None
HAS_LITELLM = importlib.util.find_spec("litellm") is not None
if HAS_GEMINI:
    from otel_sampling.instrumentation.google_genai import GoogleGenAIInstrumentor

    DRIVERS["google_genai_sync"] = Driver(GoogleGenAIInstrumentor, drive_google_genai_sync)
    DRIVERS["google_genai_async"] = Driver(GoogleGenAIInstrumentor, drive_google_genai_async)
if HAS_LITELLM:
    from otel_sampling.instrumentation.litellm import LiteLLMInstrumentor

    DRIVERS["litellm_sync"] = Driver(LiteLLMInstrumentor, drive_litellm_sync)
    DRIVERS["litellm_async"] = Driver(LiteLLMInstrumentor, drive_litellm_async)
# Targets no driver here reaches, and why: they open stdio and HTTP transports (the drivers' servers
# are in-process); test_mcp_sampling.py and test_mcp_connections.py (stdio) and
# test_mcp_server_side.py (streamable HTTP) drive them for real.
UNDRIVEN = {
    "mcp.client.stdio._create_platform_compatible_process",
    "mcp.client.stdio.stdio_client",
    "mcp.stdio_client",
    "mcp.client.streamable_http.StreamableHTTPTransport.__init__",
    "mcp.client.streamable_http.streamable_http_client",
}


def tables() -> dict[type, tuple]:
    """Each instrumentor's target table (the one ``instrument()`` wraps; LiteLLM's: the targets it
    wraps once the host imports LiteLLM, imported here)."""
    out = {
        cls: cls()._table()[0]
        for cls in (MCPSamplingInstrumentor, MCPServerSamplingInstrumentor, AnthropicInstrumentor, OpenAIInstrumentor)
    }
    if HAS_GEMINI:
        out[GoogleGenAIInstrumentor] = GoogleGenAIInstrumentor()._table()[0]
    if HAS_LITELLM:
        _litellm()
        out[LiteLLMInstrumentor] = tuple(
            target for group in LiteLLMInstrumentor()._host_targets() for target in group.targets if _exists(target)
        )
    return out


def _exists(target) -> bool:
    """Whether an optional target is in the installed library."""
    try:
        resolve(target)
    except (AttributeError, KeyError):
        return False
    return True


def resolve(target):
    """``(owner, attribute name, the function there now)`` of a target."""
    module = importlib.import_module(target.module)
    *path, name = target.attribute.split(".")
    owner = module
    for part in path:
        owner = getattr(owner, part)
    return owner, name, vars(owner)[name]


def snapshot(telemetry) -> dict:
    """Every metric point we recorded: (metric, attributes) -> sum or count."""
    data = telemetry.reader.get_metrics_data()
    out = {}
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                for p in m.data.data_points:
                    out[(m.name, frozenset(p.attributes.items()))] = p.value if hasattr(p, "value") else p.count
    return out


# ---------------------------------------------------------------- recording wrappers below and above ours
_call_id: ContextVar[object | None] = ContextVar("drivers_call", default=None)
_target: ContextVar[str | None] = ContextVar("drivers_target", default=None)


def current_target() -> str | None:
    """``module.attribute`` of the innermost target the host is calling now (inside a sandwich), or None."""
    return _target.get()


class Sandwich:
    """A recording wrapper below ours (what the SDK's function returned or raised) and one above
    ours (what the host received), on every target of the given tables."""

    def __init__(self, targets) -> None:
        self.slots = []
        for target in targets:
            self.slots.append((f"{target.module}.{target.attribute}", *resolve(target)))
        self.below: dict[object, list] = {}
        self.above: list = []

    @staticmethod
    @contextlib.contextmanager
    def _calling(key: str, above: bool) -> Iterator[None]:
        """Above ours, one host call: a call id of its own and ``key`` current while it runs."""
        if not above:
            yield
            return
        call_id, target = _call_id.set(object()), _target.set(key)
        try:
            yield
        finally:
            _call_id.reset(call_id)
            _target.reset(target)

    def _recorder(self, key: str, is_async: bool, above: bool):
        def record(outcome):
            if above:
                self.above.append((key, _call_id.get(), outcome))
            else:
                self.below.setdefault(_call_id.get(), []).append(outcome)

        if is_async:

            async def wrapper(wrapped, instance, args, kwargs):
                with self._calling(key, above):
                    try:
                        out = await wrapped(*args, **kwargs)
                    except BaseException as exc:
                        record(("raise", exc))
                        raise
                    record(("return", out))
                    return out
        else:

            def wrapper(wrapped, instance, args, kwargs):
                with self._calling(key, above):
                    try:
                        out = wrapped(*args, **kwargs)
                    except BaseException as exc:
                        record(("raise", exc))
                        raise
                    record(("return", out))
                    return out

        return wrapper

    def install(self, above: bool) -> None:
        for key, owner, name, original in self.slots:
            wrapt.wrap_function_wrapper(owner, name, self._recorder(key, inspect.iscoroutinefunction(original), above))

    def restore(self) -> None:
        for _key, owner, name, original in self.slots:
            setattr(owner, name, original)

    def called(self) -> set[str]:
        return {key for key, _cid, _outcome in self.above}

    def check(self) -> None:
        """Every call the host made got exactly what the wrapped function gave, the same object."""
        for key, cid, (kind, obj) in self.above:
            below = self.below.get(cid, [])
            assert len(below) == 1, f"{key}: the wrapped function ran {len(below)} times for one call"
            below_kind, below_obj = below[0]
            assert kind == below_kind, f"{key}: the host got a {kind}, the function gave a {below_kind}"
            if obj is below_obj:
                continue
            # A stream reaches the host as our transparent proxy around the very same object.
            assert isinstance(obj, wrapt.ObjectProxy) and obj.__wrapped__ is below_obj, (
                f"{key}: the host got {type(obj).__name__}, not the object the function gave"
            )


class SpanBalance(SpanProcessor):
    """Counts the spans of ours that start and that end (each call's: one of each)."""

    def __init__(self) -> None:
        self.started = self.ended = 0

    def on_start(self, span, parent_context=None) -> None:
        if span.instrumentation_scope.name == names.SCOPE_NAME:
            self.started += 1

    def on_end(self, span) -> None:
        if span.instrumentation_scope.name == names.SCOPE_NAME:
            self.ended += 1


def add_span_processor(monkeypatch: pytest.MonkeyPatch, processor: SpanProcessor) -> None:
    """``processor`` on the session's tracer provider, until the test ends."""
    multi = TRACER_PROVIDER._active_span_processor
    monkeypatch.setattr(multi, "_span_processors", (*multi._span_processors, processor))


# ---------------------------------------------------------------- spans left open
class OpenSpans(SpanProcessor):
    """Every span started and ended, by span id: a span left open shows as started, not ended."""

    def __init__(self) -> None:
        self.started: set[int] = set()
        self.ended: set[int] = set()

    def on_start(self, span, parent_context=None) -> None:
        self.started.add(span.context.span_id)

    def on_end(self, span) -> None:
        self.ended.add(span.context.span_id)


def tracked_provider() -> tuple[TracerProvider, InMemorySpanExporter, OpenSpans]:
    """A tracer provider of its own: every span exported to memory and tracked open or ended."""
    exporter, tracker = InMemorySpanExporter(), OpenSpans()
    provider = TracerProvider()
    provider.add_span_processor(tracker)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter, tracker
