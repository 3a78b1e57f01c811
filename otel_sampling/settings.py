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
| ``OTEL_SAMPLING_FINGERPRINT_KEY`` | HMAC key of the request fingerprint, shared by the processes that must agree on it: at least 32 characters, its UTF-8 bytes the key, surrounding whitespace ignored | a random key per process |
| ``OTEL_SAMPLING_OMIT_FINGERPRINT`` | ``true``: no ``otel_sampling.sampling.request.fingerprint`` on spans (identity tracking goes on) | false |
| ``OTEL_SAMPLING_OMIT_PROVIDER_TRACE_CONTEXT`` | ``true``: provider requests whose SDK sends no trace context of its own (openai) do not carry the global propagator's headers for our span | false |
| ``OTEL_SAMPLING_POLICY_REFUSAL_CODE`` | the JSON-RPC code :func:`otel_sampling.sampling_error` gives a policy refusal, and the code read as ``policy.denied`` besides the legacy ``-32003``: an integer outside JSON-RPC's reserved ``-32768..-32000`` (MCP 2026-07-28), or ``-32003`` for servers that know only it; not ``-1`` (the user's rejection) | ``-31003`` |
| ``OTEL_SAMPLING_PRICE_SOURCE`` | ``genai-prices``: prices not in the policy's table come from genai-prices when it is installed (the ``prices`` extra); ``none``: only the table prices calls | ``genai-prices`` |
| ``OTEL_SAMPLING_DISCLOSURE_TRACKED`` | ``true``: the host tracks disclosure from the start, so its silent incidents are ``degradation.disclosure.tracked=true`` (paged) before its first ``disclose()`` call | false: tracked once the process calls ``disclose()`` |
| ``OTEL_SAMPLING_GUARD_FOREIGN_SPANS`` | ``true``: the spans of the mcp SDK, fastmcp and anthropic's native tracing lose status descriptions, their strings are cut to ``OTEL_SAMPLING_ATTRIBUTE_MAX_LENGTH`` and integers beyond int64 dropped (:mod:`otel_sampling.foreign_spans`) | false |
| ``OTEL_SAMPLING_SERVED_MODEL_HEADERS`` | response headers, comma separated, that name the model a gateway served (the first present wins); ``none``: read none | ``DEFAULT_SERVED_MODEL_HEADERS`` |
| ``OTEL_SEMCONV_STABILITY_OPT_IN`` | OpenTelemetry's: ``gen_ai_latest_experimental`` emits the newest GenAI inference metric names only, ``gen_ai/dup`` both (:func:`otel_sampling.records.provider_call.record_inference`) | v1.41's names |

