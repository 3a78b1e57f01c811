"""The demo's second server, desk-server (``desk_server.py``), which calls its own model: driven
through a primary outage, and reported from the server's own telemetry.

A small client (this module; no sampling callback: a client that answers no sampling, as hosts will
once sampling is gone) calls desk-server's tools over stdio, on a handshake-era (``legacy``) and a
2026-07-28 (``auto``) connection. The server runs under ``opentelemetry-instrument`` with the
server-side instrumentor and the anthropic one: each tool call is a run ``desk-server/<tool>`` and
its provider calls roll up into it. Its spans and metrics (deltas over OTLP/HTTP: a stdio server
is gone before anyone could scrape it) go to the demo's OTLP receiver, and :func:`report` reads
the runs' verdicts and incidents from them, beside the sampling ones of the host.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from desk_server import FALLBACK_MODEL, PRIMARY_MODEL, SERVER_NAME
from otel_sampling import names
from server_telemetry import exporting_env, launcher

HERE = Path(__file__).resolve().parent
OUTAGE = "status=529,no_retry"  # the primary is overloaded (anthropic's 529)
TICKET = "Printer on floor 3 prints blank pages since the driver update."
FLUSH_WAIT_S = 60  # the server processes export their last points as they exit


@dataclass(frozen=True)
class Call:
    """One tool call and what the server's telemetry must show for it."""

    tool: str
    session: str  # "legacy" or "auto"
    scenario: str  # the primary's provider state (draft_reply)
    model: str  # the model that answers
    reason: str | None  # the run's degradation.reason (None: primary)


CALLS = (
    Call("draft_reply", "legacy", "", PRIMARY_MODEL, None),
    Call("draft_reply", "legacy", "", PRIMARY_MODEL, None),
    Call("draft_reply", "legacy", OUTAGE, FALLBACK_MODEL, names.REASON_FAILOVER),  # the outage starts
    Call("draft_reply", "legacy", OUTAGE, FALLBACK_MODEL, names.REASON_FAILOVER),
    Call("summarize", "legacy", "", FALLBACK_MODEL, names.REASON_SERVER_MODEL),  # the client answers no sampling
    Call("draft_reply", "auto", OUTAGE, FALLBACK_MODEL, names.REASON_FAILOVER),
    Call("draft_reply", "auto", "", PRIMARY_MODEL, None),  # the primary is back
    Call("summarize", "auto", "", FALLBACK_MODEL, names.REASON_SERVER_MODEL),  # 2026-07-28: no back-channel
)


def server_parameters(provider_url: str, traces_endpoint: str, metrics_endpoint: str) -> StdioServerParameters:
    """desk_server.py under ``opentelemetry-instrument``: the server-side and anthropic instrumentors,
    spans and delta metrics to the receiver, the demo's policy (its prices and the tools' scopes)."""
    env = {
        **exporting_env(SERVER_NAME, traces_endpoint, metrics_endpoint),
        "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "otel_sampling_mcp,otel_sampling_openai",
        names.ENV_POLICY: str(HERE / "policy.toml"),
        "ANTHROPIC_BASE_URL": provider_url,
    }
    return StdioServerParameters(command=launcher(), args=[sys.executable, str(HERE / "desk_server.py")], env=env)


async def drive(params: StdioServerParameters) -> list[str]:
    """Make every call of :data:`CALLS`, one connection per session; the tools' answers."""
    answers = []
    for session in dict.fromkeys(call.session for call in CALLS):
        async with Client(params, mode=session) as client:
            for call in (c for c in CALLS if c.session == session):
                args: dict[str, Any] = {"ticket": TICKET}
                if call.tool == "draft_reply":
                    args["provider_scenario"] = call.scenario
                result = await client.call_tool(call.tool, args)
                answers.append(result.content[0].text)
    return answers


