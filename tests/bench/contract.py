"""What each element of the telemetry contract costs, in instructions per use (``instructions.py --contract``).

``python contract.py CONFIG --count N --marks LIB`` runs under callgrind with the bench's telemetry
set-up (``worker.telemetry``) and CONFIG's instrumentation (``bare`` or ``otel-sampling``: ours' span
processor sees every span); each element runs in windows of N and 2N uses between the marks,
after warm-up uses (so its metric series already exist, as in a long-running host). Prints the
element names as JSON; the counts are in callgrind's dumps. :func:`table` renders the results.

Windows as in ``worker.count``: settling uses first, then N and 2N. The elements: a counter
point and a histogram point by label count (outside any span, and in the context of a sampled
span, where the SDK's default ``trace_based`` exemplar filter keeps an exemplar); a span by
attribute count, and with a link; the request fingerprint and an identity store look-up and write;
one label value bounded; a local root span under ours' span processor, an agent's span (``gen_ai.operation.name``
``invoke_agent``: an implicit run, its bookkeeping and three points) and the same span as a ``chat``
(no run).

Then the signals of each unit, measured under ``bare`` only (pure rules and metric points: ours' span
processor sees none of them), on inputs shaped as ``tests/rules/`` builds them: the one verdict of a
provider call (:func:`~otel_sampling.rules.verdict.judge_call`, with no policy and under a scope's
policy), of a sampling request (``judge_request``) and of a run (``judge_run``); the policy scope
look-up (:func:`~otel_sampling.rules.scopes.scope_of`, a policy of five tables, found on the outer of
two runs) and a call's violations against it; a provider call's inference points
(:func:`~otel_sampling.records.provider_call.record_inference`, a create call and a stream of 10
chunks) in each ``OTEL_SEMCONV_STABILITY_OPT_IN`` emission (:mod:`otel_sampling.semconv_mode`: v1.41's
names, the newest, both); the checks of what the fallback breaks
(:func:`~otel_sampling.rules.call_checks.judge`) on an answer with 1 tool call and with 10, on a
structured-output answer, and on one tool call with about 100 kB of arguments (a JSON text past
``MAX_CHECKED_CHARS``, one just under it, and anthropic's decoded ``input``), and the points and span
attributes of the 1-call answer (``record_signals``); the repeated-tool-call fingerprint
(:func:`~otel_sampling.records.ledger.tool_call_fingerprint`) of small and of 100 kB arguments, and
the repeat verdict (:func:`~otel_sampling.rules.repeats.judge_repeat`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import calls  # noqa: F401 - puts tests/ on the path (sampling_server)
from worker import CONFIGS, SETTLE, Marks, telemetry

_RUN, _NO_RUN = "local root span, invoke_agent (a run under ours)", "local root span, chat (no run)"

# Label sets shaped like the contract's: 9 is otel_sampling.sampling.requests with a degradation reason.
_LABELS = {
    "mcp.server.name": "sampling-test-server",
    "otel_sampling.sampling.path": "rpc",
    "otel_sampling.sampling.ending": "completed",
    "otel_sampling.sampling.substitution": "none",
    "degradation.mode": "primary",
    "otel_sampling.sampling.include_context.requested": "thisServer",
    "otel_sampling.sampling.include_context.granted": "unreported",
    "gen_ai.response.model": "claude-sonnet-5-5-20261001",
    "degradation.reason": "substitution",
}
LABEL_COUNTS = (1, 2, 4, 6, 9)
ATTRIBUTE_COUNTS = (0, 8, 17)


def _labels(count: int) -> dict[str, str]:
    return dict(list(_LABELS.items())[:count])


def _attributes(count: int) -> dict[str, Any]:
    return {f"bench.attribute.{i}": f"value {i}" for i in range(count)}


# What the fallback breaks: a tool with a three-property-ish schema (tests/rules/test_call_checks.py's
# WEATHER), and one that exports rows, for arguments of about 100 kB.
_WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"],
}
_ROWS = {
    "type": "object",
    "properties": {
        "rows": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"id": {"type": "integer"}, "text": {"type": "string"}},
                "required": ["id", "text"],
            },
        }
    },
    "required": ["rows"],
}
_ROW_TEXT = "x" * 40  # a row is about 60 characters of JSON


def _rows(count: int) -> dict[str, Any]:
    return {"rows": [{"id": i, "text": _ROW_TEXT} for i in range(count)]}


# Rows in about 100 kB of arguments, and the most whose JSON text is still parsed (MAX_CHECKED_CHARS).
_LARGE_ROWS, _PARSED_ROWS = 1_600, 1_000
# A provider call's inference metric labels (records/provider_call.py: operation, provider, both
# models, server, mode) and the labels of its signals' points (provider, served model, mode).
_CALL_LABELS = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "anthropic",
    "gen_ai.request.model": "claude-sonnet-4-5",
    "gen_ai.response.model": "claude-sonnet-4-5-20250929",
    "server.address": "api.anthropic.com",
    "degradation.mode": "primary",
}
_SIGNAL_LABELS = {
    key: _CALL_LABELS[key] for key in ("gen_ai.provider.name", "gen_ai.response.model", "degradation.mode")
}
_EMISSIONS = (
    ("", "v1.41 names (the default)"),  # OTEL_SEMCONV_STABILITY_OPT_IN unset
    ("gen_ai_latest_experimental", "newest names (gen_ai_latest_experimental)"),
    ("gen_ai/dup", "both (gen_ai/dup)"),
)
_STREAM_GAPS = 10


def _inference(shape: str, emission: str) -> str:
    return f"inference points of {shape}, {emission}"


_CREATE, _STREAM = "a create call", f"a stream of {_STREAM_GAPS + 1} chunks"


def _verdicts() -> dict[str, Callable[[], Any]]:
    """The one verdict of a call, a request and a run; the policy scope look-up and a call's violations."""
    from otel_sampling.policy import Policy, ServerPolicy
    from otel_sampling.rules import scopes
    from otel_sampling.rules.values import Ending, Usage
    from otel_sampling.rules.verdict import (
        NO_POLICY,
        CallSummary,
        Reference,
        RequestFacts,
        judge_call,
        judge_request,
        judge_run,
    )

    call = CallSummary(
        provider="anthropic",
        address="api.anthropic.com",
        region="us",
        requested="claude-sonnet-4-5",
        served="claude-sonnet-4-5-20250929",
        ending=Ending("completed"),
        usage=Usage(1200, 300, 0, 0),
        usd=0.0081,
    )
    table = ServerPolicy(
        primary_model="claude-sonnet-4-5",
        permitted_models=("claude-sonnet-4-5", "claude-haiku-4-5"),
        permitted_providers=("anthropic",),
        permitted_regions=("us",),
    )
    policy = Policy(
        servers={"tickets": ServerPolicy(primary_model="claude-haiku-4-5")},
        prices={},
        tools={("tickets", "summarise"): ServerPolicy(primary_model="claude-haiku-4-5")},
        runs={"triage": table, "nightly": ServerPolicy(permitted_models=("claude-opus-4-6",))},
        default=ServerPolicy(permitted_providers=("anthropic", "openai")),
    )
    runs = (scopes.RunFacts("step-3"), scopes.RunFacts("triage"))  # a step of a named run
    found = scopes.scope_of(policy, runs)
    assert found is not None and found.label == "run:triage"
    reference, judged = found.reference, judge_call(call, found.reference, False)
    request = RequestFacts(served="claude-sonnet-4-5-20250929", requested="claude-sonnet-4-5", failed=False)
    hinted = Reference(("claude-sonnet",), table.permitted_models, table.primary_model, True, "server:tickets")
    return {
        "call verdict (judge_call), no policy": lambda: judge_call(call, NO_POLICY, False),
        "call verdict (judge_call), under a scope's policy": lambda: judge_call(call, reference, False),
        "request verdict (judge_request), under its server's policy": lambda: judge_request(request, hinted),
        "run verdict (judge_run)": lambda: judge_run(
            degraded=False, outside_policy=False, disclosed=False, inside_open_run=False
        ),
        "policy scope look-up (scope_of), 5 tables, found on the outer of 2 runs": lambda: scopes.scope_of(
            policy, runs
        ),
        "a call's violations against its scope (violations)": lambda: scopes.violations(table, call, judged),
    }


