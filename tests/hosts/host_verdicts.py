"""The verdict fields of one scenario on one host: what each expects, what was observed, whether they agree.

Each field reads one thing from what the instrumented host exported (its spans and its last OTLP
metrics export) or printed, and compares it with the scenario's ``Expected`` (host_scenarios.py),
which comes from what the fake provider was told to serve. ``Check.ok`` is the test's assertion;
``Check.want`` / ``Check.got`` are the report's cells.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from host_runs import Observation
from host_scenarios import DECLINED_NOT_ERROR, SERVER_VERSION, TOOL, Expected

from otel_sampling import names


@dataclass(frozen=True)
class Check:
    want: str
    got: str
    ok: bool


def _show(value: object) -> str:
    if value is None or value == () or value == []:
        return "—"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _equal(want: object, got: object) -> Check:
    return Check(_show(want), _show(got), _show(want) == _show(got))


def _attribute(obs: Observation, key: str) -> Any:
    span = obs.sampling
    return None if span is None else span["attributes"].get(key)


def _ending_ok(want: str, got: object) -> bool:
    if want == DECLINED_NOT_ERROR:
        return got not in (None, names.ENDING_ERROR, names.ENDING_COMPLETED)
    return got == want


# ---------------------------------------------------------------- the fields
def spans(obs: Observation, exp: Expected | None) -> Check:
    """One sampling span per request, every provider call a child of it (none when nothing was asked)."""
    sampling, calls = obs.sampling_spans, obs.chat_spans
    if exp is None:
        return Check(
            "0 sampling spans, 0 calls",
            f"{len(sampling)} sampling spans, {len(calls)} calls",
            not sampling and not calls,
        )
    under = [c for c in calls if len(sampling) == 1 and c["parent_span_id"] == sampling[0]["span_id"]]
    got = f"{len(sampling)} sampling span{'s' if len(sampling) != 1 else ''}, {len(under)}/{len(calls)} calls under it"
    return Check("1 sampling span, every call under it", got, len(sampling) == 1 and len(under) == len(calls))


def ending(obs: Observation, exp: Expected) -> Check:
    got = _attribute(obs, names.SAMPLING_ENDING)
    return Check(exp.ending, _show(got), _ending_ok(exp.ending, got))


def served(obs: Observation, exp: Expected) -> Check:
    return _equal(exp.served, _attribute(obs, names.GEN_AI_RESPONSE_MODEL))


def call_model(obs: Observation, exp: Expected) -> Check:
    """The provider's response model on the last provider call that did not fail (its ``chat`` span)."""
    answered = [c for c in obs.chat_spans if c["status_code"] != "ERROR"]
    answered.sort(key=lambda c: c["end_ns"])
    return _equal(exp.served, answered[-1]["attributes"].get(names.GEN_AI_RESPONSE_MODEL) if answered else None)


def host_reported(obs: Observation) -> str | None:
    """The model the host put in its CreateMessageResult, as the server echoed it in the tool result
    (``ok: <model>|<stopReason>|<text>``) of the uninstrumented run; None without a result."""
    output = obs.bare.output or ""
    if not output.startswith("ok: ") or output.count("|") < 2:
        return None
    return output[len("ok: ") :].split("|", 1)[0]


def reported(obs: Observation, exp: Expected) -> Check:
    """The model the host reported is kept as ``otel_sampling.sampling.reported_model`` whenever a result
    came back naming one, whether or not it is the model the provider served (docs/telemetry.md):
    the report is the host's own, as the server echoed it in the uninstrumented run."""
    return _equal(host_reported(obs), _attribute(obs, names.SAMPLING_REPORTED_MODEL))


def substitution(obs: Observation, exp: Expected) -> Check:
    return _equal(exp.substitution, _attribute(obs, names.SAMPLING_SUBSTITUTION))


def mode(obs: Observation, exp: Expected) -> Check:
    return _equal(exp.mode, _attribute(obs, names.DEGRADATION_MODE))


def reasons(obs: Observation, exp: Expected) -> Check:
    return _equal(exp.reasons, _attribute(obs, names.DEGRADATION_REASON))


def reported_models(report: str) -> tuple[str, ...]:
    """The models a host's report names: pydantic-ai's ``FallbackModel`` reports ``fallback:`` and its
    members' names joined by ``,`` (its ``model_name``), naming its candidates; any other report one model."""
    prefix = "fallback:"
    return tuple(report[len(prefix) :].split(",")) if report.startswith(prefix) else (report,)


def violations(obs: Observation, exp: Expected) -> Check:
    """The scenario's violations, and ``reported_model_mismatch`` when the host's report (its
    uninstrumented run's) names none of the model the provider served."""
    span = obs.sampling
    kinds = sorted(
        e["attributes"].get(names.SAMPLING_VIOLATION_KIND)
        for e in (span["events"] if span else ())
        if e["name"] == names.EVENT_SAMPLING_VIOLATION
    )
    want = list(exp.violations)
    report = host_reported(obs)
    if report is not None and exp.served is not None and exp.served not in reported_models(report):
        want.append(names.VIOLATION_REPORTED_MODEL_MISMATCH)
    return _equal(sorted(want), kinds)


