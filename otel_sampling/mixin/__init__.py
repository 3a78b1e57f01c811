"""Grafana dashboards and Prometheus rules generated from the metric contract (the ``mixin`` extra).

Never imported by the instrumentation. The generators (``dashboards``, ``panels``, ``generate``)
need ``grafana-foundation-sdk`` and ``pyyaml`` (``pip install otel-sampling[mixin]``); the PromQL
and the names they build on are plain Python, importable without the extra: ``five_numbers`` (the
five numbers of degraded mode), ``promql`` (builders), ``prometheus_names`` (how an OTel name reads
in Prometheus), ``metrics``, ``rules`` and ``config``. ``python -m otel_sampling.mixin --help``
regenerates the files with your own selectors, windows and thresholds (``MixinConfig``).
"""

from otel_sampling.mixin.config import MixinConfig

__all__ = ["MixinConfig"]
