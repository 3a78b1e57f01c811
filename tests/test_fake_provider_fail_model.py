"""The fake provider's ``fail_model=<m>`` token: only the requests for that model fail (a primary that
is down while its fallback serves), on both APIs, through the real SDKs."""

from __future__ import annotations

import anthropic
import openai
import pytest

from otel_sampling.testing.fake_provider import SCENARIO_HEADER, FakeProvider

HEADERS = {SCENARIO_HEADER: "status=529,fail_model=claude-sonnet-5-5"}
MESSAGES = [{"role": "user", "content": "Summarize: printer on fire"}]


@pytest.fixture
def fp():
    with FakeProvider() as provider:
        yield provider


def test_anthropic_fails_the_named_model_and_serves_another(fp):
    client = anthropic.Anthropic(base_url=fp.url, api_key="sk-fake", max_retries=0, default_headers=HEADERS)
    with pytest.raises(anthropic.APIStatusError) as failed:
        client.messages.create(model="claude-sonnet-5-5", max_tokens=8, messages=MESSAGES)
    assert failed.value.status_code == 529
    served = client.messages.create(model="claude-haiku-5-5", max_tokens=8, messages=MESSAGES)
    assert served.model == "claude-haiku-5-5"
    client.close()


def test_openai_fails_the_named_model_and_serves_another(fp):
    client = openai.OpenAI(
        base_url=fp.url + "/v1",
        api_key="sk-fake",
        max_retries=0,
        default_headers={SCENARIO_HEADER: "status=503,fail_model=gpt-4.1"},
    )
    with pytest.raises(openai.APIStatusError) as failed:
        client.chat.completions.create(model="gpt-4.1", messages=MESSAGES)
    assert failed.value.status_code == 503
    served = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    assert served.model == "gpt-4o-mini"
    client.close()