def _emissions(context: Any) -> dict[str, Callable[[], Any]]:
    """A provider call's inference points in each emission of the GenAI metric names."""
    from opentelemetry import metrics

    from otel_sampling import names, semconv_mode
    from otel_sampling.metrics import InferenceInstruments, call_points_of
    from otel_sampling.records.provider_call import record_inference
    from otel_sampling.rules.values import Usage

    usage = Usage(1200, 300, 0, 0)  # anthropic reports both cache counts, 0 included
    # The call's point attributes, built once: ours keeps them per admitted label set (Instruments.call_points).
    points = call_points_of(dict(_CALL_LABELS), names.ENDING_COMPLETED)
    gaps = [0.01] * _STREAM_GAPS
    found: dict[str, Callable[[], Any]] = {}
    for index, (value, emission) in enumerate(_EMISSIONS):
        selected = semconv_mode.emission({names.ENV_SEMCONV_STABILITY_OPT_IN: value})
        # A meter per emission: the same instrument names on one meter would be one instrument.
        instruments = InferenceInstruments(metrics.get_meter(f"bench.contract.emission.{index}"), selected)
        for shape, first_chunk, chunk_gaps in ((_CREATE, None, []), (_STREAM, 0.2, gaps)):

            def record(
                instruments: InferenceInstruments = instruments,
                first_chunk: float | None = first_chunk,
                chunk_gaps: list[float] = chunk_gaps,
            ) -> None:
                record_inference(
                    instruments,
                    points,
                    duration=1.5,
                    first_chunk=first_chunk,
                    chunk_gaps=chunk_gaps,
                    usage=usage,
                    context=context,
                )

            found[_inference(shape, emission)] = record
    return found


