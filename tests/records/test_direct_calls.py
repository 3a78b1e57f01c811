"""Provider calls outside any sampling request, judged against their policy scope: every signal at once.

docs/telemetry.md "Direct calls and policy scopes": a call made in an explicit run, under a
framework's agent span (``gen_ai.operation.name=invoke_agent`` with ``gen_ai.agent.name``), in a
server tool's run (``RunScope(name, tool=(server, tool))``) or in no run at all is judged with the
same verdict path as a sampling request, against the scope the one rule picks
(``[runs."<name>"]``, ``[servers."<server>".tools."<tool>"]``, ``[default]``; none without a
policy). Real anthropic and openai SDK calls against the fake provider over HTTP; the expected
values come from the docs' tables, not from the code.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import anthropic
import openai
import pytest
from opentelemetry import trace

import otel_sampling as osm
from conftest import TRACER_PROVIDER, Telemetry, with_policy
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor
from otel_sampling.runs import RunScope
from otel_sampling.testing.fake_provider import SCENARIO_HEADER

HOST = trace.get_tracer("host", tracer_provider=TRACER_PROVIDER)
MESSAGES = [{"role": "user", "content": "Summarise: printer on fire"}]
PRIMARY, FALLBACK, OUTSIDE = "claude-sonnet-4-5", "claude-haiku-4-5", "claude-3-7-sonnet-20250219"
DOWN = f"status=529,fail_model={PRIMARY}"  # the primary is down; any other model answers

PRICES = "".join(
    f'[prices."{model}"]\ninput_usd_per_mtok = 3.0\noutput_usd_per_mtok = 15.0\n'
    for model in (PRIMARY, FALLBACK, OUTSIDE)
)
SCOPE_KEYS = f'primary_model = "{PRIMARY}"\npermitted_models = ["{PRIMARY}", "{FALLBACK}"]\n'
POLICIES = {
    # A price table and no scope table: no policy judges the calls.
    "no policy": PRICES,
    "scoped": (
        PRICES
        + f'[runs."triage"]\n{SCOPE_KEYS}'
        + f'[servers."tickets".tools."summarise"]\n{SCOPE_KEYS}'
        + f"[default]\n{SCOPE_KEYS}"
    ),
}

# Where the calls are made, and the scope the rule gives them under the "scoped" policy.
PLACES = {
    "explicit run": "run:triage",
    "agent span": "run:triage",  # its gen_ai.agent.name
    "tool run": "tool:tickets/summarise",
    "no run": "default",
}


@contextlib.contextmanager
def made_in(place: str) -> Iterator[None]:
    if place == "explicit run":
        with osm.run("triage"):
            yield
    elif place == "agent span":
        agent = {names.GEN_AI_OPERATION_NAME: "invoke_agent", names.GEN_AI_AGENT_NAME: "triage"}
        with HOST.start_as_current_span("invoke_agent triage", attributes=agent):
            yield
    elif place == "tool run":
        with RunScope("tickets/summarise", tool=("tickets", "summarise")):
            yield
    else:
        with HOST.start_as_current_span("handle ticket"):  # a plain span: no run
            yield


def ask(fp, model: str, scenario: str = "") -> bool:
    """One anthropic call with no SDK retry; True when it succeeded."""
    headers = {SCENARIO_HEADER: scenario} if scenario else {}
    try:
        with anthropic.Anthropic(base_url=fp.url, api_key="sk-fake", max_retries=0, open_telemetry=False) as client:
            client.messages.create(model=model, max_tokens=8, messages=MESSAGES, extra_headers=headers)
    except anthropic.APIStatusError:
        return False
    return True


# What the host does: the models it asks in turn, the first that answers serving.
CHAINS = {
    "as asked": (PRIMARY,),
    "permitted fallback": (PRIMARY, FALLBACK),
    "outside policy": (PRIMARY, OUTSIDE),
}


class Call(NamedTuple):
    """The serving call's chat span: substitution, mode, first reason, violations (its events)."""

    substitution: str
    mode: str
    reason: str | None
    violations: tuple[str, ...] = ()


class Expected(NamedTuple):
    call: Call
    run_mode: str
    incident: tuple[str, ...]  # the silent incident's causes; () when none


