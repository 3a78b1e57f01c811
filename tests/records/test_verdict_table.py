"""docs/telemetry.md "Verdicts with and without a policy", cell by cell: every signal of one request at once.

Each cell: a host's sampling callback asks a real provider SDK (anthropic, or openai through an
OpenAI-compatible gateway) against the fake provider for ``claude-sonnet-4-5``, and the fake
provider serves the column's model (``served_model=``). The request goes over a real mcp 2.x
session, on the legacy JSON-RPC path and on the 2026-07-28 multi-round-trip path. Every signal of
the request must tell the same story: the sampling span's substitution, mode and reasons, the
``otel_sampling.sampling.requests`` labels, the chat span's mode and reasons, the request's own run
(``agent.runs``) and whether a silent incident was counted.

The expected values come from the table in docs/telemetry.md, not from the code.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import anthropic
import anyio
import mcp_types as types
import openai
import pytest

from conftest import SAMPLE_ARGS, Telemetry, with_policy
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor

ASKED = "claude-sonnet-4-5"
SERVER = "sampling-test-server"

POLICIES = {
    "no policy": "",
    "permitted only": f'[servers."{SERVER}"]\npermitted_models = ["{ASKED}"]\n',
    "primary + permitted": (
        f'[servers."{SERVER}"]\nprimary_model = "{ASKED}"\npermitted_models = ["{ASKED}", "claude-haiku-4-5"]\n'
    ),
}


class Column(NamedTuple):
    sdk: str  # "anthropic" or "openai" (an OpenAI-compatible gateway)
    requested: str  # what the host asks the provider for
    served: str  # what the fake provider serves


COLUMNS = {
    "as asked": Column("anthropic", ASKED, ASKED),
    "snapshot": Column("anthropic", ASKED, "claude-sonnet-4-5-20250929"),
    "same family other size": Column("anthropic", ASKED, "claude-haiku-4-5"),
    "other family": Column("anthropic", ASKED, "claude-3-7-sonnet-20250219"),
    "other provider": Column("openai", ASKED, "gpt-4o-mini"),
    "gateway prefix": Column("openai", f"anthropic/{ASKED}", "claude-sonnet-4-5-20250929"),
    "alias": Column("anthropic", f"{ASKED}-latest", "claude-sonnet-4-5-20250929"),
}


class Signals(NamedTuple):
    """What every signal of the request shows: sampling span (substitution, mode, reason), chat span
    (mode, reason), the request's own run mode, and whether a silent incident was counted."""

    substitution: str
    mode: str
    reason: str | None
    chat_mode: str
    chat_reason: str | None
    run_mode: str
    incident: bool


PRIMARY = Signals("none", "primary", None, "primary", None, "primary", False)
SUBSTITUTED = Signals("without_policy", "degraded", "substitution", "degraded", "substitution", "degraded", True)
OUTSIDE = Signals("outside_policy", "degraded", "substitution", "degraded", "substitution", "degraded", True)
FALLBACK = Signals("within_policy", "degraded", "fallback", "degraded", "fallback", "degraded", True)

# (policy, column) -> signals: the table of docs/telemetry.md.
TABLE = {
    ("no policy", "as asked"): PRIMARY,
    ("no policy", "snapshot"): PRIMARY,
    ("no policy", "same family other size"): SUBSTITUTED,
    ("no policy", "other family"): SUBSTITUTED,
    ("no policy", "other provider"): SUBSTITUTED,
    ("no policy", "gateway prefix"): PRIMARY,
    ("no policy", "alias"): PRIMARY,
    ("permitted only", "as asked"): PRIMARY,
    ("permitted only", "snapshot"): PRIMARY,
    ("permitted only", "same family other size"): OUTSIDE,
    ("permitted only", "other family"): OUTSIDE,
    ("permitted only", "other provider"): OUTSIDE,
    ("permitted only", "gateway prefix"): PRIMARY,
    ("permitted only", "alias"): PRIMARY,
    ("primary + permitted", "as asked"): PRIMARY,
    ("primary + permitted", "snapshot"): PRIMARY,
    ("primary + permitted", "same family other size"): FALLBACK,
    ("primary + permitted", "other family"): OUTSIDE,
    ("primary + permitted", "other provider"): OUTSIDE,
    ("primary + permitted", "gateway prefix"): PRIMARY,
    ("primary + permitted", "alias"): PRIMARY,
}
assert set(TABLE) == {(p, c) for p in POLICIES for c in COLUMNS}

PATHS = {"legacy": names.PATH_RPC, "auto": names.PATH_MRTR}


