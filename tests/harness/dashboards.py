"""Read the PromQL out of Grafana dashboard JSON, for checks against Prometheus.

``queries(dashboard, name)`` lists every panel target, annotation and ``label_values(expr, label)``
variable query of a dashboard model, ``dashboard_queries(directory)`` those of every ``*.json``
there; ``expand(expr)`` replaces Grafana variables the way grafana/dashboard-linter does, so
Prometheus can run the result.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

# Grafana's built-in variables -> values Prometheus accepts; any other variable is multi-value
# with All = ".+".
GRAFANA_GLOBALS = {"__rate_interval": "1m", "__interval": "15s", "__range": "1h"}


def load(path: Path) -> dict[str, Any]:
    model: dict[str, Any] = json.loads(path.read_text())
    return model


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """Top-level panels and the panels nested in collapsed rows."""
    out = []
    for panel in dashboard.get("panels", []):
        out.append(panel)
        out.extend(panel.get("panels") or [])
    return out


def rows(dashboard: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Row title -> its panels: those nested in a collapsed row, or for an expanded row the top-level
    panels after it up to the next row (Grafana's layout). Panels above the first row are left out."""
    out: dict[str, list[dict[str, Any]]] = {}
    current: list[dict[str, Any]] | None = None
    for panel in dashboard.get("panels", []):
        if panel["type"] == "row":
            current = out.setdefault(panel["title"], list(panel.get("panels") or []))
        elif current is not None:
            current.append(panel)
    return out


def expand(expr: str) -> str:
    """``$__rate_interval`` -> ``1m``, ``$__range`` -> ``1h``, ``$job`` / ``${job:regex}`` -> ``.+``; a
    format (``:regex``) only inside braces, as Grafana reads it (``[$__range:1m]`` is a subquery)."""
    return re.sub(
        r"\$(?:\{(\w+)(?::\w+)?\}|(\w+))", lambda g: GRAFANA_GLOBALS.get(g.group(1) or g.group(2), ".+"), expr
    )


def dashboard_queries(directory: Path) -> list[tuple[str, str, str]]:
    """:func:`queries` of every ``*.json`` dashboard in ``directory``, each ``where`` starting with its file name."""
    return [query for path in sorted(directory.glob("*.json")) for query in queries(load(path), path.name)]


def queries(dashboard: dict[str, Any], name: str) -> list[tuple[str, str, str]]:
    """(where, expr, legend) for every panel target, annotation and ``label_values(expr, label)``
    variable of one dashboard model, ``where`` starting with ``name`` (legend empty but for panel targets).

    Raises:
        ValueError: a query variable that is not ``label_values(expr, label)``.
    """
    out = []
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            match = re.fullmatch(r"label_values\((.*), *(\w+)\)", variable["query"])
            if not match:
                raise ValueError(f"{name} variable {variable['name']}: not label_values(expr, label)")
            out.append((f"{name} variable {variable['name']}", match.group(1), ""))
    for item in dashboard["annotations"].get("list", []):
        out.append((f"{name} annotation {item['name']}", item["expr"], ""))
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            out.append(
                (
                    f"{name} panel {panel['id']} '{panel['title']}' {target['refId']}",
                    target["expr"],
                    target["legendFormat"],
                )
            )
    return out


def legend_labels(legend: str) -> set[str]:
    """The labels a legend format names: ``{{mcp_server_name}} {{job}}`` -> both."""
    return set(re.findall(r"\{\{ *(\w+) *\}\}", legend))
