"""The outcome of a run from the sampling requests inside it (``otel_sampling.rules.run_outcome``).

The rule (docs/telemetry.md "Runs"): a completion is ``completed``; a decision not to sample (the
``names.DECISION_ENDINGS`` group: a policy denial, the user's, an exhausted budget) is ``denied``,
the task declined before any model was asked; everything else, a refusal and a cancellation
included, is ``failed``, a task attempted and not done. A host that answers no sampling at all
(``host.unsupported``) attempted nothing: ``denied``.

A framework's agent span's run, when the host set no outcome: ``failed`` when the span's status
is ERROR or any request inside failed, else ``completed`` when one completed or none ended inside,
else (every request inside denied) ``denied``.
"""

from __future__ import annotations

import pytest

from otel_sampling import names
from otel_sampling.rules.run_outcome import agent_run_outcome, request_run_outcome


def test_a_completed_request_completes_its_run():
    assert request_run_outcome("completed") == "completed"


@pytest.mark.parametrize("ending", ["policy.denied", "user.denied", "policy.budget_exhausted"])
def test_a_decision_not_to_sample_is_a_denied_run(ending):
    """Declined before any model was asked: not attempted, so out of the completion rate."""
    assert request_run_outcome(ending) == "denied"


def test_every_ending_of_the_decision_group_is_denied():
    """A decline ending added to the group is denied with no change here."""
    assert {request_run_outcome(ending) for ending in names.DECISION_ENDINGS} == {"denied"}


def test_a_host_that_answers_no_sampling_is_a_denied_run():
    """The SDK's default answer (no sampling callback set): nothing was attempted."""
    assert request_run_outcome("host.unsupported") == "denied"


def test_a_refusal_is_a_failed_run():
    """A model was asked and declined: attempted, not done (not a decision of the host)."""
    assert request_run_outcome("refused") == "failed"


def test_a_cancelled_request_is_a_failed_run():
    """Withdrawn while being answered: attempted, not done."""
    assert request_run_outcome("cancelled") == "failed"


@pytest.mark.parametrize("ending", ["model.unavailable", "timeout", "error"])
def test_a_failure_is_a_failed_run(ending):
    assert request_run_outcome(ending) == "failed"


def test_an_ending_no_rule_names_is_a_failed_run():
    """An ending this version does not know is not taken for a completion or a decision."""
    assert request_run_outcome("something.new") == "failed"


def test_every_ending_has_one_of_the_three_outcomes():
    assert {request_run_outcome(ending) for ending in names.ENDINGS} == set(names.OUTCOMES)


# ---------------------------------------------------------------- an agent span's run
def test_an_agent_run_with_no_request_inside_is_completed():
    assert agent_run_outcome(False, ()) == "completed"


def test_an_agent_span_with_status_error_is_a_failed_run_whatever_its_requests():
    assert agent_run_outcome(True, {"completed"}) == "failed"
    assert agent_run_outcome(True, {"denied"}) == "failed"


@pytest.mark.parametrize(
    ("requests", "outcome"), [({"completed"}, "completed"), ({"failed"}, "failed"), ({"denied"}, "denied")]
)
def test_an_agent_run_with_one_request_inside_reads_its_outcome(requests, outcome):
    """The framework closed its span OK; the one request inside says how the task went."""
    assert agent_run_outcome(False, requests) == outcome


def test_one_failed_request_fails_the_agent_run():
    """Like a degradation, one request that was attempted and not done marks the whole run."""
    assert agent_run_outcome(False, {"completed", "failed"}) == "failed"
    assert agent_run_outcome(False, {"denied", "failed"}) == "failed"


def test_a_denied_request_beside_a_completed_one_leaves_the_agent_run_completed():
    """The denial was a decision that worked; something was asked for and delivered."""
    assert agent_run_outcome(False, {"denied", "completed"}) == "completed"
