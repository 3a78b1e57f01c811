"""`make demo`: the triage host under `opentelemetry-instrument`, and a report from its real telemetry.

1. Starts the fake provider (anthropic API on 127.0.0.1) and an OTLP/HTTP trace receiver.
2. Starts a real Prometheus (1 s scrape and evaluation) that scrapes the host's /metrics while it
   runs, with the bundled rules generated with short windows (``MixinConfig.for_short_run()``).
3. Runs `opentelemetry-instrument python host.py --hold --checkpoints` with the Prometheus metrics
   exporter on a free 127.0.0.1 port, spans exported over OTLP, and OTEL_SAMPLING_POLICY=policy.toml.
   The host (which knows nothing of otel-sampling's wrappers; it uses only the small API for what no
   wrapper can see: runs, declared degradations, disclosures, evaluations, cache provenance, canary
   traffic, a drill) drives its scripted scenario over a real stdio MCP server; at the drill's
   checkpoints it waits until Prometheus has seen what it must (drill_report.DrillWatch).
4. Scrapes /metrics while the host holds, lets it exit (spans flush), stops everything.
5. Drives the second server, desk-server, which calls its own model with a fallback chain
   (direct_calls.py, desk_server.py), through an outage of its primary; its telemetry goes to the
   same receiver.
6. Prints the report built from the scraped metrics and the received spans (with the five numbers
   of degraded mode, five_numbers_report.py, and desk-server's runs beside them), the alerts a
   second Prometheus fires on that scrape, and the drill report read from the live Prometheus
   (drill_report.py: which drill alerts and degraded-mode alerts fired and why, the fallback during
   the drill, the time to recover); writes them under .demo/, and exits 1 when the telemetry does
   not show what the scenario drove.

The OTLP receiver and the Prometheus server are the repository's test harnesses (tests/harness/):
the demo runs from a checkout, as `make demo` runs it, and puts tests/ on sys.path for them.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import anyio
from prometheus_client.parser import text_string_to_metric_families

import breakage_report
import depth_report
import direct_calls
import five_numbers_report
from otel_sampling import names
from otel_sampling.mixin.prometheus_names import label_name, metric_name
from otel_sampling.testing.fake_provider import FakeProvider
from server_telemetry import server_env, server_requests

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the harness package (see the module docstring)
import drill_report  # noqa: E402  # reads the live Prometheus through the harness
from harness.limits import HANG_S  # noqa: E402
from harness.otlp_receiver import OTLPReceiver  # noqa: E402
from scenario import DRILL_NAME, FALLBACK_MODEL, PRIMARY_MODEL, STEPS  # noqa: E402

OUT = ROOT / ".demo"
HOST_TIMEOUT_S = HANG_S
REQUIRED_ENDINGS = (
    names.ENDING_COMPLETED,
    names.ENDING_POLICY_DENIED,
    names.ENDING_USER_DENIED,
    names.ENDING_BUDGET_EXHAUSTED,
    names.ENDING_MODEL_UNAVAILABLE,
    names.ENDING_TIMEOUT,
)
REQUESTS_SERIES = metric_name(names.METRIC_SAMPLING_REQUESTS, names.UNIT_REQUEST, counter=True)
SERVER, ENDING, SUBSTITUTION, MODE, PATH = (
    label_name(a)
    for a in (
        names.MCP_SERVER_NAME,
        names.SAMPLING_ENDING,
        names.SAMPLING_SUBSTITUTION,
        names.DEGRADATION_MODE,
        names.SAMPLING_PATH,
    )
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def host_env(provider_url: str, traces_endpoint: str, metrics_port: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "OTEL_SERVICE_NAME": "triage-host",
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": traces_endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "200",
            "OTEL_METRICS_EXPORTER": "prometheus",
            "OTEL_EXPORTER_PROMETHEUS_HOST": "127.0.0.1",
            "OTEL_EXPORTER_PROMETHEUS_PORT": str(metrics_port),
            "OTEL_LOGS_EXPORTER": "none",
            # Both the v1.41 and the newest GenAI metric names: the dashboards read the v1.41
            # durations by default, and the newest usage counters are on show beside them.
            names.ENV_SEMCONV_STABILITY_OPT_IN: names.SEMCONV_GEN_AI_DUP,
            names.ENV_POLICY: str(HERE / "policy.toml"),
            "ANTHROPIC_BASE_URL": provider_url,
        }
    )
    return env


def run_host(
    env: dict[str, str], metrics_url: str, log: Path, on_checkpoint: Callable[[dict], None] | None = None
) -> tuple[dict, str]:
    """Run the host until it reports the scenario done (with ``on_checkpoint``: stopping at each
    checkpoint until it returns); scrape metrics; release it; wait for exit."""
    instrument = shutil.which("opentelemetry-instrument", path=str(Path(sys.executable).parent))
    if instrument is None:
        raise SystemExit("opentelemetry-instrument is not installed next to this Python (run `make demo`)")
    command = [
        instrument,
        sys.executable,
        str(HERE / "host.py"),
        "--hold",
        *(["--checkpoints"] if on_checkpoint else []),
    ]
    with log.open("w") as log_file:
        host = subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_file,
            text=True,
            start_new_session=True,
        )
        try:
            lines: queue.Queue[str | None] = queue.Queue()
            threading.Thread(target=pump, args=(host.stdout, lines), daemon=True).start()
            done = wait_for_done(lines, time.monotonic() + HOST_TIMEOUT_S, on_checkpoint, host.stdin)
            with urllib.request.urlopen(metrics_url, timeout=HANG_S) as response:
                metrics_text = response.read().decode()
            host.stdin.write("\n")
            host.stdin.close()
            if host.wait(timeout=HANG_S) != 0:
                raise SystemExit(f"host exited with {host.returncode}; see {log}")
            return done, metrics_text
        finally:
            if host.poll() is None:
                os.killpg(host.pid, signal.SIGKILL)
                host.wait()


def pump(stream, lines: queue.Queue[str | None]) -> None:
    """Hand the host's stdout lines to the main thread; None marks its end."""
    for line in stream:
        lines.put(line)
    lines.put(None)


