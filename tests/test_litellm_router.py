"""A LiteLLM Router's fallbacks, driven through the fake provider: the primary deployment is down
(HTTP 503 / 429 for its model only: ``fail_model=``), or the request does not fit its context window
(HTTP 400 with the openai context-length message, which LiteLLM raises as
``ContextWindowExceededError``), or its content policy refuses it (``ContentPolicyViolationError``).

Every attempt is one span; the attempt that serves on the fallback model reads ``degraded`` with the
reason of the failure the Router fell back from (docs/telemetry.md "Automatic degraded mode"), on
every signal: the span, the ``otel_sampling`` metric points, the run it is made in.
"""

from __future__ import annotations

import asyncio
import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch at import
litellm = pytest.importorskip("litellm")

import otel_sampling as osm  # noqa: E402
from conftest import _instrumented  # noqa: E402
from otel_sampling import names  # noqa: E402
from otel_sampling.instrumentation.litellm import LiteLLMInstrumentor  # noqa: E402
from otel_sampling.testing.fake_provider import SCENARIO_HEADER  # noqa: E402

MESSAGES = [{"role": "user", "content": "Summarise: printer on fire"}]
PRIMARY, FALLBACK = "gpt-4.1", "gpt-4o-mini"
# The messages the openai API answers with, which LiteLLM's exception mapping reads
# (litellm_core_utils/exception_mapping_utils.py).
CONTEXT_WINDOW = "This model's maximum context length is 8192 tokens"
CONTENT_POLICY = "Your request was rejected as a result of the safety system"
OUTAGES = {  # scenario -> the error.type of the primary's failed attempt
    f"status=503,fail_model={PRIMARY},no_retry": "503",
    f"status=429,fail_model={PRIMARY},no_retry": "429",
}


@pytest.fixture
def litellm_instrumented(telemetry):
    yield from _instrumented(telemetry, LiteLLMInstrumentor)


def router(fp, scenario: str, **fallbacks) -> litellm.Router:
    params = {"api_base": fp.url + "/v1", "api_key": "sk-fake", "extra_headers": {SCENARIO_HEADER: scenario}}
    return litellm.Router(
        model_list=[
            {"model_name": "primary", "litellm_params": {"model": f"openai/{PRIMARY}", **params}},
            {"model_name": "backup", "litellm_params": {"model": f"openai/{FALLBACK}", **params}},
        ],
        num_retries=0,
        **fallbacks,
    )


def ask(r: litellm.Router, asynchronous: bool) -> str:
    if asynchronous:
        return asyncio.run(r.acompletion(model="primary", messages=MESSAGES)).model
    return r.completion(model="primary", messages=MESSAGES).model


def attempts(t) -> list[tuple[str, str, str | None, str, tuple[str, ...]]]:
    """(requested, ending, error.type, mode, reasons) of every attempt, in the order they ended."""
    calls = sorted((s for s in t.spans() if s.name.startswith("chat ")), key=lambda s: s.end_time)
    return [
        (
            s.attributes[names.GEN_AI_REQUEST_MODEL],
            s.attributes[names.ENDING],
            s.attributes.get(names.ERROR_TYPE),
            s.attributes[names.DEGRADATION_MODE],
            tuple(s.attributes.get(names.DEGRADATION_REASON, ())),
        )
        for s in calls
    ]


def modes_of_points(t) -> dict:
    return t.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.GEN_AI_REQUEST_MODEL, names.DEGRADATION_MODE)


CONVENTIONS = pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])


