"""Cache-entry provenance: stamps from the real provider call that produced an answer, lookups by match."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import anthropic
import pytest

import otel_sampling as osm
from otel_sampling import names, provenance, state

POLICY = """
[endpoints."127.0.0.1"]
region = "eu"
"""
KEYS = (names.CACHE_LOOKUP_RESULT, names.CACHE_PROVENANCE_MODE, names.CACHE_PROVENANCE_MATCH)


@pytest.fixture
def endpoint_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY)
    monkeypatch.setenv(names.ENV_POLICY, str(path))


@pytest.fixture(autouse=True)
def no_degradation_left():
    yield
    for leftover in state.active_degradations():
        leftover.exit()


def _answer(fake_provider, model: str = "claude-sonnet-5-5") -> dict:
    """One task: a real provider call, then the stamp the host would store beside the answer."""
    client = anthropic.Anthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
    with osm.run("answer"):
        client.messages.create(model=model, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
        return provenance.stamp()


def test_a_stamp_names_the_configuration_that_produced_the_answer(endpoint_policy, instrumented, fake_provider):
    stamp = _answer(fake_provider)
    assert json.loads(json.dumps(stamp)) == stamp
    assert set(stamp) == set(provenance.FIELDS)
    assert {k: stamp[k] for k in ("model", "provider", "region", "mode")} == {
        "model": "claude-sonnet-5-5",
        "provider": "anthropic",
        "region": "eu",
        "mode": "primary",
    }
    assert re.fullmatch(r"[0-9a-f]{12}", stamp["config_id"])
    created = dt.datetime.fromisoformat(stamp["created_at"].replace("Z", "+00:00"))
    assert abs((dt.datetime.now(dt.timezone.utc) - created).total_seconds()) < 3600


def test_a_degraded_answer_served_after_recovery_is_a_mismatch(endpoint_policy, instrumented, fake_provider):
    with osm.degraded("model", reason="primary overloaded", owner="oncall", expires_at="2099-01-01T00:00:00Z"):
        degraded_stamp = _answer(fake_provider, "claude-haiku-5-5")
    primary_stamp = _answer(fake_provider)
    assert degraded_stamp["mode"] == "degraded"

    with osm.run("later, recovered"):
        client = anthropic.Anthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
        client.messages.create(model="claude-sonnet-5-5", max_tokens=8, messages=[{"role": "user", "content": "x"}])
        assert provenance.lookup(hit=True, stamp=degraded_stamp) == "mismatch"
        assert provenance.lookup(hit=True, stamp=primary_stamp) == "match"
        assert provenance.lookup(hit=True, stamp=None) == "unstamped"
        assert provenance.lookup(hit=True, stamp={"mode": "sideways"}) == "unstamped"  # not a stamp of ours
        assert provenance.lookup(hit=False) == "unstamped"
    assert instrumented.counts(names.METRIC_CACHE_LOOKUPS, *KEYS) == {
        ("hit", "degraded", "mismatch"): 1,
        ("hit", "primary", "match"): 1,
        ("hit", "unstamped", "unstamped"): 2,
        ("miss", "unstamped", "unstamped"): 1,
    }
    (run_span,) = instrumented.spans("invoke_agent later, recovered")
    # the span keeps the last lookup's attributes
    assert [run_span.attributes[k] for k in KEYS] == ["miss", "unstamped", "unstamped"]


def test_a_policy_change_is_a_different_configuration(instrumented, fake_provider):
    stamp = _answer(fake_provider)
    assert provenance.lookup(hit=True, stamp={**stamp, "config_id": "0123456789ab"}) == "mismatch"


def test_bad_arguments():
    # the message names the argument, so an accidental TypeError deeper down does not pass
    with pytest.raises(TypeError, match="hit must be a bool, got str"):
        provenance.lookup(hit="yes")
    with pytest.raises(TypeError, match="provenance model must be a string, got int"):
        provenance.stamp(model=5)


@pytest.mark.parametrize(
    "stamp",
    [
        {"mode": ["primary"]},
        {"mode": {"a": 1}},
        {"mode": "primary", "model": 3, "region": ["eu"]},
        {"mode": "degraded", "config_id": "c" * 1_000_000},
        {1: 2},
        "primary",
        42,
    ],
)
def test_a_malformed_stamp_is_counted_with_bounded_labels(mcp_instrumented, stamp):
    match = osm.provenance.lookup(hit=True, stamp=stamp)
    assert match in (names.CACHE_MATCH, names.CACHE_MISMATCH, names.CACHE_UNSTAMPED)
    (point,) = mcp_instrumented.points(names.METRIC_CACHE_LOOKUPS)
    assert point.attributes[names.CACHE_PROVENANCE_MODE] in (*names.MODES, names.CACHE_UNSTAMPED)
