"""A fleet: three host processes of one job (three instances), scraped by one real Prometheus that
loads the bundled rule file, and every recorded series and alert is one per job, over the fleet.

Each host is ``tests/fleet_host.py`` under ``opentelemetry-instrument`` with the real Prometheus
exporter on its own port, sending sampling requests through a real mcp session to the fake
provider. Per instance:

=====  ======================  ======  ======================================================
host   requests                grants  degradation ``search``
=====  ======================  ======  ======================================================
a      10, primary model       4       entered and left twice
b      10, primary model       4       entered and left twice, then entered and held
c      10, all failed over     4       entered and left twice, then entered and held
=====  ======================  ======  ======================================================

c fails over because a drill (``fleet_host.DRILL_NAME``, on the primary model) runs from before its
requests until it is released: its requests are the fleet's requests during drills.

So the fleet's facts differ from every instance's: one instance of three fully degraded is a
degraded share of 1/3 (c alone is 100%), over 30 requests (each instance is under the rule's
20-request traffic guard); 12 grants (each instance 4, under the threshold of 10); 8 entries into
``search`` (each instance at most 3, under the threshold of 4); ``search`` active on two instances
is one alert. The rules' windows (30m and more) hold the whole run, so every count is a total.
Expected values are the instances' own exported counts (read from their ``/metrics`` with
``prometheus_client``) summed over the fleet, and the counts the table above implies.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from fleet_host import COMPONENT, DRILL_NAME, FALLBACK_MODEL, PRIMARY_MODEL, REASON, RUN_NAME
from harness.limits import HANG_S
from harness.prometheus import JOB, PrometheusServer, free_port
from otel_sampling import names
from otel_sampling.mixin import MixinConfig, breakage, five_numbers
from otel_sampling.mixin import metrics as m
from otel_sampling.mixin.generate import RULES_FILE
from otel_sampling.mixin.rules import PREFIX, Recorded, rule_groups
from otel_sampling.testing.fake_provider import FakeProvider
from sampling_server import SERVER_NAME as SERVER

pytestmark = [pytest.mark.e2e, pytest.mark.subprocess]
HERE = Path(__file__).resolve().parent
RULES = HERE.parent / "alerts" / RULES_FILE
CONFIG = MixinConfig()  # the bundled file is generated from the defaults
REQUESTS, GRANTS, FLAPS = 10, 4, 2
HOSTS = {  # instance role: its fleet_host.py options
    "a": [],
    "b": ["--hold-degradation"],
    "c": ["--drill", "--hold-degradation"],
}
READY_TIMEOUT_S = HANG_S  # three interpreters starting together on a busy two-core machine
ALERTS_TIMEOUT_S = HANG_S
POLICY = f"""
[servers."{SERVER}"]
primary_model = "{PRIMARY_MODEL}"
permitted_models = ["{PRIMARY_MODEL}", "{FALLBACK_MODEL}"]
context_ceiling = "thisServer"

[prices."{PRIMARY_MODEL}"]
input_usd_per_mtok = 3.0
output_usd_per_mtok = 15.0

