"""``python -m otel_sampling.mixin [--out DIR] [--window 1h] [--min-requests 50] ...``

Writes ``dashboards/*.json`` and ``alerts/otel-sampling.yaml`` under ``--out`` (default: the
current directory) from a ``MixinConfig`` whose fields are the options below.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from otel_sampling.mixin.config import MixinConfig
from otel_sampling.mixin.generate import write

_TYPES = {"str": str, "int": int, "float": float}


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m otel_sampling.mixin", description=__doc__.split("\n\n")[1])
    ap.add_argument("--out", type=Path, default=Path("."), help="directory to write into (default: .)")
    for field in dataclasses.fields(MixinConfig):
        ap.add_argument("--" + field.name.replace("_", "-"), dest=field.name, type=_TYPES[str(field.type)],
                        default=field.default, help=f"{field.metadata['help']} (default: {field.default})")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = vars(parser().parse_args(argv))
    out = args.pop("out")
    try:
        config = MixinConfig(**args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for path in write(config, out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