A number that does not parse, or is below 1, is logged once at WARNING and the default is used
(telemetry settings must not stop a host); so is a fingerprint key shorter than 32 characters (the
message never shows the key; a key of the process is used). Booleans follow the OpenTelemetry
environment variable specification: only ``true`` (any case) is true; unset, empty and ``false``
are false; any other value is false and logged once at WARNING; so is a price source other than
``genai-prices`` or ``none`` (the default applies), and a policy refusal code that is not an
integer or is one the rule above excludes. A header list entry that is not
an HTTP header name (RFC 9110 token) is logged once at WARNING, naming the variable, and left out;
past ``MAX_SERVED_MODEL_HEADERS`` entries the rest are. A policy file that is missing or
malformed is logged at ERROR, once, with the file, key, line and problem, and instrumentation goes
on without a policy (substitutions are then ``unjudged``): raising from ``instrument()`` would make
``opentelemetry-instrument`` abandon every instrumentation after ours. Check a policy file
before deploying it with ``python -m otel_sampling.policy FILE`` (exit 1 and the message when
it is malformed).
"""  # noqa: E501 - a Markdown table row cannot wrap

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from otel_sampling import names, price_source, semconv_mode
from otel_sampling.policy import EMPTY_POLICY, Policy, load_policy

logger = logging.getLogger(__name__)

DEFAULT_LABEL_VALUE_LIMIT = 100
DEFAULT_ATTRIBUTE_MAX_LENGTH = 256
DEFAULT_IDENTITY_MAX_ENTRIES = 10_000
DEFAULT_IDENTITY_TTL_SECONDS = 3600
DEFAULT_MAX_PENDING = 10_000
DEFAULT_UNANSWERED_AFTER_SECONDS = 300
#: Response headers in which gateways document the model that served a request while the body
#: echoes the requested one, read in this order: ngrok AI Gateway ``Ngrok-AIG-Model`` ("names the
#: upstream model that produced the response", ngrok changelog 2026-09-02, docs "AI Gateway: how it
#: works, response headers"); Bifrost ``x-bifrost-routing-info-model`` and its older
#: ``x-bifrost-resolved-model`` (docs.getbifrost.ai "Response Headers": which provider and model
#: handled the request, the only place to read it on the drop-in SDK routes). LiteLLM's
#: ``x-litellm-model-group`` (the client's alias) and ``x-litellm-model-id`` (a deployment id),
#: Cloudflare AI Gateway's ``cf-aig-step`` and Portkey's ``x-portkey-last-used-option-index`` (the
#: index of the fallback step) name no model, so they are not listed.
DEFAULT_SERVED_MODEL_HEADERS = ("ngrok-aig-model", "x-bifrost-routing-info-model", "x-bifrost-resolved-model")
MAX_SERVED_MODEL_HEADERS = 16
_HEADER_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")  # RFC 9110 section 5.6.2 token
# RFC 2104 section 3: a key shorter than the hash output (32 bytes for SHA-256) weakens the HMAC.
FINGERPRINT_KEY_MIN_LENGTH = 32
# JSON-RPC 2.0 reserves -32768..-32000; MCP 2026-07-28 asks codes for other purposes to lie outside it.
_RESERVED_CODES = range(-32768, -32000 + 1)
_INT32 = range(-(2**31), 2**31)  # peers parse codes into 32-bit integers
_reported: set[str] = set()  # configuration problems already logged


@dataclass(frozen=True)
class Settings:
    """Frozen configuration shared by the instrumentors.

    Attributes:
        policy: the loaded policy (``EMPTY_POLICY`` when no file is configured).
        label_value_limit: distinct values per external metric label before ``_OTHER``.
        attribute_max_length: longest span attribute string, characters.
        identity_max_entries: request fingerprints remembered, most recently used kept.
        identity_ttl_seconds: seconds a fingerprint is remembered after its request ended.
        max_pending: pending requests watched at once (stall watch, server-side retries).
        unanswered_after_seconds: seconds a server waits for the retry that answers a
            2026-07-28 request before the request is recorded ``unanswered``.
        fingerprint_key: the HMAC key of the request fingerprint shared across processes, bytes
            (``OTEL_SAMPLING_FINGERPRINT_KEY``); None: each process uses a random key of its own
            (:func:`otel_sampling.state.fingerprint_key`). Left out of ``repr``.
        omit_fingerprint: True leaves ``otel_sampling.sampling.request.fingerprint`` off spans; the identity
            store (and the violations it finds) works the same.
        propagate_to_provider: requests to a provider whose SDK sends no trace context of its own
            carry the global propagator's headers for our ``chat`` span (``OTEL_SAMPLING_OMIT_PROVIDER_TRACE_CONTEXT``
            turns it off).
        policy_refusal_code: the JSON-RPC code of a policy refusal (``OTEL_SAMPLING_POLICY_REFUSAL_CODE``,
            :func:`policy_refusal_code`): sent by :func:`otel_sampling.sampling_error` for
            ``policy.*`` and ``model.unavailable``, read as ``policy.denied`` (besides the legacy
            ``-32003``) by the ending rules.
        price_source: prices models the policy's table leaves out (:mod:`otel_sampling.price_source`);
            None: only the table prices calls. :meth:`from_env` gives genai-prices when it is
            installed (loaded once per process) unless ``OTEL_SAMPLING_PRICE_SOURCE=none``.
        disclosure_tracked: True: the host tracks disclosure from the start
            (``OTEL_SAMPLING_DISCLOSURE_TRACKED``); False: from its first ``disclose()`` call.
        guard_foreign_spans: True puts the spans of the mcp SDK, fastmcp and anthropic's native
            tracing under :func:`otel_sampling.foreign_spans.guard` (``OTEL_SAMPLING_GUARD_FOREIGN_SPANS``).
        served_model_headers: lower-cased response header names that name the model a gateway
            served (``OTEL_SAMPLING_SERVED_MODEL_HEADERS``), first present wins; () reads none.
        gen_ai_semconv: the GenAI inference metric names emitted (``OTEL_SEMCONV_STABILITY_OPT_IN``,
            :func:`otel_sampling.records.provider_call.record_inference`).
    """

    policy: Policy = EMPTY_POLICY
    label_value_limit: int = DEFAULT_LABEL_VALUE_LIMIT
    attribute_max_length: int = DEFAULT_ATTRIBUTE_MAX_LENGTH
    identity_max_entries: int = DEFAULT_IDENTITY_MAX_ENTRIES
    identity_ttl_seconds: int = DEFAULT_IDENTITY_TTL_SECONDS
    max_pending: int = DEFAULT_MAX_PENDING
    unanswered_after_seconds: int = DEFAULT_UNANSWERED_AFTER_SECONDS
    fingerprint_key: bytes | None = field(default=None, repr=False)
    omit_fingerprint: bool = False
    propagate_to_provider: bool = True
    policy_refusal_code: int = names.ERROR_CODE_POLICY_REFUSAL
    price_source: price_source.PriceSource | None = None
    disclosure_tracked: bool = False
    guard_foreign_spans: bool = False
    served_model_headers: tuple[str, ...] = DEFAULT_SERVED_MODEL_HEADERS
    gen_ai_semconv: semconv_mode.Emission = semconv_mode.DEFAULT

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
                env, names.ENV_UNANSWERED_AFTER_SECONDS, DEFAULT_UNANSWERED_AFTER_SECONDS
            ),
            fingerprint_key=_fingerprint_key(env),
            omit_fingerprint=_boolean(env, names.ENV_OMIT_FINGERPRINT),
            propagate_to_provider=not _boolean(env, names.ENV_OMIT_PROVIDER_TRACE_CONTEXT),
            policy_refusal_code=policy_refusal_code(env),
            price_source=_price_source(env),
            disclosure_tracked=_boolean(env, names.ENV_DISCLOSURE_TRACKED),
            guard_foreign_spans=_boolean(env, names.ENV_GUARD_FOREIGN_SPANS),
            served_model_headers=_header_names(env, names.ENV_SERVED_MODEL_HEADERS, DEFAULT_SERVED_MODEL_HEADERS),
            gen_ai_semconv=semconv_mode.emission(env),
        )


def settings_for_instrument(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings for ``instrument()``: never raises; a bad policy file is logged and left out."""
    try:
        return Settings.from_env(environ)
    except Exception as exc:  # noqa: BLE001 - PolicyError, or anything else the file provokes: reported, never the host's problem
        report_once(
            logging.ERROR,
            "otel-sampling: policy file ignored, substitutions stay unjudged until it is fixed: %s",
            str(exc),
        )
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


