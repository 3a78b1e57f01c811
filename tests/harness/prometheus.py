"""A real Prometheus server for tests and the demo: free 127.0.0.1 port, temp dir, always stopped.

Needs the ``prometheus`` binary (Debian package ``prometheus``; ``make test`` installs it)::

    with PrometheusServer(["127.0.0.1:9464"], rule_files=[rules]) as prom:
        prom.wait_for_scrape()
        prom.query('sum(otel_sampling_sampling_requests_total)')   # -> list of {"metric": {...}, "value": [t, "v"]}

``StaticMetrics`` serves a fixed exposition text (a scrape taken earlier) for Prometheus to scrape.
``ServerProcess`` is the lifecycle of a server binary, shared with ``harness.victoria_metrics``.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

from harness.limits import HANG_S

T = TypeVar("T")
JOB = "otel-sampling"
# How long a server asked to stop may take before it is killed: a clean-up step, never a failure.
STOP_GRACE_S = 15


class PrometheusError(RuntimeError):
    """Prometheus did not start, or an API call failed (the message carries its error or log)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_until(probe: Callable[[], T | None], timeout_s: float, what: str) -> T:
    """Poll ``probe`` every 0.2 s until it returns something truthy; PrometheusError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise PrometheusError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.2)


_Server = TypeVar("_Server", bound="ServerProcess")


class ServerProcess:
    """A server executable for a test: on a free 127.0.0.1 port, in a temp dir of its own (its log
    there too), ready when ``ready_path`` answers 200; on exit, or when it never got ready, stopped
    (terminate, kill after 15 s) and the dir removed.

    A subclass names itself (``name``: log and dir name), its readiness path and its error, and
    gives its executable and arguments.
    """

    name: str
    ready_path: str
    error: type[RuntimeError]

    def __init__(self) -> None:
        self.url = ""
        self._dir: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def _executable(self) -> str:
        raise NotImplementedError

    def _arguments(self, directory: Path, port: int) -> list[str]:
        """The command-line arguments; may write the server's configuration into ``directory``."""
        raise NotImplementedError

    def __enter__(self: _Server) -> _Server:
        executable = self._executable()
        self._dir = Path(tempfile.mkdtemp(prefix=f"otel-sampling-{self.name}-"))
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self._log = (self._dir / f"{self.name}.log").open("w")
        try:
            self._process = subprocess.Popen(
                [executable, *self._arguments(self._dir, port)], stdout=self._log, stderr=subprocess.STDOUT
            )
            wait_until(self._ready, HANG_S, f"{self.name} to be ready")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            if self._process is not None and self._process.poll() is None:
                self._process.terminate()
                try:
                    self._process.wait(timeout=STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait()
        finally:
            self._log.close()
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)

    def _ready(self) -> bool:
        if self._process is not None and self._process.poll() is not None:
            raise self.error(f"{self.name} exited with {self._process.returncode}:\n{self.log()}")
        try:
            with urllib.request.urlopen(self.url + self.ready_path, timeout=2) as response:
                status: int = response.status
                return status == 200
        except OSError:
            return False

    def log(self) -> str:
        """The server's own log so far."""
        self._log.flush()
        return (self._dir / f"{self.name}.log").read_text() if self._dir else ""


