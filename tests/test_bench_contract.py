"""The contract-cost table (``tests/bench/contract.py``): each element runs in the bench's telemetry
set-up and takes the path its row names; the derived rows are differences of measured ones.

No valgrind here: each element is used once, in a child process (the bench sets the global
providers). ``make bench-instructions`` counts the instructions.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "bench"))

import contract

BENCH = Path(__file__).parent / "bench"

# Every element used once under ``bare``, as the bench builds it; each use's result as text.
_USE_ALL = """
import json, sys
sys.path.insert(0, sys.argv[1])
import contract, worker
worker.telemetry()
worker.CONFIGS["bare"].install()
print(json.dumps({name: repr(use()) for name, use in contract.elements("bare").items()}))
"""


@pytest.fixture(scope="module")
def used() -> dict[str, str]:
    proc = subprocess.run(
        [sys.executable, "-c", _USE_ALL, str(BENCH)], capture_output=True, text=True, check=False, cwd=BENCH
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_element_runs_once_in_the_bench_set_up(used):
    assert "counter point, 1 label" in used
    assert {"run verdict (judge_run)", "repeat verdict (judge_repeat)"} <= used.keys()
    assert 6 == sum(name.startswith("inference points of") for name in used)


def test_the_verdict_rows_judge_a_served_snapshot_of_the_requested_model_as_primary(used):
    """A served ``-20250929`` snapshot of the requested model is no substitution (rules/verdict.py)."""
    assert "mode='primary'" in used["call verdict (judge_call), no policy"]
    assert "scope='run:triage'" in used["call verdict (judge_call), under a scope's policy"]
    assert "substitution='none'" in used["request verdict (judge_request), under its server's policy"]
    assert "label='run:triage'" in used["policy scope look-up (scope_of), 5 tables, found on the outer of 2 runs"]


def test_the_check_rows_count_their_tool_calls_without_errors(used):
    assert "tool_calls=1, not_offered=0, invalid_arguments=0" in used["tool-call checks (judge), 1 tool call"]
    assert "tool_calls=10, not_offered=0, invalid_arguments=0" in used["tool-call checks (judge), 10 tool calls"]
    assert "structured=True, structured_failure=None" in used["structured-output check (judge), a 30-character answer"]
    large = [name for name in used if name.startswith("tool-call check (judge), 1 tool call, ")]
    assert 3 == len(large)
    for name in large:
        assert "tool_calls=1, not_offered=0, invalid_arguments=0" in used[name], name


def test_the_table_has_a_row_per_element_and_the_dup_rows_are_both_minus_the_default(used):
    bare = {name: 1000.0 * (i + 1) for i, name in enumerate(used)}
    ours = {**bare, contract._NO_RUN: bare[contract._NO_RUN] + 20_000, contract._RUN: bare[contract._RUN] + 370_000}
    lines = contract.table(lambda config, n: bare if config == "bare" else ours)
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1].rstrip(" |") for line in lines[2:]}
    assert len(rows) == len(used) + 2  # the two span-processor rows replace two, two dup rows are added
    assert "20.0k" == rows["ours' span processor on a span that starts no run (a local root `chat` span)"]
    for shape in (contract._CREATE, contract._STREAM):
        both = bare[contract._inference(shape, "both (gen_ai/dup)")]
        default = bare[contract._inference(shape, "v1.41 names (the default)")]
        assert f"{(both - default) / 1000:,.1f}k" == rows[f"gen_ai/dup's extra over the default, {shape}"]
