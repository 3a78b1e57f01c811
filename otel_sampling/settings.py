"""Settings read once at ``instrument()`` time from ``OTEL_SAMPLING_*`` environment variables.

| variable | meaning | default |
|---|---|---|
| ``OTEL_SAMPLING_POLICY`` | path of the policy file (TOML, ``docs/configuration.md``) | none |
| ``OTEL_SAMPLING_LABEL_VALUE_LIMIT`` | distinct values admitted per external metric label | 100 |
| ``OTEL_SAMPLING_ATTRIBUTE_MAX_LENGTH`` | longest string kept in a span attribute, characters | 256 |
| ``OTEL_SAMPLING_IDENTITY_MAX_ENTRIES`` | request fingerprints remembered (LRU) | 10000 |
| ``OTEL_SAMPLING_IDENTITY_TTL_SECONDS`` | how long a fingerprint is remembered, seconds | 3600 |
| ``OTEL_SAMPLING_MAX_PENDING`` | pending requests watched for stalls / awaiting a 2026-07-28 retry | 10000 |
| ``OTEL_SAMPLING_UNANSWERED_AFTER_SECONDS`` | server side: a 2026-07-28 request not answered by a retry within this is ``unanswered`` | 300 |
| ``OTEL_SAMPLING_PROPAGATE_TO_PROVIDER`` | provider requests whose SDK sends no trace context (openai) carry the global propagator's headers for our span | true |

A number that does not parse, or is below 1, and a boolean that is neither ``true`` nor ``false``
(any case), are logged once at WARNING and the default is used (telemetry settings must not stop
a host). A policy file that is missing or malformed is logged
at ERROR, once, with the file, key, line and problem, and instrumentation goes on without a
policy (substitutions are then ``unjudged``): raising from ``instrument()`` would make
``opentelemetry-instrument`` abandon every instrumentation after ours. Check a policy file
before deploying it with ``python -m otel_sampling.policy FILE`` (exit 1 and the message when
it is malformed).
"""  # noqa: E501 - a Markdown table row cannot wrap

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

from otel_sampling import names
from otel_sampling.policy import EMPTY_POLICY, Policy, load_policy

logger = logging.getLogger(__name__)

DEFAULT_LABEL_VALUE_LIMIT = 100
DEFAULT_ATTRIBUTE_MAX_LENGTH = 256
DEFAULT_IDENTITY_MAX_ENTRIES = 10_000
DEFAULT_IDENTITY_TTL_SECONDS = 3600
DEFAULT_MAX_PENDING = 10_000
DEFAULT_UNANSWERED_AFTER_SECONDS = 300
_reported: set[str] = set()  # configuration problems already logged


@dataclass(frozen=True)
class Settings:
    """Frozen configuration shared by the instrumentors.

    Attributes:
        policy: the loaded policy (``EMPTY_POLICY`` when no file is configured).
        label_value_limit: distinct values per external metric label before ``_other``.
        attribute_max_length: longest span attribute string, characters.
        identity_max_entries: request fingerprints remembered, most recently used kept.
        identity_ttl_seconds: seconds a fingerprint is remembered after its request ended.
        max_pending: pending requests watched at once (stall watch, server-side retries).
        unanswered_after_seconds: seconds a server waits for the retry that answers a
            2026-07-28 request before the request is recorded ``unanswered``.
        propagate_to_provider: requests to a provider whose SDK sends no trace context of its own
            carry the global propagator's headers for our ``chat`` span.
    """

    policy: Policy = EMPTY_POLICY
    label_value_limit: int = DEFAULT_LABEL_VALUE_LIMIT
    attribute_max_length: int = DEFAULT_ATTRIBUTE_MAX_LENGTH
    identity_max_entries: int = DEFAULT_IDENTITY_MAX_ENTRIES
    identity_ttl_seconds: int = DEFAULT_IDENTITY_TTL_SECONDS
    max_pending: int = DEFAULT_MAX_PENDING
    unanswered_after_seconds: int = DEFAULT_UNANSWERED_AFTER_SECONDS
    propagate_to_provider: bool = True

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Build settings from ``environ`` (default ``os.environ``).

        Raises:
            otel_sampling.policy.PolicyError: the policy file is missing or malformed.
        """
        env = os.environ if environ is None else environ
        path = env.get(names.ENV_POLICY, "").strip()
        return cls(
            policy=load_policy(path) if path else EMPTY_POLICY,
            label_value_limit=_positive_int(env, names.ENV_LABEL_VALUE_LIMIT, DEFAULT_LABEL_VALUE_LIMIT),
            attribute_max_length=_positive_int(env, names.ENV_ATTRIBUTE_MAX_LENGTH, DEFAULT_ATTRIBUTE_MAX_LENGTH),
            identity_max_entries=_positive_int(env, names.ENV_IDENTITY_MAX_ENTRIES, DEFAULT_IDENTITY_MAX_ENTRIES),
            identity_ttl_seconds=_positive_int(env, names.ENV_IDENTITY_TTL_SECONDS, DEFAULT_IDENTITY_TTL_SECONDS),
            max_pending=_positive_int(env, names.ENV_MAX_PENDING, DEFAULT_MAX_PENDING),
            unanswered_after_seconds=_positive_int(
                env, names.ENV_UNANSWERED_AFTER_SECONDS, DEFAULT_UNANSWERED_AFTER_SECONDS),
            propagate_to_provider=_boolean(env, names.ENV_PROPAGATE_TO_PROVIDER, default=True),
        )


def settings_for_instrument(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings for ``instrument()``: never raises; a bad policy file is logged and left out."""
    try:
        return Settings.from_env(environ)
    except Exception as exc:  # noqa: BLE001 - PolicyError, or anything else the file provokes: reported, never the host's problem
        report_once(logging.ERROR, "otel-sampling: policy file ignored, substitutions stay unjudged until it "
                     "is fixed: %s", str(exc))
        env = os.environ if environ is None else environ
        return Settings.from_env({k: v for k, v in env.items() if k != names.ENV_POLICY})


def report_once(level: int, message: str, *args: object) -> None:
    """Log a configuration problem once per process (each instrumentor reads the settings, and
    ``disclose()`` reads the capture setting on every call)."""
    key = message % args
    if key not in _reported:
        _reported.add(key)
        logger.log(level, message, *args)


def _positive_int(env: Mapping[str, str], key: str, default: int) -> int:
    raw = env.get(key)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        report_once(logging.WARNING, "%s=%r is not a positive integer; using %d", key, raw, default)
        return default
    return value


def _boolean(env: Mapping[str, str], key: str, *, default: bool) -> bool:
    """``true`` / ``false`` in any case, surrounding blanks ignored (OpenTelemetry's boolean
    environment variables); unset or empty: ``default``."""
    raw = env.get(key)
    value = raw.strip().lower() if raw is not None else ""
    if value in ("true", "false"):
        return value == "true"
    if value:
        report_once(logging.WARNING, "%s=%r is neither true nor false; using %s", key, raw, str(default).lower())
    return default
