"""Which semantic-conventions version we speak: the schema URL, and the GenAI stability opt-in.

``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` asks an instrumentation for the
latest GenAI conventions. otel-sampling was born on the v1.41 names (``gen_ai.provider.name``, never
the pre-1.37 ``gen_ai.system``): its spans are the same either way; its inference metrics take the
newest names (semantic-conventions-genai #521 / #374, ``tests/test_semconv_metrics.py``).
"""

from __future__ import annotations

import anthropic
import pytest
from opentelemetry.semconv.schemas import Schemas

from otel_sampling import names


def test_schema_url_is_a_published_semconv_schema():
    assert names.SCHEMA_URL in {schema.value for schema in Schemas}
    assert names.SCHEMA_URL.endswith("/1.41.0")  # the last release that carried the GenAI and MCP conventions


@pytest.fixture(params=[None, "gen_ai_latest_experimental", "http,gen_ai_latest_experimental"])
def semconv_opt_in(request, monkeypatch):
    """The opt-in as the host sets it: before instrument()."""
    if request.param is None:
        monkeypatch.delenv("OTEL_SEMCONV_STABILITY_OPT_IN", raising=False)
    else:
        monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", request.param)
    return request.param


def test_provider_spans_use_the_current_genai_names_with_and_without_opt_in(
    semconv_opt_in, anthropic_instrumented, fake_provider
):
    client = anthropic.Anthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
    client.messages.create(model="claude-req", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    (span,) = anthropic_instrumented.spans("chat claude-req")
    assert span.instrumentation_scope.schema_url == names.SCHEMA_URL
    assert span.attributes[names.GEN_AI_PROVIDER_NAME] == "anthropic"
    assert "gen_ai.system" not in span.attributes
    duration = (
        names.METRIC_GEN_AI_OPERATION_DURATION if semconv_opt_in is None else names.METRIC_GEN_AI_INFERENCE_DURATION
    )
    (point,) = list(anthropic_instrumented.points(duration))
    assert point.attributes[names.GEN_AI_PROVIDER_NAME] == "anthropic" and "gen_ai.system" not in point.attributes


def test_the_conventions_names_we_emit_are_the_semconv_packages():
    """Names the conventions define, as opentelemetry-semantic-conventions spells them (its
    incubating modules; the MCP duration metrics' unit is its ``s``)."""
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
    from opentelemetry.semconv._incubating.attributes import rpc_attributes as rpc
    from opentelemetry.semconv._incubating.metrics import mcp_metrics

    assert names.METRIC_MCP_SERVER_OPERATION_DURATION == mcp_metrics.MCP_SERVER_OPERATION_DURATION
    assert names.METRIC_MCP_CLIENT_OPERATION_DURATION == mcp_metrics.MCP_CLIENT_OPERATION_DURATION
    assert names.RPC_RESPONSE_STATUS_CODE == rpc.RPC_RESPONSE_STATUS_CODE
    assert (names.GEN_AI_AGENT_NAME, names.GEN_AI_CONVERSATION_ID) == (
        gen_ai.GEN_AI_AGENT_NAME,
        gen_ai.GEN_AI_CONVERSATION_ID,
    )
    assert (
        names.GEN_AI_EVALUATION_SCORE_VALUE,
        names.GEN_AI_EVALUATION_SCORE_LABEL,
        names.GEN_AI_EVALUATION_EXPLANATION,
    ) == (
        gen_ai.GEN_AI_EVALUATION_SCORE_VALUE,
        gen_ai.GEN_AI_EVALUATION_SCORE_LABEL,
        gen_ai.GEN_AI_EVALUATION_EXPLANATION,
    )


def test_the_v1_41_inference_names_are_the_semconv_packages():
    """The inference metrics we emit by default, and the reasoning-token count, as
    opentelemetry-semantic-conventions 0.66b2 spells them (it carries no #521 / #374 name yet)."""
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
    from opentelemetry.semconv._incubating.metrics import gen_ai_metrics

    assert (
        names.METRIC_GEN_AI_OPERATION_DURATION,
        names.METRIC_GEN_AI_TOKEN_USAGE,
        names.METRIC_GEN_AI_TIME_TO_FIRST_CHUNK,
        names.METRIC_GEN_AI_TIME_PER_OUTPUT_CHUNK,
    ) == (
        gen_ai_metrics.GEN_AI_CLIENT_OPERATION_DURATION,
        gen_ai_metrics.GEN_AI_CLIENT_TOKEN_USAGE,
        gen_ai_metrics.GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK,
        gen_ai_metrics.GEN_AI_CLIENT_OPERATION_TIME_PER_OUTPUT_CHUNK,
    )
    assert names.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS == gen_ai.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS
    assert names.GEN_AI_TOKEN_TYPE == gen_ai.GEN_AI_TOKEN_TYPE
    assert {names.TOKEN_TYPE_INPUT, names.TOKEN_TYPE_OUTPUT} <= {v.value for v in gen_ai.GenAiTokenTypeValues}