def wait_for_done(
    lines: queue.Queue[str | None],
    deadline: float,
    on_checkpoint: Callable[[dict], None] | None = None,
    stdin: IO[str] | None = None,
) -> dict:
    """Read the host's stdout until its scenario-done event. A checkpoint event is handed to
    ``on_checkpoint`` and then released with a line on ``stdin`` (the time it takes does not count
    against ``deadline``)."""
    while True:
        try:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            raise SystemExit(f"the host did not finish its scenario within {HOST_TIMEOUT_S} s") from None
        if line is None:
            raise SystemExit("the host exited before finishing its scenario")
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("event") == "scenario-done":
            return event
        if isinstance(event, dict) and event.get("event") == "checkpoint" and on_checkpoint and stdin:
            held = time.monotonic()
            on_checkpoint(event)
            stdin.write("\n")
            stdin.flush()
            deadline += time.monotonic() - held


def request_samples(metrics_text: str) -> Iterator[tuple[dict[str, str], float]]:
    """Labels and value of every ``otel_sampling_sampling_requests_total`` series in a scrape."""
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            if sample.name == REQUESTS_SERIES:
                yield sample.labels, sample.value


def table(title: str, rows: list[tuple[str, list]], columns: list[str]) -> str:
    width = max([len(title)] + [len(r[0]) + 2 for r in rows]) + 1
    widths = [max([len(c)] + [len(str(r[1][i])) for r in rows]) + 2 for i, c in enumerate(columns)]
    out = [title.ljust(width) + "".join(c.rjust(w) for c, w in zip(columns, widths, strict=True))]
    for label, values in rows:
        out.append(("  " + label).ljust(width) + "".join(str(v).rjust(w) for v, w in zip(values, widths, strict=True)))
    return "\n".join(out)