@pytest.fixture(params=list(POLICIES))
def policy(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def hosted(telemetry: Telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str) -> Iterator[Telemetry]:
    yield from with_policy(
        telemetry,
        tmp_path,
        monkeypatch,
        POLICIES[policy],
        MCPSamplingInstrumentor,
        AnthropicInstrumentor,
        OpenAIInstrumentor,
    )


def host_callback(fake_provider, column: Column):
    """A host sampling callback: one provider call through ``column.sdk``, its model reported back."""
    scenario = {"x-fake-scenario": f"served_model={column.served}"}

    async def callback(ctx, params):
        if column.sdk == "anthropic":
            async with anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0) as c:
                message = await c.messages.create(
                    model=column.requested,
                    max_tokens=params.max_tokens,
                    messages=[{"role": "user", "content": "hi"}],
                    extra_headers=scenario,
                )
            model, text = message.model, message.content[0].text
        else:
            async with openai.AsyncOpenAI(base_url=fake_provider.url + "/v1", api_key="sk-fake", max_retries=0) as c:
                completion = await c.chat.completions.create(
                    model=column.requested, messages=[{"role": "user", "content": "hi"}], extra_headers=scenario
                )
            model, text = completion.model, completion.choices[0].message.content or ""
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text=text), model=model, stop_reason="endTurn"
        )

    return callback


async def one_request(mode: str, callback) -> None:
    from mcp import Client

    from sampling_server import build_server

    async with Client(build_server(), mode=mode, sampling_callback=callback) as client:
        await client.call_tool("sample", SAMPLE_ARGS)


def observed(telemetry: Telemetry) -> Signals:
    (sampling,) = telemetry.spans(names.SPAN_SAMPLING)
    (chat,) = [s for s in telemetry.spans() if s.name.startswith(names.OPERATION_CHAT)]
    a, c = sampling.attributes, chat.attributes
    reasons = a.get(names.DEGRADATION_REASON)
    chat_reasons = c.get(names.DEGRADATION_REASON)
    (run_mode,) = [mode for (mode,) in telemetry.counts(names.METRIC_AGENT_RUNS, names.DEGRADATION_MODE)]
    incidents = sum(telemetry.counts(names.METRIC_SILENT_INCIDENTS).values())
    return Signals(
        a[names.SAMPLING_SUBSTITUTION],
        a[names.DEGRADATION_MODE],
        reasons[0] if reasons else None,
        c[names.DEGRADATION_MODE],
        chat_reasons[0] if chat_reasons else None,
        run_mode,
        incidents == 1,
    )


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("column", list(COLUMNS))
def test_every_signal_of_the_request_tells_the_same_story(hosted, fake_provider, policy, column, path):
    expected = TABLE[(policy, column)]
    anyio.run(one_request, path, host_callback(fake_provider, COLUMNS[column]))

    (sampling,) = hosted.spans(names.SPAN_SAMPLING)
    assert sampling.attributes[names.SAMPLING_PATH] == PATHS[path]
    assert expected == observed(hosted)
    requests = hosted.counts(
        names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_SUBSTITUTION, names.DEGRADATION_MODE, names.DEGRADATION_REASON
    )
    assert {(expected.substitution, expected.mode, expected.reason): 1} == requests
    # The provider call's own metric points carry its mode too.
    calls = hosted.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.DEGRADATION_MODE)
    assert {(expected.chat_mode,): 1} == calls
    # The call was judged against its request's server table (the scope rule's first step).
    (chat,) = [s for s in hosted.spans() if s.name.startswith(names.OPERATION_CHAT)]
    scope = None if policy == "no policy" else f"server:{SERVER}"
    assert (scope, scope) == (chat.attributes.get(names.POLICY_SCOPE), sampling.attributes.get(names.POLICY_SCOPE))


@pytest.fixture
def hosted_without_openai(
    telemetry: Telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str
) -> Iterator[Telemetry]:
    yield from with_policy(
        telemetry, tmp_path, monkeypatch, POLICIES[policy], MCPSamplingInstrumentor, AnthropicInstrumentor
    )


@pytest.mark.parametrize("column", [name for name, column in COLUMNS.items() if column.sdk == "openai"])
def test_the_request_tells_the_same_story_whatever_instrumentors_are_loaded(
    hosted_without_openai, fake_provider, policy, column
):
    """The openai call is not seen (no openai instrumentor): the request is judged from the host's
    report against the hint, and its signals are the same as with the call seen."""
    expected = TABLE[(policy, column)]
    anyio.run(one_request, "legacy", host_callback(fake_provider, COLUMNS[column]))
    (sampling,) = hosted_without_openai.spans(names.SPAN_SAMPLING)
    a = sampling.attributes
    reasons = a.get(names.DEGRADATION_REASON)
    assert (expected.substitution, expected.mode, expected.reason) == (
        a[names.SAMPLING_SUBSTITUTION],
        a[names.DEGRADATION_MODE],
        reasons[0] if reasons else None,
    )
    (run_mode,) = [mode for (mode,) in hosted_without_openai.counts(names.METRIC_AGENT_RUNS, names.DEGRADATION_MODE)]
    assert expected.run_mode == run_mode
