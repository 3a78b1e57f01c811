"""The outcome of a run, from how the sampling requests inside it ended.

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

A framework's agent span that no run owns (``invoke_agent``, ``invoke_workflow``) is a run of its
own too, and the requests inside it end before it does. Its framework does not know how they
ended: a tool whose sampling request failed comes back as a tool error that the agent's model
reads as data, and a refusal the host answered as a result looks like any answer, so the span
closes OK on a task that was not done (google-adk 2.13: ``McpTool`` marks only its
``execute_tool`` span for an ``isError`` result, and turns an MCP error into ``{"error": ...}``
for the model; ``invoke_workflow`` ends with its status unset).
When the host set no outcome itself, that run reads (:func:`agent_run_outcome`):

==============================================  ==========  =====================================
what happened inside                            outcome     why
==============================================  ==========  =====================================
the span's status is ERROR                      failed      the framework says the task failed
a request inside was ``failed`` (above)         failed      a model was asked and did not
                                                            deliver: like a degradation, one
                                                            such request marks the whole run
else a request inside was ``completed``         completed   what was asked for was delivered
                                                            (a denied request beside it was a
                                                            decision that worked)
else every request inside was ``denied``        denied      nothing was attempted
no request ended inside                         completed   nothing says otherwise
==============================================  ==========  =====================================

An explicit run (``otel_sampling.run``) is the host's own account of its task: it ends
``completed`` unless an exception leaves it or the host calls ``set_outcome`` (records/run.py).
"""

from __future__ import annotations

from collections.abc import Collection

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


def agent_run_outcome(failed: bool, requests: Collection[str]) -> str:
    """``agent.run.outcome`` of an agent span's run the host set no outcome for (the second table
    above): ``failed`` when the span's status is ERROR (``failed``) or a request inside failed,
    else ``completed`` when one completed or none ended inside, else ``denied``.

    ``requests`` holds the :func:`request_run_outcome` of every sampling request that ended inside
    the run (a set is enough: order and count do not matter)."""
    if failed or names.OUTCOME_FAILED in requests:
        return names.OUTCOME_FAILED
    if names.OUTCOME_COMPLETED in requests or not requests:
        return names.OUTCOME_COMPLETED
    return names.OUTCOME_DENIED
