"""The fake provider against the real anthropic SDK (sync and async), plus its lifecycle."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import anthropic
import pytest

from harness.limits import HANG_S
from otel_sampling.testing import fake_answers, fake_gemini, fake_provider
from otel_sampling.testing.fake_provider import DEFAULT_TEXT, SCENARIO_HEADER, SCENARIOS, FakeProvider, parse_scenario

MODEL = "claude-sonnet-5-5"
MESSAGES = [{"role": "user", "content": "Summarize: printer on fire"}]


def _scenario(value: str) -> dict[str, dict[str, str]]:
    return {"extra_headers": {"x-fake-scenario": value}}


@pytest.fixture
def fp():
    with FakeProvider() as provider:
        yield provider


@pytest.fixture
def client(fp):
    c = anthropic.Anthropic(base_url=fp.url, api_key="sk-fake", max_retries=0)
    yield c
    c.close()


def test_parse_scenario():
    assert parse_scenario(None) == {}
    assert parse_scenario("") == {}
    assert parse_scenario("status=529, fail_first=1,refusal") == {"status": "529", "fail_first": "1", "refusal": "1"}


def test_create_without_scenario_header_echoes_model_and_usage(fp, client):
    msg = client.messages.create(model=MODEL, max_tokens=50, messages=MESSAGES)
    assert isinstance(msg, anthropic.types.Message)
    assert msg.model == MODEL
    assert msg.stop_reason == "end_turn"
    assert msg.content[0].text == "Hello from the fake provider"
    assert msg.usage.input_tokens == 25
    assert msg.usage.output_tokens == 5
    assert fp.requests[-1]["scenario"] == {}
    assert fp.requests[-1]["model"] == MODEL


def test_stream_yields_message_start_to_message_stop(client):
    with client.messages.create(
        model=MODEL, max_tokens=50, messages=MESSAGES, stream=True, **_scenario("text=one+two+three")
    ) as stream:
        types = [event.type for event in stream]
    assert types[0] == "message_start"
    assert types[-1] == "message_stop"
    assert types.count("content_block_delta") == 3
    assert "message_delta" in types


def test_served_model_overrides_reported_model(client):
    msg = client.messages.create(
        model=MODEL, max_tokens=50, messages=MESSAGES, **_scenario("served_model=claude-opus-4-1")
    )
    assert msg.model == "claude-opus-4-1"


@pytest.mark.parametrize(
    ("scenario", "header"),
    [
        ("gateway_model=claude-opus-4-1", "ngrok-aig-model"),
        ("gateway_model=claude-opus-4-1,gateway_header=x-bifrost-resolved-model", "x-bifrost-resolved-model"),
    ],
)
def test_a_gateway_names_the_served_model_in_a_header_and_echoes_the_request(client, scenario, header):
    raw = client.messages.with_raw_response.create(model=MODEL, max_tokens=50, messages=MESSAGES, **_scenario(scenario))
    assert raw.parse().model == MODEL
    assert raw.headers[header] == "claude-opus-4-1"


@pytest.mark.parametrize(
    ("status", "exc"),
    [("529", "OverloadedError"), ("429", "RateLimitError"), ("500", "InternalServerError")],
)
def test_status_raises_the_sdk_error(client, status, exc):
    with pytest.raises(getattr(anthropic, exc)) as info:
        client.messages.create(model=MODEL, max_tokens=50, messages=MESSAGES, **_scenario(f"status={status}"))
    assert info.value.status_code == int(status)


def test_refusal_stop_reason(client):
    msg = client.messages.create(model=MODEL, max_tokens=50, messages=MESSAGES, **_scenario("refusal"))
    assert msg.stop_reason == "refusal"


def test_delay_past_client_timeout_raises_api_timeout(fp, client):
    # Without the delay the call succeeds (test_create_without_scenario_header_echoes_model_and_usage):
    # the timeout error is the delay's doing.
    with pytest.raises(anthropic.APITimeoutError):
        client.messages.create(model=MODEL, max_tokens=50, messages=MESSAGES, timeout=0.2, **_scenario("delay=1"))


def test_request_log_records_scenario_header(fp, client):
    traceparent = "00-" + "1" * 32 + "-" + "2" * 16 + "-01"
    client.messages.create(
        model=MODEL,
        max_tokens=50,
        messages=MESSAGES,
        extra_headers={"x-fake-scenario": "cache,text=a+b", "traceparent": traceparent},
    )
    entry = fp.requests[-1]
    assert entry["path"].startswith("/v1/messages")
    assert entry["scenario"] == {"cache": "1", "text": "a+b"}
    assert entry["headers"]["x-fake-scenario"] == "cache,text=a+b"
    assert entry["headers"]["traceparent"].startswith("00-")
    assert "x-api-key" not in entry["headers"]
    with urllib.request.urlopen(fp.url + "/_fake/requests") as r:
        assert json.load(r)[-1]["scenario"] == {"cache": "1", "text": "a+b"}


def test_async_client(fp):
    async def run() -> tuple[str, str]:
        async with anthropic.AsyncAnthropic(base_url=fp.url, api_key="sk-fake", max_retries=0) as c:
            ok = await c.messages.create(model=MODEL, max_tokens=50, messages=MESSAGES)
            try:
                await c.messages.create(model=MODEL, max_tokens=50, messages=MESSAGES, **_scenario("status=529"))
            except anthropic.OverloadedError as e:
                return ok.model, type(e).__name__
            return ok.model, "no error"

    assert asyncio.run(run()) == (MODEL, "OverloadedError")


def test_exit_leaves_no_threads_even_with_open_and_stalled_connections():
    before = set(threading.enumerate())
    with FakeProvider() as provider:
        c = anthropic.Anthropic(base_url=provider.url, api_key="sk-fake", max_retries=0)
        c.messages.create(model=MODEL, max_tokens=50, messages=MESSAGES)  # leaves a keep-alive connection

        def stalled_request() -> None:  # a request the server is still sleeping on when we leave
            try:
                c.messages.create(model=MODEL, max_tokens=50, messages=MESSAGES, **_scenario("delay=600"))
            except Exception as e:  # noqa: BLE001 - the test reads which one
                raised.append(e)

        raised: list[Exception] = []
        stalled = threading.Thread(target=stalled_request)
        stalled.start()
        while len(provider.requests) < 2:
            time.sleep(0.01)
    stalled.join(HANG_S)
    # Exit closed the stalled connection: the client saw it dropped (not a timeout: it has none that
    # short, and the answer would take 600 s).
    assert [type(e) for e in raised] == [anthropic.APIConnectionError]
    c.close()
    leftover = [t for t in set(threading.enumerate()) - before if t.is_alive()]
    assert leftover == []


@pytest.mark.subprocess
def test_cli_prints_url_and_exits_cleanly_on_sigterm():
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "otel_sampling.testing.fake_provider"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url + "/_fake/health", timeout=HANG_S) as r:
            assert json.load(r) == {"ok": True}
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(HANG_S) == 0
        assert proc.stderr.read() == ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _help_scenarios(help_text: str) -> list[str]:
    """The tokens of the help's scenario section: the lines indented by two spaces under its heading
    (a description's continuation lines are indented further)."""
    section = help_text.split(f"scenarios ({SCENARIO_HEADER} tokens", 1)[1].splitlines()[1:]
    return [line.split()[0] for line in section if line.startswith("  ") and not line.startswith("   ")]


@pytest.mark.subprocess
def test_cli_help_says_how_to_use_it_and_lists_every_scenario():
    result = subprocess.run(
        [sys.executable, "-m", "otel_sampling.testing.fake_provider", "--help"],
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert (result.returncode, result.stderr) == (0, "")
    assert f"{SCENARIO_HEADER}: status=529,fail_first=1" in result.stdout  # the header, with an example
    assert "base_url=URL/v1" in result.stdout and "OPENAI_BASE_URL=URL/v1" in result.stdout  # openai's /v1
    assert _help_scenarios(result.stdout) == list(SCENARIOS)
    for token, description in SCENARIOS.items():
        assert " ".join(description.split()) in " ".join(result.stdout.split()), token


def test_the_scenario_table_names_every_key_the_server_reads():
    source = inspect.getsource(fake_provider) + inspect.getsource(fake_gemini) + inspect.getsource(fake_answers)
    read = {
        key for match in re.findall(r'"(\w+)" in sc\b|sc\.get\("(\w+)"|sc\["(\w+)"\]', source) for key in match if key
    }
    read |= set(re.findall(r'"(\w+)"', re.search(r"sc\.keys\(\) & \{([^}]*)\}", source).group(1)))
    assert read == {token.partition("=")[0] for token in SCENARIOS}


def _gemini_post(fp, path: str, scenario: str = "") -> tuple[int, str]:
    request = urllib.request.Request(
        fp.url + path,
        data=json.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}).encode(),
        headers={"content-type": "application/json", SCENARIO_HEADER: scenario},
    )
    try:
        with urllib.request.urlopen(request) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.mark.parametrize("prefix", ["/v1beta/models", "/v1beta1/projects/p/locations/l/publishers/google/models"])
