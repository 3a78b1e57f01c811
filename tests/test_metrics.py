"""Bounded label values and cleaned attribute strings."""

from __future__ import annotations

import threading

from otel_sampling.metrics import LABEL_MAX_LENGTH, BoundedLabel, bound, clean, clean_texts


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


def test_clean_texts_cleans_every_value_of_a_span_update_and_leaves_out_the_absent():
    assert clean_texts({"a": "bad\x00name", "b": ["x\ud800y", "z" * 10], "c": None, "d": "", "e": (), "f": 12}, 4) == {
        "a": "bad",
        "b": ["xy", "zzzz"],
        "f": "12",
    }


def test_bound_gives_each_key_its_own_labels_value():
    models, servers = BoundedLabel(1), BoundedLabel(1)
    assert bound([("m", models, "claude"), ("s", servers, "weather")]) == {"m": "claude", "s": "weather"}
    assert bound([("m", models, "gpt"), ("s", servers, None)]) == {"m": "_OTHER", "s": "_unknown"}
