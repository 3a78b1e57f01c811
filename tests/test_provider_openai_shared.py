"""The provider-independent pieces reach openai through the shared machinery: endings, cost,
time to first chunk, the stream fault endings, with no openai-specific code for them.

Expected values: the fake provider's openai answers (25 prompt and 5 completion tokens, 400 of the
prompt cached with ``cache``) and the price table's arithmetic.
"""

from __future__ import annotations

from pathlib import Path

import openai
import pytest
from conftest import TRACER_PROVIDER
from opentelemetry.trace import StatusCode

from otel_sampling import names
from otel_sampling.instrumentation.openai import OpenAIInstrumentor

PRICES = """
[prices."gpt-req"]
input_usd_per_mtok = 2.0
output_usd_per_mtok = 8.0
cache_read_usd_per_mtok = 0.5
"""
MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture
def priced_openai(telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "policy.toml"
    path.write_text(PRICES)
    monkeypatch.setenv("OTEL_SAMPLING_POLICY", str(path))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    yield telemetry
    instrumentor.uninstrument()


def client(fp) -> openai.OpenAI:
    return openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0)


def test_cost_and_ending(priced_openai, fake_provider):
    client(fake_provider).chat.completions.create(model="gpt-req", messages=MESSAGES,
                                                  extra_headers={"x-fake-scenario": "cache"})
    (span,) = priced_openai.spans()
    assert span.attributes[names.ENDING] == "completed"
    # prompt 425 of which 400 cached: 25 at 2.0, 400 at 0.5, 5 output at 8.0 (USD per million)
    expected = (25 * 2.0 + 400 * 0.5 + 5 * 8.0) / 1e6
    assert span.attributes[names.COST_USD] == pytest.approx(expected)
    assert priced_openai.counts(names.METRIC_GEN_AI_COST, names.GEN_AI_PROVIDER_NAME,
                                names.GEN_AI_RESPONSE_MODEL) == {("openai", "gpt-req"): pytest.approx(expected)}


@pytest.mark.parametrize(("sc", "ending"), [("status=429", "model.unavailable"), ("status=400", "error"),
                                            ("refusal", "refused")])
def test_endings(priced_openai, fake_provider, sc, ending):
    try:
        client(fake_provider).chat.completions.create(model="gpt-req", messages=MESSAGES,
                                                      extra_headers={"x-fake-scenario": sc})
    except openai.APIStatusError:
        pass
    (span,) = priced_openai.spans()
    assert span.attributes[names.ENDING] == ending
    assert priced_openai.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.ENDING) == {(ending,): 1}


def test_stream_time_to_first_chunk_and_early_exit(priced_openai, fake_provider):
    stream = client(fake_provider).chat.completions.create(model="gpt-req", messages=MESSAGES, stream=True)
    next(iter(stream))
    stream.close()
    (span,) = priced_openai.spans()
    assert span.attributes[names.ENDING] == "cancelled"
    assert span.status.status_code is StatusCode.UNSET
    assert span.attributes[names.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] > 0
    assert len(priced_openai.points(names.METRIC_GEN_AI_TIME_TO_FIRST_CHUNK)) == 1
