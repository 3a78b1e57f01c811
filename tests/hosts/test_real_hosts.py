"""Real agent frameworks answering MCP sampling under ``opentelemetry-instrument``: is every verdict
the one a person reading the provider's answer would give? (``make test-hosts``.)

Each host (host_scenarios.HOSTS: pydantic-ai, the fastmcp 4 Client, mcp-use, google-adk (with
ADK's Anthropic model class, and with its Gemini one), langchain-mcp-adapters, and a fastmcp 4
Client answering with a LiteLLM Router; each in its venv under ``.venv-hosts/``, which ``make
venv-hosts`` builds) makes one tool call per scenario to a small MCP server that samples, its model client
pointed at the fake provider, which plays the scenario. Each scenario runs twice per host: bare,
and under ``opentelemetry-instrument`` exporting OTLP/HTTP to a local receiver; and once more
instrumented with no policy file (the ``-no_policy`` twin of each scenario, which reuses the bare
run). ``test_verdict`` asserts one field of the verdict (host_verdicts.FIELDS) per
cell; ``build/hosts-report.md`` gets the whole table (printed at the end of the run too).

The expected verdicts come from the scenario (``test_the_provider_played_the_scenario`` checks the
provider's request log agrees), never from what otel-sampling records. The cells that are wrong
today (``_WRONG_TODAY``) are ``xfail(strict=True)``, each naming the rule the observed verdict breaks
it: when a fix lands, its cells XPASS and fail the run; take them out of ``_WRONG_TODAY`` then.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from host_report import ReportPlugin
from host_runs import HostRunner, Observation, provider_served
from host_scenarios import (
    DECLINED_NOT_ERROR,
    HOSTS,
    SCENARIOS,
    Host,
    Scenario,
    expected_for,
    policy_toml,
)
from host_verdicts import FIELDS, fields_for

from harness.otlp_receiver import OTLPReceiver
from otel_sampling import names
from otel_sampling.testing.fake_provider import FakeProvider

pytestmark = [pytest.mark.hosts]

ROOT = Path(__file__).resolve().parents[2]
VENVS_VARIABLE = "OTEL_SAMPLING_HOSTS_VENVS"  # set by `make test-hosts`: then a missing venv is a failure

# (reason, hosts, scenarios, fields): every combination is a cell that is wrong today for that reason.
_ALL_HOSTS = tuple(host.name for host in HOSTS)
_WRONG_TODAY: tuple[tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = ()


def _known_failures() -> dict[tuple[str, str, str], str]:
    known: dict[tuple[str, str, str], str] = {}
    for reason, hosts, scenarios, fields in _WRONG_TODAY:
        for cell in itertools.product(scenarios, hosts, fields):
            known[cell] = f"{known[cell]} + {reason}" if cell in known else reason
    return known


# (scenario, host, field) -> why it is wrong today: the rule the observed verdict breaks.
KNOWN_FAILURES = _known_failures()


def _cells() -> Iterator[tuple[Scenario, Host]]:
    for scenario in SCENARIOS:
        for host in HOSTS:
            if scenario.applies_to(host):
                yield scenario, host


def _verdict_params() -> Iterator[Any]:
    for scenario, host in _cells():
        for field in fields_for(expected_for(scenario, host)):
            marks = []
            reason = KNOWN_FAILURES.get((scenario.name, host.name, field))
            if reason:
                marks.append(
                    pytest.mark.xfail(
                        strict=True,
                        reason=f"{reason} [an XPASS means the fix landed: take the cell out of _WRONG_TODAY]",
                    )
                )
            yield pytest.param(scenario, host, field, marks=marks, id=f"{scenario.name}-{host.name}-{field}")


class Suite:
    """The fake provider, the OTLP receiver and the runner for the session; each cell runs once."""

    def __init__(self, runner: HostRunner) -> None:
        self.runner = runner
        self.observations: dict[tuple[str, str], Observation] = {}
        self.seconds: dict[tuple[str, str], float] = {}

    def observe(self, scenario: Scenario, host: Host) -> Observation:
        key = (scenario.name, host.name)
        if key not in self.observations:
            start = time.monotonic()
            twin = self.observations.get((scenario.base, host.name)) if scenario.base else None
            self.observations[key] = self.runner.observe(host, scenario, twin.bare if twin else None)
            self.seconds[key] = time.monotonic() - start
        return self.observations[key]


@pytest.fixture(scope="session")
def suite(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Suite]:
    configured = os.environ.get(VENVS_VARIABLE)
    venvs = ROOT / (configured or ".venv-hosts")
    missing = [h.name for h in HOSTS if not (venvs / h.venv_name / "bin" / "opentelemetry-instrument").exists()]
    if missing:
        message = f"no host venv for {', '.join(missing)} under {venvs}: `make venv-hosts` builds them"
        if configured:
            pytest.fail(message)
        pytest.skip(message)
    policy = tmp_path_factory.mktemp("hosts") / "policy.toml"
    policy.write_text(policy_toml(), encoding="utf-8")
    with FakeProvider() as provider, OTLPReceiver() as receiver:
        suite = Suite(HostRunner(venvs, provider, receiver, policy))
        plugin = ReportPlugin(suite, KNOWN_FAILURES, ROOT / "build" / "hosts-report.md")
        request.config.pluginmanager.register(plugin, "otel-sampling-hosts-report")
        plugin.versions = {host.name: suite.runner.versions(host) for host in HOSTS}
        yield suite


@pytest.mark.parametrize(("scenario", "host"), [pytest.param(s, h, id=f"{s.name}-{h.name}") for s, h in _cells()])
def test_the_provider_played_the_scenario(suite: Suite, scenario: Scenario, host: Host) -> None:
    """The expected served model is what the provider's request log says it served, in both runs."""
    obs = suite.observe(scenario, host)
    expected = expected_for(scenario, host)
    want = expected.served if expected else None
    assert provider_served(obs.bare.requests) == want, obs.bare.requests
    assert provider_served(obs.instrumented.requests) == want, obs.instrumented.requests
    assert obs.bare.output is not None, obs.bare.stderr[-4000:]
    assert obs.instrumented.output is not None, obs.instrumented.stderr[-4000:]


