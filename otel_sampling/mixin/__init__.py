"""Grafana dashboards and Prometheus rules generated from the metric contract.

Never imported by the instrumentation. The generated files ship in the package (``data/``, read by
``bundle``); the ``otel-sampling`` command (``cli``) exports them with no extra, or regenerates them
with your own selectors, windows and thresholds (``MixinConfig``). The generators (``dashboards``,
``panels``, ``generate``) need the ``mixin`` extra (``grafana-foundation-sdk`` and ``pyyaml``); the
PromQL and the names they build on are plain Python, importable without it: ``five_numbers`` (the
five numbers of degraded mode), ``promql`` (builders), ``prometheus_names`` (how an OTel name reads
in Prometheus), ``metrics``, ``rules`` and ``config``. ``python -m otel_sampling.mixin --help``
writes every file in the repository's layout (``make generate``).
"""

from otel_sampling.mixin.config import MixinConfig

__all__ = ["MixinConfig"]