def report(
    done: dict, metrics_text: str, spans: list[dict], metrics_url: str, server_requests: Counter | None = None
) -> tuple[str, list[str]]:
    samples = list(request_samples(metrics_text))
    by_server: dict[str, Counter] = {}
    by_path: dict[str, Counter] = {}
    endings, modes, substitutions = Counter(), Counter(), Counter()
    for labels, value in samples:
        n = int(value)
        by_server.setdefault(labels[SERVER], Counter())[labels[ENDING]] += n
        by_path.setdefault(labels[PATH], Counter())[labels[ENDING]] += n
        endings[labels[ENDING]] += n
        modes[labels[MODE]] += n
        substitutions[labels[SUBSTITUTION]] += n
    total = sum(endings.values())
    sampling_spans = [
        s
        for s in spans
        if s["name"] == names.SPAN_SAMPLING and s["scope"] == names.SCOPE_NAME and s["kind"] == "SERVER"
    ]  # the host's; the server's own are CLIENT spans
    provider_spans = [s for s in spans if s["name"].startswith(names.OPERATION_CHAT) and s["scope"] == names.SCOPE_NAME]
    served = Counter()
    for span in sampling_spans:
        attrs = span["attributes"]
        model = attrs.get(names.GEN_AI_RESPONSE_MODEL)
        if model:
            hints = ",".join(attrs.get(names.SAMPLING_MODEL_HINTS, [])) or "(no hint)"
            served[(hints, model, attrs.get(names.SAMPLING_SUBSTITUTION), attrs.get(names.DEGRADATION_MODE))] += 1
    provider_errors = Counter(
        s["attributes"].get(names.ERROR_TYPE) for s in provider_spans if s["status_code"] == "ERROR"
    )

    columns = [e for e in names.ENDINGS if endings[e]]
    steps = done.get("steps", [])
    lines = [
        "otel-sampling demo: host 'triage-host' <-> MCP server over stdio (a real subprocess), "
        "provider: anthropic SDK -> local fake provider",
        f"scenario: {len(steps)} steps over two sessions (legacy JSON-RPC and 2026-07-28 multi-round-trip); "
        f"{total} sampling requests counted",
        "",
        table("Endings by server", [(k, [v[e] for e in columns]) for k, v in sorted(by_server.items())], columns),
        "",
        table("Endings by protocol path", [(k, [v[e] for e in columns]) for k, v in sorted(by_path.items())], columns),
        "",
        table(
            "Served models (hinted -> served)",
            [(f"{h} -> {m}", [n, sub, mode]) for (h, m, sub, mode), n in sorted(served.items())],
            ["requests", "substitution", "mode"],
        ),
        "",
        f"Substitutions: {dict(sorted((k, v) for k, v in substitutions.items() if k != names.SUBSTITUTION_NONE))}",
        f"Degraded share: {modes[names.MODE_DEGRADED]}/{total} sampling requests "
        f"({100 * modes[names.MODE_DEGRADED] / max(total, 1):.1f}%) served in degraded mode",
        f"Provider calls: {len(provider_spans)} spans, errors by type {dict(sorted(provider_errors.items()))}",
        f"Spans: {OUT.name}/spans.jsonl ({len(sampling_spans)} sampling spans, {len(provider_spans)} provider spans, "
        f"{len(spans)} in all)   Metrics: {OUT.name}/metrics.txt (scraped from {metrics_url}, now stopped)",
    ]

    problems = []
    expected = Counter(step["expected_ending"] for step in steps)
    if expected != endings:
        problems.append(f"endings counted {dict(endings)} differ from the endings the scenario drove {dict(expected)}")
    problems += [f"no '{e}' ending was recorded" for e in REQUIRED_ENDINGS if not endings[e]]
    if not sum(v for k, v in substitutions.items() if k != names.SUBSTITUTION_NONE):
        problems.append("no substitution was recorded")
    if not modes[names.MODE_DEGRADED]:
        problems.append("the degraded share is zero")
    if len(sampling_spans) != total:
        problems.append(f"{len(sampling_spans)} sampling spans for {total} counted requests")
    depth, depth_problems = depth_report.lines(metrics_text, spans, server_requests or Counter())
    lines += depth
    problems += depth_problems
    expected_models = Counter(s["expected_model"] for s in steps if s.get("expected_model"))
    served_models = Counter(s["attributes"].get(names.GEN_AI_RESPONSE_MODEL) for s in sampling_spans)
    if expected_models - served_models:
        problems.append(f"served models {dict(served_models)} lack {dict(expected_models - served_models)}")
    return "\n".join(lines), problems


