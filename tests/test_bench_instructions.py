"""The instruction-count harness (``tests/bench/instructions.py``): how it reads callgrind's dumps,
derives instructions per call and ratios, and when ``make bench-check`` fails.

No valgrind here: the dumps are written in callgrind's format (valgrind's docs, "Callgrind Format
Specification": header lines ``thread:``, ``desc: Trigger: Client Request: <label>``, ``summary:``).
``make bench-check`` itself runs the real thing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "bench"))

import instructions
from instructions import BARE, FLOOR, MCP_FLOOR, OURS, Measured


def _dump(directory: Path, name: str, label: str, summary: int, thread: int = 1) -> None:
    (directory / name).write_text(
        "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npid: 7\ncmd: python\npart: 1\n"
        f"thread: {thread}\n\ndesc: I1 cache: \ndesc: Timerange: Basic block 0 - 9\n"
        f"desc: Trigger: Client Request: {label}\n\npositions: line\nevents: Ir\nsummary: {summary}\n\n"
        f"fl=(1) x.c\nfn=(1) f\n1 {summary}\n\ntotals: {summary}\n"
    )


def test_only_the_main_threads_labelled_dumps_are_read(tmp_path):
    _dump(tmp_path, "callgrind.7.1-01", "anthropic-create:1", 1_000)
    _dump(tmp_path, "callgrind.7.2-01", "anthropic-create:2", 1_900)
    _dump(tmp_path, "callgrind.7.1-02", "anthropic-create:1", 5, thread=2)  # the watchdog thread's
    _dump(tmp_path, "callgrind.7-01", "x", 3)
    (tmp_path / "callgrind.7-01").write_text(
        "version: 1\nthread: 1\ndesc: Trigger: Program termination\nsummary: 123\n"
    )
    assert {"anthropic-create:1": 1_000, "anthropic-create:2": 1_900} == instructions.read_dumps(tmp_path)


def test_per_call_is_the_difference_of_the_windows_over_n():
    # window 0: the settling calls (one-offs: not used); 1: N calls + the marks; 2: 2N calls + the same marks
    assert 90 == instructions.per_call({"k:0": 10**6, "k:1": 10 * 90 + 500, "k:2": 20 * 90 + 500}, "k", 10)


def _row(per_call: float) -> Measured:
    return Measured(per_call, 1, 15, 3)


def test_ratios_are_added_instructions_over_the_floors_and_the_lightest_peers():
    rows = {
        BARE: _row(1_000),
        OURS: _row(1_300),
        FLOOR: _row(1_200),
        "opentelemetry-instrumentation-anthropic": _row(1_800),
        "openinference-instrumentation-anthropic": _row(1_600),
    }
    ours = instructions.ratios("anthropic-create", rows)[OURS]
    assert ours["added"] == 300
    assert ours["x_floor"] == pytest.approx(1.5)
    assert ours["x_peer"] == pytest.approx(0.5)  # openinference adds 600, the least
    assert ours["x_bare"] == pytest.approx(0.3)
    assert instructions.ratios("mcp-legacy", {BARE: _row(1_000), OURS: _row(1_300), MCP_FLOOR: _row(1_100)})[OURS][
        "x_floor"
    ] == pytest.approx(3.0)  # MCP kinds divide by the MCP floor


def test_a_peer_that_did_not_run_is_no_reference():
    rows = {BARE: _row(1_000), OURS: _row(1_300), "opentelemetry-instrumentation-openai-v2": "ImportError: x"}
    assert "x_peer" not in instructions.ratios("openai-create", rows)[OURS]


def test_litellms_callback_is_counted_over_litellm_with_its_logging_run_inline():
    # LiteLLM logs on its own thread pool, which callgrind does not count; the peer runs that logging
    # inline, so its reference is LiteLLM doing the same with no callback, not bare.
    rows = {BARE: _row(1_000), OURS: _row(1_200), "litellm-logging-inline": _row(1_500), "litellm-otel": _row(1_900)}
    computed = instructions.ratios("litellm-create", rows)
    assert computed["litellm-otel"]["added"] == 400
    assert computed[OURS]["x_peer"] == pytest.approx(0.5)  # 200 over bare against the callback's 400
    assert "litellm-logging-inline" not in computed  # a reference, not an instrumentation


def test_check_fails_on_a_rise_above_the_tolerance_only():
    committed = {"anthropic-create": {OURS: 1.30}, "mcp-legacy": {OURS: 2.0}}
    within = instructions.compare(committed, {"anthropic-create": {OURS: 1.33}, "mcp-legacy": {OURS: 1.5}}, 0.03)
    assert [line.split()[0] for line in within] == ["ok", "ok"]  # +2.3%, and a fall
    above = instructions.compare(committed, {"anthropic-create": {OURS: 1.35}, "mcp-legacy": {OURS: 2.0}}, 0.03)
    assert above[0].startswith("FAIL anthropic-create otel-sampling: 1.350x floor, committed 1.300x (+3.8%")
    missing = instructions.compare(committed, {"anthropic-create": {OURS: 1.3}}, 0.03)
    assert missing[1].startswith("FAIL mcp-legacy otel-sampling: not measured")


def test_budgets_are_the_added_count_plus_the_tolerance_rounded_up_to_a_thousand():
    rows = {BARE: _row(1_000_000), OURS: _row(1_900_000), FLOOR: _row(1_700_000), "x-peer": _row(2_000_000)}
    assert {"anthropic-create": {OURS: 963_000, FLOOR: 749_000}} == instructions.budgets(
        {"anthropic-create": rows}, 0.07
    )  # 900k * 1.07 = 963k exactly; 700k * 1.07 = 749k; no peer is budgeted


def test_check_fails_when_ours_or_the_floor_adds_more_than_its_budget():
    budget = {"anthropic-create": {OURS: 900_000, FLOOR: 700_000}}
    drifted = {"anthropic-create": {BARE: _row(1_000_000), OURS: _row(1_890_000), FLOOR: _row(1_720_000)}}
    lines = instructions.compare_budgets(budget, drifted)
    assert lines[0].startswith("ok   anthropic-create otel-sampling: +890k over bare, budget 900k")
    assert lines[1].startswith("FAIL anthropic-create floor: +720k over bare, budget 700k")
    # both drifted by the same share: their ratio holds, the budgets catch it
    missing = instructions.compare_budgets(budget, {"anthropic-create": {BARE: _row(1), FLOOR: "ImportError: x"}})
    assert [line.split()[0] for line in missing] == ["FAIL", "FAIL"]


def test_the_committed_ratios_and_budgets_cover_every_call_kind_with_a_stated_tolerance():
    committed = json.loads(instructions.COMMITTED.read_text(encoding="utf-8"))
    assert set(committed["x_floor"]) == set(instructions.calls.KINDS)
    assert all(OURS in ratios for ratios in committed["x_floor"].values())
    assert 0 < committed["tolerance"] <= 0.1
    assert set(committed["added_budget"]) == set(instructions.calls.KINDS)
    for kind, budget in committed["added_budget"].items():
        assert {OURS, instructions.floor_of(kind)} <= set(budget)
    assert committed["targets"] == {"x_floor": 1.15, "x_mcp_floor": 1.2, "x_lesser_peer": 1.0, "x_floor_per_event": 2.0}


def test_a_stream_body_is_lengthened_by_repeating_its_first_text_delta():
    cassette = instructions.calls.load("anthropic/stream_basic.json")
    body = instructions.calls.stream_body(cassette["response"]["body"], 100)
    blocks = [b for b in body.split("\n\n") if b.strip()]
    assert sum(map(instructions.calls._yielded, blocks)) == 100
    assert sum('"text_delta"' in b for b in blocks) == 95  # 6 events as recorded (the ping is not yielded)
    assert blocks[-1].startswith("event: message_stop")
