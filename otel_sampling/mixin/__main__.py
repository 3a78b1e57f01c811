"""``python -m otel_sampling.mixin [--out DIR] [--window 1h] [--min-requests 50] ...``

Regenerates every file into the repository's layout: ``dashboards/*.json`` and
``alerts/otel-sampling.yaml`` under ``--out`` (default: the current directory), from a
``MixinConfig`` whose fields are the options below. ``make generate`` runs it for the committed
files and for the package copy (``otel_sampling/mixin/data``). Needs the ``mixin`` extra; to export
or regenerate one kind of file, the ``otel-sampling`` command does the same per file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from otel_sampling.mixin.cli import ExtraMissing, add_config_options, config_from, generator


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m otel_sampling.mixin", description=__doc__.split("\n\n")[1])
    ap.add_argument("--out", type=Path, default=Path("."), help="directory to write into (default: .)")
    add_config_options(ap)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        config = config_from(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        generate = generator("the generator")
    except ExtraMissing as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for path in generate.write(config, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