@pytest.mark.parametrize(("scenario", "host", "field"), list(_verdict_params()))
def test_verdict(suite: Suite, scenario: Scenario, host: Host, field: str) -> None:
    obs = suite.observe(scenario, host)
    check = FIELDS[field][1](obs, expected_for(scenario, host))
    assert check.ok, f"{scenario.name} on {host.name}, {field}: want {check.want}, got {check.got}"


def test_every_known_failure_is_an_asserted_cell() -> None:
    """A ``_WRONG_TODAY`` entry for a cell no test asserts would never XPASS: it would hide nothing, silently."""
    asserted = {(s.name, h.name, f) for s, h in _cells() for f in fields_for(expected_for(s, h))}
    assert set(KNOWN_FAILURES) <= asserted, sorted(set(KNOWN_FAILURES) - asserted)


def test_every_expected_value_is_a_documented_value() -> None:
    """The expected verdicts use the closed value sets of docs/telemetry.md (a typo would read as a finding)."""
    for scenario, host in _cells():
        exp = expected_for(scenario, host)
        if exp is None:
            continue
        assert exp.ending in (*names.ENDINGS, DECLINED_NOT_ERROR), scenario.name
        assert exp.substitution in names.SUBSTITUTIONS, scenario.name
        assert exp.mode in names.MODES, scenario.name
        assert set(exp.reasons) <= set(names.DEGRADATION_REASONS), scenario.name
        assert exp.run_outcome in (*names.OUTCOMES, None), scenario.name
        assert set(exp.violations) <= set(names.VIOLATIONS), scenario.name
