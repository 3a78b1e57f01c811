"""Grafana dashboards and Prometheus rules generated from the metric contract (the ``mixin`` extra).

Never imported by the instrumentation: it needs ``grafana-foundation-sdk`` and ``pyyaml``
(``pip install otel-sampling[mixin]``). ``python -m otel_sampling.mixin --help`` regenerates the
files with your own selectors, windows and thresholds (``MixinConfig``).
"""

from otel_sampling.mixin.config import MixinConfig

__all__ = ["MixinConfig"]
