"""The demo report's lines for MCP sampling in depth: context scope, violations, grants, stalls,
connection facts and what the server itself saw. Built from the host's scrape, the received spans
and the server's own metrics; every line names the signal it comes from."""

from __future__ import annotations

from collections import Counter

from prometheus_client.parser import text_string_to_metric_families

from otel_sampling import names
from otel_sampling.mixin.prometheus_names import label_name, metric_name

REQUESTS = metric_name(names.METRIC_SAMPLING_REQUESTS, names.UNIT_REQUEST, counter=True)
VIOLATIONS = metric_name(names.METRIC_SAMPLING_VIOLATIONS, names.UNIT_VIOLATION, counter=True)
GRANTS = metric_name(names.METRIC_SAMPLING_GRANTS, names.UNIT_GRANT, counter=True)
GRANTED_USD = metric_name(names.METRIC_SAMPLING_GRANTED_USD, names.UNIT_USD, counter=True)
STALLS = metric_name(names.METRIC_SAMPLING_STALLS, names.UNIT_REQUEST, counter=True)
IN_FLIGHT = metric_name(names.METRIC_SAMPLING_IN_FLIGHT, names.UNIT_REQUEST)
REQUESTED, GRANTED, KIND, SERVER = (
    label_name(a)
    for a in (
        names.SAMPLING_INCLUDE_CONTEXT_REQUESTED,
        names.SAMPLING_INCLUDE_CONTEXT_GRANTED,
        names.SAMPLING_VIOLATION_KIND,
        names.MCP_SERVER_NAME,
    )
)
EXPECTED_VIOLATIONS = (
    names.VIOLATION_CONTEXT_ABOVE_CEILING,
    names.VIOLATION_SCOPE_WIDENED,
    names.VIOLATION_DECISION_FLIPPED,
    names.VIOLATION_REROUTED_AFTER_DENIAL,
    names.VIOLATION_MODEL_OUTSIDE_POLICY,
    names.VIOLATION_GRANT_WITHOUT_EXHAUSTION,
)


def _series(metrics_text: str, name: str) -> list[tuple[dict[str, str], float]]:
    return [
        (s.labels, s.value)
        for family in text_string_to_metric_families(metrics_text)
        for s in family.samples
        if s.name == name
    ]


def lines(metrics_text: str, spans: list[dict], server_requests: Counter) -> tuple[list[str], list[str]]:
    """Report lines and the problems found (a signal the scenario drove that is missing)."""
    scopes: Counter = Counter()
    for labels, value in _series(metrics_text, REQUESTS):
        scopes[(labels[REQUESTED], labels[GRANTED])] += int(value)
    violations: Counter = Counter()
    for labels, value in _series(metrics_text, VIOLATIONS):  # one series per (kind, server)
        violations[labels[KIND]] += int(value)
    grants = sum(v for _, v in _series(metrics_text, GRANTS))
    granted_usd = sum(v for _, v in _series(metrics_text, GRANTED_USD))
    stalls = sum(v for _, v in _series(metrics_text, STALLS))
    in_flight = sum(v for _, v in _series(metrics_text, IN_FLIGHT))

    host = [s for s in spans if s["name"] == names.SPAN_SAMPLING and s["kind"] == "SERVER"]
    server = [s for s in spans if s["name"] == names.SPAN_SAMPLING and s["kind"] == "CLIENT"]
    events = [(s, e) for s in spans for e in s.get("events", ())]
    stall_events = [e["attributes"] for _, e in events if e["name"] == names.EVENT_SAMPLING_STALL]
    linked = [
        e
        for _, e in events
        if e["name"] == names.EVENT_SAMPLING_VIOLATION and names.SAMPLING_EARLIER_TRACE_ID in e["attributes"]
    ]
    grant_events = [e["attributes"] for _, e in events if e["name"] == names.EVENT_SAMPLING_GRANT]
    transports = Counter(s["attributes"].get(names.NETWORK_TRANSPORT) for s in host)
    versions = Counter(s["attributes"].get(names.MCP_SERVER_VERSION) for s in host)
    sessions = Counter(s["attributes"].get(names.MCP_SESSION_ID, "none (stdio has no session id)") for s in host)
    resets = Counter(
        s["attributes"].get(names.SAMPLING_BUDGET_RESETS_AT)
        for s in host
        if s["attributes"].get(names.SAMPLING_ENDING) == names.ENDING_BUDGET_EXHAUSTED
    )

    out = [
        "",
        "Context scope (requested -> granted)  "
        + ", ".join(f"{r} -> {g}: {n}" for (r, g), n in sorted(scopes.items())),
        f"Violations ({VIOLATIONS})  "
        + ", ".join(f"{k} {n}" for k, n in sorted(violations.items()))
        + f"; {len(linked)} violation events name the earlier request's trace",
        f"Grants: {int(grants)} ({GRANTS}), ${granted_usd:.2f} granted ({GRANTED_USD}); events by "
        + ", ".join(sorted({str(e.get(names.SAMPLING_GRANT_GRANTED_BY)) for e in grant_events})),
        f"Stalls: {int(stalls)} ({STALLS}); events name "
        + ", ".join(
            sorted({f"{e.get(names.MCP_SERVER_NAME)}/{e.get(names.SAMPLING_TOOL_NAME, '?')}" for e in stall_events})
        )
        + f"; in flight now: {int(in_flight)}",
        f"Budget endings with resetsAt: {dict(resets)}",
        f"Connection: {names.NETWORK_TRANSPORT} {dict(transports)}, {names.MCP_SERVER_VERSION} {dict(versions)}, "
        f"{names.MCP_SESSION_ID} {dict(sessions)}",
        f"Server side ({names.METRIC_SAMPLING_SERVER_REQUESTS}, ticket-server's own telemetry, "
        f"{len(server)} CLIENT spans): " + ", ".join(f"{p} {e} {n}" for (p, e), n in sorted(server_requests.items())),
    ]
    problems = [f"no '{kind}' violation was recorded" for kind in EXPECTED_VIOLATIONS if not violations[kind]]
    if not scopes.get(("allServers", "allServers")) or not any(
        g == names.INCLUDE_CONTEXT_UNREPORTED for _, g in scopes
    ):
        problems.append(f"granted scopes {dict(scopes)} lack a full grant or an unreported one")
    if not grants or not grant_events:
        problems.append("no grant was recorded")
    if not stalls or not stall_events:
        problems.append("no stall was recorded")
    if not linked:
        problems.append("no violation event names an earlier request")
    if names.TRANSPORT_PIPE not in transports:
        problems.append(f"network.transport {dict(transports)} lacks pipe")
    if not server_requests.get((names.PATH_MRTR, names.ENDING_UNANSWERED)) or not server_requests.get(
        (names.PATH_RPC, names.ENDING_COMPLETED)
    ):
        problems.append(f"server side {dict(server_requests)} lacks rpc completed or mrtr unanswered")
    if sum(server_requests.values()) != len(server):
        problems.append(f"{len(server)} server spans for {sum(server_requests.values())} server-side requests")
    return out, problems
