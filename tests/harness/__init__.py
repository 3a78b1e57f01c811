"""Harnesses the tests (and ``make demo``) run against: real servers on 127.0.0.1, stopped on exit.

``harness.otlp_receiver``: an OTLP/HTTP receiver that decodes what the real exporters send.
``harness.prometheus``: a real Prometheus server (the ``prometheus`` binary) and a static
``/metrics`` endpoint for it to scrape. ``harness.victoria_metrics``: a real VictoriaMetrics
server and vmalert's replay mode. ``harness.history``: a steady history made from one scrape, for
VictoriaMetrics' import and promtool. ``harness.dashboards``: the PromQL of Grafana dashboard
JSON, for checks against Prometheus.

Not part of the installed package: ``tests/`` is on ``sys.path`` under pytest (``conftest.py``);
``examples/triage/demo.py`` puts it there itself. The fake provider, a testing aid for users too,
is installed: ``otel_sampling.testing.fake_provider``.
"""
