"""``python -m otel_sampling.policy FILE...``: check policy files before deploying them.

Prints ``FILE: ok (N servers, M prices)`` on stdout per valid file (followed by ``, N tool tables``,
``, N run tables`` and ``, a default scope`` when the file has them) and the
:class:`~otel_sampling.policy.PolicyError` message on stderr per invalid one. Exit status: 0 when
every file is valid, 1 otherwise, 2 (with a usage line on stderr) without files or on an unknown
option; ``--help`` prints the usage, ``--version`` the package version (exit 0).
"""

from __future__ import annotations

import argparse
import sys

from otel_sampling.policy import Policy, PolicyError, load_policy
from otel_sampling.version import __version__


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m otel_sampling.policy",
        description="Check otel-sampling policy files (TOML, docs/configuration.md) before deploying them.",
        epilog="Exit status: 0 every file is valid, 1 one is missing or malformed (its message on stderr).",
    )
    ap.add_argument("--version", action="version", version=f"otel-sampling {__version__}")
    ap.add_argument("files", nargs="+", metavar="FILE", help="a policy file to check")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Check each file of *argv* (default: ``sys.argv[1:]``); return the exit status above."""
    try:
        paths = parser().parse_args(argv).files
    except SystemExit as e:  # --help, --version (0) or a usage error (2), already printed
        return int(e.code or 0)
    status = 0
    for path in paths:
        try:
            policy = load_policy(path)
        except PolicyError as exc:
            print(exc, file=sys.stderr)
            status = 1
        else:
            print(f"{path}: ok ({', '.join(_counts(policy))})")
    return status


def _counts(policy: Policy) -> list[str]:
    """What a valid file holds, in words: its servers and prices, then its other scope tables."""

    def counted(n: int, what: str) -> str:
        return f"{n} {what}{'s' * (n != 1)}"

    parts = [counted(len(policy.servers), "server"), counted(len(policy.prices), "price")]
    if policy.tools:
        parts.append(counted(len(policy.tools), "tool table"))
    if policy.runs:
        parts.append(counted(len(policy.runs), "run table"))
    if policy.default is not None:
        parts.append("a default scope")
    return parts


if __name__ == "__main__":
    sys.exit(main())
