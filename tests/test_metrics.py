"""Bounded label values and cleaned attribute strings."""

from __future__ import annotations

import threading

from otel_sampling.metrics import (
    LABEL_MAX_LENGTH,
    MAX_CACHED_CALL_POINTS,
    BoundedLabel,
    Instruments,
    bound,
    clean,
    clean_texts,
)
from otel_sampling.settings import Settings


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


def _instruments(limit: int) -> Instruments:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider

    settings = Settings.from_env({"OTEL_SAMPLING_LABEL_VALUE_LIMIT": str(limit)})
    return Instruments(settings, TracerProvider(), MeterProvider())


def test_call_points_are_the_call_labels_and_what_each_point_adds():
    instruments = _instruments(10)
    points = instruments.call_points("anthropic", "m-1", "m-2", "api.example.com", None, "primary", "completed")
    expected = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "m-1",
        "gen_ai.response.model": "m-2",
        "server.address": "api.example.com",
        "degradation.mode": "primary",
    }
    assert points.attributes == expected
    assert points.with_ending == {**expected, "otel_sampling.ending": "completed"}
    assert points.input_tokens == {**expected, "gen_ai.token.type": "input"}
    assert points.output_tokens == {**expected, "gen_ai.token.type": "output"}
    assert points.labels == {
        "gen_ai.provider.name": "anthropic",
        "gen_ai.response.model": "m-2",
        "degradation.mode": "primary",
    }
    again = instruments.call_points("anthropic", "m-1", "m-2", "api.example.com", None, "primary", "completed")
    assert again == points


def test_call_points_of_a_model_past_the_label_cap_stay_other():
    instruments = _instruments(1)
    first = instruments.call_points("openai", "a", "a", None, None, "primary", "completed")
    assert first.attributes["gen_ai.response.model"] == "a"
    for _ in range(2):  # asked twice: the same answer, the label set still full
        later = instruments.call_points("openai", "a", "b", None, None, "primary", "completed")
        assert later.attributes["gen_ai.response.model"] == "_OTHER"


class _Odd(str):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


def test_call_points_of_an_odd_string_or_a_failure_are_built_each_time():
    instruments = _instruments(10)
    instruments.call_points("openai", "a", "a", None, None, "primary", "completed")
    odd = instruments.call_points("openai", _Odd("a"), _Odd("a"), None, None, "primary", "completed")
    # equal to the kept ("a", "a") key by hash and __eq__, yet not given its answer: BoundedLabel's
    assert odd.attributes["gen_ai.response.model"] == BoundedLabel(10).value(_Odd("a"))
    assert odd.attributes["gen_ai.response.model"] != "a"
    failed = instruments.call_points("openai", "a", "a", None, "timeout", "primary", "error")
    assert failed.attributes["error.type"] == "timeout"
    assert len(instruments._call_points) == 1


def test_call_points_kept_are_bounded():
    instruments = _instruments(10_000)
    for index in range(MAX_CACHED_CALL_POINTS + 10):
        instruments.call_points("openai", f"m{index}", "m", None, None, "primary", "completed")
    assert len(instruments._call_points) == MAX_CACHED_CALL_POINTS
