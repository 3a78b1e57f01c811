"""Running one host script for one scenario, bare and under ``opentelemetry-instrument``, and what
came out of it: the host's own output, the spans and metrics it exported over OTLP/HTTP, and the
requests the fake provider answered.

Runs in the test process (the main venv); each host runs in its own venv (``.venv-hosts/<host>``),
its MCP server a stdio child of the host (the SDK's default environment: no OTEL_* variables,
so only the host is instrumented). Every process gets loopback addresses only, and an HTTP(S)
proxy that does not exist for anything else, so nothing leaves the machine.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from host_scenarios import OUTPUT_PREFIX, Host, Scenario, scenario_header

from harness.limits import HANG_S
from harness.otlp_receiver import OTLPReceiver
from otel_sampling import names
from otel_sampling.testing.fake_provider import FakeProvider

HERE = Path(__file__).parent
# Ids the fake provider makes up per answer, and object addresses in reprs: they differ between
# any two runs, instrumented or not.
_VOLATILE = (
    (re.compile(r"\b(req|msg|chatcmpl|call|toolu|resp|fc)[_-][0-9a-f]{24}\b"), r"\1_<id>"),
    (re.compile(r"\b0x[0-9a-f]{6,}\b"), "0x<addr>"),
)


def normalised(output: str) -> str:
    for pattern, replacement in _VOLATILE:
        output = pattern.sub(replacement, output)
    return output


@dataclass
class Run:
    """One host process: what it printed and, when instrumented, what it exported."""

    command: list[str]
    returncode: int
    output: str | None  # the host's HOST-OUTPUT line (normalised), None when it printed none
    stderr: str
    requests: list[dict[str, Any]]  # the fake provider's log entries for this run
    spans: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)  # the last export of each metric


@dataclass
class Observation:
    host: Host
    scenario: Scenario
    bare: Run
    instrumented: Run

    # ------------------------------------------------------------------ the spans
    @property
    def sampling_spans(self) -> list[dict[str, Any]]:
        return [
            s for s in self.instrumented.spans if s["scope"] == names.SCOPE_NAME and s["name"] == names.SPAN_SAMPLING
        ]

    @property
    def chat_spans(self) -> list[dict[str, Any]]:
        return [
            s
            for s in self.instrumented.spans
            if s["scope"] == names.SCOPE_NAME
            and s["attributes"].get(names.GEN_AI_OPERATION_NAME) == names.OPERATION_CHAT
        ]

    @property
    def sampling(self) -> dict[str, Any] | None:
        """The sampling span when there is exactly one, else None."""
        spans = self.sampling_spans
        return spans[0] if len(spans) == 1 else None

    def root_of(self, span: dict[str, Any]) -> dict[str, Any]:
        """The local root above ``span`` among the host's exported spans."""
        by_id = {s["span_id"]: s for s in self.instrumented.spans}
        while span["parent_span_id"] in by_id:
            span = by_id[span["parent_span_id"]]
        return span

    def metric_points(self, name: str) -> list[dict[str, Any]]:
        metric = self.instrumented.metrics.get(name)
        return [p for p in (metric or {}).get("points", ()) if p.get("value", 1)]


def provider_failed(request: dict[str, Any]) -> bool:
    """Whether the fake provider answered this logged request with an error, by the documented meaning
    of its scenario tokens (``SCENARIOS`` in otel_sampling/testing/fake_provider.py)."""
    sc = request["scenario"]
    return (
        "status" in sc
        and ("fail_model" not in sc or request["model"] == sc["fail_model"])
        and ("fail_first" not in sc or request["retry_count"] < int(sc["fail_first"]))
    )


def provider_served(requests: list[dict[str, Any]]) -> str | None:
    """The model the fake provider served last among ``requests``; None when it served nothing."""
    served = None
    for request in requests:
        if not provider_failed(request):
            served = request["scenario"].get("served_model") or request["model"]
    return served