PRIMARY_CALL = Expected(Call("none", "primary", None), "primary", ())
FAILED_OVER = Expected(Call("none", "degraded", "failover"), "degraded", ("degraded",))
# docs/telemetry.md "Direct calls and policy scopes", the table of a fallback chain.
TABLE = {
    ("no policy", "as asked"): PRIMARY_CALL,
    ("no policy", "permitted fallback"): FAILED_OVER,
    ("no policy", "outside policy"): FAILED_OVER,
    ("scoped", "as asked"): PRIMARY_CALL,
    ("scoped", "permitted fallback"): FAILED_OVER,
    ("scoped", "outside policy"): Expected(
        Call("outside_policy", "degraded", "failover", ("model_outside_policy",)),
        "degraded",
        ("degraded", "outside_policy"),
    ),
}


@pytest.fixture
def hosted(telemetry: Telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str) -> Iterator[Telemetry]:
    """The anthropic and openai instrumentors, under the policy file named ``policy`` (each test
    parametrizes it: a key of :data:`ALL_POLICIES`)."""
    yield from with_policy(
        telemetry, tmp_path, monkeypatch, ALL_POLICIES[policy], AnthropicInstrumentor, OpenAIInstrumentor
    )


def chat_spans(t: Telemetry) -> list:
    return sorted((s for s in t.spans() if s.name.startswith("chat ")), key=lambda s: s.end_time)


def call_signals(span) -> Call:
    a = span.attributes
    reasons = a.get(names.DEGRADATION_REASON)
    kinds = tuple(e.attributes[names.VIOLATION_KIND] for e in span.events if e.name == names.EVENT_VIOLATION)
    return Call(a[names.SUBSTITUTION], a[names.DEGRADATION_MODE], reasons[0] if reasons else None, kinds)


@pytest.mark.parametrize("chain", list(CHAINS))
@pytest.mark.parametrize("place", list(PLACES))
@pytest.mark.parametrize("policy", list(POLICIES))
def test_every_signal_of_a_direct_call_tells_the_same_story(hosted, fake_provider, policy, place, chain):
    expected = TABLE[(policy, chain)]
    scope = PLACES[place] if policy == "scoped" else None
    with made_in(place):
        answered = [ask(fake_provider, model, DOWN if chain != "as asked" else "") for model in CHAINS[chain]]
    assert answered == [False] * (len(answered) - 1) + [True]

    *failed, served = chat_spans(hosted)
    # The serving call: its verdict and the scope that decided it.
    assert expected.call == call_signals(served)
    assert scope == served.attributes.get(names.POLICY_SCOPE)
    # A failed call served nothing: nothing substituted, no reason of its own, the same scope.
    for span in failed:
        assert (Call("none", "primary", None), scope) == (call_signals(span), span.attributes.get(names.POLICY_SCOPE))

    # Metric points carry the same mode.
    modes = hosted.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.DEGRADATION_MODE)
    expected_modes: dict[tuple[str], int] = {}
    for mode in ["primary"] * len(failed) + [expected.call.mode]:
        expected_modes[(mode,)] = expected_modes.get((mode,), 0) + 1
    assert expected_modes == modes
    violations = hosted.counts(names.METRIC_CLIENT_VIOLATIONS, names.POLICY_SCOPE, names.VIOLATION_KIND)
    assert {(scope, kind): 1 for kind in expected.call.violations} == violations

    # The run: its mode, its cost by mode (cost per completed task), its incident.
    runs = hosted.counts(names.METRIC_AGENT_RUNS, names.DEGRADATION_MODE, names.AGENT_RUN_OUTCOME)
    costs = hosted.counts(names.METRIC_AGENT_RUN_COST, names.DEGRADATION_MODE)
    incidents = sum(hosted.counts(names.METRIC_SILENT_INCIDENTS).values())
    if place == "no run":
        assert ({}, {}, 0, ()) == (runs, costs, incidents, hosted.incident_causes())
        return
    assert {(expected.run_mode, "completed"): 1} == runs
    assert [(expected.run_mode,)] == list(costs)
    assert (1 if expected.incident else 0, expected.incident) == (incidents, hosted.incident_causes())
    if place != "agent span":  # an explicit run's own span
        (run_span,) = hosted.spans(f"invoke_agent {'triage' if place == 'explicit run' else 'tickets/summarise'}")
        assert (expected.run_mode, scope) == (
            run_span.attributes[names.DEGRADATION_MODE],
            run_span.attributes.get(names.POLICY_SCOPE),
        )


