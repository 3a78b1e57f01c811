"""Bounded label values and cleaned attribute strings."""

from __future__ import annotations

import threading

from otel_sampling.labels import LABEL_MAX_LENGTH, BoundedLabel, clean


def test_first_values_are_kept_then_other():
    label = BoundedLabel(3)
    assert [label.value(v) for v in ("a", "b", "c", "d", "a", "e")] == ["a", "b", "c", "_OTHER", "a", "_OTHER"]


def test_missing_values_are_unknown():
    assert BoundedLabel(2).value(None) == "_unknown"
    assert BoundedLabel(2).value("") == "_unknown"


def test_cap_holds_under_threads():
    label = BoundedLabel(50)
    seen: set[str] = set()

    def work(offset: int) -> None:
        for i in range(2_000):
            seen.add(label.value(f"model-{offset}-{i}"))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen - {"_OTHER"}) == 50


def test_clean_cuts_length_control_characters_and_surrogates():
    assert clean("a" * 1_000_000, 128) == "a" * 128
    assert clean("bad\x00name\x1b[31m", 64) == "badname[31m"
    assert clean("x\ud800y", 64) == "xy"
    assert clean("a\x85b\x9bc\u2028d\u202ee", 64) == "abcde"  # C1 controls, separators, bidi override
    assert clean("caf\u00e9 \u6a21\u578b", 64) == "caf\u00e9 \u6a21\u578b"  # printable text is kept
    assert clean(12, 8) == "12"
    assert len(BoundedLabel(5).value("s" * 10_000)) == LABEL_MAX_LENGTH