def _checks(context: Any) -> dict[str, Callable[[], Any]]:
    """The checks of what the fallback breaks, their points, and the repeated-tool-call fingerprint."""
    import json

    from opentelemetry import metrics

    from otel_sampling.metrics import SignalInstruments
    from otel_sampling.records.ledger import tool_call_fingerprint
    from otel_sampling.records.provider_call import record_signals
    from otel_sampling.rules.call_checks import MAX_CHECKED_CHARS, Answer, Asked, ToolCall, judge
    from otel_sampling.rules.repeats import judge_repeat

    offered = Asked({"get_weather": _WEATHER, "export_rows": _ROWS, "web_search": None})
    cities = ("Paris", "Lyon", "Nantes", "Lille", "Nice", "Brest", "Dijon", "Metz", "Tours", "Caen")
    one = Answer((ToolCall("get_weather", '{"city": "Paris", "days": 3}'),))
    ten = Answer(tuple(ToolCall("get_weather", json.dumps({"city": city, "days": 3})) for city in cities))
    structured = Asked({}, structured=True, schema=_WEATHER)
    text = Answer(texts=('{"city": "Paris", "days": 3}',))
    large, parsed = _rows(_LARGE_ROWS), _rows(_PARSED_ROWS)
    large_text, parsed_text = json.dumps(large), json.dumps(parsed)
    assert len(parsed_text) <= MAX_CHECKED_CHARS < 100_000 <= len(large_text)

    def judged(answer: Answer, asked: Asked = offered, reasons: tuple[str, ...] = ("tool_calls",)) -> Any:
        return judge(asked, answer, False, reasons, 1200, None)

    signals = judged(one)
    instruments = SignalInstruments(metrics.get_meter("bench.contract.signals"))
    found: dict[str, Callable[[], Any]] = {
        "tool-call checks (judge), 1 tool call": lambda: judged(one),
        "tool-call checks (judge), 10 tool calls": lambda: judged(ten),
        "structured-output check (judge), a 30-character answer": lambda: judged(text, structured, ("stop",)),
        "tool-call checks' span attributes and point (record_signals), 1 tool call": lambda: record_signals(
            instruments, signals, _SIGNAL_LABELS, context, {}
        ),
    }
    large_kb, parsed_kb = f"{len(large_text) // 1000} kB", f"{len(parsed_text) // 1000} kB"
    for label, arguments in (
        (f"{large_kb} JSON text (past the cap: not parsed)", large_text),
        (f"{parsed_kb} JSON text (parsed, checked)", parsed_text),
        (f"{large_kb} decoded input (anthropic, checked)", large),
    ):
        answer = Answer((ToolCall("export_rows", arguments),))
        found[f"tool-call check (judge), 1 tool call, {label}"] = lambda answer=answer: judged(answer)
    key = b"k" * 32
    for label, arguments in (("small arguments", {"city": "Paris", "days": 3}), (f"{large_kb} arguments", large)):
        found[f"tool call fingerprint (repeats), {label}"] = lambda arguments=arguments: tool_call_fingerprint(
            "get_weather", arguments, key
        )
    found["repeat verdict (judge_repeat)"] = lambda: judge_repeat("get_weather", ("send_email",), None)
    return found


