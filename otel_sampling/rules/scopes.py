"""Which policy scope judges a provider call, and what a call outside a sampling request violates. Pure rules.

A policy file scopes models, providers and regions (``primary_model``, ``permitted_models``,
``permitted_providers``, ``permitted_regions``) to four kinds of table (``docs/configuration.md``);
one rule picks the scope of a provider call, first match wins:

1. the sampling request the call runs in: its server's table ``[servers."<name>"]``, as the
   request itself is judged (:mod:`otel_sampling.records.sampling` reads it once, as the request
   starts; a server with no table: no policy);
2. else the innermost run it is made in, walking outward through the runs it is nested in; for
   each run, in order:

   * a server's ``tools/call`` run (``Run.tool`` is ``(server, tool)``): the tool's table
     ``[servers."<server>".tools."<tool>"]``, then its server's table ``[servers."<server>"]``;
   * any run: ``[runs."<its name>"]``, its name being the name given to ``otel_sampling.run(name)``
     or a framework agent span's ``gen_ai.agent.name`` (:func:`scope_of`'s ``runs``);

3. else ``[default]``;
4. else no policy (the no-policy verdicts).

The scope that decided is recorded as ``otel_sampling.policy.scope``: ``server:<name>``,
``tool:<server>/<tool>``, ``run:<name>`` or ``default`` (:func:`label`); absent without one.

A call outside a sampling request is judged against its scope's :class:`Reference` (no hints: the
model the call asked for is the reference), and shows these violations
(``names.VIOLATIONS``; a sampling request's own are :mod:`otel_sampling.rules.servers`'):

* ``model_outside_policy``: its substitution verdict is ``outside_policy``;
* ``boundary_crossed``: it served from a provider outside the scope's ``permitted_providers`` or
  from an endpoint whose region (``[endpoints]``) is outside its ``permitted_regions`` (an endpoint
  with no known region is outside, :func:`otel_sampling.rules.servers.crossed_boundary`).

A failed call served nothing and violates nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from otel_sampling import names
from otel_sampling.policy import Policy, ServerPolicy
from otel_sampling.rules.servers import crossed_boundary
from otel_sampling.rules.verdict import CallSummary, CallVerdict, Reference

SERVER, TOOL, RUN, DEFAULT = "server", "tool", "run", "default"


class RunFacts(NamedTuple):
    """What the rule reads of one run: the name its ``[runs]`` table is looked up by, and
    ``(server, tool)`` for a server's ``tools/call`` run (None for any other run)."""

    name: str
    tool: tuple[str, str] | None = None


class Scope(NamedTuple):
    """The scope that judges a call: its ``otel_sampling.policy.scope`` value, its table, and the
    :class:`Reference` a call is judged against (carrying the label)."""

    label: str
    policy: ServerPolicy
    reference: Reference


def label(kind: str, *parts: str) -> str:
    """``otel_sampling.policy.scope`` of a scope: ``server:<name>``, ``tool:<server>/<tool>``,
    ``run:<name>``, ``default``."""
    return kind if kind == DEFAULT else f"{kind}:{'/'.join(parts)}"


def scope(scope_label: str, table: ServerPolicy) -> Scope:
    """A :class:`Scope` of ``table``: its reference has no hints, the table's permitted and primary
    models, and is covered by a policy."""
    return Scope(
        scope_label,
        table,
        Reference((), table.permitted_models, table.primary_model, True, scope_label, table.primary_effort),
    )


def scope_of(policy: Policy, runs: Iterable[RunFacts]) -> Scope | None:
    """The scope of a call made outside a sampling request, in ``runs`` (innermost first; empty: in
    no run): rules 2 to 4 of the module docstring. None: no table covers it."""
    for run in runs:
        if run.tool is not None:
            server, tool = run.tool
            table = policy.tools.get(run.tool)
            if table is not None:
                return scope(label(TOOL, server, tool), table)
            table = policy.servers.get(server)
            if table is not None:
                return scope(label(SERVER, server), table)
        table = policy.runs.get(run.name)
        if table is not None:
            return scope(label(RUN, run.name), table)
    return scope(DEFAULT, policy.default) if policy.default is not None else None


def violations(table: ServerPolicy, call: CallSummary, judged: CallVerdict) -> tuple[str, ...]:
    """The violations a call judged against ``table`` shows (module docstring): none when it failed.
    ``call.region`` is the region ``[endpoints]`` gives its endpoint (None: unknown)."""
    if call.failed:
        return ()
    found = []
    if judged.substitution == names.SUBSTITUTION_OUTSIDE_POLICY:
        found.append(names.VIOLATION_MODEL_OUTSIDE_POLICY)
    region = call.region
    if crossed_boundary(
        ((call.provider, call.address),), table.permitted_providers, table.permitted_regions, lambda _: region
    ):
        found.append(names.VIOLATION_BOUNDARY_CROSSED)
    return tuple(found)