def run_outcome(obs: Observation, exp: Expected) -> Check:
    """The host did one task (one tool call): one run, with the outcome of the request inside it."""
    runs = obs.metric_points(names.METRIC_AGENT_RUNS)
    got = (
        ", ".join(
            f"{p['attributes'].get(names.AGENT_RUN_NAME)}={p['attributes'].get(names.AGENT_RUN_OUTCOME)}"
            + (f" x{p['value']}" if p["value"] != 1 else "")
            for p in runs
        )
        or "no run"
    )
    ok = (
        len(runs) == 1
        and runs[0]["value"] == 1
        and runs[0]["attributes"].get(names.AGENT_RUN_OUTCOME) == exp.run_outcome
    )
    return Check(f"one run, {exp.run_outcome}", got, ok)


def tool(obs: Observation, exp: Expected) -> Check:
    return _equal(TOOL, _attribute(obs, names.SAMPLING_TOOL_NAME))


def joins_tool_trace(obs: Observation, exp: Expected) -> Check:
    """The sampling span is in the trace of the tool call that triggered it: a span of the host, its
    framework or the mcp SDK (not ours) that names the tool, with the sampling span's trace id."""
    want = f"in the trace of the {TOOL} call"
    span = obs.sampling
    if span is None:
        return Check(want, "no single sampling span", False)
    calls = [s for s in obs.instrumented.spans if s["scope"] != names.SCOPE_NAME and TOOL in s["name"]]
    joined = sorted({s["name"] for s in calls if s["trace_id"] == span["trace_id"]})
    if joined:
        return Check(want, f"in the trace of {', '.join(joined)}", True)
    others = sorted({s["name"] for s in calls})
    return Check(want, f"a trace of its own (tool spans: {', '.join(others) or 'none'})", False)


def server(obs: Observation, exp: Expected) -> Check:
    """Which server asked, and over what: ``mcp.server.name``, ``mcp.server.version``, ``network.transport``."""
    keys = (names.MCP_SERVER_NAME, names.MCP_SERVER_VERSION, names.NETWORK_TRANSPORT)
    want = (obs.host.family.server, SERVER_VERSION, names.TRANSPORT_PIPE)
    return _equal(" ".join(want), " ".join(_show(_attribute(obs, k)) for k in keys))


def requests_metric(obs: Observation, exp: Expected) -> Check:
    """``otel_sampling.sampling.requests``: one request counted, with the expected ending, substitution and mode."""
    points = obs.metric_points(names.METRIC_SAMPLING_REQUESTS)
    keys = (names.SAMPLING_ENDING, names.SAMPLING_SUBSTITUTION, names.DEGRADATION_MODE)
    got = (
        "; ".join(
            "/".join(str(p["attributes"].get(k)) for k in keys) + (f" x{p['value']}" if p["value"] != 1 else "")
            for p in points
        )
        or "none counted"
    )
    want = f"{exp.ending}/{exp.substitution}/{exp.mode}"
    ok = (
        len(points) == 1
        and points[0]["value"] == 1
        and _ending_ok(exp.ending, points[0]["attributes"].get(names.SAMPLING_ENDING))
        and points[0]["attributes"].get(names.SAMPLING_SUBSTITUTION) == exp.substitution
        and points[0]["attributes"].get(names.DEGRADATION_MODE) == exp.mode
    )
    return Check(want, got, ok)


def output(obs: Observation, exp: Expected | None) -> Check:
    """The host's own output under opentelemetry-instrument equals its output without it."""
    bare, instrumented = obs.bare.output, obs.instrumented.output
    return Check(f"= bare run: {_show(bare)}", _show(instrumented), bare is not None and bare == instrumented)


# Field name -> (label in the report, check). The order is the report's.
FIELDS: dict[str, tuple[str, Callable[[Observation, Any], Check]]] = {
    "spans": ("spans", spans),
    "ending": ("ending", ending),
    "served": ("served model (sampling span)", served),
    "call_model": ("provider's model (chat span)", call_model),
    "reported": ("reported model", reported),
    "substitution": ("substitution", substitution),
    "mode": ("mode", mode),
    "reasons": ("degradation.reason", reasons),
    "violations": ("violations", violations),
    "run": ("run outcome", run_outcome),
    "tool": ("tool name", tool),
    "trace": ("trace", joins_tool_trace),
    "server": ("server (name version transport)", server),
    "metric": ("otel_sampling.sampling.requests", requests_metric),
    "output": ("host output", output),
}
# Fields that still apply when the server never asked (the host declared no sampling capability).
FIELDS_WHEN_NOT_ASKED = ("spans", "output")


def fields_for(exp: Expected | None) -> tuple[str, ...]:
    """The fields asserted for one cell: all of them, less those the scenario defines no value for."""
    if exp is None:
        return FIELDS_WHEN_NOT_ASKED
    skip = {"run"} if exp.run_outcome is None else set()
    if exp.served is None:
        skip.add("call_model")
    return tuple(f for f in FIELDS if f not in skip)