def elements(config: str) -> dict[str, Callable[[], Any]]:
    """Element name -> one use of it."""
    import mcp_types as types
    from opentelemetry import metrics, trace
    from opentelemetry.trace import Link, SpanKind

    from otel_sampling import names
    from otel_sampling.metrics import BoundedLabel
    from otel_sampling.records.ledger import IdentityStore, fingerprint
    from sampling_server import _messages, _params

    meter = metrics.get_meter("bench.contract")
    tracer = trace.get_tracer("bench.contract")
    counter = meter.create_counter("bench.counter")
    histogram = meter.create_histogram(
        "bench.histogram", explicit_bucket_boundaries_advisory=list(names.MCP_DURATION_BUCKETS)
    )
    sampled = trace.set_span_in_context(tracer.start_span("bench.sampled"))
    found: dict[str, Callable[[], Any]] = {}
    for count in LABEL_COUNTS:
        labels, plural = _labels(count), "s" if count > 1 else ""
        found[f"counter point, {count} label{plural}"] = lambda labels=labels: counter.add(1, labels)
        found[f"histogram point, {count} label{plural}"] = lambda labels=labels: histogram.record(0.1, labels)
    found["counter point, 9 labels, in a sampled span"] = lambda: counter.add(1, _labels(9), context=sampled)
    found["histogram point, 2 labels, in a sampled span"] = lambda: histogram.record(0.1, _labels(2), context=sampled)
    for count in ATTRIBUTE_COUNTS:

        def span(attributes: Mapping[str, Any] = _attributes(count)) -> None:
            started = tracer.start_span("bench.span", kind=SpanKind.CLIENT)
            started.set_attributes(attributes)
            started.end()

        found[f"span start + end, {count} attributes"] = span
    link = [Link(tracer.start_span("bench.linked").get_span_context())]
    found["span start + end, 0 attributes, 1 link"] = lambda: tracer.start_span(
        "bench.span", kind=SpanKind.CLIENT, links=link
    ).end()

    # The bench's sampling request (tests/sampling_server.py, tool "sample" with its defaults).
    params = types.CreateMessageRequestParams(messages=_messages(), **_params("claude-sonnet", "thisServer"))
    key = b"k" * 32
    found["request fingerprint"] = lambda: fingerprint(params, key)
    store = IdentityStore(10_000, 3600)
    value = fingerprint(params, key)

    def look_up_and_write() -> None:
        store.get(value)
        store.put(value, None)  # type: ignore[arg-type] - the store keeps any object

    found["identity store get + put"] = look_up_and_write
    bounded = BoundedLabel(100)
    found["label value bounded (seen before)"] = lambda: bounded.value("claude-sonnet-5-5-20261001")
    # The same span twice, one attribute apart in value: an agent's span starts an implicit run, a chat does not.
    agent = {names.GEN_AI_OPERATION_NAME: names.OPERATION_INVOKE_AGENT}
    chat = {names.GEN_AI_OPERATION_NAME: names.OPERATION_CHAT}
    found[_RUN] = lambda: tracer.start_span("bench.root", kind=SpanKind.INTERNAL, attributes=agent).end()
    found[_NO_RUN] = lambda: tracer.start_span("bench.root", kind=SpanKind.INTERNAL, attributes=chat).end()
    if config == "bare":  # pure rules and points: ours' span processor sees none of them
        found.update(_verdicts())
        found.update(_emissions(sampled))
        found.update(_checks(sampled))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", choices=("bare", "otel-sampling"))
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--marks", required=True)
    args = parser.parse_args(argv)
    telemetry()
    CONFIGS[args.config].install()
    found = elements(args.config)
    for name, use in found.items():
        mark = Marks(args.marks, name)
        for _ in range(args.warmup):
            use()
        mark("start")
        for window, size in enumerate((SETTLE, args.count, 2 * args.count)):
            for _ in range(size):
                use()
            mark(str(window))
        mark.stop()
    print(json.dumps({"elements": list(found)}))
    return 0


def table(run_counted_contract: Callable[[str, int], dict[str, float]], n: int = 50) -> list[str]:
    """The contract-cost table: every element under bare; the two span-processor rows as ours - bare."""
    bare = run_counted_contract("bare", n)
    ours = run_counted_contract("otel-sampling", n)
    lines = ["| contract element | instructions per use |", "|---|---:|"]
    for name, value in bare.items():
        if name in (_RUN, _NO_RUN):
            continue
        lines.append(f"| {name} | {value / 1000:,.1f}k |")
    processor = ours[_NO_RUN] - bare[_NO_RUN]
    run = ours[_RUN] - bare[_RUN] - processor
    lines += [
        f"| ours' span processor on a span that starts no run (a local root `chat` span) | {processor / 1000:,.1f}k |",
        f"| an implicit run (a local root `invoke_agent` span under ours: its bookkeeping and three points) | "
        f"{run / 1000:,.1f}k |",
    ]
    both, default = _EMISSIONS[2][1], _EMISSIONS[0][1]
    for shape in (_CREATE, _STREAM):
        extra = bare[_inference(shape, both)] - bare[_inference(shape, default)]
        lines.append(f"| gen_ai/dup's extra over the default, {shape} | {extra / 1000:,.1f}k |")
    return lines


if __name__ == "__main__":
    sys.exit(main())