[prices."{FALLBACK_MODEL}"]
input_usd_per_mtok = 1.0
output_usd_per_mtok = 5.0
"""


def host_env(provider_url: str, port: int, policy: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "OTEL_SERVICE_NAME": "fleet-host",  # one service: the instances differ by their scrape target only
            "OTEL_TRACES_EXPORTER": "none",
            "OTEL_LOGS_EXPORTER": "none",
            "OTEL_METRICS_EXPORTER": "prometheus",
            "OTEL_EXPORTER_PROMETHEUS_HOST": "127.0.0.1",
            "OTEL_EXPORTER_PROMETHEUS_PORT": str(port),
            names.ENV_POLICY: str(policy),
            # Hosts that tell their users about degraded answers: their silent incidents page.
            names.ENV_DISCLOSURE_TRACKED: "true",
            names.ENV_SEMCONV_STABILITY_OPT_IN: names.SEMCONV_GEN_AI_DUP,  # the cache share reads the newest counters
            "ANTHROPIC_BASE_URL": provider_url,
        }
    )
    return env


def _await_ready(lines: queue.Queue[str | None], deadline: float, log: Path) -> None:
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"a fleet host was not ready in {READY_TIMEOUT_S} s; see {log}") from None
        if line is None:
            raise AssertionError(f"a fleet host exited before it was ready; see {log}:\n{log.read_text()[-4000:]}")
        if json.loads(line).get("event") == "ready":
            return


def _pump(stream, lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """The three hosts, done and held, scraped by Prometheus with the bundled rules (evaluated
    twice after a scrape of every instance); ``scrapes`` is each instance's own /metrics text."""
    out = tmp_path_factory.mktemp("fleet")
    policy = out / "policy.toml"
    policy.write_text(POLICY)
    instrument = str(Path(sys.executable).parent / "opentelemetry-instrument")
    common = ["--requests", str(REQUESTS), "--grants", str(GRANTS), "--flaps", str(FLAPS)]
    hosts: list[subprocess.Popen[str]] = []
    with FakeProvider() as provider:
        try:
            ready = []
            targets = {}
            for name, options in HOSTS.items():
                port = free_port()
                log = out / f"host-{name}.log"
                with log.open("w") as log_file:
                    command = [instrument, sys.executable, str(HERE / "fleet_host.py"), *common, *options]
                    host = subprocess.Popen(
                        command,
                        env=host_env(provider.url, port, policy),
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=log_file,
                        text=True,
                        start_new_session=True,
                    )
                hosts.append(host)
                lines: queue.Queue[str | None] = queue.Queue()
                threading.Thread(target=_pump, args=(host.stdout, lines), daemon=True).start()
                ready.append((lines, log))
                targets[name] = f"127.0.0.1:{port}"
            deadline = time.monotonic() + READY_TIMEOUT_S
            for lines, log in ready:
                _await_ready(lines, deadline, log)
            scrapes = {}
            for name, target in targets.items():
                with urllib.request.urlopen(f"http://{target}/metrics", timeout=HANG_S) as response:
                    scrapes[name] = response.read().decode()
            with PrometheusServer(targets.values(), [RULES]) as prom:
                prom.wait_for_scrape()
                prom.wait_for_rules()
                yield SimpleNamespace(prom=prom, scrapes=scrapes, targets=targets)
            for host in hosts:
                host.stdin.write("\n")  # released: it leaves its degradation and exits
                host.stdin.close()
            for host, (_, log) in zip(hosts, ready, strict=True):
                assert host.wait(timeout=HANG_S) == 0, f"a fleet host exited with {host.returncode}; see {log}"
        finally:
            for host in hosts:
                if host.poll() is None:
                    os.killpg(host.pid, signal.SIGKILL)
                    host.wait()