class PrometheusServer(ServerProcess):
    """``prometheus`` scraping ``targets`` every ``interval`` (rules evaluated as often), job ``job``.

    Args:
        targets: ``host:port`` of /metrics endpoints.
        rule_files: rule files to load (their paths are used as given).
        interval: scrape and evaluation interval (a Prometheus duration).
        binary: the server executable.

    Raises:
        PrometheusError: the binary is missing, or the server was not ready within 30 s.
    """

    name = "prometheus"
    ready_path = "/-/ready"
    error = PrometheusError

    def __init__(
        self,
        targets: Iterable[str],
        rule_files: Iterable[Path] = (),
        *,
        job: str = JOB,
        interval: str = "1s",
        binary: str = "prometheus",
    ) -> None:
        super().__init__()
        self.targets, self.rule_files, self.job = list(targets), [str(p) for p in rule_files], job
        self.interval, self.binary = interval, binary

    def _executable(self) -> str:
        executable = shutil.which(self.binary)
        if executable is None:
            raise PrometheusError(f"{self.binary} not found (Debian package 'prometheus'; `make test` installs it)")
        return executable

    def _arguments(self, directory: Path, port: int) -> list[str]:
        config = directory / "prometheus.yml"
        config.write_text(
            json.dumps(
                {  # JSON is YAML
                    "global": {"scrape_interval": self.interval, "evaluation_interval": self.interval},
                    "rule_files": self.rule_files,
                    "scrape_configs": [{"job_name": self.job, "static_configs": [{"targets": self.targets}]}],
                }
            )
        )
        return [
            f"--config.file={config}",
            f"--storage.tsdb.path={directory / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ]

    def api(self, path: str, **params: str) -> Any:
        """``data`` of a GET ``/api/v1/<path>``; PrometheusError with Prometheus's message on failure."""
        url = f"{self.url}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=HANG_S) as response:
                body = json.load(response)
        except urllib.error.HTTPError as e:  # 400 bad_data, 422 execution error
            raise PrometheusError(f"{path} {params}: {json.load(e).get('error')}") from None
        if body.get("status") != "success":
            raise PrometheusError(f"{path} {params}: {body}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector of ``expr`` now (``[]`` when it selects nothing)."""
        data = self.api("query", query=expr)
        return data["result"] if data["resultType"] == "vector" else [{"metric": {}, "value": data["result"]}]

    def alerts(self, state: str = "firing") -> list[dict[str, Any]]:
        """Active alerts in ``state`` (``pending`` or ``firing``)."""
        return [a for a in self.api("alerts")["alerts"] if a["state"] == state]

    def wait_for_scrape(self, timeout_s: float = HANG_S) -> None:
        """Until every target was scraped successfully (the first scrape comes after ~5 s)."""

        def all_up() -> bool:
            targets = self.api("targets")["activeTargets"]
            return bool(targets) and all(t["health"] == "up" for t in targets)

        wait_until(all_up, timeout_s, f"a successful scrape of {self.targets}")

    def wait_for_rules(self, timeout_s: float = HANG_S) -> None:
        """Until every rule group has been evaluated, healthy, after the targets' latest scrape, and
        then once more after every other group: groups run on their own tickers, so an alert that
        reads a recorded series sees it only from the evaluation after the recording group's."""

        def evaluated_after(since: datetime) -> Callable[[], bool]:
            def probe() -> bool:
                return all(
                    _instant(g["lastEvaluation"]) > since and all(r.get("health") == "ok" for r in g["rules"])
                    for g in self.api("rules")["groups"]
                )

            return probe

        # Fixed instants, read once: "after the latest scrape" re-read on every probe is a moving
        # target that a group evaluating just before each scrape never meets (a flaky timeout).
        scraped = max(_instant(t["lastScrape"]) for t in self.api("targets")["activeTargets"])
        wait_until(evaluated_after(scraped), timeout_s, "every rule group to be evaluated after a scrape")
        first_round = max(_instant(g["lastEvaluation"]) for g in self.api("rules")["groups"])
        wait_until(evaluated_after(first_round), timeout_s, "every rule group to be evaluated again")


def _instant(rfc3339: str) -> datetime:
    """Prometheus API timestamps carry up to 9 fraction digits (Go trims zeros); datetime takes 6."""
    micro = re.sub(r"\.(\d+)", lambda f: "." + (f.group(1) + "000000")[:6], rfc3339)
    return datetime.fromisoformat(micro.replace("Z", "+00:00"))


class StaticMetrics:
    """Serve ``text`` (Prometheus text exposition) at ``http://127.0.0.1:<port>/metrics``; ``.target`` is
    host:port. ``text`` may be a function, called at each scrape (a host whose counters move)."""

    def __init__(self, text: str | Callable[[], str]) -> None:
        render = text if callable(text) else (lambda: text)

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server API)
                body = render().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.target = f"127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> StaticMetrics:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
