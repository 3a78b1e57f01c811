"""Our queries select our instrumentation scope: another meter's metric of the same name changes none
of their results.

A framework's own GenAI instrumentation (pydantic-ai's ``instrument_all()``) records
``gen_ai.client.token.usage`` on the host's meter provider too, under its own scope and without
``degradation.mode``. The real workload (anthropic calls against the fake provider, inside runs)
is exported through the real Prometheus exporter and scraped twice: before and after a second
meter, defined as pydantic-ai defines it (``pydantic_ai/models/instrumented.py``: scope
``pydantic-ai``, its description, its attributes), recorded the same calls' tokens. A real
Prometheus scrapes each, with the committed rules loaded; every rule expression and every
dashboard query gives the same result on both. The same queries without the scope selector do
not, which shows the selector is what keeps the two apart.

The last test records a defect of ``opentelemetry-exporter-prometheus`` (docs/deploy.md, "The
instrumentation scope on each path"): a second scope whose metric has our name, unit *and*
description is written into our metric family under the first scope's label names.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import anthropic
import pytest
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

import otel_sampling as osm
from conftest import TRACER_PROVIDER
from harness.dashboards import dashboard_queries, expand
from harness.prometheus import PrometheusServer, StaticMetrics
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.mixin import MixinConfig
from otel_sampling.mixin.generate import RULES_FILE, write
from otel_sampling.mixin.rules import rule_groups

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.subprocess,
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus (Debian package) is not installed"),
]

MODEL = "claude-sonnet-4-5"
# The fake provider's scenario of each call (x-fake-scenario): plain, prompt-cache reads, a substitution.
CALLS = ["", "cache", "served_model=claude-haiku-4-5"]
# pydantic-ai's token histogram (pydantic_ai/models/instrumented.py, InstrumentationSettings).
PYDANTIC_AI_SCOPE = ("pydantic-ai", "2.68.0")
PYDANTIC_AI_DESCRIPTION = "Measures number of input and output tokens used"


def _framework_tokens(
    provider: MeterProvider, scope: tuple[str, str], description: str, usages: list[tuple[str, int, int]]
) -> None:
    """What the framework records for the same calls: input and output tokens per response, with
    its attributes (operation, provider, models, token type) and no degradation.mode."""
    meter = provider.get_meter(*scope)
    tokens = meter.create_histogram(names.METRIC_GEN_AI_TOKEN_USAGE, unit=names.UNIT_TOKEN, description=description)
    # and the newest usage counters (semantic-conventions-genai #374), as an instrumentation on
    # gen_ai_latest_experimental records them (our descriptions are the conventions' briefs: another one)
    inputs = meter.create_counter(names.METRIC_GEN_AI_USAGE_INPUT_TOKENS, unit=names.UNIT_TOKEN, description="In.")
    reads = meter.create_counter(
        names.METRIC_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, unit=names.UNIT_TOKEN, description="Cached."
    )
    for served, input_tokens, output_tokens in usages:
        attributes = {
            names.GEN_AI_OPERATION_NAME: "chat",
            names.GEN_AI_PROVIDER_NAME: "anthropic",
            names.GEN_AI_REQUEST_MODEL: MODEL,
            names.GEN_AI_RESPONSE_MODEL: served,
        }
        tokens.record(input_tokens, {**attributes, names.GEN_AI_TOKEN_TYPE: "input"})
        tokens.record(output_tokens, {**attributes, names.GEN_AI_TOKEN_TYPE: "output"})
        modality = {**attributes, names.GEN_AI_TOKEN_MODALITY: "text"}
        inputs.add(input_tokens, modality)
        reads.add(input_tokens // 2, modality)


def _workload(url: str) -> list[tuple[str, int, int]]:
    """Anthropic calls inside agent runs; returns (served model, input tokens, output tokens) per call."""
    client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
    usages = []
    for scenario in CALLS:
        with osm.run("triage"):
            message = client.messages.create(
                model=MODEL,
                max_tokens=16,
                messages=[{"role": "user", "content": "hi"}],
                extra_headers={"x-fake-scenario": scenario} if scenario else None,
            )
        usages.append((message.model, message.usage.input_tokens, message.usage.output_tokens))
    return usages


@pytest.fixture(scope="module")
def scrapes(fake_provider) -> Iterator[tuple[str, str]]:
    """(ours only, ours and the framework's): two scrapes of one real exporter, the framework's
    tokens recorded between them (our counters did not move in between). The host emits both the
    v1.41 and the newest GenAI metric names (gen_ai/dup), so that every token query reads ours."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(names.ENV_SEMCONV_STABILITY_OPT_IN, names.SEMCONV_GEN_AI_DUP)
        yield _scrapes(fake_provider)


def _scrapes(fake_provider) -> tuple[str, str]:
    registry = CollectorRegistry()
    provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)])
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=provider)
    try:
        usages = _workload(fake_provider.url)
        ours = generate_latest(registry).decode()
        _framework_tokens(provider, PYDANTIC_AI_SCOPE, PYDANTIC_AI_DESCRIPTION, usages)
        both = generate_latest(registry).decode()
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    return ours, both