def _fingerprint_key(env: Mapping[str, str]) -> bytes | None:
    """The shared fingerprint key: the UTF-8 bytes of the stripped value, or None when unset,
    empty or too short (reported, without the value: it is a secret)."""
    raw = (env.get(names.ENV_FINGERPRINT_KEY) or "").strip()
    if not raw:
        return None
    if len(raw) < FINGERPRINT_KEY_MIN_LENGTH:
        report_once(
            logging.WARNING,
            "%s is shorter than %d characters; using a random key of this process "
            "(fingerprints then differ between processes)",
            names.ENV_FINGERPRINT_KEY,
            FINGERPRINT_KEY_MIN_LENGTH,
        )
        return None
    try:  # surrogateescape: the bytes the environment held, also when not UTF-8 (POSIX decodes os.environ so)
        return raw.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate from a mapping built in code: no bytes to key with
        report_once(
            logging.WARNING,
            "%s cannot be encoded as bytes; using a random key of this process",
            names.ENV_FINGERPRINT_KEY,
        )
        return None


def policy_refusal_code(environ: Mapping[str, str] | None = None) -> int:
    """The JSON-RPC code of a policy refusal: ``OTEL_SAMPLING_POLICY_REFUSAL_CODE`` in ``environ``
    (default ``os.environ``), else ``names.ERROR_CODE_POLICY_REFUSAL`` (``-31003``).

    Accepted: an integer (32-bit) outside JSON-RPC's reserved ``-32768..-32000`` (the MCP 2026-07-28
    specification, "Error Codes": ``-32000..-32019`` are legacy, "new implementations SHOULD NOT
    use" them, ``-32020..-32099`` are the specification's own, and codes for other purposes "SHOULD
    be allocated outside the JSON-RPC reserved range"), or ``-32003``, the legacy code, for servers
    that read only it; never ``-1``, the user's rejection (MCP 2025-11-25). Anything else is logged
    once at WARNING, naming the variable, and the default is used.
    """
    env = os.environ if environ is None else environ
    raw = env.get(names.ENV_POLICY_REFUSAL_CODE, "").strip()
    if not raw:
        return names.ERROR_CODE_POLICY_REFUSAL
    try:
        code = int(raw)
    except ValueError:
        code = None
    legacy = code == names.ERROR_CODE_POLICY_REFUSAL_LEGACY
    if (
        code is None
        or code not in _INT32
        or code == names.ERROR_CODE_USER_REJECTED
        or (code in _RESERVED_CODES and not legacy)
    ):
        report_once(
            logging.WARNING,
            "%s=%r is not an integer outside JSON-RPC's reserved -32768..-32000 (nor -32003, nor -1); using %d",
            names.ENV_POLICY_REFUSAL_CODE,
            raw[:64],
            names.ERROR_CODE_POLICY_REFUSAL,
        )
        return names.ERROR_CODE_POLICY_REFUSAL
    return code