def degradation_report(done: dict, metrics_text: str) -> tuple[str, list[str]]:
    """The five numbers (from the scraped metrics) and checks against what the scenario's runs imply."""
    sys.path.insert(0, str(HERE))
    import scenario

    ran_runs = scenario.runs_done(done.get("steps", []))
    ran = [step for run in ran_runs for step in run]
    expected_degraded = sum(scenario.expected_run(run)[0] == names.MODE_DEGRADED for run in ran_runs)
    expected_incidents = sum(scenario.expected_run(run)[1] for run in ran_runs)
    numbers = five_numbers_report.from_scrape(metrics_text)
    runs_series = metric_name(names.METRIC_AGENT_RUNS, names.UNIT_RUN, counter=True)
    lookups_series = metric_name(names.METRIC_CACHE_LOOKUPS, names.UNIT_LOOKUP, counter=True)
    runs_by_mode, canary, stale_hits = Counter(), 0, 0
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            labels = sample.labels
            if sample.name == runs_series and labels.get(label_name(names.AGENT_RUN_NAME)) == scenario.RUN_NAME:
                runs_by_mode[labels[MODE]] += int(sample.value)
            elif (
                sample.name == REQUESTS_SERIES
                and labels.get(label_name(names.DEGRADATION_REASON)) == names.REASON_CANARY
            ):
                canary += int(sample.value)
            elif (
                sample.name == lookups_series
                and labels.get(label_name(names.CACHE_PROVENANCE_MATCH)) == names.CACHE_MISMATCH
            ):
                stale_hits += int(sample.value)
    lines = [
        f"Runs ({scenario.RUN_NAME!r}, one per step or live run): {sum(runs_by_mode.values())}, degraded "
        f"{runs_by_mode[names.MODE_DEGRADED]}; canary requests {canary}; cache hits from another configuration "
        f"{stale_hits}",
        "Five numbers     " + numbers.summary().replace("\n", "\n                 "),
    ]
    problems = []
    if sum(runs_by_mode.values()) != len(ran_runs):
        problems.append(f"{sum(runs_by_mode.values())} runs counted, the scenario ran {len(ran_runs)}")
    if runs_by_mode[names.MODE_DEGRADED] != expected_degraded:
        problems.append(
            f"{runs_by_mode[names.MODE_DEGRADED]} degraded runs counted, the scenario drove {expected_degraded}"
        )
    if numbers.silent_incidents != expected_incidents:
        problems.append(
            f"{numbers.silent_incidents:.0f} silent incidents counted, the scenario drove {expected_incidents}"
        )
    if not numbers.quality_delta():
        problems.append("no evaluation scores in both modes")
    expected_canary = sum(step.host.canary for step in ran)
    if canary != expected_canary:
        problems.append(f"{canary} canary requests counted, the scenario drove {expected_canary}")
    if not stale_hits:
        problems.append("no cache hit on an entry from another configuration was recorded")
    primary_cache = numbers.prompt_cache_read_share(names.MODE_PRIMARY)
    degraded_cache = numbers.prompt_cache_read_share(names.MODE_DEGRADED)
    if not primary_cache or not degraded_cache or degraded_cache >= primary_cache:
        problems.append(
            f"prompt-cache read share primary {primary_cache} vs degraded {degraded_cache}: the scenario "
            "reads the cache in both modes, less of it after failovers"
        )
    return "\n".join(lines), problems


def print_fired_alerts(metrics_text: str) -> None:
    """Last step: a real Prometheus scrapes the captured metrics with the generated rules (short
    windows, ``MixinConfig.for_short_run()``) and we list the alerts that fire on this scenario."""
    if shutil.which("prometheus") is None:
        print("Alerts: skipped (no Prometheus server; `make prometheus` installs Debian's package)")
        return

    from harness.prometheus import PrometheusServer, StaticMetrics, wait_until
    from otel_sampling.mixin import MixinConfig
    from otel_sampling.mixin.generate import RULES_FILE, write

    with tempfile.TemporaryDirectory() as tmp, StaticMetrics(metrics_text) as metrics:
        write(MixinConfig.for_short_run(), Path(tmp))
        with PrometheusServer([metrics.target], [Path(tmp) / "alerts" / RULES_FILE]) as prom:
            prom.wait_for_scrape()
            prom.wait_for_rules()
            wait_until(lambda: not prom.alerts("pending"), 30, "pending alerts to fire")
            fired = Counter(a["labels"]["alertname"] for a in prom.alerts("firing"))
    listed = ", ".join(f"{name} ({n})" if n > 1 else name for name, n in sorted(fired.items())) or "none"
    print(f"Alerts firing (Prometheus, alerts/{RULES_FILE} with short windows): {listed}")