def _ours(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [item for item in items if item.get("service_name") == SERVER_NAME]


def _sum(metrics: list[dict[str, Any]], name: str, *keys: str) -> Counter[tuple[Any, ...]]:
    found: Counter[tuple[Any, ...]] = Counter()
    for metric in metrics:
        if metric["name"] == name:
            for point in metric["points"]:
                found[tuple(point["attributes"].get(k) for k in keys)] += point["value"]
    return found


def _provider_calls(spans: list[dict[str, Any]]) -> int:
    return sum(s["scope"] == names.SCOPE_NAME and s["name"].startswith(f"{names.OPERATION_CHAT} ") for s in spans)


def wait_for_runs(receiver: Any) -> None:
    """Until the server processes' delta points count every call's run and their spans every
    provider call the calls made (or :data:`FLUSH_WAIT_S`): spans and points arrive apart."""
    # draft_reply through the outage asks the primary, then the fallback; every other call asks once
    calls = sum(2 if c.tool == "draft_reply" and c.scenario else 1 for c in CALLS)
    deadline = time.monotonic() + FLUSH_WAIT_S
    while time.monotonic() < deadline:
        runs = sum(_sum(_ours(list(receiver.metrics)), names.METRIC_AGENT_RUNS).values())
        if runs >= len(CALLS) and _provider_calls(_ours(list(receiver.spans))) >= calls:
            return
        time.sleep(0.2)


def report(metrics: list[dict[str, Any]], spans: list[dict[str, Any]], answers: list[str]) -> tuple[str, list[str]]:
    """The runs of desk-server by name (runs, degraded, completed, silent incidents, cost per
    completed run by mode; the policy scope, the substitution verdicts of the calls that served
    and the reasons) and the sampling requests it answered from its own model."""
    metrics, spans = _ours(metrics), _ours(spans)
    runs = _sum(metrics, names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME, names.DEGRADATION_MODE, names.AGENT_RUN_OUTCOME)
    incidents = _sum(metrics, names.METRIC_SILENT_INCIDENTS, names.AGENT_RUN_NAME)
    cost = _sum(metrics, names.METRIC_AGENT_RUN_COST, names.AGENT_RUN_NAME, names.DEGRADATION_MODE)
    violations = _sum(metrics, names.METRIC_CLIENT_VIOLATIONS, names.POLICY_SCOPE, names.VIOLATION_KIND)
    reasons: dict[str, Counter[str]] = {}
    run_scopes: dict[str, Counter[str | None]] = {}
    for span in spans:
        name = span["attributes"].get(names.AGENT_RUN_NAME)
        if name and span["attributes"].get(names.GEN_AI_OPERATION_NAME) == names.OPERATION_INVOKE_AGENT:
            run_scopes.setdefault(name, Counter())[span["attributes"].get(names.POLICY_SCOPE)] += 1
            for reason in span["attributes"].get(names.DEGRADATION_REASON) or ():
                reasons.setdefault(name, Counter())[reason] += 1
    # The provider calls that served (no error.type), by the policy scope that judged them: each
    # carries its scope, so no span tree is walked (a client that propagates its trace context
    # puts the calls under mcp's own server span).
    substitutions: dict[str | None, Counter[str]] = {}
    for span in spans:
        attributes = span["attributes"]
        ours = span["scope"] == names.SCOPE_NAME and span["name"] != names.SPAN_SAMPLING  # not the SDK's own span
        if ours and attributes.get(names.GEN_AI_OPERATION_NAME) == names.OPERATION_CHAT:
            verdicts = substitutions.setdefault(attributes.get(names.POLICY_SCOPE), Counter())
            if names.ERROR_TYPE not in attributes:
                verdicts[attributes.get(names.SUBSTITUTION)] += 1
    sampling = [s for s in spans if s["name"] == names.SPAN_SAMPLING and s["kind"] == "CLIENT"]
    server_model = [
        s for s in sampling if names.REASON_SERVER_MODEL in (s["attributes"].get(names.DEGRADATION_REASON) or ())
    ]

    lines = [
        "",
        f"Direct calls: {SERVER_NAME} calls its own model (anthropic SDK, {PRIMARY_MODEL} then {FALLBACK_MODEL}); "
        "each tool call is a run of the server instrumentor",
    ]
    header = ["runs", "degraded", "completed", "silent", "$/completed primary", "$/completed degraded"]
    rows = []
    for name in sorted({key[0] for key in runs}):
        of = {key[1:]: n for key, n in runs.items() if key[0] == name}
        completed = {
            mode: sum(n for (m, o), n in of.items() if m == mode and o == names.OUTCOME_COMPLETED)
            for mode in (names.MODE_PRIMARY, names.MODE_DEGRADED)
        }
        per_completed = [
            f"${cost[(name, mode)] / completed[mode]:.6f}" if completed[mode] and (name, mode) in cost else "-"
            for mode in (names.MODE_PRIMARY, names.MODE_DEGRADED)
        ]
        rows.append(
            [
                name,
                int(sum(of.values())),
                int(sum(n for (m, _), n in of.items() if m == names.MODE_DEGRADED)),
                int(sum(completed.values())),
                int(incidents[(name,)]),
                *per_completed,
            ]
        )
    width = max([len("Runs by name")] + [len(r[0]) + 2 for r in rows]) + 1
    widths = [max(len(h), *(len(str(r[i + 1])) for r in rows)) + 2 for i, h in enumerate(header)]
    lines.append("Runs by name".ljust(width) + "".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
    for row in rows:
        cells = "".join(str(v).rjust(w) for v, w in zip(row[1:], widths, strict=True))
        lines.append(("  " + row[0]).ljust(width) + cells)
    for name in sorted(run_scopes):
        scope = ", ".join(str(label) for label in run_scopes[name])
        verdicts = Counter[str]()
        for label in run_scopes[name]:
            verdicts.update(substitutions.get(label, Counter()))
        lines.append(
            f"  {name}: policy scope {scope}; substitution of the calls that served "
            f"{dict(sorted(verdicts.items()))}; degradation.reason {dict(sorted(reasons.get(name, Counter()).items()))}"
        )
    lines.append(f"  otel_sampling.client.violations: {dict(violations) or 'none'}")
    lines.append(
        f"Sampling requests {SERVER_NAME} sent: {len(sampling)}, endings "
        f"{dict(sorted(Counter(s['attributes'].get(names.SAMPLING_ENDING) for s in sampling).items()))}; answered "
        f"from its own model (degradation.reason server_model on the span): {len(server_model)}"
    )

    problems = []
    expected_runs: Counter[tuple[str, str]] = Counter()
    expected_reasons: dict[str, Counter[str]] = {}
    for call in CALLS:
        name = f"{SERVER_NAME}/{call.tool}"
        expected_runs[(name, names.MODE_DEGRADED if call.reason else names.MODE_PRIMARY)] += 1
        if call.reason:
            expected_reasons.setdefault(name, Counter())[call.reason] += 1
    counted_runs = Counter({(k[0], k[1]): int(n) for k, n in runs.items() if k[2] == names.OUTCOME_COMPLETED})
    if +counted_runs != +expected_runs:
        problems.append(f"{SERVER_NAME} runs {dict(counted_runs)} differ from the calls made {dict(expected_runs)}")
    if reasons != expected_reasons:
        problems.append(f"{SERVER_NAME} run reasons {reasons} differ from the calls' {expected_reasons}")
    # Each tool has a table of its own in policy.toml: its runs and its calls are judged there.
    expected_scopes = {f"tool:{SERVER_NAME}/{call.tool}" for call in CALLS}
    for name in run_scopes:
        if set(run_scopes[name]) != {f"tool:{name}"}:
            problems.append(f"{name}: runs in scopes {dict(run_scopes[name])}, expected tool:{name}")
    if set(substitutions) != expected_scopes:
        problems.append(f"{SERVER_NAME} provider calls judged in scopes {sorted(map(str, substitutions))}")
    within = {names.SUBSTITUTION_NONE, names.SUBSTITUTION_WITHIN_POLICY}
    outside = {name: dict(c) for name, c in substitutions.items() if set(c) - within}
    if outside or violations:
        problems.append(f"{SERVER_NAME} served outside its tools' policy: {outside}, violations {dict(violations)}")
    expected_incidents = sum(1 for call in CALLS if call.reason)
    if sum(incidents.values()) != expected_incidents:
        problems.append(f"{sum(incidents.values()):.0f} {SERVER_NAME} silent incidents, expected {expected_incidents}")
    expected_server_model = sum(call.reason == names.REASON_SERVER_MODEL for call in CALLS)
    if len(server_model) != expected_server_model:
        problems.append(f"{len(server_model)} sampling spans say server_model, expected {expected_server_model}")
    models = [answer.split(" by ", 1)[-1].split(" ", 1)[0] for answer in answers]
    if models != [call.model for call in CALLS]:
        problems.append(f"{SERVER_NAME} answered from {models}, expected {[call.model for call in CALLS]}")
    return "\n".join(lines), problems
