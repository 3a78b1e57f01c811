"""``python -m otel_sampling.policy FILE...``: check policy files before deploying them.

Prints ``FILE: ok (N servers, M prices)`` on stdout per valid file and the
:class:`~otel_sampling.policy.PolicyError` message on stderr per invalid one. Exit status: 0 when
every file is valid, 1 otherwise, 2 (with a usage line on stderr) without files.
"""

from __future__ import annotations

import sys

from otel_sampling.policy import PolicyError, load_policy


def main(argv: list[str] | None = None) -> int:
    """Check each file of *argv* (default: ``sys.argv[1:]``); return the exit status above."""
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print("usage: python -m otel_sampling.policy FILE...", file=sys.stderr)
        return 2
    status = 0
    for path in paths:
        try:
            policy = load_policy(path)
        except PolicyError as exc:
            print(exc, file=sys.stderr)
            status = 1
        else:
            servers, prices = len(policy.servers), len(policy.prices)
            print(f"{path}: ok ({servers} server{'s' * (servers != 1)}, {prices} price{'s' * (prices != 1)})")
    return status


if __name__ == "__main__":
    sys.exit(main())
