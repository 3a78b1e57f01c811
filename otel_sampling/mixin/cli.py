"""The ``otel-sampling`` command: export the bundled Grafana dashboards and Prometheus rules, or
regenerate them with other selectors and thresholds (``otel-sampling --help``).

Exporting reads the package copy (``otel_sampling.mixin.bundle``) and needs no extra; any
``MixinConfig`` option regenerates through ``otel_sampling.mixin.generate``, which needs the
``mixin`` extra and is imported only then, so ``--help`` and the export work without it.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from otel_sampling.mixin import bundle
from otel_sampling.mixin.config import REPOSITORY, MixinConfig
from otel_sampling.version import __version__

EXTRA = "mixin"
INSTALL_HINT = f"pip install 'otel-sampling[{EXTRA}] @ git+{REPOSITORY}' (in a clone: pip install -e '.[{EXTRA}]')"
DESCRIPTION = """\
Export the Grafana dashboards and the Prometheus rules of otel-sampling.

  otel-sampling dashboards --out DIR   DIR/overview.json, mcp-sampling.json, providers.json, degradation.json
  otel-sampling rules --out FILE       the Prometheus rule file: recording rules and alerts
  otel-sampling --version              the installed version

With no other option, the files written are the ones shipped in the package (equal to the
repository's dashboards/ and alerts/) and nothing beyond the package is needed. Any regeneration
option (selectors, windows, thresholds, for durations, the runbook URL: COMMAND --help) regenerates
them with that value, which needs the mixin extra (grafana-foundation-sdk and PyYAML, Python >= 3.11).
"""
_TYPES = {"str": str, "int": int, "float": float}
# Modules the mixin extra brings: a ModuleNotFoundError naming one of them means the extra is missing.
_EXTRA_MODULES = ("yaml", "grafana_foundation_sdk")


class ExtraMissing(Exception):
    """Regeneration was asked for without the ``mixin`` extra; the message says what to install."""


def add_config_options(parser: argparse._ActionsContainer) -> None:
    """One ``--option`` per ``MixinConfig`` field (``rule_selector`` -> ``--rule-selector``), default
    the field's default, help its ``help`` metadata."""
    for field in dataclasses.fields(MixinConfig):
        parser.add_argument(
            "--" + field.name.replace("_", "-"),
            dest=field.name,
            type=_TYPES[str(field.type)],
            default=field.default,
            help=f"{field.metadata['help']} (default: {field.default})",
        )


def config_from(args: argparse.Namespace) -> MixinConfig:
    """The ``MixinConfig`` of parsed options; raises ``ValueError`` naming the field on a bad value."""
    return MixinConfig(**{field.name: getattr(args, field.name) for field in dataclasses.fields(MixinConfig)})


def generator(needed_by: str) -> ModuleType:
    """``otel_sampling.mixin.generate``, imported only when called: it needs the ``mixin`` extra.

    Raises:
        ExtraMissing: a module of the extra is not installed; the message starts with ``needed_by``
            (what asked for the generator) and says what to install.
    """
    try:
        return importlib.import_module("otel_sampling.mixin.generate")
    except ModuleNotFoundError as e:
        if (e.name or "").partition(".")[0] not in _EXTRA_MODULES:
            raise
        raise ExtraMissing(
            f"{needed_by} needs the '{EXTRA}' extra (grafana-foundation-sdk and PyYAML; "
            f"{e.name} is not installed): {INSTALL_HINT}"
        ) from None


def generated(config: MixinConfig) -> dict[str, str]:
    """Relative path -> text of every file, from the package copy for the default config (no extra
    needed), regenerated otherwise. Raises ``ExtraMissing`` when regeneration needs the extra."""
    if config == MixinConfig():
        return bundle.files_by_path()
    changed = [
        f"--{f.name.replace('_', '-')}" for f in dataclasses.fields(config) if getattr(config, f.name) != f.default
    ]
    files: dict[str, str] = generator(f"regenerating with {', '.join(changed)}").render(config)
    return files


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="otel-sampling", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    dashboards = commands.add_parser(
        "dashboards",
        help="write the Grafana dashboards (JSON) into a directory",
        description="Write the Grafana dashboards (one JSON file each) into --out.",
    )
    dashboards.add_argument("--out", type=Path, required=True, metavar="DIR", help="directory to write into")
    rules = commands.add_parser(
        "rules",
        help="write the Prometheus rule file (YAML)",
        description="Write the Prometheus recording and alerting rules to --out.",
    )
    rules.add_argument("--out", type=Path, required=True, metavar="FILE", help="rule file to write")
    for command in (dashboards, rules):
        add_config_options(command.add_argument_group("regeneration (needs the mixin extra)"))
    return ap


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; exit status 0, 2 on a bad option value, 1 when the mixin extra is missing."""
    args = parser().parse_args(argv)
    try:
        files = generated(config_from(args))
    except ValueError as e:
        print(f"otel-sampling: error: {e}", file=sys.stderr)
        return 2
    except ExtraMissing as e:
        print(
            f"otel-sampling: error: {e}. Without options, the bundled files are exported with no extra.",
            file=sys.stderr,
        )
        return 1
    if args.command == "dashboards":
        written = [
            _write(args.out / Path(relative).name, text)
            for relative, text in files.items()
            if relative.startswith(bundle.DASHBOARDS_DIR + "/")
        ]
    else:
        written = [_write(args.out, files[f"{bundle.RULES_DIR}/{bundle.RULES_FILE}"])]
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
