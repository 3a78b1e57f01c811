"""Render the dashboards and rules to text, and write them into a directory tree."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from grafana_foundation_sdk.cog.encoder import JSONEncoder

from otel_sampling.mixin.bundle import DASHBOARDS_DIR, RULES_DIR, RULES_FILE, RULES_JSON_FILE
from otel_sampling.mixin.config import MixinConfig
from otel_sampling.mixin.dashboards import build
from otel_sampling.mixin.rules import rule_groups

__all__ = ["HEADER", "RULES_FILE", "render", "write"]

HEADER = "# Generated from the otel-sampling metric contract (`otel-sampling rules --help`); do not edit.\n"


class _BlockDumper(yaml.SafeDumper):
    """Multi-line PromQL as YAML block scalars (``|``), the way rule files are written by hand."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str)


def render(config: MixinConfig) -> dict[str, str]:
    """Relative path -> file text, for every generated file."""
    files = {
        f"{DASHBOARDS_DIR}/{stem}.json": JSONEncoder(sort_keys=True, indent=2).encode(model) + "\n"
        for stem, model in build(config).items()
    }
    groups = rule_groups(config)
    files[f"{RULES_DIR}/{RULES_FILE}"] = HEADER + yaml.dump(groups, Dumper=_BlockDumper, sort_keys=False, width=10_000)
    files[f"{RULES_DIR}/{RULES_JSON_FILE}"] = json.dumps(groups, indent=2) + "\n"  # what mixin.libsonnet reads
    return files


def write(config: MixinConfig, root: Path) -> list[Path]:
    """Write every generated file under ``root``; returns the paths written."""
    written = []
    for relative, text in render(config).items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written
