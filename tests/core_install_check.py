"""Check a core-only install (``pip install .``, no extras): run by ``make test-py310`` in a venv of
the oldest supported Python, from outside the source tree, so the installed copy is what it reads.

1. The installed package compiles (``compileall``: syntax newer than this Python fails here).
2. Every module of the package that needs nothing beyond the core dependencies imports: one that
   fails may only miss an SDK or a library an extra brings (``OPTIONAL``), never a backport.
3. Every ``opentelemetry_instrumentor`` entry point loads, instruments and uninstruments, as
   ``opentelemetry-instrument`` calls it (``skip_dep_check=True``: an absent SDK is skipped by the
   instrumentor itself), with nothing logged at WARNING or above.
4. The ``otel-sampling`` console script is installed and exports the bundled dashboards (JSON) and
   rule file with no extra.

Exit status 0 when all hold; otherwise 1, each failure on its own line.
"""

from __future__ import annotations

import compileall
import importlib
import json
import logging
import pkgutil
import sys
import tempfile
from importlib.metadata import entry_points
from pathlib import Path

# Top-level modules the extras bring ([project.optional-dependencies] in pyproject.toml; pydantic
# with mcp); a module of ours may need one of them only when its extra is installed.
OPTIONAL = frozenset({"mcp", "mcp_types", "pydantic", "anthropic", "openai", "yaml", "grafana_foundation_sdk"})


class _Loud(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def main() -> int:
    import otel_sampling

    package = Path(otel_sampling.__file__).parent
    if package.is_relative_to(Path.cwd()) and (Path.cwd() / "pyproject.toml").exists():
        print(f"run from outside the source tree: {package} is the source, not an install")
        return 1
    failures: list[str] = []
    print(f"Python {sys.version.split()[0]}, otel_sampling from {package}")

    if not compileall.compile_dir(str(package), quiet=1, force=True):
        failures.append("compileall: the package does not compile on this Python (see above)")

    skipped = []
    for module in pkgutil.walk_packages([str(package)], "otel_sampling."):
        if module.name.endswith(".__main__"):  # a command: importing it is running it
            continue
        try:
            importlib.import_module(module.name)
        except ModuleNotFoundError as exc:
            missing = (exc.name or "").partition(".")[0]
            if missing in OPTIONAL:
                skipped.append(f"{module.name} (needs {missing})")
            else:
                failures.append(f"import {module.name}: {exc!r}")
        except Exception as exc:  # noqa: BLE001 - every failure is reported
            failures.append(f"import {module.name}: {exc!r}")
    print(f"imported every module but {len(skipped)} that need an extra: {', '.join(skipped) or 'none'}")

    loud = _Loud()
    logging.getLogger().addHandler(loud)
    found = sorted(entry_points(group="opentelemetry_instrumentor"), key=lambda ep: ep.name)
    ours = [ep for ep in found if ep.value.startswith("otel_sampling.")]
    if not ours:
        failures.append("no opentelemetry_instrumentor entry point of otel_sampling is installed")
    for ep in ours:
        try:
            instrumentor = ep.load()()
            instrumentor.instrument(skip_dep_check=True)
            instrumentor.uninstrument()
        except Exception as exc:  # noqa: BLE001 - every failure is reported
            failures.append(f"entry point {ep.name} ({ep.value}): {exc!r}")
        else:
            print(f"entry point {ep.name}: loaded, instrumented, uninstrumented")
    failures.extend(f"logged {r.levelname} by {r.name}: {r.getMessage()}" for r in loud.records)
    failures.extend(_export_failures())

    for failure in failures:
        print(f"FAILED {failure}")
    return 1 if failures else 0


def _export_failures() -> list[str]:
    """What keeps ``otel-sampling dashboards`` / ``rules`` from exporting the bundled files."""
    scripts = [ep for ep in entry_points(group="console_scripts") if ep.name == "otel-sampling"]
    if not scripts:
        return ["no otel-sampling console script is installed"]
    main = scripts[0].load()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        if main(["dashboards", "--out", str(out / "d")]) or main(["rules", "--out", str(out / "r.yaml")]):
            return ["otel-sampling dashboards/rules: non-zero exit status"]
        dashboards = sorted(out.joinpath("d").glob("*.json"))
        if len(dashboards) != 4 or not all(json.loads(p.read_text())["panels"] for p in dashboards):
            return [f"otel-sampling dashboards wrote {[p.name for p in dashboards]}"]
        if "groups:" not in out.joinpath("r.yaml").read_text():
            return ["otel-sampling rules wrote no rule groups"]
    print("otel-sampling: exported 4 dashboards and the rule file")
    return []


if __name__ == "__main__":
    sys.exit(main())