@CONVENTIONS
@pytest.mark.parametrize("scenario", list(OUTAGES))
def test_a_fallback_through_a_primary_outage_is_a_failover(litellm_instrumented, fake_provider, scenario, asynchronous):
    """No parent span, no run, no sampling request: the Router's own word makes the hop a failover."""
    served = ask(router(fake_provider, scenario, fallbacks=[{"primary": ["backup"]}]), asynchronous)
    assert served == FALLBACK
    assert attempts(litellm_instrumented) == [
        (PRIMARY, names.ENDING_MODEL_UNAVAILABLE, OUTAGES[scenario], names.MODE_PRIMARY, ()),
        (FALLBACK, names.ENDING_COMPLETED, None, names.MODE_DEGRADED, (names.REASON_FAILOVER,)),
    ]
    assert modes_of_points(litellm_instrumented) == {
        (PRIMARY, names.MODE_PRIMARY): 1,
        (FALLBACK, names.MODE_DEGRADED): 1,
    }


@CONVENTIONS
def test_a_failover_inside_a_run_degrades_the_run(litellm_instrumented, fake_provider, asynchronous):
    scenario = f"status=503,fail_model={PRIMARY},no_retry"
    with osm.run("triage"):
        ask(router(fake_provider, scenario, fallbacks=[{"primary": ["backup"]}]), asynchronous)
    assert attempts(litellm_instrumented)[-1][3:] == (names.MODE_DEGRADED, (names.REASON_FAILOVER,))
    assert litellm_instrumented.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME, names.DEGRADATION_MODE) == {
        ("triage", names.MODE_DEGRADED): 1
    }
    (run_span,) = litellm_instrumented.spans("invoke_agent triage")
    assert run_span.attributes[names.DEGRADATION_MODE] == names.MODE_DEGRADED
    assert names.REASON_FAILOVER in run_span.attributes[names.DEGRADATION_REASON]


@CONVENTIONS
@pytest.mark.parametrize(
    ("message", "fallbacks", "reason"),
    [
        (CONTEXT_WINDOW, "context_window_fallbacks", names.REASON_CONTEXT_WINDOW_FALLBACK),
        (CONTENT_POLICY, "content_policy_fallbacks", names.REASON_CONTENT_POLICY_FALLBACK),
    ],
    ids=["context_window", "content_policy"],
)
def test_a_context_window_or_content_policy_fallback_reads_degraded_with_its_reason(
    litellm_instrumented, fake_provider, message, fallbacks, reason, asynchronous
):
    scenario = f"status=400,fail_model={PRIMARY},no_retry,error_message={message}"
    with osm.run("triage"):
        served = ask(router(fake_provider, scenario, **{fallbacks: [{"primary": ["backup"]}]}), asynchronous)
    assert served == FALLBACK
    primary, fallback = attempts(litellm_instrumented)
    assert primary[:2] == (PRIMARY, names.ENDING_ERROR)
    assert primary[3] == names.MODE_PRIMARY
    assert fallback == (FALLBACK, names.ENDING_COMPLETED, None, names.MODE_DEGRADED, (reason,))
    assert (
        litellm_instrumented.counts(
            names.METRIC_GEN_AI_OPERATION_DURATION, names.GEN_AI_RESPONSE_MODEL, names.DEGRADATION_MODE
        )[FALLBACK, names.MODE_DEGRADED]
        == 1
    )
    (run_span,) = litellm_instrumented.spans("invoke_agent triage")
    assert run_span.attributes[names.DEGRADATION_MODE] == names.MODE_DEGRADED
    assert reason in run_span.attributes[names.DEGRADATION_REASON]


@CONVENTIONS
def test_each_retry_is_an_attempt_of_its_own(litellm_instrumented, fake_provider, asynchronous):
    """The Router retries the primary twice, then gives up (no fallback configured): three spans."""
    fake_provider.reset()
    r = router(fake_provider, f"status=429,fail_model={PRIMARY},no_retry")
    retrying = litellm.Router(model_list=r.model_list, num_retries=2, retry_after=0)
    with pytest.raises(litellm.RateLimitError):
        ask(retrying, asynchronous)
    assert (
        attempts(litellm_instrumented) == [(PRIMARY, names.ENDING_MODEL_UNAVAILABLE, "429", names.MODE_PRIMARY, ())] * 3
    )
    assert [request["model"] for request in fake_provider.requests] == [PRIMARY] * 3