# ---------------------------------------------------------------- the verdict table, for direct calls
# docs/telemetry.md "Verdicts with and without a policy" holds for a direct call too: the model it
# asked for is the reference, and the run's table ([runs."triage"]) the policy.
ASKED = "claude-sonnet-4-5"
RUN_POLICIES = {
    "no policy": PRICES,
    "permitted only": f'[runs."triage"]\npermitted_models = ["{ASKED}"]\n',
    "primary + permitted": (
        f'[runs."triage"]\nprimary_model = "{ASKED}"\npermitted_models = ["{ASKED}", "claude-haiku-4-5"]\n'
    ),
}


class Column(NamedTuple):
    sdk: str  # "anthropic" or "openai" (an OpenAI-compatible gateway)
    requested: str
    served: str


COLUMNS = {
    "as asked": Column("anthropic", ASKED, ASKED),
    "snapshot": Column("anthropic", ASKED, "claude-sonnet-4-5-20250929"),
    "alias": Column("anthropic", f"{ASKED}-latest", "claude-sonnet-4-5-20250929"),
    "gateway prefix": Column("openai", f"anthropic/{ASKED}", "claude-sonnet-4-5-20250929"),
    "same family other size": Column("anthropic", ASKED, "claude-haiku-4-5"),
    "other family": Column("anthropic", ASKED, "claude-3-7-sonnet-20250219"),
    "other provider": Column("openai", ASKED, "gpt-4o-mini"),
}


class Row(NamedTuple):
    """The chat span's substitution, mode and first reason; the run's mode; an incident counted."""

    substitution: str
    mode: str
    reason: str | None
    run_mode: str
    incident: bool


AS_ASKED = Row("none", "primary", None, "primary", False)
WITHOUT = Row("without_policy", "degraded", "substitution", "degraded", True)
OUTSIDE_ROW = Row("outside_policy", "degraded", "substitution", "degraded", True)
WITHIN = Row("within_policy", "degraded", "fallback", "degraded", True)
SERVED_OTHER = ("same family other size", "other family", "other provider")
VERDICTS = {
    **{(policy, column): AS_ASKED for policy in RUN_POLICIES for column in COLUMNS if column not in SERVED_OTHER},
    **{("no policy", column): WITHOUT for column in SERVED_OTHER},
    **{("permitted only", column): OUTSIDE_ROW for column in SERVED_OTHER},
    ("primary + permitted", "same family other size"): WITHIN,
    ("primary + permitted", "other family"): OUTSIDE_ROW,
    ("primary + permitted", "other provider"): OUTSIDE_ROW,
}
assert set(VERDICTS) == {(p, c) for p in RUN_POLICIES for c in COLUMNS}


def served_as(fp, column: Column) -> None:
    headers = {SCENARIO_HEADER: f"served_model={column.served}"}
    if column.sdk == "anthropic":
        with anthropic.Anthropic(base_url=fp.url, api_key="sk-fake", max_retries=0, open_telemetry=False) as client:
            client.messages.create(model=column.requested, max_tokens=8, messages=MESSAGES, extra_headers=headers)
    else:
        with openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0) as client:
            client.chat.completions.create(model=column.requested, messages=MESSAGES, extra_headers=headers)


@pytest.mark.parametrize("column", list(COLUMNS))
@pytest.mark.parametrize("policy", list(RUN_POLICIES))
def test_the_verdict_table_holds_for_a_direct_call(hosted, fake_provider, policy, column):
    expected = VERDICTS[(policy, column)]
    with osm.run("triage"):
        served_as(fake_provider, COLUMNS[column])
    (chat,) = chat_spans(hosted)
    call = call_signals(chat)
    (run_mode,) = [mode for (mode,) in hosted.counts(names.METRIC_AGENT_RUNS, names.DEGRADATION_MODE)]
    incidents = sum(hosted.counts(names.METRIC_SILENT_INCIDENTS).values())
    assert expected == Row(call.substitution, call.mode, call.reason, run_mode, incidents == 1)
    assert (None if policy == "no policy" else "run:triage") == chat.attributes.get(names.POLICY_SCOPE)
    outside = expected.substitution == "outside_policy"
    assert (("model_outside_policy",) if outside else ()) == call.violations
    assert (("degraded", "outside_policy") if outside else ("degraded",) if expected.incident else ()) == (
        hosted.incident_causes()
    )


# ---------------------------------------------------------------- the compliance boundary
BOUNDARY = """\
[endpoints."127.0.0.1"]
region = "eu"

[runs."eu-only"]
permitted_providers = ["anthropic"]
permitted_regions = ["eu"]

[runs."us-only"]
permitted_regions = ["us"]

[endpoints."api.us.example.com"]
region = "us"
"""