def live_prometheus(stack: contextlib.ExitStack, metrics_port: int) -> drill_report.DrillWatch | None:
    """A Prometheus scraping the host's /metrics (every second) with the short-window rules, started
    before the host; its watch of the drill's checkpoints. None without a Prometheus server."""
    if shutil.which("prometheus") is None:
        return None
    from harness.prometheus import PrometheusServer
    from otel_sampling.mixin import MixinConfig
    from otel_sampling.mixin.generate import RULES_FILE, write

    config = MixinConfig.for_short_run()
    rules = Path(stack.enter_context(tempfile.TemporaryDirectory()))
    write(config, rules)
    prom = stack.enter_context(PrometheusServer([f"127.0.0.1:{metrics_port}"], [rules / "alerts" / RULES_FILE]))
    return drill_report.DrillWatch(prom, config, DRILL_NAME)


def expected_drill() -> drill_report.Expected:
    """What the scenario's drill drives: its requests (one per drill step, on the fallback) and the
    flaps after it (steps of the live run after the drill on which the primary fails again)."""
    drill_steps = [s for s in STEPS if s.host.drill]
    after = STEPS[STEPS.index(drill_steps[-1]) + 1 :]
    flaps = [
        s for s in after if s.run == drill_steps[-1].run and s.provider.primary and s.expected_model == FALLBACK_MODEL
    ]
    return drill_report.Expected(
        drill_name=DRILL_NAME,
        fallback_model=FALLBACK_MODEL,
        primary_model=PRIMARY_MODEL,
        drill_requests=len(drill_steps),
        flaps=len(flaps),
    )


def main() -> int:
    OUT.mkdir(exist_ok=True)
    metrics_port = free_port()
    metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    with FakeProvider() as provider, OTLPReceiver() as receiver, contextlib.ExitStack() as stack:
        watch = live_prometheus(stack, metrics_port)
        env = host_env(provider.url, receiver.endpoint, metrics_port)
        env.update(server_env(receiver.endpoint, receiver.metrics_endpoint))
        done, metrics_text = run_host(env, metrics_url, OUT / "host.log", watch)
        spans = list(receiver.spans)
        server_counts = server_requests(receiver.metrics)
        drill_lines, drill_problems = (
            drill_report.lines(watch, expected_drill())
            if watch
            else (["Drill report: skipped (no Prometheus server; `make prometheus` installs Debian's package)"], [])
        )
        answers = anyio.run(
            direct_calls.drive,
            direct_calls.server_parameters(provider.url, receiver.endpoint, receiver.metrics_endpoint),
        )
        direct_calls.wait_for_runs(receiver)
        direct_text, direct_problems = direct_calls.report(list(receiver.metrics), list(receiver.spans), answers)
    (OUT / "metrics.txt").write_text(metrics_text)
    with (OUT / "spans.jsonl").open("w") as f:
        for span in spans:
            f.write(json.dumps(span) + "\n")
    text, problems = report(done, metrics_text, spans, metrics_url, server_counts)
    degradation_text, degradation_problems = degradation_report(done, metrics_text)
    breakage_lines, breakage_problems = breakage_report.lines(metrics_text, done)
    text = "\n".join((f"{text}\n{degradation_text}{direct_text}", "", *breakage_lines))
    problems = problems + degradation_problems + direct_problems + breakage_problems + drill_problems
    print(text)
    print(f"Host log: {OUT.name}/host.log")
    print_fired_alerts(metrics_text)
    print("\n".join(drill_lines))
    (OUT / "drill-report.txt").write_text("\n".join(drill_lines) + "\n")
    if problems:
        print("\nDEMO FAILED:\n  " + "\n  ".join(problems))
        return 1
    print(
        "\nAll checks passed: every ending the scenario drove is in the metrics, "
        "with substitutions and a degraded share; the drill was noticed, the fallback served, the primary returned; "
        "desk-server's own-model runs show their failovers, server_model answers and incidents."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