# ---------------------------------------------------------------- the instances' own counts
def exported(scrape: str, series: str, **labels: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples of ``series`` in one scrape with these labels, by their full label set."""
    return {
        tuple(sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(scrape)
        for s in family.samples
        if s.name == series and all(s.labels.get(k) == v for k, v in labels.items())
    }


def fleet_sum(fleet: SimpleNamespace, series: str, by: tuple[str, ...] = (), **labels: str) -> dict[tuple, float]:
    """``sum by (by)`` of ``series`` over every instance's own scrape: ``{label values: sum}``."""
    sums: dict[tuple, float] = defaultdict(float)
    for scrape in fleet.scrapes.values():
        for key, value in exported(scrape, series, **labels).items():
            sums[tuple(dict(key).get(label, "") for label in by)] += value
    return dict(sums)


def total(fleet: SimpleNamespace, series: str, **labels: str) -> float:
    return fleet_sum(fleet, series, **labels).get((), 0.0)


def ratio(numerator: dict[tuple, float], denominator: dict[tuple, float]) -> dict[tuple, float]:
    return {key: numerator.get(key, 0.0) / value for key, value in denominator.items() if value > 0}


def expected_recorded(fleet: SimpleNamespace) -> dict[str, tuple[tuple[str, ...], dict[tuple, float]]]:
    """Every recorded series of the bundled file as its definition (docs/dashboards.md, the five
    numbers) computes it over the fleet's summed counts: ``{record: (its labels besides job, {values: value})}``."""
    r = Recorded(CONFIG)
    mode, evaluation = (five_numbers.MODE,), (five_numbers.EVALUATION,)
    outcome = (five_numbers.MODE, five_numbers.OUTCOME)
    degraded = {five_numbers.MODE: names.MODE_DEGRADED}
    runs = fleet_sum(fleet, five_numbers.RUNS)
    by_server = (m.SERVER, m.MODE, m.ENDING, m.SUBSTITUTION)
    completed = fleet_sum(fleet, five_numbers.RUNS, mode, **{five_numbers.OUTCOME: names.OUTCOME_COMPLETED})
    denied = fleet_sum(fleet, five_numbers.RUNS, mode, **{five_numbers.OUTCOME: names.OUTCOME_DENIED})
    attempted = {key: value - denied.get(key, 0.0) for key, value in fleet_sum(fleet, five_numbers.RUNS, mode).items()}

    def mean_score(mode_value: str) -> dict[tuple, float]:
        labels = {five_numbers.MODE: mode_value}
        return ratio(
            fleet_sum(fleet, five_numbers.SCORE_SUM, evaluation, **labels),
            fleet_sum(fleet, five_numbers.SCORE_COUNT, evaluation, **labels),
        )

    primary_score, degraded_score = mean_score(names.MODE_PRIMARY), mean_score(names.MODE_DEGRADED)

    def tokens(series: str) -> dict[tuple, float]:
        return fleet_sum(fleet, series, mode)

    by_model = (m.MODE, m.RESPONSE_MODEL)
    model_share = ratio(
        fleet_sum(fleet, five_numbers.CACHE_READ_TOKENS, by_model),
        fleet_sum(fleet, five_numbers.INPUT_TOKENS, by_model),
    )

    return {
        r.requests_by_server: (by_server, fleet_sum(fleet, m.SAMPLING_REQUESTS, by_server)),
        r.requests: ((), fleet_sum(fleet, m.SAMPLING_REQUESTS)),
        r.drill_requests: (
            (m.MODE, m.ENDING),
            fleet_sum(fleet, m.SAMPLING_REQUESTS, (m.MODE, m.ENDING), **{m.DRILL_NAME: DRILL_NAME}),
        ),
        r.degraded_ratio: (
            (),
            ratio(
                fleet_sum(fleet, m.SAMPLING_REQUESTS, **{m.MODE: names.MODE_DEGRADED}),
                fleet_sum(fleet, m.SAMPLING_REQUESTS),
            ),
        ),
        r.degraded_run_seconds: ((), fleet_sum(fleet, five_numbers.RUN_DURATION_SUM, **degraded)),
        r.runs_degraded_ratio: ((), ratio(fleet_sum(fleet, five_numbers.RUNS, **degraded), runs)),
        r.score_delta: (
            evaluation,
            {key: primary_score[key] - degraded_score[key] for key in primary_score if key in degraded_score},
        ),
        r.completion_ratio: (mode, ratio(completed, attempted)),
        r.silent_incidents: ((), fleet_sum(fleet, five_numbers.INCIDENTS)),
        r.cost_per_completed_run: (mode, ratio(fleet_sum(fleet, five_numbers.RUN_COST, mode), completed)),
        r.prompt_cache_read_share: (
            mode,
            ratio(tokens(five_numbers.CACHE_READ_TOKENS), tokens(five_numbers.INPUT_TOKENS)),
        ),
        # by mode and served model, over the window and its baseline (the whole run is inside both)
        r.cache_share_by_model: (by_model, model_share),
        r.cache_share_baseline: (by_model, model_share),
        r.runs: (outcome, fleet_sum(fleet, five_numbers.RUNS, outcome)),
        # exposed: the fleet's degraded share (1/3 of 30 requests) is above the threshold, and
        # `search` is active on two instances: one series for the job, 1
        r.degraded_exposure: ((), {(): 1.0}),
        **by_run_name(fleet),
    }


# What the fleet never emits (its hosts offer no tools, ask for no structured output, are never cut):
# these rates are checked by the promtool cases of tests/test_prometheus_rules.py instead.
NOT_IN_THE_FLEET = frozenset(rule["record"] for rule in breakage.recording_rules(CONFIG))


def by_run_name(fleet: SimpleNamespace) -> dict[str, tuple[tuple[str, ...], dict[tuple, float]]]:
    """The five numbers read from run series, per run name (the hosts' runs and the tool runs of the
    sampling server each host runs in its own process), as their definitions compute them."""
    name = (m.RUN_NAME,)
    mode, outcome = (*name, five_numbers.MODE), (*name, five_numbers.MODE, five_numbers.OUTCOME)
    degraded = {five_numbers.MODE: names.MODE_DEGRADED}
    runs = fleet_sum(fleet, five_numbers.RUNS, name)
    completed = fleet_sum(fleet, five_numbers.RUNS, mode, **{five_numbers.OUTCOME: names.OUTCOME_COMPLETED})
    denied = fleet_sum(fleet, five_numbers.RUNS, mode, **{five_numbers.OUTCOME: names.OUTCOME_DENIED})
    attempted = {key: value - denied.get(key, 0.0) for key, value in fleet_sum(fleet, five_numbers.RUNS, mode).items()}
    degraded_seconds = fleet_sum(fleet, five_numbers.RUN_DURATION_SUM, name, **degraded)
    incidents = fleet_sum(fleet, five_numbers.INCIDENTS, name)
    cost = fleet_sum(fleet, five_numbers.RUN_COST, mode)

    def record(key: str) -> str:
        return five_numbers.record_name(key, CONFIG.window, (m.JOB, m.RUN_NAME))

    return {
        # "or ... * 0": every run name with runs has a value, 0 where nothing of it was degraded
        record("degraded_run_seconds"): (name, {key: degraded_seconds.get(key, 0.0) for key in runs}),
        record("degraded_run_share"): (name, ratio(fleet_sum(fleet, five_numbers.RUNS, name, **degraded), runs)),
        record("completion_rate_by_mode"): (mode, ratio(completed, attempted)),
        record("silent_incidents"): (name, {key: incidents.get(key, 0.0) for key in runs}),
        record("cost_per_completed_task_by_mode"): (
            mode,
            {key: cost[key] / value for key, value in completed.items() if value > 0 and key in cost},
        ),
        record("runs"): (outcome, fleet_sum(fleet, five_numbers.RUNS, outcome)),
    }


# ---------------------------------------------------------------- the tests
def test_the_fleet_is_what_the_table_says(fleet):
    """The instances' own counts: the premises of the other tests, none of them a fleet fact alone."""
    requests = {name: exported(scrape, m.SAMPLING_REQUESTS) for name, scrape in fleet.scrapes.items()}
    assert {name: sum(series.values()) for name, series in requests.items()} == dict.fromkeys(HOSTS, REQUESTS)
    degraded = {
        name: sum(exported(scrape, m.SAMPLING_REQUESTS, **{m.MODE: names.MODE_DEGRADED}).values())
        for name, scrape in fleet.scrapes.items()
    }
    assert degraded == {"a": 0, "b": 0, "c": REQUESTS}  # c fully degraded: a per-instance share of 100%
    grants = {name: sum(exported(scrape, m.SAMPLING_GRANTS).values()) for name, scrape in fleet.scrapes.items()}
    assert grants == dict.fromkeys(HOSTS, GRANTS)
    assert REQUESTS < CONFIG.min_requests <= total(fleet, m.SAMPLING_REQUESTS)


def test_every_recording_rule_is_one_series_per_job_over_the_fleet(fleet):
    expected = expected_recorded(fleet)
    assert set(expected) | NOT_IN_THE_FLEET == {
        rule["record"] for group in rule_groups(CONFIG)["groups"] for rule in group["rules"] if "record" in rule
    }, "a recording rule without an expectation here"
    for record, (labels, values) in expected.items():
        assert values, f"{record}: nothing to compare (the fleet emits none of its inputs)"
        got = {}
        for series in fleet.prom.query(record):
            metric = {k: v for k, v in series["metric"].items() if k != "__name__"}
            assert metric.pop(m.JOB) == JOB and set(metric) <= set(labels), f"{record}: {series['metric']}"
            got[tuple(metric.get(label, "") for label in labels)] = float(series["value"][1])
        assert got == pytest.approx(values, rel=1e-9), record
    r = Recorded(CONFIG)
    # the fleet's share, not an instance's: one instance of three fully degraded
    assert float(fleet.prom.query(r.degraded_ratio)[0]["value"][1]) == pytest.approx(1 / 3)
    assert float(fleet.prom.query(r.silent_incidents)[0]["value"][1]) == REQUESTS  # c's undisclosed runs


def test_alerts_are_one_per_job_over_the_fleet(fleet):
    job = {m.JOB: JOB}
    component = {m.COMPONENT: COMPONENT, m.REASON: REASON}
    server = {m.SERVER: SERVER}
    expected = {
        # two instances in `search`: one alert, the max of their gauges
        ("firing", "DegradedModeEntered", frozenset({**job, **component}.items())): 1.0,
        # c's drill, running while held (a named degradation; the drill alerts judge it once it ends)
        (
            "firing",
            "DegradedModeEntered",
            frozenset({**job, m.COMPONENT: DRILL_NAME, m.REASON: names.REASON_DRILL}.items()),
        ): 1.0,
        # c's 10 requests served degraded
        ("firing", "DegradedModeEntered", frozenset({**job, **server}.items())): REQUESTS,
        # c's 10 runs degraded without a disclosure, counted once for the job
        ("firing", "SilentDegradation", frozenset({**job, m.RUN_NAME: RUN_NAME}.items())): REQUESTS,
        # 3 x 4 grants > 10 (each instance's 4 is under it)
        ("firing", "GrantsHigh", frozenset({**job, **server}.items())): len(HOSTS) * GRANTS,
        # 2 + 3 + 3 entries >= 4 (each instance's count is under it)
        ("firing", "DegradationFlapping", frozenset({**job, m.COMPONENT: COMPONENT}.items())): len(HOSTS) * FLAPS + 2,
        # 1/3 of 30 requests (for: 30m): c alone would be 100% of 10, under the 20-request guard
        ("pending", "DegradedShareHigh", frozenset(job.items())): 1 / 3,
        # one run name's degraded share, 1/3 of 30 runs (for: 30m): the hosts' runs, and the server
        # tool runs of the sampling server each host runs in its own process (`<server>/sample`)
        ("pending", "RunsDegradedShareHigh", frozenset({**job, m.RUN_NAME: RUN_NAME}.items())): 1 / 3,
        ("pending", "RunsDegradedShareHigh", frozenset({**job, m.RUN_NAME: f"{SERVER}/sample"}.items())): 1 / 3,
        # `search` held (for: 4h)
        ("pending", "DegradedTooLong", frozenset({**job, **component}.items())): 1.0,
        # and the drill (for: 4h; its hour-long window ends before)
        (
            "pending",
            "DegradedTooLong",
            frozenset({**job, m.COMPONENT: DRILL_NAME, m.REASON: names.REASON_DRILL}.items()),
        ): 1.0,
    }

    def active() -> dict:
        return {
            (
                alert["state"],
                alert["labels"]["alertname"].removeprefix(PREFIX),
                frozenset((k, v) for k, v in alert["labels"].items() if k not in ("alertname", "severity")),
            ): float(alert["value"])
            for state in ("firing", "pending")
            for alert in fleet.prom.alerts(state)
        }

    deadline = time.monotonic() + ALERTS_TIMEOUT_S
    got = active()
    while set(got) != set(expected) and time.monotonic() < deadline:
        time.sleep(0.5)
        got = active()
    assert set(got) == set(expected), f"missing {set(expected) - set(got)}, unexpected {set(got) - set(expected)}"
    assert got == pytest.approx(expected, rel=1e-9)