@pytest.fixture(scope="module")
def stores(scrapes, tmp_path_factory) -> Iterator[tuple[PrometheusServer, PrometheusServer]]:
    """A Prometheus per scrape, each with the committed rules loaded, rules evaluated."""
    rules = tmp_path_factory.mktemp("rules")
    write(MixinConfig(), rules)
    ours, both = scrapes
    with (
        StaticMetrics(ours) as a,
        StaticMetrics(both) as b,
        PrometheusServer([a.target], [rules / "alerts" / RULES_FILE]) as only_ours,
        PrometheusServer([b.target], [rules / "alerts" / RULES_FILE]) as mixed,
    ):
        for store in (only_ours, mixed):
            store.wait_for_scrape()
            store.wait_for_rules()
        yield only_ours, mixed


def _queries(config: MixinConfig, root: Path) -> dict[str, str]:
    """Every rule expression and dashboard query of ``config`` (Grafana variables expanded), by where
    it is; the ALERTS annotation is left out (it reads alert states, whose timing is the server's)."""
    write(config, root)
    queries = {
        f"rule {rule.get('record') or rule['alert']}": rule["expr"]
        for group in rule_groups(config)["groups"]
        for rule in group["rules"]
    }
    queries.update(
        {where: expand(expr) for where, expr, _ in dashboard_queries(root / "dashboards") if "ALERTS" not in expr}
    )
    return queries


def _result(store: PrometheusServer, expr: str, at: float) -> list[tuple[tuple[tuple[str, str], ...], str]]:
    """The instant vector of ``expr`` at ``at``: (labels, value) pairs, sorted; ``instance`` (the
    address each store scraped) left out."""
    return sorted(
        (tuple(sorted((k, v) for k, v in s["metric"].items() if k != "instance")), s["value"][1])
        for s in store.api("query", query=expr, time=str(at))["result"]
    )


def _reads_tokens(expr: str) -> bool:
    return "gen_ai_client_token_usage" in expr or "gen_ai_client_inference_usage" in expr


def _now(store: PrometheusServer) -> float:
    return float(store.api("query", query="time()")["result"][0])


def test_the_scrapes_hold_the_two_scopes_as_the_exporter_labels_them(scrapes):
    ours, both = scrapes
    token_sums = [
        s
        for family in text_string_to_metric_families(both)
        for s in family.samples
        if s.name == "gen_ai_client_token_usage_sum"
    ]
    assert {s.labels["otel_scope_name"] for s in token_sums} == {names.SCOPE_NAME, PYDANTIC_AI_SCOPE[0]}
    assert all(s.labels.get("degradation_mode") for s in token_sums if s.labels["otel_scope_name"] == names.SCOPE_NAME)
    assert not any(
        s.labels.get("degradation_mode") for s in token_sums if s.labels["otel_scope_name"] == PYDANTIC_AI_SCOPE[0]
    )
    assert 'otel_scope_name="pydantic-ai"' not in ours


def test_a_second_scope_changes_no_query_result(stores, tmp_path):
    only_ours, mixed = stores
    at = min(_now(only_ours), _now(mixed))
    queries = _queries(MixinConfig(), tmp_path)
    differ = {
        where: (a, b)
        for where, expr in queries.items()
        if (a := _result(only_ours, expr, at)) != (b := _result(mixed, expr, at))
    }
    assert differ == {}
    # not vacuous: the token queries read our series
    # (an alert's result is empty while it does not fire)
    tokens = [where for where, expr in queries.items() if _reads_tokens(expr) and not where.startswith("rule Otel")]
    assert tokens and all(_result(only_ours, queries[where], at) for where in tokens), tokens


def test_without_the_scope_selector_the_framework_s_tokens_mix_in(stores, tmp_path):
    only_ours, mixed = stores
    at = min(_now(only_ours), _now(mixed))
    queries = _queries(MixinConfig(scope_selector=""), tmp_path)
    tokens = {
        where: expr for where, expr in queries.items() if _reads_tokens(expr) and where.startswith("providers.json")
    }
    assert tokens
    assert [where for where, expr in tokens.items() if _result(only_ours, expr, at) != _result(mixed, expr, at)]


@pytest.mark.xfail(
    strict=True,
    reason="opentelemetry-exporter-prometheus 0.66b2 merges the series of one name, "
    "description and unit across scopes into one family with the label names of the scope that "
    "recorded first: a peer using the semantic conventions' description, recording first, "
    "relabels our token series",
)
def test_a_peer_with_the_semconv_description_leaves_our_series_labels_intact(fake_provider):
    registry = CollectorRegistry()
    provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)])
    _framework_tokens(
        provider,
        ("opentelemetry.instrumentation.genai_peer", "1.0"),
        "Number of input and output tokens used.",
        [(MODEL, 7, 3)],
    )
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=provider)
    try:
        _workload(fake_provider.url)
        text = generate_latest(registry).decode()
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    ours = [
        s.labels
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "gen_ai_client_token_usage_sum" and s.labels.get("otel_scope_name") == names.SCOPE_NAME
    ]
    assert len(ours) >= len(CALLS)
    assert all(labels.get("degradation_mode") in (names.MODE_PRIMARY, names.MODE_DEGRADED) for labels in ours)
