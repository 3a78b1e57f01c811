"""The outcome of a sampling request's own run, from how the request ended.

A host-side sampling request that no run owns is a run of its own (``docs/telemetry.md`` "Runs");
its ``agent.run.outcome`` is its ending's group (``names.OUTCOMES``):

==============================================  ==========  =====================================
ending (``names.ENDINGS``)                      outcome     why
==============================================  ==========  =====================================
``completed``                                   completed   the task was done
``names.DECISION_ENDINGS`` (``policy.denied``,  denied      a decision not to sample: the task
``user.denied``, ``policy.budget_exhausted``,               was declined before any model was
and every decline ending in that group)                     asked, so it was not attempted
``host.unsupported``                            denied      the host answers no sampling at all
                                                            (the SDK's default answer): nothing
                                                            was attempted
``refused``                                     failed      a model was asked and declined: the
                                                            task was attempted and not done
``cancelled``                                   failed      the request was withdrawn while it
                                                            was being answered: attempted, not
                                                            done (a user who gives up on a slow
                                                            fallback is a failure of that mode)
anything else (``model.unavailable``,           failed      attempted and not done
``timeout``, ``error``, an unknown ending)
==============================================  ==========  =====================================

``denied`` runs leave the completion rate (the five numbers); every other outcome is in it.
"""

from __future__ import annotations

from otel_sampling import names

# host.unsupported is no decision about one request (violations.DENIALS leaves it out), but its
# run attempted nothing either.
_DECISIONS = frozenset((*names.DECISION_ENDINGS, names.ENDING_HOST_UNSUPPORTED))


def request_run_outcome(ending: str) -> str:
    """``agent.run.outcome`` of the run a sampling request that ended with ``ending`` is on its own:
    ``completed``, ``denied`` or ``failed`` (the table above)."""
    if ending == names.ENDING_COMPLETED:
        return names.OUTCOME_COMPLETED
    if ending in _DECISIONS:
        return names.OUTCOME_DENIED
    return names.OUTCOME_FAILED
