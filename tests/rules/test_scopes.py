"""The scope rule (otel_sampling/rules/scopes.py, docs/telemetry.md "Policy scopes"): which policy
table judges a provider call made outside a sampling request, and what such a call violates."""

from __future__ import annotations

import pytest

from otel_sampling import names
from otel_sampling.policy import Policy, ServerPolicy
from otel_sampling.rules.scopes import RunFacts, label, scope_of, violations
from otel_sampling.rules.values import Ending, Usage
from otel_sampling.rules.verdict import CallSummary, CallVerdict

TOOL_TABLE = ServerPolicy(primary_model="tool-model")
SERVER_TABLE = ServerPolicy(primary_model="server-model")
RUN_TABLE = ServerPolicy(primary_model="run-model")
OUTER_TABLE = ServerPolicy(primary_model="outer-model")
DEFAULT_TABLE = ServerPolicy(primary_model="default-model")

EVERY_TABLE = Policy(
    servers={"tickets": SERVER_TABLE},
    prices={},
    tools={("tickets", "summarise"): TOOL_TABLE},
    runs={"tickets/summarise": RUN_TABLE, "triage": RUN_TABLE, "nightly": OUTER_TABLE},
    default=DEFAULT_TABLE,
)

SUMMARISE = RunFacts("tickets/summarise", ("tickets", "summarise"))
LOOKUP = RunFacts("tickets/lookup", ("tickets", "lookup"))


def chosen(policy: Policy, *runs: RunFacts) -> str | None:
    found = scope_of(policy, runs)
    return found.label if found is not None else None


class TestWhichScope:
    """First match wins: the innermost run first (its tool table, its server's table, its own run
    table), then the runs around it, then the default, then no policy."""

    def test_a_server_tool_run_is_judged_by_its_tool_table_first(self):
        assert "tool:tickets/summarise" == chosen(EVERY_TABLE, SUMMARISE)

    def test_a_tool_without_a_table_is_judged_by_its_servers_table(self):
        assert "server:tickets" == chosen(EVERY_TABLE, LOOKUP)

    def test_a_tool_of_a_server_without_tables_is_judged_by_its_run_name(self):
        policy = Policy(servers={}, prices={}, runs={"tickets/summarise": RUN_TABLE})
        assert "run:tickets/summarise" == chosen(policy, SUMMARISE)

    def test_a_run_is_judged_by_its_name(self):
        assert "run:triage" == chosen(EVERY_TABLE, RunFacts("triage"))

    def test_the_innermost_run_with_a_table_decides(self):
        assert "run:triage" == chosen(EVERY_TABLE, RunFacts("triage"), RunFacts("nightly"))
        assert "run:nightly" == chosen(EVERY_TABLE, RunFacts("step-3"), RunFacts("nightly"))

    def test_a_run_name_never_matches_a_server_table(self):
        """Only a server's tool run reads the servers' tables: a run named like a server does not."""
        assert "default" == chosen(EVERY_TABLE, RunFacts("tickets"))

    def test_a_call_in_no_covered_run_is_judged_by_the_default(self):
        assert "default" == chosen(EVERY_TABLE, RunFacts("step-3"))
        assert "default" == chosen(EVERY_TABLE)

    def test_without_a_table_there_is_no_scope(self):
        assert None is chosen(Policy(servers={}, prices={}), RunFacts("triage"), SUMMARISE)
        assert None is chosen(Policy(servers={"tickets": SERVER_TABLE}, prices={}), RunFacts("triage"))

    def test_the_scope_carries_its_table_and_a_reference_covered_by_it(self):
        found = scope_of(EVERY_TABLE, (SUMMARISE,))
        assert found is not None
        assert TOOL_TABLE is found.policy
        assert ((), None, "tool-model", True, "tool:tickets/summarise", None) == found.reference


@pytest.mark.parametrize(
    ("kind", "parts", "value"),
    [
        ("server", ("tickets",), "server:tickets"),
        ("tool", ("tickets", "summarise"), "tool:tickets/summarise"),
        ("run", ("triage",), "run:triage"),
        ("default", (), "default"),
    ],
)
def test_labels(kind, parts, value):
    assert value == label(kind, *parts)


def summary(provider: str = "anthropic", address: str | None = "api.eu.example.com", failed: bool = False):
    region = {"api.eu.example.com": "eu", "api.us.example.com": "us"}.get(address or "")
    ending = Ending("error", "overloaded_error") if failed else Ending("completed", None)
    return CallSummary(provider, address, region, "m", "m", ending, Usage(), None)


PRIMARY = CallVerdict("primary", (), "none")
OUTSIDE = CallVerdict("degraded", ("substitution",), "outside_policy")
BOUNDED = ServerPolicy(permitted_providers=("anthropic",), permitted_regions=("eu",))


class TestViolations:
    """What a call outside a sampling request violates against its scope's table."""

    def test_a_call_inside_the_boundary_as_permitted_violates_nothing(self):
        assert () == violations(BOUNDED, summary(), PRIMARY)

    def test_an_outside_policy_model(self):
        assert ("model_outside_policy",) == violations(BOUNDED, summary(), OUTSIDE)

    @pytest.mark.parametrize(
        "call",
        [
            summary(provider="openai"),  # a provider the scope does not permit
            summary(address="api.us.example.com"),  # an endpoint in a region it does not permit
            summary(address="api.elsewhere.example.com"),  # an endpoint of no known region
            summary(address=None),  # no endpoint known: not shown to be inside
        ],
    )
    def test_the_boundary_crossed(self, call):
        assert ("boundary_crossed",) == violations(BOUNDED, call, PRIMARY)

    def test_both_at_once(self):
        assert ("model_outside_policy", "boundary_crossed") == violations(BOUNDED, summary("openai"), OUTSIDE)

    def test_a_scope_without_a_boundary_has_none_to_cross(self):
        assert () == violations(ServerPolicy(), summary("openai", None), PRIMARY)

    def test_a_failed_call_served_nothing_and_violates_nothing(self):
        assert () == violations(BOUNDED, summary("openai", failed=True), OUTSIDE)


def test_the_kinds_are_the_violation_vocabulary():
    assert {names.VIOLATION_MODEL_OUTSIDE_POLICY, names.VIOLATION_BOUNDARY_CROSSED} <= set(names.VIOLATIONS)
