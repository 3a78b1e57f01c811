"""With the peer anthropic instrumentations installed beside ours, we still emit exactly one span
per call and the peers keep working.

Runs a small host under ``opentelemetry-instrument`` in the separate ``.venv-peers`` (made by
``make venv-peers``: our package plus ``opentelemetry-instrumentation-anthropic`` (traceloop) and
``openinference-instrumentation-anthropic``), against the fake provider of this test session.
``make test`` and ``make test-peers`` point ``OTEL_SAMPLING_PEERS_PYTHON`` at that venv's Python.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from harness.limits import HANG_S

PEERS_PYTHON = os.environ.get("OTEL_SAMPLING_PEERS_PYTHON", "")
pytestmark = pytest.mark.subprocess  # each test runs the peers venv's Python
OURS = "otel_sampling"
PEER_SCOPES = ("opentelemetry.instrumentation.anthropic", "openinference.instrumentation.anthropic")

HOST = """
import json, os, sys
import anthropic, wrapt
from anthropic._base_client import SyncAPIClient
from anthropic.resources.messages.messages import Messages
from opentelemetry import trace
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

class Collect(SpanExporter):
    spans = []
    def export(self, spans):
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS

trace.get_tracer_provider().add_span_processor(SimpleSpanProcessor(Collect()))
c = anthropic.Anthropic(base_url=os.environ["FAKE_URL"], api_key="sk-fake", max_retries=0)
kw = dict(model="claude-req", max_tokens=64, messages=[{"role": "user", "content": "hi"}])
got = {}
got["create"] = c.messages.create(**kw).model
got["stream"] = [e.type for e in c.messages.create(**kw, stream=True)][-1]
with c.messages.stream(**kw) as s:
    got["manager"] = s.get_final_message().usage.output_tokens
try:
    c.messages.create(**kw, extra_headers={"x-fake-scenario": "status=529"})
except anthropic.OverloadedError as e:
    got["error"] = e.type
print(json.dumps({
    "got": got,
    "ours_wrapped": isinstance(SyncAPIClient.__dict__["request"], wrapt.FunctionWrapper),
    "peers_wrapped": isinstance(Messages.__dict__["create"], wrapt.FunctionWrapper),
    "spans": [{"name": s.name, "scope": s.instrumentation_scope.name, "id": s.context.span_id,
               "parent": s.parent.span_id if s.parent else None, "status": s.status.status_code.name,
               "attributes": {k: v for k, v in s.attributes.items() if isinstance(v, (str, int))}}
              for s in Collect.spans],
}), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def host_run(fake_provider):
    python = Path(PEERS_PYTHON)
    if not PEERS_PYTHON or not python.exists():
        pytest.skip("the peers venv is not built (make test-peers builds .venv-peers)")
    instrument = python.parent / "opentelemetry-instrument"
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ANTHROPIC_"))}
    environment.update(
        {
            "FAKE_URL": fake_provider.url,
            "OTEL_TRACES_EXPORTER": "none",
            "OTEL_METRICS_EXPORTER": "none",
            "OTEL_LOGS_EXPORTER": "none",
            "OTEL_SERVICE_NAME": "peers-test",
        }
    )
    proc = subprocess.run(
        [str(instrument), str(python), "-c", HOST], env=environment, capture_output=True, text=True, timeout=HANG_S
    )
    if proc.returncode != 0:
        pytest.skip(f"the peers could not run with the installed SDK versions: {proc.stderr[-2000:]}")
    *log, report = proc.stderr.strip().splitlines()
    return {**json.loads(report), "log": "\n".join(log)}


def test_missing_sdks_are_skipped_quietly(host_run):
    # The peers venv has no openai and no mcp: our instrumentors for them load nothing, say nothing.
    assert host_run["log"] == ""


def test_the_application_gets_its_answers(host_run):
    assert host_run["got"] == {
        "create": "claude-req",
        "stream": "message_stop",
        "manager": 5,
        "error": "overloaded_error",
    }


def test_one_span_of_ours_per_call(host_run):
    assert host_run["ours_wrapped"]
    ours = [s for s in host_run["spans"] if s["scope"] == OURS]
    assert [s["name"] for s in ours] == ["chat claude-req"] * 4
    assert [s["attributes"].get("gen_ai.usage.output_tokens") for s in ours] == [5, 5, 5, None]
    assert [s["attributes"].get("otel_sampling.ending") for s in ours] == [
        "completed",
        "completed",
        "completed",
        "model.unavailable",
    ]
    # anthropic's own span, on by default, is our child in every call: never a sibling of ours
    ids = {s["id"] for s in ours}
    native = [s for s in host_run["spans"] if s["scope"] == "com.anthropic.sdk.python"]
    assert len(native) == 4 and all(s["parent"] in ids for s in native)


def test_the_peers_still_trace(host_run):
    assert host_run["peers_wrapped"]  # both peers wrap Messages.create; we do not
    scopes = {s["scope"] for s in host_run["spans"]}
    for peer in PEER_SCOPES:
        assert any(scope.startswith(peer) for scope in scopes), (peer, scopes)