class HostRunner:
    """Runs host scripts against one fake provider and one OTLP receiver, with one policy file."""

    def __init__(self, venvs: Path, provider: FakeProvider, receiver: OTLPReceiver, policy: Path) -> None:
        self.venvs, self.provider, self.receiver, self.policy = venvs, provider, receiver, policy

    def venv(self, host: Host) -> Path:
        return self.venvs / host.venv_name

    def _base_env(self) -> dict[str, str]:
        # PYTHONPATH: a checkout named there (a worktree) is the otel_sampling the hosts load, in
        # front of the venvs' editable install.
        keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT", "PYTHONPATH")
        env = {key: os.environ[key] for key in keep if key in os.environ}
        env.update(
            {
                "PYTHONUNBUFFERED": "1",
                "PYTHONDONTWRITEBYTECODE": "1",
                "MCP_USE_ANONYMIZED_TELEMETRY": "false",  # mcp-use reports usage to posthog/scarf otherwise
                # Anything that would leave the machine goes to a closed loopback port instead.
                "HTTP_PROXY": "http://127.0.0.1:9",
                "HTTPS_PROXY": "http://127.0.0.1:9",
                "http_proxy": "http://127.0.0.1:9",
                "https_proxy": "http://127.0.0.1:9",
                "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost",
            }
        )
        return env

    def run(self, host: Host, scenario: Scenario, instrumented: bool) -> Run:
        tag = f"{host.name}.{scenario.name}.{'instrumented' if instrumented else 'bare'}"
        header = ",".join(t for t in (scenario_header(scenario, host.family), f"run={tag}") if t)
        bin_dir = self.venv(host) / "bin"
        command = [
            str(bin_dir / "python"),
            str(HERE / f"{host.module}.py"),
            "--host",
            host.name,
            "--provider-url",
            self.provider.url,
            "--scenario",
            header,
            "--sampling",
            scenario.sampling,
        ]
        env = self._base_env()
        if instrumented:
            command = [str(bin_dir / "opentelemetry-instrument"), *command]
            env.update(
                {
                    "OTEL_SERVICE_NAME": tag,
                    "OTEL_TRACES_EXPORTER": "otlp",
                    "OTEL_METRICS_EXPORTER": "otlp",
                    "OTEL_LOGS_EXPORTER": "none",
                    "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                    "OTEL_EXPORTER_OTLP_ENDPOINT": self.receiver.base_url,
                    "OTEL_BSP_SCHEDULE_DELAY": "200",
                    "OTEL_METRIC_EXPORT_INTERVAL": "60000",  # the export at shutdown is the one read
                }
            )
            if scenario.policy:
                env[names.ENV_POLICY] = str(self.policy)
        # A session of its own: on a timeout the host and its stdio server go together.
        proc = subprocess.Popen(
            command,
            env=env,
            cwd=HERE,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, stderr = proc.communicate(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            stderr += f"\n(killed after {HANG_S} s)"
        lines = [line for line in stdout.splitlines() if line.startswith(OUTPUT_PREFIX)]
        output = normalised(json.loads(lines[-1][len(OUTPUT_PREFIX) :])["output"]) if lines else None
        requests = [r for r in self.provider.requests if r["scenario"].get("run") == tag]
        run = Run(command, proc.returncode, output, stderr, requests)
        if instrumented:
            run.spans = [s for s in list(self.receiver.spans) if s["service_name"] == tag]
            latest: dict[str, dict[str, Any]] = {}
            for metric in list(self.receiver.metrics):
                if metric["service_name"] == tag:
                    latest[metric["name"]] = metric
            run.metrics = latest
        return run

    def observe(self, host: Host, scenario: Scenario, bare: Run | None = None) -> Observation:
        """Both runs of one cell, side by side (two processes: they share nothing but the provider);
        ``bare``: the uninstrumented run already made for the same host and provider scenario (it
        reads no policy file), reused."""
        if bare is not None:
            return Observation(host, scenario, bare, self.run(host, scenario, True))
        with ThreadPoolExecutor(2) as pool:
            bare_run = pool.submit(self.run, host, scenario, False)
            instrumented = pool.submit(self.run, host, scenario, True)
            return Observation(host, scenario, bare_run.result(), instrumented.result())

    def versions(self, host: Host) -> dict[str, str]:
        """The installed versions of the packages that make the host what it is."""
        wanted = (
            "pydantic-ai-slim",
            "fastmcp",
            "mcp-use",
            "google-adk",
            "google-genai",
            "langchain-mcp-adapters",
            "litellm",
            "mcp",
            "anthropic",
            "openai",
            "langchain-anthropic",
            "langchain-openai",
            "opentelemetry-sdk",
            "opentelemetry-distro",
            "opentelemetry-exporter-otlp-proto-http",
        )
        script = (
            "import importlib.metadata as m, json, sys\n"
            "out = {}\n"
            "for name in sys.argv[1:]:\n"
            "    try: out[name] = m.version(name)\n"
            "    except m.PackageNotFoundError: pass\n"
            "print(json.dumps(out))"
        )
        proc = subprocess.run(
            [str(self.venv(host) / "bin" / "python"), "-c", script, *wanted],
            capture_output=True,
            text=True,
            timeout=HANG_S,
            check=True,
        )
        return json.loads(proc.stdout)
