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
    return lines


if __name__ == "__main__":
    sys.exit(main())