def _price_source(env: Mapping[str, str]) -> price_source.PriceSource | None:
    chosen = _choice(
        env,
        names.ENV_PRICE_SOURCE,
        (names.PRICE_SOURCE_GENAI_PRICES, names.PRICE_SOURCE_NONE),
        names.PRICE_SOURCE_GENAI_PRICES,
    )
    return None if chosen == names.PRICE_SOURCE_NONE else price_source.installed()


def _header_names(env: Mapping[str, str], key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    """A comma-separated list of HTTP header names, lower-cased, in order, each once: unset or empty
    gives ``default`` (the OpenTelemetry rule: an empty variable is an unset one), ``none`` gives ();
    an entry that is not a header name is reported once and left out, as is every entry past
    ``MAX_SERVED_MODEL_HEADERS``."""
    raw = env.get(key, "").strip()
    if not raw:
        return default
    if raw.lower() == "none":
        return ()
    found: list[str] = []
    for entry in (part.strip().lower() for part in raw.split(",")):
        if not entry or entry in found:
            continue
        if _HEADER_TOKEN.match(entry) is None:
            report_once(logging.WARNING, "%s: %r is not an HTTP header name; left out", key, entry[:64])
        elif len(found) >= MAX_SERVED_MODEL_HEADERS:
            report_once(
                logging.WARNING, "%s names more than %d headers; the rest are left out", key, MAX_SERVED_MODEL_HEADERS
            )
            break
        else:
            found.append(entry)
    return tuple(found)


def _boolean(env: Mapping[str, str], key: str) -> bool:
    """An OpenTelemetry boolean (SDK environment variable specification): true only for ``true``
    in any case; unset, empty and ``false`` are false; any other value is false, reported once."""
    return _choice(env, key, ("true", "false"), "false") == "true"


def _choice(env: Mapping[str, str], key: str, values: tuple[str, str], default: str) -> str:
    """The one of ``values`` that ``key`` is set to (any case, surrounding blanks ignored), else
    ``default``; a value that is neither (not unset nor empty) is reported once."""
    raw = env.get(key, "").strip()
    chosen = raw.lower()
    if chosen in values:
        return chosen
    if raw:
        report_once(logging.WARNING, "%s=%r is neither %s nor %s; using %s", key, raw, *values, default)
    return default
