"""A real VictoriaMetrics (single node) and vmalert's replay mode, for tests: free 127.0.0.1 port,
temp dir, always stopped.

Needs the ``victoria-metrics`` and ``vmalert`` binaries (both in the Debian package
``victoria-metrics``; ``make test`` installs it)::

    with VictoriaMetrics() as vm:
        vm.import_text(history.import_text(series, start, 60))
        replay(vm, [rules], start, end, interval_s=60)
        vm.samples_at("ALERTS", end)   # -> [({"alertname": ..., ...}, 1.0), ...]

:func:`replay` runs ``vmalert -replay.timeFrom/-replay.timeTo``: it evaluates every rule over a
past time range, one rule after the other, as range queries with the group's interval as the step,
and writes recorded series and ``ALERTS`` (with ``for:`` honoured) back through remote write. No
wall-clock evaluation interval is involved, so the result is the same on a busy machine; the one
timing is vmalert's pause between rules (``rules_delay``), which lets the results of a rule reach
storage before a rule that reads them is queried.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.limits import HANG_S
from harness.prometheus import ServerProcess, free_port

DEBIAN_PACKAGE = "victoria-metrics"


class VictoriaMetricsError(RuntimeError):
    """VictoriaMetrics or vmalert did not start or failed (the message carries its log)."""


def _binary(name: str) -> str:
    executable = shutil.which(name)
    if executable is None:
        raise VictoriaMetricsError(f"{name} not found (Debian package '{DEBIAN_PACKAGE}'; `make test` installs it)")
    return executable


class VictoriaMetrics(ServerProcess):
    """``victoria-metrics`` on a free 127.0.0.1 port, storage in a temp dir, response cache off
    (the cache would hide samples backfilled into a range it has already answered).

    Raises:
        VictoriaMetricsError: the binary is missing, or the server was not healthy within 30 s.
    """

    name = "victoria-metrics"
    ready_path = "/health"
    error = VictoriaMetricsError

    def _executable(self) -> str:
        return _binary("victoria-metrics")

    def _arguments(self, directory: Path, port: int) -> list[str]:
        return [
            f"-httpListenAddr=127.0.0.1:{port}",
            f"-storageDataPath={directory / 'data'}",
            "-search.disableCache",
            "-loggerLevel=WARN",
        ]

    def import_text(self, text: str) -> None:
        """POST Prometheus text exposition (timestamps allowed) to ``/api/v1/import/prometheus``."""
        request = urllib.request.Request(self.url + "/api/v1/import/prometheus", data=text.encode(), method="POST")
        try:
            with urllib.request.urlopen(request, timeout=HANG_S):
                pass
        except urllib.error.HTTPError as e:
            raise VictoriaMetricsError(f"import: {e.code} {e.read().decode(errors='replace')}") from None

    def export(self, match: str, start_s: int, end_s: int) -> list[dict[str, Any]]:
        """Raw samples of the series ``match`` selects in ``[start_s, end_s]`` (``/api/v1/export``):
        ``{"metric": {...}, "values": [...], "timestamps": [ms, ...]}`` per series."""
        query = urllib.parse.urlencode({"match[]": match, "start": start_s, "end": end_s})
        with urllib.request.urlopen(f"{self.url}/api/v1/export?{query}", timeout=HANG_S) as response:
            return [json.loads(line) for line in response.read().decode().splitlines() if line.strip()]

    def samples_at(self, match: str, at_s: int) -> list[tuple[dict[str, str], float]]:
        """``(labels, value)`` of every series ``match`` selects that has a raw sample at ``at_s``
        exactly (no lookback: a series that ended earlier is not there)."""
        return [
            (series["metric"], float(value))
            for series in self.export(match, at_s, at_s)
            for value, ts in zip(series["values"], series["timestamps"], strict=True)
            if ts == at_s * 1000
        ]


def check_rules(rule_files: Iterable[Path]) -> subprocess.CompletedProcess[str]:
    """``vmalert -dryRun``: parses every rule file (expressions and templates) and exits."""
    args = [f"-rule={path}" for path in rule_files]
    return subprocess.run(
        [_binary("vmalert"), "-dryRun", *args, "-loggerLevel=WARN"], capture_output=True, text=True, timeout=HANG_S
    )


def replay(
    vm: VictoriaMetrics,
    rule_files: Iterable[Path],
    start_s: int,
    end_s: int,
    *,
    interval_s: int = 60,
    rules_delay_s: float = 3.0,
    timeout_s: float = HANG_S,
) -> str:
    """Evaluate the rules over ``[start_s, end_s]`` every ``interval_s`` with ``vmalert`` in
    replay mode, reading from and writing to ``vm``; returns vmalert's output.

    The flags that make it evaluate as Prometheus does: ``-datasource.queryStep`` equal to the
    interval (its default, 5m, overrides the step of every replay query, and an alert with
    ``for:`` then sees a gap between points and never leaves pending); ``-disableAlertgroupLabel``
    (vmalert adds an ``alertgroup`` label Prometheus does not have). Remote write flushes every
    0.5 s in one batch, so ``rules_delay_s`` covers a flush and the moment VictoriaMetrics makes
    the samples searchable.

    Raises:
        VictoriaMetricsError: vmalert exited non-zero (its output in the message).
        subprocess.TimeoutExpired: it ran longer than ``timeout_s``.
    """

    def rfc3339(seconds: int) -> str:
        return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    command = [
        _binary("vmalert"),
        *(f"-rule={path}" for path in rule_files),
        f"-datasource.url={vm.url}",
        f"-remoteWrite.url={vm.url}",
        f"-replay.timeFrom={rfc3339(start_s)}",
        f"-replay.timeTo={rfc3339(end_s)}",
        f"-evaluationInterval={interval_s}s",
        f"-datasource.queryStep={interval_s}s",
        f"-replay.rulesDelay={rules_delay_s}s",
        "-replay.disableProgressBar",
        "-disableAlertgroupLabel",
        "-remoteWrite.flushInterval=500ms",
        "-remoteWrite.maxBatchSize=1000000",
        f"-httpListenAddr=127.0.0.1:{free_port()}",
        "-loggerLevel=WARN",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    if result.returncode != 0:
        raise VictoriaMetricsError(f"vmalert replay exited with {result.returncode}:\n{result.stdout}{result.stderr}")
    return result.stdout + result.stderr