def test_gemini_generate_content_answers_the_rest_shape(prefix):
    """Gemini API and Vertex AI paths: a GenerateContentResponse naming the path's model."""
    with FakeProvider() as fp:
        status, body = _gemini_post(fp, f"{prefix}/gemini-2.5-flash:generateContent", "cache")
        (logged,) = fp.requests
    answer = json.loads(body)
    assert status == 200 and answer["modelVersion"] == "gemini-2.5-flash"
    (candidate,) = answer["candidates"]
    assert candidate["finishReason"] == "STOP" and candidate["content"]["role"] == "model"
    assert answer["usageMetadata"]["cachedContentTokenCount"] == 400
    assert answer["usageMetadata"]["promptTokenCount"] == 425  # Gemini counts the cached tokens in the prompt
    assert (logged["model"], logged["stream"]) == ("gemini-2.5-flash", False)


def test_gemini_stream_is_one_response_per_sse_data_line():
    with FakeProvider() as fp:
        status, body = _gemini_post(fp, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
        assert fp.requests[0]["stream"] is True
    chunks = [json.loads(line[len("data: ") :]) for line in body.splitlines() if line.startswith("data: ")]
    assert status == 200 and len(chunks) == 6
    assert "".join(p["text"] for c in chunks for p in c["candidates"][0]["content"]["parts"]) == DEFAULT_TEXT
    assert [c["candidates"][0].get("finishReason") for c in chunks] == [None] * 5 + ["STOP"]


@pytest.mark.parametrize(
    ("status", "name"), [(429, "RESOURCE_EXHAUSTED"), (503, "UNAVAILABLE"), (504, "DEADLINE_EXCEEDED")]
)
def test_gemini_errors_use_googles_error_body(status, name):
    with FakeProvider() as fp:
        got, body = _gemini_post(fp, "/v1beta/models/gemini-2.5-flash:generateContent", f"status={status}")
    assert got == status
    assert json.loads(body)["error"] == {"code": status, "message": f"fake {name} ({status})", "status": name}
