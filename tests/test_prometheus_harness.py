"""The Prometheus harness: a real server that is always stopped and cleaned up, and clear errors."""

from __future__ import annotations

import pytest

from harness.prometheus import PrometheusError, PrometheusServer, StaticMetrics

EXPOSITION = '# TYPE demo_requests_total counter\ndemo_requests_total{outcome="ok"} 3\n'


def test_server_is_stopped_and_removed_when_the_body_raises():
    with (
        pytest.raises(RuntimeError, match="body failed"),
        StaticMetrics(EXPOSITION) as metrics,
        PrometheusServer([metrics.target]) as prom,
    ):
        process, directory = prom._process, prom._dir
        prom.wait_for_scrape()
        assert prom.query("demo_requests_total")[0]["value"][1] == "3"
        raise RuntimeError("body failed")
    assert process.poll() is not None
    assert not directory.exists()


def test_a_bad_query_names_prometheus_s_error():
    with PrometheusServer([]) as prom, pytest.raises(PrometheusError, match="parse error"):
        prom.query("sum(")


def test_a_missing_binary_is_a_clear_error():
    with (
        pytest.raises(PrometheusError, match="no-such-prometheus not found"),
        PrometheusServer([], binary="no-such-prometheus"),
    ):
        pass