@pytest.mark.parametrize(
    ("run", "column", "crossed"),
    [
        ("eu-only", Column("anthropic", ASKED, ASKED), False),  # a permitted provider, from a permitted region
        ("eu-only", Column("openai", "gpt-4o-mini", "gpt-4o-mini"), True),  # a provider outside the scope
        ("us-only", Column("anthropic", ASKED, ASKED), True),  # an endpoint in a region outside it
    ],
)
@pytest.mark.parametrize("policy", ["boundary"])
def test_a_direct_call_outside_its_scopes_boundary_is_a_violation(hosted, fake_provider, policy, run, column, crossed):
    with osm.run(run):
        served_as(fake_provider, column)
    (chat,) = chat_spans(hosted)
    kinds = ("boundary_crossed",) if crossed else ()
    # A violation, not a degradation: the call served as asked, its mode and its run's stay primary.
    assert Call("none", "primary", None, kinds) == call_signals(chat)
    counted = hosted.counts(
        names.METRIC_CLIENT_VIOLATIONS, names.POLICY_SCOPE, names.VIOLATION_KIND, names.GEN_AI_PROVIDER_NAME
    )
    assert ({(f"run:{run}", "boundary_crossed", column.sdk): 1} if crossed else {}) == counted
    assert {("primary",): 1} == hosted.counts(names.METRIC_AGENT_RUNS, names.DEGRADATION_MODE)


# ---------------------------------------------------------------- nested runs
NESTED = f'[runs."nightly"]\npermitted_models = ["{ASKED}"]\n'


@pytest.mark.parametrize("policy", ["nested"])
def test_a_run_without_a_table_is_judged_by_the_run_around_it(hosted, fake_provider, policy):
    """The rule walks outward: the inner run has no table, the outer one's judges the call; the
    outside-policy substitution counts in both runs, and the one incident in the outer run."""
    with osm.run("nightly"), osm.run("step-3"):
        served_as(fake_provider, Column("anthropic", ASKED, "claude-haiku-4-5"))
    (chat,) = chat_spans(hosted)
    assert (Call("outside_policy", "degraded", "substitution", ("model_outside_policy",)), "run:nightly") == (
        call_signals(chat),
        chat.attributes[names.POLICY_SCOPE],
    )
    runs = hosted.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME, names.DEGRADATION_MODE)
    assert {("nightly", "degraded"): 1, ("step-3", "degraded"): 1} == runs
    assert {("nightly",): 1} == hosted.counts(names.METRIC_SILENT_INCIDENTS, names.AGENT_RUN_NAME)
    (outer,) = hosted.spans("invoke_agent nightly")
    (inner,) = hosted.spans("invoke_agent step-3")
    assert ("run:nightly", "run:nightly") == (
        outer.attributes[names.POLICY_SCOPE],
        inner.attributes[names.POLICY_SCOPE],
    )
    (event,) = [e for e in outer.events if e.name == names.EVENT_SILENT_INCIDENT]
    assert ("degraded", "outside_policy") == tuple(event.attributes[names.SILENT_INCIDENT_CAUSE])


@pytest.mark.parametrize("policy", ["nested"])
def test_an_agent_span_without_an_agent_name_is_looked_up_by_its_span_name(hosted, fake_provider, policy):
    """Semconv names an agent span ``invoke_agent {gen_ai.agent.name}``: a framework that sets the
    span name and not the attribute still reaches its ``[runs]`` table."""
    with HOST.start_as_current_span("invoke_agent nightly", attributes={names.GEN_AI_OPERATION_NAME: "invoke_agent"}):
        served_as(fake_provider, Column("anthropic", ASKED, "claude-haiku-4-5"))
    (chat,) = chat_spans(hosted)
    assert "run:nightly" == chat.attributes[names.POLICY_SCOPE]
    assert "outside_policy" == chat.attributes[names.SUBSTITUTION]


def test_a_tool_run_names_its_tool(telemetry):
    with RunScope("tickets/summarise", tool=("tickets", "summarise")) as tool_run, osm.run("triage") as run:
        assert (("tickets", "summarise"), None) == (tool_run.tool, run.tool)
    for bad in (("tickets",), ["tickets", "summarise"], ("tickets", 3), "tickets/summarise"):
        with pytest.raises(TypeError, match="tool must be a"):
            RunScope("tickets/summarise", tool=bad)


ALL_POLICIES = {**RUN_POLICIES, **POLICIES, "boundary": BOUNDARY, "nested": NESTED}
assert len(ALL_POLICIES) == len(RUN_POLICIES) + len(POLICIES) + 1  # one "no policy", the same in both
