"""The generated dashboards and rule file as shipped inside the package (``otel_sampling/mixin/data/``).

Standard library only: exporting them needs no extra. ``make generate`` writes this copy beside the
repository's ``dashboards/`` and ``alerts/``; ``tests/test_bundled.py`` keeps the two equal to each
other and to a fresh generation with the default ``MixinConfig``.
"""

from __future__ import annotations

from importlib.resources import files

RULES_FILE = "otel-sampling.yaml"
# The same rules as JSON, for mixin.libsonnet: std.parseJson works in every jsonnet, while the C++
# jsonnet 0.18 that Debian and Ubuntu ship aborts in std.parseYaml on block scalars (google/jsonnet #942).
RULES_JSON_FILE = "otel-sampling.json"
DASHBOARDS_DIR = "dashboards"
RULES_DIR = "alerts"


def _folder(name: str) -> dict[str, str]:
    folder = files("otel_sampling.mixin") / "data" / name
    return {
        item.name: item.read_text(encoding="utf-8")
        for item in sorted(folder.iterdir(), key=lambda item: item.name)
        if item.is_file()
    }


def dashboards() -> dict[str, str]:
    """File name (``overview.json``, ...) -> JSON text of every bundled Grafana dashboard."""
    return {name: text for name, text in _folder(DASHBOARDS_DIR).items() if name.endswith(".json")}


def rules() -> str:
    """The bundled Prometheus rule file (recording rules and alerts), as YAML text."""
    return _folder(RULES_DIR)[RULES_FILE]


def files_by_path() -> dict[str, str]:
    """Relative path (``dashboards/overview.json``, ``alerts/otel-sampling.yaml``,
    ``alerts/otel-sampling.json``) -> text, the keys ``otel_sampling.mixin.generate.render`` uses."""
    out = {f"{DASHBOARDS_DIR}/{name}": text for name, text in dashboards().items()}
    out[f"{RULES_DIR}/{RULES_FILE}"] = rules()
    out[f"{RULES_DIR}/{RULES_JSON_FILE}"] = _folder(RULES_DIR)[RULES_JSON_FILE]
    return out
