"""Check dashboard JSON against the Grafana schema of the pinned grafana-foundation-sdk build.

The SDK's models are generated (by cog) from the CUE schemas of one Grafana version, the same source
as that version's JSON Schemas, which the wheel does not ship. ``model_errors(dashboard)`` decodes a
dashboard with the SDK's own decoders (panel options and field config through the panel plugin's
model, targets through the Prometheus query model) and reports:

- every value of the file that the model's re-encoding does not give back (a key the schema does
  not define is dropped by the decoder; a ``null`` where the schema has an optional object comes
  back absent); keys the file leaves out take the schema's defaults and are no error;
- every value whose type the model's annotations reject (a string where the schema has a list, an
  enum value outside the enum, a query the runtime cannot type).
"""

from __future__ import annotations

import enum
import json
import types
import typing
from typing import Any

from grafana_foundation_sdk.cog import runtime
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.cog.plugins import register_default_plugins
from grafana_foundation_sdk.models import dashboard as dm

register_default_plugins()

_MODELS = "grafana_foundation_sdk.models."


def model_errors(dashboard: dict[str, Any]) -> list[str]:
    """Differences and type errors of ``dashboard`` against the SDK's model (empty: it conforms)."""
    try:
        model = dm.Dashboard.from_json(dashboard)
    except (TypeError, AttributeError, KeyError, ValueError) as e:
        return _decoder_errors(dashboard, e)
    errors = _differences(dashboard, json.loads(JSONEncoder().encode(model)), "")
    errors += _type_errors(model, dm.Dashboard, "")
    return errors


def _decoder_errors(dashboard: dict[str, Any], error: Exception) -> list[str]:
    """Where the SDK's decoder fails on a value of the wrong shape (``options: null``): the panels it
    rejects, or the dashboard when every panel decodes."""
    out = []
    for i, panel in enumerate(dashboard.get("panels") or []):
        try:
            (dm.RowPanel if isinstance(panel, dict) and panel.get("type") == "row" else dm.Panel).from_json(panel)
        except (TypeError, AttributeError, KeyError, ValueError) as e:
            out.append(f"/panels/{i}: the schema's decoder rejects it ({type(e).__name__}: {e})")
    return out or [f": the schema's decoder rejects it ({type(error).__name__}: {error})"]


def _differences(written: Any, encoded: Any, path: str) -> list[str]:
    if isinstance(written, dict) and isinstance(encoded, dict):
        out = [
            f"{path}/{key}: not in the schema (or null where it has an object)"
            for key in written.keys() - encoded.keys()
        ]
        for key in written.keys() & encoded.keys():
            out += _differences(written[key], encoded[key], f"{path}/{key}")
        return out
    if isinstance(written, list) and isinstance(encoded, list) and len(written) == len(encoded):
        return [
            e for i, (w, x) in enumerate(zip(written, encoded, strict=True)) for e in _differences(w, x, f"{path}/{i}")
        ]
    return [] if written == encoded else [f"{path}: {written!r} reads back as {encoded!r}"]


def _hints(cls: type) -> dict[str, Any]:
    return {name: hint for name, hint in typing.get_type_hints(cls).items() if not name.startswith("_")}


def _type_errors(value: Any, hint: Any, path: str) -> list[str]:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return []
        options = [arg for arg in args if arg is not type(None)]
        matching = [arg for arg in options if isinstance(arg, type) and isinstance(value, arg)]
        tried = [_type_errors(value, arg, path) for arg in matching or options]
        return [] if any(not errors for errors in tried) else min(tried, key=len)
    if origin is list:
        if not isinstance(value, list):
            return [f"{path}: {value!r} is not a list"]
        return [e for i, item in enumerate(value) for e in _type_errors(item, args[0], f"{path}/{i}")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{path}: {value!r} is not an object"]
        return [e for key, item in value.items() for e in _type_errors(item, args[1], f"{path}/{key}")]
    if hint is Any or hint is object:
        # An untyped slot (panel options, field config): typed by the plugin model the decoder picked.
        return _model_errors(value, path) if type(value).__module__.startswith(_MODELS) else []
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        allowed = {member.value for member in hint}
        return [] if value in allowed else [f"{path}: {value!r} is not one of {sorted(allowed, key=str)}"]
    if hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return [] if ok else [f"{path}: {value!r} is not a number"]
    if hint in (int, str, bool):
        ok = isinstance(value, hint) and (hint is bool or not isinstance(value, bool))
        return [] if ok else [f"{path}: {value!r} is not of type {hint.__name__}"]
    if isinstance(hint, type):
        if isinstance(value, runtime.UnknownDataquery):
            return [f"{path}: a query of no known data source type"]
        if isinstance(value, dict) and hasattr(hint, "from_json"):
            value = hint.from_json(value)  # a slot the parent's decoder leaves as JSON (panel links)
        if not isinstance(value, hint):
            return [f"{path}: {value!r} is not a {hint.__name__}"]
        return _model_errors(value, path)
    return []


def _model_errors(value: Any, path: str) -> list[str]:
    return [
        e
        for name, hint in _hints(type(value)).items()
        for e in _type_errors(getattr(value, name), hint, f"{path}/{name}")
    ]
